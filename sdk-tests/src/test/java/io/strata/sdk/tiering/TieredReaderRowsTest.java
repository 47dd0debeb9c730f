package io.strata.sdk.tiering;

import static io.strata.sdk.tiering.TieredReaderColdTest.same;
import static io.strata.sdk.tiering.TieredReaderColdTest.singleRows;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Column;
import io.strata.sdk.Progress;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.format.GatherOrder;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.tier.Tier;
import io.strata.sdk.tier.TierStats;
import io.strata.tools.DatasetGenerator;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Shuffled single rows of several features of 8 bytes, gathered from the SSD tier in one pass a run
 * (FusedGather), hold what the ORC files hold in the batch's order; a segment cut short under the
 * reader (a fault in the middle of that pass) undoes the pass, and the rows are read again, the cut
 * chunk's from ORC.
 */
class TieredReaderRowsTest {
  @TempDir Path tmp;

  private static final List<String> FEATURES = List.of("sample_id", "event_time", "amount");

  @Test
  void singleRowsGatheredInOnePassEqualOrcAndSurviveASegmentCutUnderTheReader() throws IOException {
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("events", 9_000, 5).withFeatures(10).withChunking(3_000, 1),
        Progress.NONE);
    SplittableRandom random = new SplittableRandom(17);
    long[] rows = new long[2_000];
    for (int k = 0; k < rows.length; k++) {
      rows[k] = random.nextLong(9_000);
    }
    try (Dataset ds = Dataset.open(dir);
        SegmentStore store = SegmentStore.open(tmp.resolve("ssd"), false, SegmentFile.Verify.FIRST_OPEN);
        Arena arena = Arena.ofShared()) {
      GatherOrder order = new GatherOrder().compute(rows, rows.length, ds.table().chunkFirstRows(), ds.rows());
      assertEquals(3, order.runs(), "rows of every chunk");
      List<Column> orc = singleRows(new TieredReader(ds, null, FEATURES, new TierStats()), rows, order, arena);
      Promoter.promote(ds, store, FEATURES, null, Progress.NONE);
      TierStats stats = new TierStats();
      try (TieredReader reader = new TieredReader(ds, store, FEATURES, stats)) {
        same(orc, singleRows(reader, rows, order, arena));
        assertEquals(0, stats.bytes(Tier.HDD), "nothing from ORC");
        assertEquals(rows.length * 8L * FEATURES.size(), stats.bytes(Tier.SSD), "every value from the SSD tier, counted once");

        // The segment of chunk 2 cut to its first page while the reader has it mapped: the pass
        // faults part-way (the JVM's InternalError on a mapping past the file's end).
        SegmentRef victim = store.segments().stream()
            .filter(r -> r.info().chunk() == 2 && r.holds("amount")).findFirst().orElseThrow();
        try (FileChannel ch = FileChannel.open(victim.path(), StandardOpenOption.WRITE)) {
          ch.truncate(4096);
        }
        long hdd = stats.bytes(Tier.HDD);
        same(orc, singleRows(reader, rows, order, arena));
        assertTrue(reader.damagedChunks() >= 1, "the cut segment is found");
        assertTrue(stats.bytes(Tier.HDD) > hdd, "chunk 2 came from ORC");
      }
    }
  }
}
