package io.strata.bench;

import static io.strata.bench.BenchPeers.median;
import static io.strata.bench.BenchPeers.f2;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.ops.Terminal;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.Json;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.Loader;
import io.strata.sdk.tiering.SegmentStore;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "scan", mixinStandardHelpOptions = true,
    description = "An epoch scan of 30%% of the features: Strata from segments vs ORC with projection vs ORC without projection"
        + " (and, with --parquet, vs the same rows as Parquet, written by pyarrow and read through Strata's HDD tier).")
final class ScanBench implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--dataset", required = true, description = "Dataset directory.")
  Path dataset;

  @Option(names = "--ssd", required = true, description = "SSD tier with the features promoted.")
  Path ssd;

  @Option(names = "--share", defaultValue = "0.3", description = "Share of the features scanned; default ${DEFAULT-VALUE}.")
  double share;

  @Option(names = "--rounds", defaultValue = "3", description = "Rounds; default ${DEFAULT-VALUE}.")
  int rounds;

  @Option(names = "--json", description = "Print the figures as one JSON object.")
  boolean json;

  @Option(names = "--parquet", description = "A Parquet copy of the dataset as an HDD-tier peer: a dataset directory, made"
      + " here when it holds none (pyarrow rewrites each ORC file as Parquet, a row group per stripe, its defaults with"
      + " its page index on; then 'dataset import').")
  Path parquet;

  @Option(names = "--python", description = "Python with pyarrow, to make the Parquet copy (default: target/pyvenv/bin/python of the checkout).")
  String python;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter log = spec.commandLine().getErr();
    try (Dataset ds = Dataset.open(dataset); SegmentStore store = SegmentStore.open(ssd, false, SegmentFile.Verify.NEVER)) {
      List<String> all = ds.featureNames();
      int n = Math.max(1, (int) Math.round(all.size() * share));
      List<String> picked = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        picked.add(all.get((int) ((i + 0.5) * all.size() / n)));
      }
      Map<String, List<Double>> secs = new LinkedHashMap<>();
      for (String p : List.of("strata", "orcProjection", "orcNoProjection")) {
        secs.put(p, new ArrayList<>());
      }
      String py = python != null ? python : io.strata.ops.Processes.defaultPython();
      String noParquet = parquet == null ? "no --parquet given"
          : Files.exists(parquet.resolve("manifest.json")) ? null : ParquetCopy.unavailable(py);
      if (parquet != null && noParquet != null) {
        log.printf("no Parquet peer: %s%n", noParquet);
      }
      Dataset pq = noParquet != null ? null : ParquetCopy.open(ds, parquet, py, log);
      if (pq != null) {
        ParquetCopy.checkSame(ds, pq, picked);
        secs.put("parquetProjection", new ArrayList<>());
        secs.put("parquetNoProjection", new ArrayList<>());
      }
      long scanBytes = 0;
      for (int r = 0; r < rounds; r++) {
        long t = System.nanoTime();
        long b = 0;
        try (Loader l = Loader.builder(ds).features(picked).segments(store).rowBatches(65_536, false).shuffle(false).epochs(1)
            .prefetch(2, 1).name("bench-scan").build()) {
          for (Batch batch : l) {
            b += batch.dataBytes();
            batch.close();
          }
        }
        secs.get("strata").add((System.nanoTime() - t) / 1e9);
        scanBytes = b;
        secs.get("orcProjection").add(scanSeconds(ds, picked));
        secs.get("orcNoProjection").add(scanSeconds(ds, all));
        if (pq != null) {
          secs.get("parquetProjection").add(scanSeconds(pq, picked));
          secs.get("parquetNoProjection").add(scanSeconds(pq, all));
        }
        log.printf("round %d/%d: %s%n", r + 1, rounds, secs.entrySet().stream()
            .map(e -> e.getKey() + " " + f2(e.getValue().getLast()) + " s").toList());
        log.flush();
      }
      ObjectNode res = Json.object();
      res.put("benchmark", "scan").put("rows", ds.rows()).put("featuresScanned", picked.size()).put("featuresTotal", all.size())
          .put("scanBytes", scanBytes).set("features", Json.MAPPER.valueToTree(picked));
      ObjectNode peers = res.putObject("peers");
      Map<String, Double> med = new LinkedHashMap<>();
      for (var e : secs.entrySet()) {
        med.put(e.getKey(), median(e.getValue()));
        ObjectNode o = peers.putObject(e.getKey());
        o.put("seconds", med.get(e.getKey())).put("rowsPerSecond", ds.rows() / med.get(e.getKey()));
        e.getValue().forEach(o.putArray("rounds")::add);
      }
      res.putObject("ratios").put("strataVsOrcProjection", med.get("orcProjection") / med.get("strata"))
          .put("strataVsOrcNoProjection", med.get("orcNoProjection") / med.get("strata"))
          .put("projectionGain", med.get("orcNoProjection") / med.get("orcProjection"));
      if (pq != null) {
        ((ObjectNode) res.get("ratios")).put("strataVsParquetProjection", med.get("parquetProjection") / med.get("strata"))
            .put("parquetVsOrcProjection", med.get("orcProjection") / med.get("parquetProjection"));
        res.put("parquetBytes", pq.manifest().files().stream().mapToLong(f -> f.bytes()).sum())
            .put("orcBytes", ds.manifest().files().stream().mapToLong(f -> f.bytes()).sum());
        pq.close();
      } else {
        res.put("parquetSkipped", noParquet);
      }
      if (json) {
        out.println(Json.compact(res));
      } else {
        out.printf("epoch scan of %d of %d features %s over %s rows (%s of column data), median of %d rounds%n", picked.size(),
            all.size(), picked, Terminal.count(ds.rows()), Terminal.bytes(scanBytes), rounds);
        Terminal.Table t = new Terminal.Table("peer", "seconds", "M rows/s", "Strata faster by");
        for (var e : med.entrySet()) {
          t.row(e.getKey(), f2(e.getValue()), f2(ds.rows() / e.getValue() / 1e6), f2(e.getValue() / med.get("strata")) + "x");
        }
        t.print(out);
      }
      return 0;
    }
  }

  /** Seconds to decode every chunk of {@code features} from the dataset's files (its HDD tier), one chunk at a time. */
  private static double scanSeconds(Dataset ds, List<String> features) throws java.io.IOException {
    long t = System.nanoTime();
    for (int c = 0; c < ds.chunks().size(); c++) {
      try (Arena a = Arena.ofConfined()) {
        ds.table().readChunk(c, features, a);
      }
    }
    return (System.nanoTime() - t) / 1e9;
  }
}
