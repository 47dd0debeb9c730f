package io.strata.sdk.files;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Progress;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.internal.Confinement;
import io.strata.tools.DatasetGenerator;
import io.strata.tools.DatasetImporter;
import java.nio.file.Path;
import java.util.List;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link HddTable#storedBytes}: what a read of one feature of one chunk fetches from the slow tier,
 * the figure the cache node weighs admissions by. Over every feature and chunk the figures add up
 * to the files' column data of the dataset's features, each byte counted once.
 */
class StoredBytesTest {
  @TempDir Path tmp;

  @Test
  void orcFeaturesAddUpToEveryRecordedStreamOfTheirColumns() throws Exception {
    Path dir = tmp.resolve("orc");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("stored", 30_000, 5).withFeatures(8).withChunking(5_000, 3),
        Progress.NONE);
    Manifest m = Manifest.read(dir);
    long recorded = 0;
    StreamChecksums sums = StreamChecksums.load(dir, m, Confinement.NONE);
    for (int f = 0; f < m.files().size(); f++) {
      StreamChecksums.File file = sums.file(f);
      for (int i = 0; i < file.streams(); i++) {
        if (file.column(i) > 0) {
          recorded += file.stream(i)[1];
        }
      }
    }
    long total = 0;
    try (Dataset ds = Dataset.open(dir)) {
      for (int c = 0; c < ds.chunks().size(); c++) {
        for (String f : ds.featureNames()) {
          long b = ds.table().storedBytes(c, f);
          assertTrue(b > 0, f + " of chunk " + c + ": " + b);
          total += b;
        }
      }
    }
    assertEquals(recorded, total);
  }

  @Test
  void parquetFeaturesAreTheirColumnChunksTotalSizes() throws Exception {
    Path file = ParquetConformanceTest.dir().resolve("pyarrow/dict-snappy.parquet");
    Path dir = tmp.resolve("pq");
    DatasetImporter.importFiles(new DatasetImporter.Options("pq", List.of(file), dir, null, false, false), Progress.NONE);
    ParquetMetadata footer = ParquetIo.footer(file, Confinement.NONE);
    long columns = 0;
    long total = 0;
    try (Dataset ds = Dataset.open(dir)) {
      assertTrue(ds.featureNames().size() >= 2, ds.featureNames().toString());
      for (BlockMetaData b : footer.getBlocks()) {
        for (ColumnChunkMetaData c : b.getColumns()) {
          if (ds.featureNames().contains(c.getPath().toArray()[0])) {
            columns += c.getTotalSize();
          }
        }
      }
      for (int c = 0; c < ds.chunks().size(); c++) {
        for (String f : ds.featureNames()) {
          total += ds.table().storedBytes(c, f);
        }
      }
    }
    assertEquals(columns, total);
  }
}
