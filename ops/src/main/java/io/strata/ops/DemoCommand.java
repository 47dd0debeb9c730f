package io.strata.ops;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.node.CacheNode;
import io.strata.node.NodeConfig;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.format.Columns;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.Json;
import io.strata.sdk.node.NodeClient;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code strata demo}: the whole mission on one host. An embedded cache node, a generated ORC
 * dataset on its HDD tier, three training jobs (separate processes) with overlapping feature
 * sets and one shared derived feature, the node promoting what they share while they read, and a
 * summary: bytes per tier, hit ratios per epoch, derived-feature reuse, timings, GPU shipping.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
    description = "The end-to-end demo: an embedded node, a generated dataset, three concurrent jobs, promotion while they read.")
final class DemoCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--home", description = "Demo home directory, emptied first (default: $STRATA_HOME/demo or ~/.strata/demo).")
  Path home;

  @Option(names = "--rows", defaultValue = "2000000", description = "Rows of the demo dataset; default ${DEFAULT-VALUE}.")
  long rows;

  @Option(names = "--epochs", defaultValue = "2", description = "Epochs each job reads; default ${DEFAULT-VALUE}.")
  int epochs;

  @Option(names = "--samples-per-batch", defaultValue = "64", description = "Samples per batch; default ${DEFAULT-VALUE}.")
  int samplesPerBatch;

  @Option(names = "--port", defaultValue = "0", description = "Node port (default: a free one).")
  int port;

  @Option(names = "--stay", description = "Keep the node (and its dashboard) running after the summary until Ctrl-C.")
  boolean stay;

  @Option(names = "--json", description = "Print the summary as one JSON object (progress still goes to stderr).")
  boolean json;

  /** The shared derived feature: a z-scored log of the amount. */
  static final String DERIVED = "zscore(log1p(amount))";

  /** The three jobs: overlapping raw features, one shared derived feature. */
  static final Map<String, List<String>> JOBS = jobs();

  private static Map<String, List<String>> jobs() {
    Map<String, List<String>> m = new LinkedHashMap<>();
    m.put("ctr", List.of("amount", "merchant_category", "is_online", "embedding", DERIVED));
    m.put("fraud", List.of("amount", "merchant_id", "is_online", "score", DERIVED));
    m.put("ranking", List.of("amount", "embedding", "score", "channel", DERIVED));
    return Collections.unmodifiableMap(m);
  }

  static Path defaultHome() {
    String env = System.getenv("STRATA_HOME");
    return (env != null ? Path.of(env) : Path.of(System.getProperty("user.home"), ".strata")).resolve("demo");
  }

  @Override
  public Integer call() throws Exception {
    if (rows < 10_000) {
      throw new IllegalArgumentException("--rows must be at least 10000, got " + rows);
    }
    if (epochs < 1 || samplesPerBatch < 1) {
      throw new IllegalArgumentException("--epochs and --samples-per-batch must be at least 1");
    }
    PrintWriter out = json ? spec.commandLine().getErr() : spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    long demoStart = System.nanoTime();
    Path dir = home != null ? home : defaultHome();
    Path nodeHome = dir.resolve("node");
    Path datasetDir = nodeHome.resolve("hdd").resolve("events");
    Path logs = dir.resolve("logs");
    Processes.deleteTree(nodeHome);
    Processes.deleteTree(logs);
    Files.createDirectories(logs);
    out.printf("Strata demo in %s%n%n", dir);
    ObjectNode summary = Json.object();

    // 1. The HDD tier: an ORC dataset, one column per feature.
    out.printf("[1/5] generating the dataset (HDD tier, ORC)%n");
    Terminal.Bar bar = new Terminal.Bar("      generate", err);
    int rowsPerChunk = (int) Math.max(8192, Math.min(131_072, rows / 16));
    DatasetGenerator.Report gen = DatasetGenerator.generate(datasetDir,
        DatasetGenerator.Options.of("events", rows, 42).withFeatures(12).withChunking(rowsPerChunk, 4), bar);
    bar.done();
    out.printf("      events: %s rows x 12 columns in %d chunks, %s of ORC, written in %s (%s rows/s)%n%n", Terminal.count(rows),
        gen.manifest().chunks().size(), Terminal.bytes(gen.bytes()), Terminal.seconds(gen.seconds()),
        Terminal.count(gen.rowsPerSecond()));
    summary.put("rows", rows).put("orcBytes", gen.bytes()).put("generateSeconds", gen.seconds());

    // 2. The node: an SSD budget of twice the ORC bytes; uncompressed segments of the features the
    // jobs read fit, so the policy promotes what they share and keeps it.
    long budget = Math.max(64L << 20, gen.bytes() * 2);
    NodeConfig config = NodeConfig.embedded(nodeHome, port).withSsdBudget(budget);
    try (CacheNode node = CacheNode.start(config)) {
      NodeClient client = new NodeClient(node.url(), null);
      client.registerDataset(datasetDir);
      out.printf("[2/5] cache node on %s, SSD budget %s; live dashboard: %s/ui%n%n", node.url(), Terminal.bytes(budget), node.url());

      // 3. Three jobs at once, each its own process, reading through the node.
      out.printf("[3/5] three training jobs start together (%d epochs of %d-sample batches each):%n", epochs, samplesPerBatch);
      JOBS.forEach((name, fs) -> out.printf("      %-8s %s%n", name, String.join(", ", fs)));
      out.printf("%n      %6s  %12s  %12s  %9s  %10s  %10s%n", "time", "SSD read/s", "HDD read/s", "hit ratio", "SSD holds", "promotions");
      List<Process> jobs = new ArrayList<>();
      long jobsStart = System.nanoTime();
      for (Map.Entry<String, List<String>> j : JOBS.entrySet()) {
        List<String> args = new ArrayList<>(List.of("loader", "run", "--dataset", datasetDir.toString(), "--node", node.url(),
            "--job", j.getKey(), "--features", String.join(",", j.getValue()), "--mode", "samples", "--batch",
            Integer.toString(samplesPerBatch), "--epochs", Integer.toString(epochs), "--seed", Integer.toString(j.getKey().length()),
            "--gpu", "--json"));
        jobs.add(Processes.spawn(List.of("-Xmx512m", "-XX:+UseSerialGC"), args, logs.resolve(j.getKey() + ".log")));
      }
      // A PyTorch job beside them when this host has python3 with torch: the same node, segments
      // and derived feature, through the Python client (examples/train_torch.py).
      String[] pyWhy = new String[1];
      Process torchJob = startTorchJob(datasetDir, node.url(), dir, logs, pyWhy);
      if (torchJob != null) {
        jobs.add(torchJob);
        out.printf("      %-8s %s (PyTorch, examples/train_torch.py)%n%n", "torch", "amount, " + DERIVED + ", quantity, score, is_online");
      } else {
        out.printf("      (no PyTorch job: %s)%n%n", pyWhy[0]);
      }
      ArrayNode timeline = summary.putArray("timeline");
      JsonNode prev = client.tiers();
      double t0 = prev.path("uptimeSeconds").asDouble();
      while (jobs.stream().anyMatch(Process::isAlive)) {
        jobs.get(0).waitFor(2, TimeUnit.SECONDS);
        for (Process p : jobs) {
          p.waitFor(0, TimeUnit.SECONDS);
        }
        JsonNode now = client.tiers();
        double dt = now.path("uptimeSeconds").asDouble() - prev.path("uptimeSeconds").asDouble();
        if (dt < 1.5 && jobs.stream().anyMatch(Process::isAlive)) {
          continue;
        }
        long ssd = now.path("traffic").path("ssdBytes").asLong() - prev.path("traffic").path("ssdBytes").asLong();
        long hdd = now.path("traffic").path("hddBytes").asLong() - prev.path("traffic").path("hddBytes").asLong();
        double hit = ssd + hdd == 0 ? 0 : (double) ssd / (ssd + hdd);
        double t = now.path("uptimeSeconds").asDouble() - t0;
        out.printf("      %5.0fs  %10s/s  %10s/s  %9s  %10s  %10d%n", t, Terminal.bytes((long) (ssd / dt)),
            Terminal.bytes((long) (hdd / dt)), ssd + hdd == 0 ? "-" : pct(hit), Terminal.bytes(now.path("ssd").path("bytes").asLong()),
            now.path("traffic").path("promotions").asLong());
        out.flush();
        timeline.addObject().put("seconds", t).put("ssdBytes", ssd).put("hddBytes", hdd).put("byteHitRatio", hit)
            .put("ssdHeldBytes", now.path("ssd").path("bytes").asLong()).put("promotions", now.path("traffic").path("promotions").asLong());
        prev = now;
      }
      double jobsSeconds = (System.nanoTime() - jobsStart) / 1e9;
      out.println();

      List<JsonNode> results = new ArrayList<>();
      int n = 0;
      for (String name : JOBS.keySet()) {
        Process p = jobs.get(n++);
        Path log = logs.resolve(name + ".log");
        String text = Files.readString(log);
        if (p.exitValue() != 0) {
          throw new IllegalStateException("job " + name + " failed (exit " + p.exitValue() + "): "
              + text.strip().lines().reduce((a, b) -> b).orElse("") + " (log " + log + ")");
        }
        JsonNode r = Processes.jsonResult(text);
        if (r == null) {
          throw new IllegalStateException("job " + name + " printed no result; see " + log);
        }
        results.add(r);
      }

      JsonNode torchResult = null;
      if (torchJob != null) {
        Path log = logs.resolve("torch.log");
        String text = Files.readString(log);
        if (torchJob.exitValue() != 0) {
          throw new IllegalStateException("the PyTorch job failed (exit " + torchJob.exitValue() + "): "
              + text.strip().lines().reduce((a, b) -> b).orElse("") + " (log " + log + ")");
        }
        torchResult = Processes.jsonResult(text);
        if (torchResult == null) {
          throw new IllegalStateException("the PyTorch job printed no result; see " + log);
        }
        summary.set("torchJob", torchResult);
      } else {
        summary.put("torchJob", "not run: " + pyWhy[0]);
      }

      // 4. Check: every raw segment the node holds equals its ORC source.
      out.printf("[4/5] checking every segment on the SSD tier against ORC%n");
      node.awaitIdle(60_000);
      int[] checked = verifySegments(config.ssdDir(), datasetDir);
      out.printf("      %d segments of raw features identical to ORC (%d segments of the derived feature come from the feature store)%n%n",
          checked[0], checked[1]);

      // 5. Summary.
      JsonNode tiers = client.tiers();
      JsonNode derived = client.derivedFeatures();
      out.printf("[5/5] summary%n%n");
      Terminal.Table jt = new Terminal.Table("job", "features", "batches", "rows", "time", "first batch", "SSD read", "HDD read",
          "hit epoch 1", "hit epoch " + epochs);
      ArrayNode jobsJson = summary.putArray("jobs");
      n = 0;
      for (String name : JOBS.keySet()) {
        JsonNode r = results.get(n++);
        JsonNode es = r.path("epochs");
        double firstHit = es.size() > 0 ? es.get(0).path("byteHitRatio").asDouble() : 0;
        double lastHit = es.size() > 0 ? es.get(es.size() - 1).path("byteHitRatio").asDouble() : 0;
        jt.row(name, JOBS.get(name).size(), r.path("batches").asLong(), Terminal.count(r.path("rows").asLong()),
            Terminal.seconds(r.path("seconds").asDouble()), Terminal.seconds(r.path("timeToFirstBatchMs").asDouble() / 1000),
            Terminal.bytes(r.path("ssdBytes").asLong()), Terminal.bytes(r.path("hddBytes").asLong()),
            pct(firstHit), pct(lastHit));
        ObjectNode o = jobsJson.addObject().put("job", name);
        o.setAll((ObjectNode) r);
      }
      jt.print(out);
      out.println();

      JsonNode tr = tiers.path("traffic");
      Terminal.Table nt = new Terminal.Table("node", "value").leftAligned();
      nt.row("byte hit ratio, whole run", pct(tr.path("byteHitRatio").asDouble()));
      nt.row("HDD bytes avoided (read from SSD instead)", Terminal.bytes(tr.path("hddBytesAvoided").asLong()));
      nt.row("HDD bytes read", Terminal.bytes(tr.path("hddBytes").asLong()));
      nt.row("SSD tier holds", Terminal.bytes(tiers.path("ssd").path("bytes").asLong()) + " in "
          + tiers.path("ssd").path("segments").asInt() + " segments (budget " + Terminal.bytes(budget) + ")");
      nt.row("promotions / evictions", tr.path("promotions").asLong() + " / " + tr.path("evictions").asLong());
      nt.row("flash written", Terminal.bytes(tr.path("flashBytesWritten").asLong()));
      JsonNode d = derived.size() > 0 ? derived.get(0) : Json.object();
      long recomputed = results.stream().mapToLong(r -> r.path("derivedChunksComputed").asLong()).sum();
      if (torchResult != null) {
        recomputed += torchResult.path("derivedChunksComputed").asLong();
      }
      nt.row("derived feature " + DERIVED, "computed " + tr.path("derivedComputations").asLong() + "x by the node in "
          + Terminal.seconds(d.path("computeSeconds").asDouble()) + " (" + Terminal.bytes(d.path("bytes").asLong())
          + " stored), read by " + (JOBS.size() + (torchResult != null ? 1 : 0))
          + " jobs; chunks the jobs computed themselves: " + recomputed);
      if (torchResult != null) {
        JsonNode loss = torchResult.path("loss");
        nt.row("PyTorch job (Python client)", String.format(Locale.ROOT,
            "%d batches, %s rows in %s; SSD %s, HDD %s through the node; loss %.4f -> %.4f",
            torchResult.path("batches").asLong(), Terminal.count(torchResult.path("rows").asLong()),
            Terminal.seconds(torchResult.path("seconds").asDouble()), Terminal.bytes(torchResult.path("ssdBytes").asLong()),
            Terminal.bytes(torchResult.path("hddBytes").asLong()), loss.path(0).asDouble(),
            loss.path(loss.size() - 1).asDouble()));
      } else {
        nt.row("PyTorch job (Python client)", "not run: " + pyWhy[0]);
      }
      summary.put("derivedChunksRecomputedByJobs", recomputed);
      String gpu = results.get(0).path("gpu").asText("");
      boolean gpuUsed = results.get(0).path("gpuBytes").asLong() > 0;
      nt.row("GPU shipping", gpuUsed ? String.format(Locale.ROOT, "%s, %.2f GB/s", gpu,
          results.get(0).path("gpuBytes").asLong() / 1e9 / Math.max(1e-9, results.get(0).path("gpuSeconds").asDouble()))
          : "none: " + gpu);
      nt.row("jobs ran together for", Terminal.seconds(jobsSeconds));
      nt.row("demo took", Terminal.seconds((System.nanoTime() - demoStart) / 1e9));
      nt.print(out);
      summary.set("node", tiers);
      summary.put("derivedComputations", tr.path("derivedComputations").asLong());
      summary.put("segmentsChecked", checked[0]);
      summary.put("jobsSeconds", jobsSeconds).put("seconds", (System.nanoTime() - demoStart) / 1e9);
      summary.put("gpu", gpuUsed ? gpu : "none: " + gpu);
      out.println();
      out.printf("Job logs are in %s; the node's home is %s.%n", logs, nodeHome);
      if (json) {
        spec.commandLine().getOut().println(Json.compact(summary));
      }
      out.flush();
      if (stay) {
        out.printf("The node keeps running: dashboard %s/ui (Ctrl-C to stop).%n", node.url());
        out.flush();
        Thread.currentThread().join();
      }
    }
    return 0;
  }

  /**
   * Starts examples/train_torch.py through the node when the checkout has it and a python with
   * torch, pyarrow and numpy is there (target/pyvenv, else python3); otherwise null, with the
   * reason in {@code why[0]}.
   */
  private Process startTorchJob(Path datasetDir, String nodeUrl, Path dir, Path logs, String[] why) throws IOException {
    Path root = Processes.checkout();
    if (root == null || !Files.isRegularFile(root.resolve("examples/train_torch.py"))) {
      why[0] = "not run from a checkout with examples/train_torch.py";
      return null;
    }
    String py = Processes.defaultPython();
    String missing = Processes.pythonUnavailable(py);
    if (missing != null) {
      why[0] = missing;
      return null;
    }
    ProcessBuilder pb = new ProcessBuilder(py, root.resolve("examples/train_torch.py").toString(), "--dataset",
        datasetDir.toString(), "--node", nodeUrl, "--job", "torch", "--epochs", Integer.toString(epochs),
        "--batch-samples", Integer.toString(samplesPerBatch), "--workers", "0", "--json");
    Processes.clientEnvironment(pb, dir.resolve("loader-service/loader.sock"), 5);
    pb.redirectErrorStream(true).redirectOutput(logs.resolve("torch.log").toFile());
    return pb.start();
  }

  private static String pct(double v) {
    return String.format(Locale.ROOT, "%.1f%%", 100 * v);
  }

  /**
   * Compares every raw-feature segment file under {@code ssd} with ORC, checksums included;
   * returns {raw checked, derived skipped}. Reads the files directly: the node still owns the store.
   */
  static int[] verifySegments(Path ssd, Path datasetDir) throws IOException {
    int raw = 0;
    int derived = 0;
    List<Path> files;
    try (Stream<Path> walk = Files.walk(ssd)) {
      files = walk.filter(f -> f.getFileName().toString().endsWith(".arrow")).sorted().toList();
    }
    try (Dataset ds = Dataset.open(datasetDir)) {
      for (Path file : files) {
        try (SegmentFile seg = SegmentFile.open(file, SegmentFile.Verify.ALWAYS); Arena arena = Arena.ofConfined()) {
          List<String> cols = seg.columnNames().stream().filter(c -> !io.strata.sdk.derive.Spec.isDerived(ds, c)).toList();
          if (cols.isEmpty()) {
            derived++;
            continue;
          }
          Map<String, Column> orc = ds.readChunk(seg.info().chunk(), cols, arena);
          for (String f : cols) {
            int diff = Columns.firstDifference(orc.get(f), seg.column(f));
            if (diff >= 0) {
              throw new IllegalStateException("segment " + file + " differs from ORC in " + f + " at chunk row " + diff);
            }
          }
          raw++;
        }
      }
    }
    return new int[] {raw, derived};
  }
}
