package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.files.Manifest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Foundation acceptance: a generated dataset of 10 M rows x 10 features, promoted entirely to
 * segments, reads back identical to its ORC source in a JVM whose heap (96 MiB) is a small
 * fraction of the dataset (about 1 GiB of column data).
 */
class LargeDatasetIT {
  @Test
  void tenMillionRowsPromotedEntirelyReadBackIdenticalInASmallHeap() throws Exception {
    Path tmp = Files.createTempDirectory("strata-large-");
    try {
      long usable = Files.getFileStore(tmp).getUsableSpace();
      assertTrue(usable > 3L << 30, "this test needs 3 GiB free under " + tmp + ", has " + usable);
      Path ds = tmp.resolve("events");
      Path ssd = tmp.resolve("ssd");
      Cli.Result gen = Cli.fork("1g", "dataset", "generate", "--out", ds.toString(), "--rows", "10000000",
          "--features", "10", "--seed", "11");
      assertEquals(0, gen.code(), gen.err());
      assertEquals(10_000_000, Manifest.read(ds).rows());
      Cli.Result promote = Cli.fork("96m", "promote", "--dataset", ds.toString(), "--ssd", ssd.toString());
      assertEquals(0, promote.code(), promote.err());
      long segmentBytes;
      try (Stream<Path> s = Files.walk(ssd)) {
        segmentBytes = s.filter(Files::isRegularFile).mapToLong(p -> p.toFile().length()).sum();
      }
      assertTrue(segmentBytes > 10L * 96 * (1 << 20), "the dataset is far larger than the heap: " + segmentBytes);
      Cli.Result verify = Cli.fork("96m", "dataset", "verify", ds.toString(), "--ssd", ssd.toString());
      assertEquals(0, verify.code(), verify.err());
      assertTrue(verify.out().contains("verified 10 segments, 10.00 M rows"), verify.out());
      assertTrue(verify.out().contains("identical to the dataset's files"), verify.out());
    } finally {
      try (Stream<Path> s = Files.walk(tmp)) {
        for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }
}
