package io.strata.sdk.files;

import io.strata.tools.DatasetGenerator;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.CorruptFileException;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.Progress;
import io.strata.sdk.internal.Confinement;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** An ORC file damaged after it was written is never decoded: every stream read is checked against its recorded CRC32C. */
class StreamChecksumsTest {
  @TempDir Path tmp;

  @Test
  void bytesOverwrittenInAStreamAreRefusedOnEveryReadAndByVerify() throws Exception {
    Path dir = tmp.resolve("ds");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("sums", 30_000, 5).withFeatures(8).withChunking(5_000, 3),
        Progress.NONE);
    Manifest m = Manifest.read(dir);
    assertNotNull(m.streamChecksums(), "a generated dataset records its stream checksums");
    List<String> all;
    long bytes;
    try (Dataset ds = Dataset.open(dir); Arena arena = Arena.ofConfined()) {
      all = ds.featureNames();
      for (int c = 0; c < ds.chunks().size(); c++) {
        ds.readChunk(c, all, arena); // every stream of every stripe read and checked: nothing fires
      }
      bytes = ds.table().verifyChecksums();
    }
    assertEquals(m.files().stream().mapToLong(Manifest.OrcFileInfo::bytes).sum(), bytes);

    // 8 bytes overwritten in the middle of the largest stream of file 0's second stripe.
    StreamChecksums sums = StreamChecksums.load(dir, m, Confinement.NONE);
    StreamChecksums.File f0 = sums.file(0);
    long at = -1;
    long best = 0;
    for (int i = 0; i < f0.streams(); i++) {
      long[] se = f0.stream(i);
      if (se[2] == 1 && se[1] > best) {
        best = se[1];
        at = se[0] + se[1] / 2;
      }
    }
    assertTrue(best >= 8, "a stream to damage");
    Path file = dir.resolve(m.files().get(0).path());
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      ByteBuffer b = ByteBuffer.allocate(8);
      ch.read(b, at);
      for (int i = 0; i < 8; i++) {
        b.put(i, (byte) ~b.get(i));
      }
      ch.write(b.rewind(), at);
    }
    int chunk = -1;
    for (var c : m.chunks()) {
      if (c.file() == 0 && c.stripe() == 1) {
        chunk = c.index();
      }
    }
    try (Dataset ds = Dataset.open(dir); Arena arena = Arena.ofConfined()) {
      final int damaged = chunk;
      CorruptFileException e = assertThrows(CorruptFileException.class, () -> ds.readChunk(damaged, all, arena));
      assertTrue(e.getMessage().contains(file.toString()) && e.getMessage().contains("stripe 1 column")
          && e.getMessage().contains("stream is damaged"), e.getMessage());
      // The other stripes read as ever.
      ds.readChunk(0, all, arena);
      CorruptFileException v = assertThrows(CorruptFileException.class, () -> ds.table().verifyChecksums());
      assertTrue(v.getMessage().contains("stripe 1 column"), v.getMessage());
    }
    // A row-range reader (a cursor, as jobs reading ORC use) is refused too.
    try (Dataset ds = Dataset.open(dir); Arena arena = Arena.ofConfined(); HddTable.Cursor cur = ds.table().cursor(all)) {
      long first = m.chunks().get(chunk).firstRow();
      assertThrows(CorruptFileException.class, () -> cur.readRows(first, 100, arena));
    }
  }

  @Test
  void missingOrDamagedChecksumsTheManifestRecordsAreRefused() throws Exception {
    Path dir = tmp.resolve("ds2");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("sums2", 10_000, 5).withFeatures(4).withChunking(5_000, 2),
        Progress.NONE);
    Path sums = dir.resolve(StreamChecksums.FILE_NAME);
    byte[] b = Files.readAllBytes(sums);
    b[b.length / 2] ^= 1;
    Files.write(sums, b);
    try (Dataset ds = Dataset.open(dir); Arena arena = Arena.ofConfined()) {
      List<String> fs = ds.featureNames();
      CorruptFileException e = assertThrows(CorruptFileException.class, () -> ds.readChunk(0, fs, arena));
      assertTrue(e.getMessage().contains("stream checksums are damaged"), e.getMessage());
    }
    Files.delete(sums);
    try (Dataset ds = Dataset.open(dir); Arena arena = Arena.ofConfined()) {
      List<String> fs = ds.featureNames();
      CorruptFileException e = assertThrows(CorruptFileException.class, () -> ds.readChunk(0, fs, arena));
      assertTrue(e.getMessage().contains("stream checksums are missing"), e.getMessage());
    }
  }
}
