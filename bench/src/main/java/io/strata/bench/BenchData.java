package io.strata.bench;

import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.files.Manifest;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.tiering.Promoter;
import io.strata.sdk.tiering.SegmentStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Benchmark datasets, generated once per parameter set under {@code $STRATA_BENCH_DATA} (default
 * {@code /tmp/strata-bench-data}) and reused by later forks and runs.
 */
final class BenchData {
  private BenchData() {}

  static Path root() {
    String env = System.getenv("STRATA_BENCH_DATA");
    return Path.of(env != null ? env : "/tmp/strata-bench-data");
  }

  /** A dataset of {@code rows} rows and {@code features} columns, fully promoted to segments. */
  static Path events(long rows, int features, int meanSampleLength) throws IOException {
    Path dir = root().resolve("events-" + rows + "-" + features + "-" + meanSampleLength);
    Path ds = dir.resolve("hdd");
    Path ssd = dir.resolve("ssd");
    Path done = dir.resolve("READY");
    if (!Files.exists(done)) {
      DatasetGenerator.generate(
          ds,
          DatasetGenerator.Options.of("events", rows, 1).withFeatures(features).withMeanSampleLength(meanSampleLength)
              .withReplace(true),
          Progress.NONE);
      try (Dataset d = Dataset.open(ds); SegmentStore s = SegmentStore.open(ssd, false, SegmentFile.Verify.NEVER)) {
        Promoter.promote(d, s, d.featureNames(), null, Progress.NONE);
      }
      Files.writeString(done, Manifest.read(ds).version());
    }
    return dir;
  }
}
