package io.strata.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Progress;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.files.DiskModel;
import io.strata.tools.DatasetGenerator;
import io.strata.tools.ParquetExport;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the node tells its policy a miss costs the slow tier: a chunk's stored bytes from the
 * Parquet footers plus one read's positioning at an HDD's rate, so that a small column chunk,
 * which costs a disk almost a whole request, is not weighed as almost free.
 */
class SlowCostsTest {
  @TempDir Path tmp;

  @Test
  void aMissCostsItsStoredBytesAndOneReadsPositioning() throws Exception {
    Path orc = tmp.resolve("hdd/events");
    DatasetGenerator.generate(orc, DatasetGenerator.Options.of("events", 6_000, 2).withFeatures(6).withChunking(2_000, 1),
        Progress.NONE);
    Path pq = tmp.resolve("hdd/events-parquet");
    try (Dataset o = Dataset.open(orc)) {
      ParquetExport.export(o.directory(), o.manifest(), o.table(), pq, "events", Progress.NONE);
    }
    try (Dataset ds = Dataset.open(pq)) {
      long perRead = SlowCosts.requestBytes(ds);
      // DiskModel.HDD: 0.2 ms command overhead, a 7.4 ms average seek and half a turn at 7,200 rpm, at 200 MB/s.
      assertEquals(Math.round((0.2e-3 + 7.4e-3 + 30.0 / 7200) * 200e6), perRead);
      assertEquals(Math.round(DiskModel.HDD.firstRequestSeconds(0) * DiskModel.HDD.bytesPerSecond()), perRead);
      String feature = ds.featureNames().get(1);
      long[] cost = SlowCosts.costs(ds, feature);
      assertEquals(ds.chunks().size(), cost.length);
      for (int c = 0; c < cost.length; c++) {
        long stored = ds.table().storedBytes(c, feature);
        assertTrue(stored > 0, "the footer tells chunk " + c + "'s bytes");
        assertEquals(stored + perRead, cost[c], "chunk " + c);
        // A column chunk of 2,000 rows: the disk's positioning, not its bytes, is what a miss costs.
        assertTrue(cost[c] > 10 * stored, "chunk " + c + ": " + stored + " stored bytes, cost " + cost[c]);
      }
    }
  }
}
