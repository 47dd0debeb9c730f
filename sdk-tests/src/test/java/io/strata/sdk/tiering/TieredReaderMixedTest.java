package io.strata.sdk.tiering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.Progress;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.format.ColumnBuilder;
import io.strata.sdk.format.Columns;
import io.strata.sdk.format.GatherOrder;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.tier.Tier;
import io.strata.sdk.tier.TierStats;
import io.strata.tools.DatasetGenerator;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A batch whose features are resident in some chunks and not in others (issue 58's fleet: the
 * node holds a quarter of the data) is assembled feature by feature, the chunks not resident
 * decoded whole from the slow tier: shuffled single rows and ranges hold, value for value, what
 * the chunks hold row by row, with each tier's bytes counted; a reader whose block budget cannot
 * hold the chunks falls back to reading unit by unit, with the same values. A node hosting the
 * loaders in its JVM finds what a reader decoded whole ({@link DecodedChunks}), readable until its
 * promoter lets go even after the reader dropped it.
 */
class TieredReaderMixedTest {
  @TempDir Path tmp;

  private static final List<String> FIXED = List.of("sample_id", "event_time", "amount");
  private static final List<String> RANGES = List.of("amount", "merchant_category", "is_online", "embedding");

  @Test
  void featuresResidentInSomeChunksAreGatheredWithTheOthersDecodedWhole() throws IOException {
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("events", 9_000, 5).withFeatures(10).withChunking(3_000, 1),
        Progress.NONE);
    SplittableRandom random = new SplittableRandom(23);
    long[] rows = new long[2_000];
    for (int k = 0; k < rows.length; k++) {
      rows[k] = random.nextLong(9_000);
    }
    long[] starts = new long[60];
    int[] lengths = new int[starts.length];
    for (int k = 0; k < starts.length; k++) {
      lengths[k] = 1 + random.nextInt(300);
      starts[k] = random.nextLong(9_000 - lengths[k]);
    }
    try (Dataset ds = Dataset.open(dir);
        SegmentStore store = SegmentStore.open(tmp.resolve("ssd"), false, SegmentFile.Verify.FIRST_OPEN);
        Arena arena = Arena.ofShared()) {
      // amount resident in chunk 1 only, event_time in chunks 0 and 2, embedding in chunk 0: every
      // batch mixes resident and decoded chunks of one feature.
      Promoter.promote(ds, store, List.of("amount"), List.of(1), Progress.NONE);
      Promoter.promote(ds, store, List.of("event_time"), List.of(0, 2), Progress.NONE);
      Promoter.promote(ds, store, List.of("embedding"), List.of(0), Progress.NONE);
      GatherOrder order = new GatherOrder().compute(rows, rows.length, ds.table().chunkFirstRows(), ds.rows());

      List<Column> expectRows = byRow(ds, FIXED, rows, null, arena);
      TierStats stats = new TierStats();
      try (TieredReader reader = new TieredReader(ds, store, FIXED, stats)) {
        TieredReaderColdTest.same(expectRows, TieredReaderColdTest.singleRows(reader, rows, order, arena));
        assertTrue(stats.bytes(Tier.SSD) > 0 && stats.bytes(Tier.HDD) > 0, "both tiers: " + stats.bytes(Tier.SSD) + ", " + stats.bytes(Tier.HDD));
        assertEquals(rows.length * 8L * FIXED.size(), stats.bytes(Tier.SSD) + stats.bytes(Tier.HDD), "every value counted once");
        assertTrue(stats.orcDecodedBytes() > 0);
      }
      // A block budget of one byte: the chunks cannot be held for the batch, so single rows are read one by one.
      try (TieredReader reader = new TieredReader(ds, store, FIXED, new TierStats(), Map.of(), 1)) {
        TieredReaderColdTest.same(expectRows, TieredReaderColdTest.singleRows(reader, rows, order, arena));
      }

      List<Column> expectRanges = byRow(ds, RANGES, starts, lengths, arena);
      try (TieredReader reader = new TieredReader(ds, store, RANGES, new TierStats())) {
        TieredReaderColdTest.same(expectRanges, TieredReaderRangesTest.read(reader, starts, lengths, arena));
      }
      try (TieredReader reader = new TieredReader(ds, store, RANGES, new TierStats(), Map.of(), 1)) {
        TieredReaderColdTest.same(expectRanges, TieredReaderRangesTest.read(reader, starts, lengths, arena));
      }

      // Offered to a promoter in this JVM: what the reader decoded whole, held past the reader's close.
      DecodedChunks.enable();
      DecodedChunks.Lease lease;
      try (TieredReader reader = new TieredReader(ds, store, FIXED, new TierStats())) {
        TieredReaderColdTest.singleRows(reader, rows, order, arena);
        assertNull(DecodedChunks.take(ds.name(), ds.version(), 1, "amount"), "resident there: never decoded");
        assertNull(DecodedChunks.take(ds.name(), "another version", 0, "amount"));
        lease = DecodedChunks.take(ds.name(), ds.version(), 0, "amount");
        assertNotNull(lease, "chunk 0 of amount was decoded whole");
      }
      try (lease) {
        assertNull(DecodedChunks.take(ds.name(), ds.version(), 0, "amount"), "withdrawn when the reader dropped it");
        Column want = ds.readChunk(0, List.of("amount"), arena).get("amount");
        assertEquals(-1, Columns.firstDifference(want, lease.column()), "still readable while leased");
      }
    }
  }

  /** The features' values at single rows ({@code lengths} null) or ranges, appended row by row from whole decoded chunks. */
  private static List<Column> byRow(Dataset ds, List<String> features, long[] starts, int[] lengths, Arena arena) throws IOException {
    List<Column> out = new ArrayList<>();
    for (String f : features) {
      int total = 0;
      for (int k = 0; k < starts.length; k++) {
        total += lengths == null ? 1 : lengths[k];
      }
      ColumnBuilder b = new ColumnBuilder(ds.feature(f).type(), arena, total);
      Column[] chunks = new Column[ds.chunks().size()];
      for (ChunkInfo c : ds.chunks()) {
        chunks[c.index()] = ds.readChunk(c.index(), List.of(f), arena).get(f);
      }
      for (int k = 0; k < starts.length; k++) {
        int n = lengths == null ? 1 : lengths[k];
        for (long row = starts[k]; row < starts[k] + n; row++) {
          ChunkInfo c = ds.chunks().get(ds.chunkOf(row));
          b.appendRange(chunks[c.index()], (int) (row - c.firstRow()), 1);
        }
      }
      out.add(b.build());
    }
    return out;
  }
}
