package io.strata.sdk.tiering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.format.SegmentFile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Only the owner of a segment directory cleans it, and segments land read-only. */
class SegmentStoreOwnerTest {
  @TempDir Path tmp;

  @Test
  void aSecondStoreOnADirectoryDeletesNothingOfTheOwners() throws IOException {
    Path ssd = tmp.resolve("ssd");
    try (SegmentStore owner = SegmentStore.open(ssd, false, SegmentFile.Verify.FIRST_OPEN)) {
      assertTrue(owner.owner());
      Path inFlight = Files.writeString(Files.createDirectories(ssd.resolve("events/v1")).resolve(".tmp-c000001.arrow-1f"), "half");
      Path damaged = Files.writeString(ssd.resolve("events/v1/c000002-x.arrow"), "not a segment");
      try (SegmentStore reader = SegmentStore.open(ssd, false, SegmentFile.Verify.FIRST_OPEN)) {
        assertFalse(reader.owner(), "the directory is owned already");
        assertEquals(1, reader.dropped().size(), "the damaged file is reported: " + reader.dropped());
      }
      assertTrue(Files.exists(inFlight), "the owner's write in progress is left alone");
      assertTrue(Files.exists(damaged), "only the owner removes files");
    }
    try (SegmentStore next = SegmentStore.open(ssd, false, SegmentFile.Verify.FIRST_OPEN)) {
      assertTrue(next.owner(), "the lock went with its owner");
      assertEquals(2, next.dropped().size(), next.dropped().toString());
      try (var files = Files.walk(ssd)) {
        assertEquals(List.of(), files.filter(Files::isRegularFile).filter(f -> !f.getFileName().toString().equals(SegmentStore.OWNER_LOCK))
            .toList());
      }
    }
  }

  @Test
  void segmentsLandReadOnly() throws IOException {
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("events", 4_000, 2).withFeatures(6).withChunking(2_000, 1),
        Progress.NONE);
    try (Dataset ds = Dataset.open(dir); SegmentStore store = SegmentStore.open(tmp.resolve("ssd"), false, SegmentFile.Verify.FIRST_OPEN)) {
      Promoter.promote(ds, store, List.of("amount"), List.of(0), Progress.NONE);
      Path seg = store.segments().getFirst().path();
      if (Files.getFileStore(seg).supportsFileAttributeView("posix")) {
        assertEquals("r--r--r--", PosixFilePermissions.toString(Files.getPosixFilePermissions(seg)));
      }
    }
  }
}
