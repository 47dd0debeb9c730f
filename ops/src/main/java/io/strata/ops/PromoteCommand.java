package io.strata.ops;

import io.strata.sdk.Dataset;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.tier.Promoter;
import io.strata.sdk.tier.SegmentStore;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code strata promote}: move feature streams of a dataset to the SSD tier. */
@Command(name = "promote", mixinStandardHelpOptions = true,
    description = "Promote feature streams of a dataset from ORC (HDD tier) to segments (SSD tier).")
final class PromoteCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--dataset", required = true, description = "Dataset directory.")
  Path dataset;

  @Option(names = "--ssd", required = true, description = "SSD tier directory (segment store).")
  Path ssd;

  @Option(names = "--features", split = ",", description = "Features to promote (default: all served features).")
  List<String> features;

  @Option(names = "--chunks", split = ",", description = "Chunk indexes to promote (default: all).")
  List<Integer> chunks;

  @Override
  public Integer call() throws Exception {
    PrintWriter w = spec.commandLine().getOut();
    try (Dataset ds = Dataset.open(dataset); SegmentStore store = SegmentStore.open(ssd, false, SegmentFile.Verify.FIRST_OPEN)) {
      List<String> f = features != null ? features : ds.featureNames();
      if (chunks != null) {
        for (int c : chunks) {
          if (c < 0 || c >= ds.chunks().size()) {
            throw new IllegalArgumentException("chunk " + c + " is outside " + ds.name() + " (0.." + (ds.chunks().size() - 1) + ")");
          }
        }
      }
      Terminal.Bar bar = new Terminal.Bar("promote", spec.commandLine().getErr());
      Promoter.Report r = Promoter.promote(ds, store, f, chunks, bar);
      bar.done();
      w.printf("promoted %d features of %s: %d chunks, %s rows, %s of segments in %s (%.1f MB/s)%n", f.size(), ds.name(),
          r.chunks(), Terminal.count(r.rows()), Terminal.bytes(r.bytesWritten()), Terminal.seconds(r.seconds()),
          r.bytesWritten() / 1e6 / Math.max(1e-9, r.seconds()));
    }
    return 0;
  }
}
