package io.strata.sdk.dataset;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.strata.sdk.Column;
import io.strata.sdk.Dataset;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.Progress;
import io.strata.sdk.format.Columns;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The read requests a chunk read issues, and seeking cursors that reopen what they opened to read from the start. */
class OrcTableReadsTest {
  @TempDir Path tmp;

  private Path generate() throws Exception {
    Path dir = tmp.resolve("ds");
    DatasetGenerator.generate(dir,
        DatasetGenerator.Options.of("reads", 30_000, 3).withFeatures(12).withChunking(5_000, 3), Progress.NONE);
    return dir;
  }

  private static void removeSidecars(Path dir) throws Exception {
    for (var f : io.strata.sdk.dataset.Manifest.read(dir).files()) {
      java.nio.file.Files.delete(StripeFooters.sidecar(dir.resolve(f.path())));
    }
  }

  @Test
  void aChunkReadIssuesTheStripeFooterAndOneReadPerRunOfColumnsAndNoRowIndexRead() throws Exception {
    Path dir = generate();
    removeSidecars(dir);
    try (Dataset ds = Dataset.open(dir); Arena arena = Arena.ofConfined()) {
      List<FeatureInfo> cols = ds.columns();
      // The first column of the file (the one a seeking reader's search argument names) and its neighbour: one run.
      List<String> adjacent = List.of(cols.get(0).name(), cols.get(1).name());
      ds.orc().readChunk(0, adjacent, arena); // opens the file: its tail and statistics
      long r0 = OrcReads.requests();
      ds.orc().readChunk(1, adjacent, arena);
      assertEquals(2, OrcReads.requests() - r0, "stripe footer + one run of two adjacent columns");
      // Two columns apart: two runs.
      List<String> apart = List.of(cols.get(0).name(), cols.get(2).name());
      long r1 = OrcReads.requests();
      ds.orc().readChunk(2, apart, arena);
      assertEquals(3, OrcReads.requests() - r1, "stripe footer + two runs");
    }
  }

  @Test
  void withTheFilesSidecarsAChunkReadIssuesOnlyItsRuns() throws Exception {
    Path dir = generate();
    try (Dataset ds = Dataset.open(dir); Arena arena = Arena.ofConfined()) {
      List<FeatureInfo> cols = ds.columns();
      List<String> adjacent = List.of(cols.get(0).name(), cols.get(1).name());
      long r = OrcReads.requests();
      ds.orc().readChunk(0, adjacent, arena);
      // Opening the file: its tail, its sidecar; then the chunk's one run.
      assertEquals(3, OrcReads.requests() - r, "open + one run");
      long r0 = OrcReads.requests();
      ds.orc().readChunk(1, adjacent, arena);
      assertEquals(1, OrcReads.requests() - r0, "one run of two adjacent columns, the footer from the sidecar");
      long r1 = OrcReads.requests();
      ds.orc().readChunk(2, List.of(cols.get(0).name(), cols.get(2).name()), arena);
      assertEquals(2, OrcReads.requests() - r1, "two runs");
    }
  }

