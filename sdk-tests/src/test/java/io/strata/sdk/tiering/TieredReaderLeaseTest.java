package io.strata.sdk.tiering;

import io.strata.sdk.tier.Tier;
import io.strata.sdk.tier.TierStats;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Column;
import io.strata.sdk.format.Columns;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.format.SegmentFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A reader gives up the segments its store evicted once it moves on, and reads them from ORC again. */
class TieredReaderLeaseTest {
  @TempDir Path tmp;

  @Test
  void evictedSegmentsAreReleasedBetweenBatches() throws IOException {
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("events", 9_000, 2).withFeatures(8).withChunking(3_000, 1),
        Progress.NONE);
    List<String> features = List.of("amount", "quantity");
    try (Dataset ds = Dataset.open(dir);
        SegmentStore store = SegmentStore.open(tmp.resolve("ssd"), false, SegmentFile.Verify.FIRST_OPEN);
        Arena arena = Arena.ofConfined()) {
      Promoter.promote(ds, store, features, List.of(0, 1), Progress.NONE);
      TierStats stats = new TierStats();
      try (TieredReader reader = new TieredReader(ds, store, features, stats)) {
        Map<String, Column> fromSsd = reader.readRows(100, 50, arena);
        assertTrue(stats.bytes(Tier.SSD) > 0);
        int mapped = store.mappedCount();
        assertTrue(mapped >= 1, "chunk 0 is mapped while the reader holds it");
        for (SegmentRef ref : store.segments()) {
          if (ref.info().chunk() == 0) {
            store.remove(ref);
          }
        }
        assertEquals(mapped, store.mappedCount(), "an eviction never unmaps under a reader");
        reader.refresh();
        assertEquals(mapped - 1, store.mappedCount(), "the evicted segment is unmapped once the reader moves on");
        assertEquals(features.size(), reader.releasedLeases(), "one lease per feature of the chunk");
        long hdd = stats.bytes(Tier.HDD);
        Map<String, Column> fromOrc = reader.readRows(100, 50, arena);
        assertTrue(stats.bytes(Tier.HDD) > hdd, "the chunk is read from ORC again");
        for (String f : features) {
          assertEquals(-1, Columns.firstDifference(fromSsd.get(f), fromOrc.get(f)), f);
        }
        reader.readRows(3_100, 10, arena);
        reader.refresh();
        assertEquals(features.size(), reader.releasedLeases(), "chunk 1 is still resident: its lease stays");
      }
    }
  }
}
