package io.strata.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.sdk.tier.SegmentSource;
import io.strata.sdk.tier.Tier;
import io.strata.sdk.tier.TierStats;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.format.Columns;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.tiering.TieredReader;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What every segment source promises a reader, checked against each of them (a local segment
 * store, a cache node): leased segments hold the values ORC holds; an eviction never pulls data
 * from under a reader, and the reader lets go of it when it moves on; a damaged file is never
 * served, whether damaged before it was mapped or after (it is then read from ORC, and the source
 * drops it); a restart keeps the segments.
 */
abstract class SegmentSourceContract {
  /** One segment source and the owner of its tier, made by each implementation's test. */
  interface Fixture extends AutoCloseable {
    /** The source a reader uses (the same object until {@link #restart}). */
    SegmentSource source() throws IOException;

    void promote(List<String> features, List<Integer> chunks) throws Exception;

    void evict(int chunk) throws Exception;

    /** The segment file holding {@code feature} of {@code chunk}, as the tier's owner knows it. */
    Path file(String feature, int chunk) throws Exception;

    /** Whether the tier's owner lists {@code feature} of {@code chunk} as resident. */
    boolean resident(String feature, int chunk) throws Exception;

    /**
     * Whether the tier's owner lists {@code feature} of {@code chunk} as resident in {@code file}
     * (a damaged file leaves the tier; the owner may place the chunk again, in a new file).
     */
    default boolean residentIn(String feature, int chunk, Path file) throws Exception {
      return resident(feature, chunk) && file(feature, chunk).equals(file);
    }

    long unlinkedMappedBytes() throws Exception;

    /** Closes the owner and the source and opens them again on the same directories. */
    void restart() throws Exception;

    @Override
    void close() throws IOException;
  }

  static final List<String> FEATURES = List.of("amount", "merchant_category", "embedding");
  static final int CHUNK_ROWS = 3_000;

  @TempDir Path tmp;
  Dataset ds;
  Fixture fx;

  abstract Fixture fixture(Path home, Dataset ds) throws Exception;

  /** The dataset the contract runs on, from the generated ORC one in {@code generated}: that one itself, unless a subclass says otherwise. */
  Dataset open(Path generated) throws IOException {
    return Dataset.open(generated);
  }

