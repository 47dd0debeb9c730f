package io.strata.sdk.files;

import io.strata.tools.DatasetGenerator;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.Progress;
import io.strata.sdk.format.Columns;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The read requests a chunk read issues, and seeking cursors that reopen what they opened to read
 * from the start. Counted with ranges merged only where they touch (the default reads through
 * gaps on a rotational device, which this machine's disk may say it is); the gap-tolerant reader
 * has a test of its own.
 */
class OrcTableReadsTest {
  @TempDir Path tmp;

  @BeforeEach
  void touchingOnly() {
    OrcReads.setGapBytes(0);
  }

  @AfterEach
  void auto() {
    OrcReads.setGapBytes(-1);
  }

  private Path generate() throws Exception {
    Path dir = tmp.resolve("ds");
    DatasetGenerator.generate(dir,
        DatasetGenerator.Options.of("reads", 30_000, 3).withFeatures(12).withChunking(5_000, 3), Progress.NONE);
    return dir;
  }

  private static void removeSidecars(Path dir) throws Exception {
    for (var f : Manifest.read(dir).files()) {
      Files.delete(StripeFooters.sidecar(dir.resolve(f.path())));
    }
    Files.delete(dir.resolve(FileTails.FILE_NAME)); // it carries them too
  }

  @Test
  void aChunkReadIssuesTheStripeFooterAndOneReadPerRunOfColumnsAndNoRowIndexRead() throws Exception {
    Path dir = generate();
    removeSidecars(dir);
    try (Dataset ds = Dataset.open(dir); Arena arena = Arena.ofConfined()) {
      List<FeatureInfo> cols = ds.columns();
      // The first column of the file (the one a seeking reader's search argument names) and its neighbour: one run.
      List<String> adjacent = List.of(cols.get(0).name(), cols.get(1).name());
      ds.table().readChunk(0, adjacent, arena); // opens the file: its tail and statistics
      long r0 = OrcReads.requests();
      ds.table().readChunk(1, adjacent, arena);
      assertEquals(2, OrcReads.requests() - r0, "stripe footer + one run of two adjacent columns");
      // Two columns apart: two runs.
      List<String> apart = List.of(cols.get(0).name(), cols.get(2).name());
      long r1 = OrcReads.requests();
      ds.table().readChunk(2, apart, arena);
      assertEquals(3, OrcReads.requests() - r1, "stripe footer + two runs");
    }
  }

  /**
   * With the version's tails file, opening the dataset's files reads it once (every file's tail
   * and stripe footers in one request) and nothing at any file's end; without it, or with it
   * damaged, each file's tail and sidecar are read as before, and the values are the same.
   */
  @Test
  void theTailsFileSparesEveryTripToAFilesEnd() throws Exception {
    Path dir = generate();
    Manifest m = Manifest.read(dir);
    assertTrue(Files.isRegularFile(dir.resolve(FileTails.FILE_NAME)), "dataset generate writes it");
    List<String> two = List.of(m.features().get(0).name(), m.features().get(1).name());
    List<Column> carried = new ArrayList<>();
    try (OrcReads.Recording rec = OrcReads.record(); Dataset ds = Dataset.open(dir); Arena arena = Arena.ofConfined()) {
      for (var c : ds.chunks()) {
        carried.add(ds.table().readChunk(c.index(), two, arena).get(two.get(0)));
      }
      List<OrcReads.Request> q = rec.requests();
      assertEquals(1, q.stream().filter(r -> r.file().getFileName().toString().equals(FileTails.FILE_NAME)).count(), "read once");
      assertTrue(q.stream().noneMatch(r -> r.file().getFileName().toString().endsWith(StripeFooters.SUFFIX)), "no sidecar read");
      for (var f : m.files()) {
        long size = f.bytes();
        assertTrue(q.stream().noneMatch(r -> r.file().endsWith(f.path()) && r.offset() + r.length() > size - 16),
            "nothing read at the end of " + f.path() + ": " + q);
      }
      assertEquals(1 + ds.chunks().size(), q.size(), "the tails file, then one run a chunk: " + q);
      // The same values without it, and with it damaged (ignored, read from the files as before).
      for (int variant = 0; variant < 2; variant++) {
        Path copy = tmp.resolve("copy" + variant);
        copyTree(dir, copy);
        Path t = copy.resolve(FileTails.FILE_NAME);
        if (variant == 0) {
          Files.delete(t);
        } else {
          byte[] b = Files.readAllBytes(t);
          b[b.length / 2] ^= 1;
          Files.write(t, b);
        }
        long r0 = OrcReads.requests();
        try (Dataset other = Dataset.open(copy)) {
          for (var c : other.chunks()) {
            assertSame(carried.get(c.index()), other.table().readChunk(c.index(), two, arena).get(two.get(0)), "chunk " + c.index());
          }
        }
        assertTrue(OrcReads.requests() - r0 > ds.chunks().size() + 2L * m.files().size() - 1, "tails and sidecars read from the files");
      }
    }
  }

  private static void copyTree(Path from, Path to) throws java.io.IOException {
    try (var s = Files.walk(from)) {
      for (Path p : s.toList()) {
        Path q = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(q);
        } else {
          Files.copy(p, q);
        }
      }
    }
  }

  @Test
  void withTheFilesSidecarsAChunkReadIssuesOnlyItsRuns() throws Exception {
    Path dir = generate();
    Files.delete(dir.resolve(FileTails.FILE_NAME)); // the sidecars of each file, read from beside it
    try (Dataset ds = Dataset.open(dir); Arena arena = Arena.ofConfined()) {
      List<FeatureInfo> cols = ds.columns();
      List<String> adjacent = List.of(cols.get(0).name(), cols.get(1).name());
      long r = OrcReads.requests();
      ds.table().readChunk(0, adjacent, arena);
      // Opening the file: its tail, its sidecar; then the chunk's one run.
      assertEquals(3, OrcReads.requests() - r, "open + one run");
      long r0 = OrcReads.requests();
      ds.table().readChunk(1, adjacent, arena);
      assertEquals(1, OrcReads.requests() - r0, "one run of two adjacent columns, the footer from the sidecar");
      long r1 = OrcReads.requests();
      ds.table().readChunk(2, List.of(cols.get(0).name(), cols.get(2).name()), arena);
      assertEquals(2, OrcReads.requests() - r1, "two runs");
    }
  }

  @Test
  void readingThroughGapsGivesTheSameValuesWithFewerRequestsAndTheRecordingSaysWhichBytes() throws Exception {
    Path dir = generate();
    List<Map<String, Column>> got = new ArrayList<>();
    long[] requests = new long[2];
    List<List<OrcReads.Request>> recorded = new ArrayList<>();
    for (int pass = 0; pass < 2; pass++) {
      OrcReads.setGapBytes(pass == 0 ? 0 : 1 << 20);
      try (Dataset ds = Dataset.open(dir); Arena arena = Arena.ofShared()) {
        List<FeatureInfo> cols = ds.columns();
        List<String> apart = List.of(cols.get(0).name(), cols.get(3).name(), cols.get(7).name());
        ds.table().readChunk(2, apart, arena); // opens the file (and then chunk 1: not in order, nothing read ahead)
        try (OrcReads.Recording rec = OrcReads.record()) {
          long r = OrcReads.requests();
          long b = OrcReads.bytes();
          got.add(ds.table().readChunk(1, apart, Arena.global()));
          requests[pass] = OrcReads.requests() - r;
          recorded.add(rec.requests());
          assertEquals(requests[pass], recorded.get(pass).size(), "every request recorded");
          assertEquals(OrcReads.bytes() - b, recorded.get(pass).stream().mapToLong(OrcReads.Request::length).sum());
          Path file = dir.resolve(Manifest.read(dir).files().get(0).path()).toRealPath();
          for (OrcReads.Request q : recorded.get(pass)) {
            assertEquals(file, q.file().toRealPath(), "a request names its file");
          }
        }
      }
    }
    assertEquals(3, requests[0], "touching only: three runs");
    assertEquals(1, requests[1], "gaps read through: one request");
    assertTrue(recorded.get(1).get(0).length() > recorded.get(0).stream().mapToLong(OrcReads.Request::length).sum(),
        "the gaps' bytes read too");
    assertEquals(recorded.get(0).get(0).offset(), recorded.get(1).get(0).offset(), "from the first run's start");
    for (String n : got.get(0).keySet()) {
      assertSame(got.get(0).get(n), got.get(1).get(n), n);
    }
  }

  @Test
  void onADiskThatSeeksChunksReadInOrderAreReadAheadWithTheSameValuesAndRequests() throws Exception {
    Path dir = generate();
    OrcReads.setGapBytes(1 << 20); // a disk that seeks: gaps read through, the next chunk read ahead
    List<String> some;
    try (Dataset ds = Dataset.open(dir)) {
      List<FeatureInfo> cols = ds.columns();
      some = List.of(cols.get(1).name(), cols.get(5).name(), cols.get(9).name());
    }
    int chunks;
    List<OrcReads.Request> inOrder;
    List<Map<String, Column>> values = new ArrayList<>();
    List<Path> files = new ArrayList<>();
    for (Manifest.OrcFileInfo f : Manifest.read(dir).files()) {
      files.add(dir.resolve(f.path()));
    }
    try (Dataset ds = Dataset.open(dir); OrcReads.Recording rec = OrcReads.record()) {
      chunks = ds.chunks().size();
      long mine = OrcReads.bytesOnThisThread();
      for (int c = 0; c < chunks; c++) {
        values.add(ds.table().readChunk(c, some, Arena.global()));
        // As a job's work between chunks would: the read-ahead the read issued gets to start. On a
        // loaded machine the reader could otherwise reach the next chunk before that thread ran at
        // all (the read-ahead is then dropped, correctly, and this test would count too few).
        awaitReadAheadsStarted();
      }
      inOrder = rec.requests();
      // This thread's bytes: its own requests and the stripes it took from the read-ahead.
      long expected = inOrder.stream().mapToLong(OrcReads.Request::length).sum();
      assertEquals(expected, OrcReads.bytesOnThisThread() - mine,
          "the stripes read ahead count as this thread's bytes (a promotion's ORC bytes)");
      for (Path f : files) {
        assertEquals(0, OrcReads.aheadWaiting(f), "every chunk read ahead was taken: " + f);
      }
      // One more read ahead, never taken: the table's close forgets it.
      ds.table().readChunk(0, some, Arena.global());
      ds.table().readChunk(1, some, Arena.global());
    }
    for (Path f : files) {
      assertEquals(0, OrcReads.aheadWaiting(f), "forgotten with its table: " + f);
    }
    // The read-ahead left unseen by the close may still be reading: its reads are not the next pass's.
    assertTrue(OrcReads.awaitAheadIdle(10_000), "the read-ahead thread finished");
    // Backwards: no read-ahead; the same values, the same requests (a chunk read ahead is not read again).
    List<OrcReads.Request> backwards;
    try (Dataset ds = Dataset.open(dir); OrcReads.Recording rec = OrcReads.record()) {
      for (int c = chunks - 1; c >= 0; c--) {
        Map<String, Column> got = ds.table().readChunk(c, some, Arena.global());
        for (String n : some) {
          assertSame(values.get(c).get(n), got.get(n), n + " of chunk " + c);
        }
      }
      backwards = rec.requests();
    }
    assertTrue(backwards.stream().noneMatch(OrcReads.Request::ahead), "out of order: nothing read ahead");
    long ahead = inOrder.stream().filter(OrcReads.Request::ahead).count();
    assertTrue(ahead >= chunks - 2, "chunks 1.. read ahead (a read-ahead not started in time is dropped): " + ahead);
    // From the first chunk on: chunk 1 is read while chunk 0 decodes (a table's first read, of chunk 0, is in order).
    ChunkInfo second = Manifest.read(dir).chunks().get(1);
    Path secondFile = dir.resolve(Manifest.read(dir).files().get(second.file()).path());
    assertTrue(inOrder.stream().anyMatch(q -> q.ahead() && q.file().getFileName().equals(secondFile.getFileName()) && q.offset() >= second.offset()
        && q.offset() < second.offset() + second.length()), "chunk 1 read ahead");
    // The read-ahead's readers take each file's tail from the table's reader: no tail is read twice
    // (on a disk that seeks, that read cost a seek to the file's end and one back), and the data
    // requests are the same.
    assertTrue(inOrder.stream().noneMatch(q -> q.ahead() && isTail(q)), "the read-ahead read a file's tail again");
    assertEquals(backwards.size(), inOrder.size(), "no stripe read twice, no tail read twice");
    assertTrue(files.size() >= 2, "chunks read ahead across files too");
  }

  /** Waits (at most 10 s) until no read-ahead is still queued: each has started, or ended. */
  private static void awaitReadAheadsStarted() throws InterruptedException {
    long end = System.nanoTime() + 10_000_000_000L;
    while (OrcReads.AHEAD.stream().anyMatch(a -> a.state.get() == OrcReads.QUEUED) && System.nanoTime() < end) {
      Thread.sleep(1);
    }
  }

  /** A request for the end of its file (an ORC reader's open). */
  private static boolean isTail(OrcReads.Request q) {
    try {
      return q.offset() + q.length() == Files.size(q.file());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Test
  void theGapSettingIsAutoOrBytes() throws java.io.IOException {
    OrcReads.setGapBytes(-1);
    long auto = OrcReads.gapBytes(tmp);
    assertTrue(auto == 0 || auto == DiskModel.HDD.breakEvenGapBytes(), "auto: none, or the model's break-even");
    assertEquals(OrcReads.rotational(tmp) ? DiskModel.HDD.breakEvenGapBytes() : 0, auto);
    assertEquals(0, OrcReads.gapBytes(Path.of("/dev/shm")), "tmpfs: no block device, no gap");
    OrcReads.setGapBytes(12345);
    assertEquals(12345, OrcReads.gapBytes(tmp));
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> OrcReads.setGapBytes(-2));
    // Per root: the disk under it as its owner set it; the longest root holding a file wins; the process-wide setting over all.
    OrcReads.setGapBytes(-1);
    Path slow = tmp.resolve("slow");
    Path slower = slow.resolve("inner");
    try {
      OrcReads.setGapBytes(slow, 600_000);
      OrcReads.setGapBytes(slower, 0);
      assertEquals(600_000, OrcReads.gapBytes(slow.resolve("ds/part-0.orc")));
      assertEquals(0, OrcReads.gapBytes(slower.resolve("ds/part-0.orc")));
      assertEquals(auto, OrcReads.gapBytes(tmp), "outside every root: auto");
      OrcReads.setGapBytes(777);
      assertEquals(777, OrcReads.gapBytes(slow.resolve("ds/part-0.orc")));
      OrcReads.setGapBytes(-1);
      assertEquals(600_000, OrcReads.gapBytes(slow.resolve("x/../ds/part-0.orc")), "normalized");
    } finally {
      OrcReads.setGapBytes(slow, -1);
      OrcReads.setGapBytes(slower, -1);
    }
    assertEquals(OrcReads.rotational(tmp) ? DiskModel.HDD.breakEvenGapBytes() : 0, OrcReads.gapBytes(Files.createDirectories(slow)), "forgotten");
  }

  /** A drive slower than the model's (130 MB/s: an inner zone, or a slower drive) is worth reading through less. */
  @Test
  void aSlowerDisksBreakEvenIsShorter() {
    DiskModel inner = new DiskModel("inner zone", 7.4, 0.23, 7200, 130e6, DiskModel.HDD.capacityBytes(), 0.2);
    assertTrue(inner.breakEvenGapBytes() < DiskModel.HDD.breakEvenGapBytes() * 0.7,
        inner.breakEvenGapBytes() + " against " + DiskModel.HDD.breakEvenGapBytes());
  }

  @Test
  void aDamagedOrForeignSidecarIsIgnoredAndTheValuesStayRight() throws Exception {
    Path dir = generate();
    Files.delete(dir.resolve(FileTails.FILE_NAME)); // the sidecars beside the files alone
    try (Arena arena = Arena.ofShared()) {
      List<String> names;
      Map<String, Column> expected;
      try (Dataset ds = Dataset.open(dir)) { // closed before the damage: its footers go with it
        names = ds.featureNames();
        expected = ds.table().readChunk(4, names, arena);
      }
      Manifest m = Manifest.read(dir);
      Path first = StripeFooters.sidecar(dir.resolve(m.files().get(0).path()));
      Path second = StripeFooters.sidecar(dir.resolve(m.files().get(1).path()));
      // File 0's sidecar: one byte of a footer flipped. File 1's: file 0's sidecar in its place.
      byte[] damaged = Files.readAllBytes(first);
      Files.copy(first, second, StandardCopyOption.REPLACE_EXISTING);
      damaged[damaged.length / 2] ^= 0x40;
      Files.write(first, damaged);
      for (int chunk : new int[] {1, 4}) { // chunk 1 is in file 0, chunk 4 in file 1
        try (Dataset fresh = Dataset.open(dir); Arena a = Arena.ofConfined()) {
          fresh.table().readChunk(chunk - 1, names.subList(0, 1), a); // opens the file
          long r = OrcReads.requests();
          Map<String, Column> got = fresh.table().readChunk(chunk, names.subList(0, 2), a);
          assertEquals(2, OrcReads.requests() - r, "chunk " + chunk + ": the footer read from the file again");
          if (chunk == 4) {
            for (String n : names) {
              assertSame(expected.get(n), fresh.table().readChunk(4, names, a).get(n), n);
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
    Files.copy(part, other);
    Files.move(other, part, StandardCopyOption.REPLACE_EXISTING);
    assertNotEquals(before, OrcReads.key(part), "the same bytes under the same name, but another file");
  }

  @Test
  void aSidecarThatIsALinkIsNotRead() throws Exception {
    Path dir = generate();
    Manifest.OrcFileInfo info = Manifest.read(dir).files().get(0);
    Path part = dir.resolve(info.path());
    Path sidecar = StripeFooters.sidecar(part);
    Path elsewhere = tmp.resolve("elsewhere.footers");
    Files.move(sidecar, elsewhere);
    Files.createSymbolicLink(sidecar, elsewhere);
    try (org.apache.orc.Reader reader = OrcIo.open(part)) {
      assertEquals(null, StripeFooters.load(part, info.crc32c(), info.bytes(), reader.getStripes()), "a link is refused");
      Files.delete(sidecar);
      Files.move(elsewhere, sidecar);
      assertEquals(reader.getStripes().size(),
          StripeFooters.load(part, info.crc32c(), info.bytes(), reader.getStripes()).stripes(), "the same bytes in place are read");
    }
  }

  /**
   * Issue 51: a part refused at promotion was named for a chunk of another file, since reading
   * chunk N opened the next file for its read-ahead. The chunk of a good file reads; the chunk of
   * the bad file fails under its own name.
   */
  @Test
  void aNextFileThatCannotBeOpenedFailsItsOwnChunkNotTheOneReadBeforeIt() throws Exception {
    Path dir = generate();
    OrcReads.setGapBytes(12345); // a disk that seeks: chunks read in order are read ahead
    Manifest m = Manifest.read(dir);
    Path second = dir.resolve(m.files().get(1).path());
    Files.write(second, new byte[100]); // damaged after import
    try (Dataset ds = Dataset.open(dir); Arena arena = Arena.ofConfined()) {
      List<String> names = ds.featureNames();
      int lastOfFirst = 0;
      while (m.chunks().get(lastOfFirst + 1).file() == 0) {
        lastOfFirst++;
      }
      for (int c = 0; c <= lastOfFirst; c++) {
        assertEquals(names.size(), ds.table().readChunk(c, names, arena).size(), "chunk " + c + " of the good file");
      }
      int bad = lastOfFirst + 1;
      IOException e = org.junit.jupiter.api.Assertions.assertThrows(IOException.class, () -> ds.table().readChunk(bad, names, arena));
      assertTrue(e.getMessage().contains(m.files().get(1).path()), e.getMessage());
    }
  }

  @Test
  void aCursorThatReadFromAChunksStartSeeksBackAndForwardWithTheSameValues() throws Exception {
    Path dir = generate();
    try (Dataset ds = Dataset.open(dir); Arena arena = Arena.ofConfined()) {
      List<String> names = ds.featureNames();
      try (HddTable.Cursor cursor = ds.table().cursor(names)) {
        // Opened to read from the start of chunk 0 (no seeking), then asked for rows behind and ahead.
        Map<String, Column> head = cursor.readRows(0, 1_000, arena);
        Map<String, Column> back = cursor.readRows(200, 300, arena);
        Map<String, Column> ahead = cursor.readRows(3_000, 1_500, arena);
        Map<String, Column> next = cursor.readRows(4_500, 1_000, arena); // continues into chunk 1
        for (String n : names) {
          assertSame(ds.table().readRows(0, 1_000, List.of(n), arena).get(n), head.get(n), n + " head");
          assertSame(ds.table().readRows(200, 300, List.of(n), arena).get(n), back.get(n), n + " back");
          assertSame(ds.table().readRows(3_000, 1_500, List.of(n), arena).get(n), ahead.get(n), n + " ahead");
          assertSame(ds.table().readRows(4_500, 1_000, List.of(n), arena).get(n), next.get(n), n + " next");
        }
      }
    }
  }

  private static void assertSame(Column expected, Column actual, String what) {
    assertEquals(-1, Columns.firstDifference(expected, actual), what);
  }
}
