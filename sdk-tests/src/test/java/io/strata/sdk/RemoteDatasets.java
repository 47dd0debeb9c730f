package io.strata.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.format.Columns;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.Loader;
import io.strata.sdk.loader.LoaderBuilder;
import io.strata.sdk.tiering.Promoter;
import io.strata.sdk.tiering.SegmentStore;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/** What the tests of every remote file system (HDFS, S3) check of a dataset read there against its local copy. */
public final class RemoteDatasets {
  private RemoteDatasets() {}

  /**
   * The dataset at {@code remote} reads as its local copy at {@code local}: every value from its
   * files (no SSD tier), in order and as shuffled single rows, and again after three of its chunks
   * were promoted from there to a local SSD tier at {@code ssd}.
   */
  public static void readsAsItsLocalCopy(Path local, Path remote, Path ssd) throws IOException {
    try (Dataset a = Dataset.open(local); Dataset b = Dataset.open(remote)) {
      assertEquals(a.version(), b.version());
      assertEquals(remote, b.directory());
      same(Loader.builder(a).features(a.featureNames()).rowBatches(4096, false), Loader.builder(b).features(b.featureNames())
          .rowBatches(4096, false), 8);
      same(Loader.builder(a).features(a.featureNames()).rowBatches(1024, true).seed(3),
          Loader.builder(b).features(b.featureNames()).rowBatches(1024, true).seed(3), 30);
      try (SegmentStore store = SegmentStore.open(ssd, false, SegmentFile.Verify.FIRST_OPEN)) {
        Promoter.promote(b, store, b.featureNames(), List.of(0, 1, 2), Progress.NONE);
        same(Loader.builder(a).features(a.featureNames()).rowBatches(1024, true).seed(4),
            Loader.builder(b).features(b.featureNames()).segments(store).rowBatches(1024, true).seed(4), 30);
      }
    }
  }

  /** The first {@code batches} batches of two loaders hold the same values. */
  private static void same(LoaderBuilder expected, LoaderBuilder actual, int batches) throws IOException {
    try (Loader x = expected.build(); Loader y = actual.build()) {
      var xi = x.iterator();
      var yi = y.iterator();
      for (int k = 0; k < batches && xi.hasNext(); k++) {
        try (Batch bx = xi.next(); Batch by = yi.next()) {
          assertEquals(bx.rows(), by.rows());
          for (String f : bx.featureNames()) {
            assertEquals(-1, Columns.firstDifference(bx.column(f), by.column(f)), "batch " + k + ", feature " + f);
          }
        }
      }
    }
  }
}