  @BeforeEach
  void setUp() throws Exception {
    Path dir = tmp.resolve("hdd/events");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("events", 9_000, 2).withFeatures(8).withChunking(CHUNK_ROWS, 1),
        Progress.NONE);
    ds = open(dir);
    fx = fixture(tmp, ds);
  }

  @AfterEach
  void tearDown() throws Exception {
    if (fx != null) {
      fx.close();
    }
    ds.close();
  }

  /** Rows read through a reader of the source, compared with the same rows read from ORC alone. */
  private void assertSameAsOrc(Map<String, Column> read, long start, int count, Arena arena) throws IOException {
    try (TieredReader orc = new TieredReader(ds, null, FEATURES, new TierStats())) {
      Map<String, Column> expected = orc.readRows(start, count, arena);
      for (String f : FEATURES) {
        assertEquals(-1, Columns.firstDifference(expected.get(f), read.get(f)), f + " rows [" + start + ", " + (start + count) + ")");
      }
    }
  }

  @Test
  void leasedSegmentsHoldTheValuesOrcHolds() throws Exception {
    fx.promote(FEATURES, List.of(0, 2));
    TierStats stats = new TierStats();
    try (Arena arena = Arena.ofConfined(); TieredReader r = new TieredReader(ds, fx.source(), FEATURES, stats)) {
      Map<String, Column> all = r.readRows(0, (int) ds.rows(), arena);
      assertSameAsOrc(all, 0, (int) ds.rows(), arena);
      assertTrue(stats.bytes(Tier.SSD) > 0 && stats.bytes(Tier.HDD) > 0, stats.toString());
    }
  }

  @Test
  void anEvictionNeverPullsDataFromUnderAReaderWhichLetsGoWhenItMovesOn() throws Exception {
    fx.promote(FEATURES, List.of(0));
    TierStats stats = new TierStats();
    try (Arena arena = Arena.ofConfined(); TieredReader r = new TieredReader(ds, fx.source(), FEATURES, stats)) {
      r.readRows(100, 50, arena);
      long ssd = stats.bytes(Tier.SSD);
      assertTrue(ssd > 0);
      fx.evict(0);
      fx.source().generation(); // the source learns of the eviction
      assertTrue(fx.unlinkedMappedBytes() > 0, "the unlinked segment still mapped by the reader is counted");
      // The same rows again, before the reader moves on: still from the (unlinked) mapping.
      Map<String, Column> again = r.readRows(100, 50, arena);
      assertEquals(2 * ssd, stats.bytes(Tier.SSD));
      assertSameAsOrc(again, 100, 50, arena);
      r.refresh();
      assertTrue(r.releasedLeases() >= FEATURES.size(), "every lease on the evicted chunk is released");
      assertEquals(0, fx.unlinkedMappedBytes(), "released: nothing unlinked stays mapped");
      long hdd = stats.bytes(Tier.HDD);
      Map<String, Column> after = r.readRows(100, 50, arena);
      // A node may promote the chunk again at once (the reader's reports say it is read): then
      // the rows come from the new segment; otherwise from ORC. Right either way.
      if (!fx.resident("amount", 0)) {
        assertTrue(stats.bytes(Tier.HDD) > hdd, "the evicted chunk is read from ORC");
      }
      assertSameAsOrc(after, 100, 50, arena);
    }
  }

  @Test
  void aSegmentWrittenAgainAfterAnEvictionIsANewFileAndReadersLetGoOfTheOld() throws Exception {
    fx.promote(FEATURES, List.of(0));
    Path first = fx.file("amount", 0);
    try (Arena arena = Arena.ofConfined(); TieredReader r = new TieredReader(ds, fx.source(), FEATURES, new TierStats())) {
      r.readRows(100, 50, arena);
      fx.evict(0);
      fx.promote(FEATURES, List.of(0));
      Path second = fx.file("amount", 0);
      assertFalse(first.equals(second), "a segment written again has a new name: " + second);
      fx.source().generation();
      r.refresh();
      assertTrue(r.releasedLeases() >= 1, "the reader let go of the evicted file");
      assertEquals(0, fx.unlinkedMappedBytes(), "nothing unlinked stays mapped");
      assertSameAsOrc(r.readRows(100, 50, arena), 100, 50, arena);
    }
  }

  @Test
  void aFileDamagedBeforeItIsMappedIsNeverServed() throws Exception {
    fx.promote(FEATURES, List.of(0));
    Path file = fx.file("amount", 0);
    List<String> inFile = new ArrayList<>();
    for (String f : FEATURES) {
      if (fx.file(f, 0).equals(file)) {
        inFile.add(f);
      }
    }
    long size;
    try (FileChannel ch = writable(file)) {
      size = ch.size();
      ByteBuffer b = ByteBuffer.allocate(1);
      ch.read(b, size / 2);
      b.put(0, (byte) (b.get(0) ^ 0x5a));
      ch.write(b.rewind(), size / 2);
    }
    // Verification on first open is once per (path, inode, size, modification time) and process:
    // the node in this JVM checked the file moments ago, within the file system's timestamp
    // granularity. A job's own process checks it on its first open; here the change is dated.
    Files.setLastModifiedTime(file,
        FileTime.fromMillis(Files.getLastModifiedTime(file).toMillis() + 2_000));
    TierStats stats = new TierStats();
    try (Arena arena = Arena.ofConfined(); TieredReader r = new TieredReader(ds, fx.source(), inFile, stats)) {
      Map<String, Column> read = r.readRows(0, CHUNK_ROWS, arena);
      try (TieredReader orc = new TieredReader(ds, null, inFile, new TierStats())) {
        Map<String, Column> expected = orc.readRows(0, CHUNK_ROWS, arena);
        for (String f : inFile) {
          assertEquals(-1, Columns.firstDifference(expected.get(f), read.get(f)), f);
        }
      }
      // The owner may have found the damage first (a node's background scrub) and placed the chunk
      // again, in a new file: rows served from the SSD then came from that one (the values equal
      // ORC's, checked above). Otherwise nothing came from the SSD.
      boolean placedAgain = fx.resident("amount", 0) && !fx.residentIn("amount", 0, file);
      if (!placedAgain) {
        assertEquals(0, stats.bytes(Tier.SSD), "nothing was served from the damaged segment");
      }
    }
    assertFalse(fx.residentIn("amount", 0, file), "the damaged segment was dropped");
  }

  @Test
  void aFileThatShrinksUnderAReaderIsReadFromOrcAndDropped() throws Exception {
    fx.promote(FEATURES, List.of(0));
    Path file = fx.file("amount", 0);
    try (Arena arena = Arena.ofConfined(); TieredReader r = new TieredReader(ds, fx.source(), FEATURES, new TierStats())) {
      r.readRows(0, CHUNK_ROWS, arena);
      try (FileChannel ch = writable(file)) {
        ch.truncate(ch.size() / 3); // pages past the new end now fault when touched
      }
      Map<String, Column> read = r.readRows(0, CHUNK_ROWS, arena);
      assertSameAsOrc(read, 0, CHUNK_ROWS, arena);
      assertTrue(r.damagedChunks() >= 1, "the fault was caught: " + r.damagedChunks());
    }
    assertFalse(fx.residentIn("amount", 0, file), "the damaged segment was dropped");
  }

  @Test
  void anOffsetDamagedUnderAReaderIsReadFromOrcAndDropped() throws Exception {
    fx.promote(FEATURES, List.of(0));
    Path file = fx.file("merchant_category", 0);
    try (Arena arena = Arena.ofConfined(); TieredReader r = new TieredReader(ds, fx.source(), FEATURES, new TierStats())) {
      r.readRows(100, 50, arena);
      long at;
      try (SegmentFile f = SegmentFile.open(file, SegmentFile.Verify.NEVER)) {
        Column c = f.column("merchant_category");
        at = f.fileOffset(c.offsets()) + 4L * (c.offset() + 150); // the end offset of the rows read
      }
      try (FileChannel ch = writable(file)) {
        ch.write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, 0x10000000), at);
      }
      Map<String, Column> read = r.readRows(100, 50, arena);
      assertSameAsOrc(read, 100, 50, arena);
      assertEquals(1, r.damagedChunks());
    }
    assertFalse(fx.residentIn("merchant_category", 0, file), "the damaged segment was dropped");
  }

  @Test
  void aRestartKeepsTheSegments() throws Exception {
    fx.promote(FEATURES, List.of(1));
    Path before = fx.file("embedding", 1);
    fx.restart();
    assertTrue(fx.resident("embedding", 1));
    assertEquals(before, fx.file("embedding", 1));
    TierStats stats = new TierStats();
    try (Arena arena = Arena.ofConfined(); TieredReader r = new TieredReader(ds, fx.source(), FEATURES, stats)) {
      Map<String, Column> read = r.readRows(CHUNK_ROWS, CHUNK_ROWS, arena);
      assertSameAsOrc(read, CHUNK_ROWS, CHUNK_ROWS, arena);
      assertEquals(0, stats.bytes(Tier.HDD), "all from the SSD tier after the restart");
    }
  }

  /** Segments land read-only; damage in these tests comes from outside (a disk fault, root). */
  static FileChannel writable(Path file) throws IOException {
    String mode = PosixFilePermissions.toString(Files.getPosixFilePermissions(file));
    assertEquals("r--r--r--", mode, file + " landed with mode " + mode);
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
    return FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
  }
}
