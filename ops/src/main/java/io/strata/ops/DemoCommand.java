package io.strata.ops;

import io.strata.sdk.Column;
import io.strata.sdk.ColumnBuilder;
import io.strata.sdk.Columns;
import io.strata.sdk.Dataset;
import io.strata.sdk.dataset.DatasetGenerator;
import io.strata.sdk.dataset.SampleIndex;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.tier.Promoter;
import io.strata.sdk.tier.SegmentStore;
import io.strata.sdk.tier.TierStats;
import io.strata.sdk.tier.TieredReader;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code strata demo}: generates a dataset, promotes some feature streams to the SSD tier, reads
 * sample batches from both tiers, checks that they agree and reports sizes and timings.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
    description = "Run the end-to-end demo on an embedded default home directory.")
final class DemoCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--home", description = "Demo home directory (default: $STRATA_HOME/demo or ~/.strata/demo).")
  Path home;

  @Option(names = "--rows", defaultValue = "2000000", description = "Rows of the demo dataset; default ${DEFAULT-VALUE}.")
  long rows;

  @Option(names = "--batches", defaultValue = "30", description = "Sample batches read per tier; default ${DEFAULT-VALUE}.")
  int batches;

  @Option(names = "--samples-per-batch", defaultValue = "64", description = "Samples per batch; default ${DEFAULT-VALUE}.")
  int samplesPerBatch;

  static Path defaultHome() {
    String env = System.getenv("STRATA_HOME");
    return (env != null ? Path.of(env) : Path.of(System.getProperty("user.home"), ".strata")).resolve("demo");
  }

  @Override
  public Integer call() throws Exception {
    PrintWriter w = spec.commandLine().getOut();
    Path dir = home != null ? home : defaultHome();
    Path datasetDir = dir.resolve("hdd").resolve("events");
    Path ssdDir = dir.resolve("ssd");
    deleteTree(dir.resolve("hdd"));
    deleteTree(ssdDir);
    Files.createDirectories(dir);
    w.printf("Strata demo in %s%n%n", dir);

    Terminal.Table steps = new Terminal.Table("step", "result", "size", "time", "rate");
    Terminal.Bar bar = new Terminal.Bar("1/3 generate", spec.commandLine().getErr());
    DatasetGenerator.Report gen =
        DatasetGenerator.generate(
            datasetDir,
            DatasetGenerator.Options.of("events", rows, 42).withFeatures(12).withChunking(262_144, 4),
            bar);
    bar.done();
    steps.row("generate ORC dataset (HDD tier)", Terminal.count(rows) + " rows x 12 columns, " + gen.manifest().chunks().size() + " chunks",
        Terminal.bytes(gen.bytes()), Terminal.seconds(gen.seconds()), Terminal.count(gen.rowsPerSecond()) + " rows/s");

    List<String> promoted = List.of("amount", "merchant_category", "is_online", "merchant_id", "embedding", "score");
    try (Dataset ds = Dataset.open(datasetDir); SegmentStore store = SegmentStore.open(ssdDir, false, SegmentFile.Verify.FIRST_OPEN)) {
      bar = new Terminal.Bar("2/3 promote", spec.commandLine().getErr());
      Promoter.Report pr = Promoter.promote(ds, store, promoted, null, bar);
      bar.done();
      steps.row("promote 6 feature streams to segments (SSD tier)", pr.chunks() + " segments", Terminal.bytes(pr.bytesWritten()),
          Terminal.seconds(pr.seconds()), String.format("%.0f MB/s", pr.bytesWritten() / 1e6 / pr.seconds()));

      SampleIndex index = ds.sampleIndex().orElseThrow();
      SplittableRandom r = new SplittableRandom(7);
      List<long[]> plan = new ArrayList<>();
      for (int b = 0; b < batches * samplesPerBatch; b++) {
        long s = r.nextLong(index.size());
        plan.add(new long[] {index.start(s), index.end(s) - index.start(s)});
      }
      TierStats ssdStats = new TierStats();
      TierStats hddStats = new TierStats();
      long rowsRead = 0;
      long bytesRead = 0;
      int mismatches = 0;
      bar = new Terminal.Bar("3/3 read batches", spec.commandLine().getErr());
      try (TieredReader fromSsd = new TieredReader(ds, store, promoted, ssdStats);
          TieredReader fromHdd = new TieredReader(ds, null, promoted, hddStats)) {
        for (int b = 0; b < batches; b++) {
          try (Arena arena = Arena.ofConfined()) {
            List<ColumnBuilder> a = fromSsd.builders(arena, 0);
            List<ColumnBuilder> h = fromHdd.builders(arena, 0);
            for (int k = b * samplesPerBatch; k < (b + 1) * samplesPerBatch; k++) {
              long[] s = plan.get(k);
              fromSsd.appendRows(s[0], (int) s[1], a);
              fromHdd.appendRows(s[0], (int) s[1], h);
              rowsRead += s[1];
            }
            for (int i = 0; i < promoted.size(); i++) {
              Column x = a.get(i).build();
              Column y = h.get(i).build();
              if (Columns.firstDifference(x, y) >= 0) {
                mismatches++;
              }
              bytesRead += Columns.dataBytes(x);
            }
          }
          bar.update(b + 1, batches, "batches");
        }
      }
      bar.done();
      double ssdSeconds = ssdStats.nanos(TierStats.Tier.SSD) / 1e9;
      double hddSeconds = hddStats.nanos(TierStats.Tier.HDD) / 1e9;
      steps.row("read " + batches + " sample batches from segments", Terminal.count(rowsRead) + " rows",
          Terminal.bytes(ssdStats.bytes(TierStats.Tier.SSD)), Terminal.seconds(ssdSeconds),
          String.format("%.1f batches/s", batches / ssdSeconds));
      steps.row("read the same batches from ORC", Terminal.count(rowsRead) + " rows",
          Terminal.bytes(hddStats.bytes(TierStats.Tier.HDD)), Terminal.seconds(hddSeconds),
          String.format("%.1f batches/s", batches / hddSeconds));
      steps.print(w);
      w.println();
      if (mismatches > 0) {
        w.printf("MISMATCH: %d column batches differ between the tiers%n", mismatches);
        return Main.FAILURE;
      }
      w.printf("Both tiers agree on all %d batches (%s of column data, %d features).%n", batches, Terminal.bytes(bytesRead), promoted.size());
      w.printf("Segments served these sample batches %.0fx faster than decoding ORC.%n", hddSeconds / ssdSeconds);
    }
    return 0;
  }

  static void deleteTree(Path p) throws java.io.IOException {
    if (!Files.exists(p)) {
      return;
    }
    try (Stream<Path> s = Files.walk(p)) {
      for (Path x : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(x);
      }
    }
  }
}
