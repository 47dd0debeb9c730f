package io.strata.tools;

import io.strata.sdk.files.HddTable;
import io.strata.sdk.files.Manifest;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.sdk.format.Columns;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.Loader;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A generated dataset written as Parquet by {@link ParquetExport} holds the ORC dataset's rows and
 * values, every feature type the generator makes, and a job reads the same batches from either.
 */
class ParquetExportTest {
  @TempDir Path tmp;

  @Test
  void theParquetCopyHoldsTheSameRowsAndTheLoaderReadsTheSameBatches() throws Exception {
    Path orcDir = tmp.resolve("orc");
    DatasetGenerator.generate(orcDir, DatasetGenerator.Options.of("events", 12_000, 5).withFeatures(14).withChunking(4_000, 2),
        Progress.NONE);
    try (Dataset orc = Dataset.open(orcDir)) {
      Manifest m = ParquetExport.export(orc.directory(), orc.manifest(), orc.table(), tmp.resolve("pq"), "events-pq", Progress.NONE);
      assertEquals(Manifest.FileFormat.PARQUET, m.fileFormat());
      assertEquals(orc.chunks().size(), m.chunks().size());
      try (Dataset pq = Dataset.open(tmp.resolve("pq")); Arena arena = Arena.ofConfined()) {
        assertEquals(orc.featureNames(), pq.featureNames());
        for (String f : orc.featureNames()) {
          assertEquals(orc.feature(f).type(), pq.feature(f).type(), f);
        }
        Map<String, Column> a = orc.table().readRows(0, (int) orc.rows(), orc.featureNames(), arena);
        Map<String, Column> b = pq.table().readRows(0, (int) pq.rows(), pq.featureNames(), arena);
        for (String f : orc.featureNames()) {
          assertEquals(-1, Columns.firstDifference(a.get(f), b.get(f)), f);
        }
        assertTrue(pq.sampleIndex().isPresent(), "the sample index comes along");
        // Short ranges anywhere (parquet-java wrote offset indexes: read page by page), at row groups' ends and across them.
        java.util.Random rnd = new java.util.Random(3);
        try (HddTable.Cursor co = orc.table().cursor(orc.featureNames()); HddTable.Cursor cp = pq.table().cursor(pq.featureNames())) {
          for (int k = 0; k < 300; k++) {
            int count = 1 + rnd.nextInt(k % 3 == 0 ? 5 : 900);
            long first = k % 10 == 0 ? m.chunks().get(k % m.chunks().size()).endRow() - count : rnd.nextLong(orc.rows() - count);
            try (Arena part = Arena.ofConfined()) {
              Map<String, Column> x = co.readRows(first, count, part);
              Map<String, Column> y = cp.readRows(first, count, part);
              for (String f : orc.featureNames()) {
                assertEquals(-1, Columns.firstDifference(x.get(f), y.get(f)), f + " rows [" + first + ", " + (first + count) + ")");
              }
            }
          }
        }
        // Whole samples, shuffled: the same batches from both formats.
        List<String> features = List.of("sample_id", "amount", "embedding", "merchant_category");
        try (Loader x = Loader.builder(orc).features(features).sampleBatches(4).seed(9).build();
            Loader y = Loader.builder(pq).features(features).sampleBatches(4).seed(9).build()) {
          var ix = x.iterator();
          var iy = y.iterator();
          int batches = 0;
          while (ix.hasNext()) {
            assertTrue(iy.hasNext());
            try (Batch bx = ix.next(); Batch by = iy.next()) {
              for (String f : features) {
                assertEquals(-1, Columns.firstDifference(bx.column(f), by.column(f)), f + " batch " + batches);
              }
            }
            batches++;
          }
          assertTrue(!iy.hasNext() && batches > 3, "batches: " + batches);
        }
      }
    }
  }
}
