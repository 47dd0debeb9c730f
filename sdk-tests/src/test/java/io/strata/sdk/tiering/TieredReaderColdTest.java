package io.strata.sdk.tiering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.sdk.tier.TierStats;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.format.ColumnBuilder;
import io.strata.sdk.format.Columns;
import io.strata.sdk.format.GatherOrder;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.PageMappings;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Batches whose segment pages are not in memory (dropped from the page cache) are found cold, read
 * ahead, and still read what the ORC files hold; warm batches are left alone.
 */
class TieredReaderColdTest {
  @TempDir Path tmp;

  private static final List<String> FEATURES = List.of("amount", "merchant_category", "is_online", "embedding", "balance");

  @Test
  void coldRangesAndColdSingleRowsAreReadAheadAndReadRight() throws Throwable {
    assumeTrue(System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux"), "Linux's page cache");
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("events", 60_000, 5).withFeatures(10).withChunking(20_000, 1),
        Progress.NONE);
    long[] starts = {41_000, 17, 20_000, 59_990, 33_333};
    int[] lengths = {900, 41, 1_077, 10, 2_000};
    long[] rows = new long[4_000];
    Random rnd = new Random(3);
    for (int k = 0; k < rows.length; k++) {
      rows[k] = rnd.nextInt(60_000);
    }
    Path ssd = tmp.resolve("ssd");
    try (Dataset ds = Dataset.open(dir); Arena arena = Arena.ofShared()) {
      List<Column> orcRanges = TieredReaderRangesTest.read(new TieredReader(ds, null, FEATURES, new TierStats()), starts, lengths, arena);
      long[] chunkFirst = ds.chunks().stream().mapToLong(ChunkInfo::firstRow).toArray();
      GatherOrder order = new GatherOrder().compute(rows, rows.length, chunkFirst, ds.rows());
      List<Column> orcRows = singleRows(new TieredReader(ds, null, List.of("amount", "is_online"), new TierStats()), rows, order,
          arena);
      try (SegmentStore store = SegmentStore.open(ssd, false, SegmentFile.Verify.NEVER)) {
        Promoter.promote(ds, store, FEATURES, List.of(0, 1, 2), Progress.NONE);
      }

      // Ranges: cold after the page cache drops the segments, read ahead, then warm.
      dropFromPageCache(ssd);
      assumeTrue(!anyResident(ssd), "the file system keeps the segments in memory (tmpfs?): nothing is ever cold");
      try (SegmentStore store = SegmentStore.open(ssd, false, SegmentFile.Verify.NEVER);
          TieredReader reader = new TieredReader(ds, store, FEATURES, new TierStats())) {
        int[] offsets = offsets(lengths);
        assertTrue(reader.readAheadIfCold(starts, offsets, starts.length), "the batch is cold");
        assertEquals(1, reader.coldBatches());
        same(orcRanges, TieredReaderRangesTest.read(reader, starts, lengths, arena));
        assertFalse(reader.readAheadIfCold(starts, offsets, starts.length), "the same batch again is warm");
        assertEquals(1, reader.coldBatches());
      }

      // Single rows: the gather reads ahead the rows' pages itself when it finds them cold.
      dropFromPageCache(ssd);
      try (SegmentStore store = SegmentStore.open(ssd, false, SegmentFile.Verify.NEVER);
          TieredReader reader = new TieredReader(ds, store, List.of("amount", "is_online"), new TierStats())) {
        same(orcRows, singleRows(reader, rows, order, arena));
        assertEquals(1, reader.coldBatches(), "the cold batch of single rows was read ahead");
        same(orcRows, singleRows(reader, rows, order, arena));
        assertEquals(1, reader.coldBatches(), "the same rows again are warm");
      }
    }
  }

  private static int[] offsets(int[] lengths) {
    int[] offsets = new int[lengths.length + 1];
    for (int k = 0; k < lengths.length; k++) {
      offsets[k + 1] = offsets[k] + lengths[k];
    }
    return offsets;
  }

  /** The single rows {@code rows} appended by {@code reader} in {@code order}, as built columns (TieredReaderRowsTest too). */
  static List<Column> singleRows(TieredReader reader, long[] rows, GatherOrder order, Arena arena) throws IOException {
    List<ColumnBuilder> builders = reader.builders(arena, rows.length);
    reader.appendSingleRows(rows, rows.length, order, builders);
    List<Column> out = new ArrayList<>();
    for (ColumnBuilder b : builders) {
      out.add(b.build());
    }
    return out;
  }

  /** The columns equal, value for value (TieredReaderRowsTest too). */
  static void same(List<Column> expected, List<Column> got) {
    assertEquals(expected.size(), got.size());
    for (int i = 0; i < expected.size(); i++) {
      assertEquals(expected.get(i).length(), got.get(i).length());
      assertEquals(-1, Columns.firstDifference(expected.get(i), got.get(i)), "column " + i);
    }
  }

  private static List<Path> segments(Path ssd) throws IOException {
    try (Stream<Path> s = Files.walk(ssd)) {
      return s.filter(p -> p.toString().endsWith(".arrow")).toList();
    }
  }

  /** posix_fadvise(DONTNEED) on every segment file: their clean pages that no process maps leave the page cache. */
  @SuppressWarnings("restricted")
  private static void dropFromPageCache(Path ssd) throws Throwable {
    Linker linker = Linker.nativeLinker();
    MethodHandle open = linker.downcallHandle(linker.defaultLookup().find("open").orElseThrow(),
        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT), Linker.Option.firstVariadicArg(2));
    MethodHandle fadvise = linker.downcallHandle(linker.defaultLookup().find("posix_fadvise").orElseThrow(),
        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT));
    MethodHandle close = linker.downcallHandle(linker.defaultLookup().find("close").orElseThrow(),
        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    for (Path p : segments(ssd)) {
      try (Arena a = Arena.ofConfined()) {
        int fd = (int) open.invokeExact(a.allocateFrom(p.toString()), 0);
        assertTrue(fd >= 0, "open " + p);
        assertEquals(0, (int) fadvise.invokeExact(fd, 0L, 0L, 4)); // POSIX_FADV_DONTNEED
        int closed = (int) close.invokeExact(fd);
        assertEquals(0, closed);
      }
    }
  }

  /** Whether any page of the segments' first pages is still in memory. */
  private static boolean anyResident(Path ssd) throws IOException {
    for (Path p : segments(ssd)) {
      try (Arena a = Arena.ofConfined(); FileChannel ch = FileChannel.open(p)) {
        MemorySegment map = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), a);
        for (long at = 0; at < map.byteSize(); at += 4096) {
          if (PageMappings.resident(map, at, 1)) {
            return true;
          }
        }
      }
    }
    return false;
  }
}