  @Test
  void aDamagedOrForeignSidecarIsIgnoredAndTheValuesStayRight() throws Exception {
    Path dir = generate();
    try (Arena arena = Arena.ofShared()) {
      List<String> names;
      Map<String, Column> expected;
      try (Dataset ds = Dataset.open(dir)) { // closed before the damage: its footers go with it
        names = ds.featureNames();
        expected = ds.orc().readChunk(4, names, arena);
      }
      Manifest m = Manifest.read(dir);
      Path first = StripeFooters.sidecar(dir.resolve(m.files().get(0).path()));
      Path second = StripeFooters.sidecar(dir.resolve(m.files().get(1).path()));
      // File 0's sidecar: one byte of a footer flipped. File 1's: file 0's sidecar in its place.
      byte[] damaged = java.nio.file.Files.readAllBytes(first);
      java.nio.file.Files.copy(first, second, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
      damaged[damaged.length / 2] ^= 0x40;
      java.nio.file.Files.write(first, damaged);
      for (int chunk : new int[] {1, 4}) { // chunk 1 is in file 0, chunk 4 in file 1
        try (Dataset fresh = Dataset.open(dir); Arena a = Arena.ofConfined()) {
          fresh.orc().readChunk(chunk - 1, names.subList(0, 1), a); // opens the file
          long r = OrcReads.requests();
          Map<String, Column> got = fresh.orc().readChunk(chunk, names.subList(0, 2), a);
          assertEquals(2, OrcReads.requests() - r, "chunk " + chunk + ": the footer read from the file again");
          if (chunk == 4) {
            for (String n : names) {
              assertSame(expected.get(n), fresh.orc().readChunk(4, names, a).get(n), n);
            }
          } else {
            assertEquals(2, got.size());
          }
        }
      }
    }
  }

  @Test
  void footersAreKnownByTheFileAsItIsSoAFileReplacedUnderItsNameGetsNone() throws Exception {
    Path dir = generate();
    Path part = dir.resolve(Manifest.read(dir).files().get(0).path());
    String before = OrcReads.key(part);
    assertEquals(before, OrcReads.key(part), "the same file, the same key");
    Path other = tmp.resolve("other.orc");
    java.nio.file.Files.copy(part, other);
    java.nio.file.Files.move(other, part, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    assertNotEquals(before, OrcReads.key(part), "the same bytes under the same name, but another file");
  }

  @Test
  void aSidecarThatIsALinkIsNotRead() throws Exception {
    Path dir = generate();
    Manifest.OrcFileInfo info = Manifest.read(dir).files().get(0);
    Path part = dir.resolve(info.path());
    Path sidecar = StripeFooters.sidecar(part);
    Path elsewhere = tmp.resolve("elsewhere.footers");
    java.nio.file.Files.move(sidecar, elsewhere);
    java.nio.file.Files.createSymbolicLink(sidecar, elsewhere);
    try (org.apache.orc.Reader reader = OrcIo.open(part)) {
      assertEquals(null, StripeFooters.load(part, info.crc32c(), info.bytes(), reader.getStripes()), "a link is refused");
      java.nio.file.Files.delete(sidecar);
      java.nio.file.Files.move(elsewhere, sidecar);
      assertEquals(reader.getStripes().size(),
          StripeFooters.load(part, info.crc32c(), info.bytes(), reader.getStripes()).stripes(), "the same bytes in place are read");
    }
  }

  @Test
  void aCursorThatReadFromAChunksStartSeeksBackAndForwardWithTheSameValues() throws Exception {
    Path dir = generate();
    try (Dataset ds = Dataset.open(dir); Arena arena = Arena.ofConfined()) {
      List<String> names = ds.featureNames();
      try (OrcTable.Cursor cursor = ds.orc().cursor(names)) {
        // Opened to read from the start of chunk 0 (no seeking), then asked for rows behind and ahead.
        Map<String, Column> head = cursor.readRows(0, 1_000, arena);
        Map<String, Column> back = cursor.readRows(200, 300, arena);
        Map<String, Column> ahead = cursor.readRows(3_000, 1_500, arena);
        Map<String, Column> next = cursor.readRows(4_500, 1_000, arena); // continues into chunk 1
        for (String n : names) {
          assertSame(ds.orc().readRows(0, 1_000, List.of(n), arena).get(n), head.get(n), n + " head");
          assertSame(ds.orc().readRows(200, 300, List.of(n), arena).get(n), back.get(n), n + " back");
          assertSame(ds.orc().readRows(3_000, 1_500, List.of(n), arena).get(n), ahead.get(n), n + " ahead");
          assertSame(ds.orc().readRows(4_500, 1_000, List.of(n), arena).get(n), next.get(n), n + " next");
        }
      }
    }
  }

  private static void assertSame(Column expected, Column actual, String what) {
    assertEquals(-1, Columns.firstDifference(expected, actual), what);
  }
}
