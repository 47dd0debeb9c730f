package io.strata.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.ops.Processes;
import io.strata.sdk.internal.Json;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code strata bench peers}: Strata against the tools a PyTorch user would pick instead, each
 * used as its documentation recommends, on the same data and requests (the harness is Python,
 * {@code bench/peers/peers.py} of the checkout, run with the project's venv), plus the gather
 * floor its Java loader's assembly is judged against. The figures and the ratios (JSON keys as
 * issue 33 names them) come from one run.
 */
@Command(name = "peers", mixinStandardHelpOptions = true,
    description = "Strata vs pyarrow, numpy.memmap, DuckDB, Hugging Face datasets, Ray Data, document stores (seeds 000, 001, 004)"
        + " and the gather floor, in one run.")
final class PeersBench implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--rows", defaultValue = "8000000", description = "Rows of the generated event dataset; default ${DEFAULT-VALUE}.")
  long rows;

  @Option(names = "--docs", defaultValue = "200000", description = "Documents of the generated corpus; default ${DEFAULT-VALUE}.")
  int docs;

  @Option(names = "--seconds", defaultValue = "5", description = "Seconds each peer is timed; default ${DEFAULT-VALUE}.")
  double seconds;

  @Option(names = "--threads", defaultValue = "2", description = "Strata's assembly threads (the loader's prefetch threads); default ${DEFAULT-VALUE}.")
  int threads;

  @Option(names = "--python", description = "Python with the peers installed (default: target/pyvenv/bin/python of the checkout).")
  String python;

  @Option(names = "--work", description = "Work directory (default: a temporary one, removed afterwards; a given one keeps its data for the next run).")
  Path work;

  @Option(names = "--only", split = ",", description = "Scenarios to run (cold, atom, rows, docs, memory, floor); default all.")
  List<String> only;

  @Option(names = "--quick", description = "Small data and short timings: every peer present and its batches equal to Strata's, not a measurement.")
  boolean quick;

  @Option(names = "--json", description = "Print the figures as one JSON object.")
  boolean json;

  /** The least memory a cold run gives a job: a Python job with torch loaded and, for Strata, the loader service and its batches in flight, with room for some page cache (the seed's proportion would not hold them). */
  static final long COLD_MIN_BYTES = 512L << 20;

  static final List<String> ROW_FEATURES = List.of("amount", "merchant_id", "quantity", "score", "sample_id");

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    if (quick) {
      rows = Math.min(rows, 200_000);
      docs = Math.min(docs, 3_000);
      seconds = Math.min(seconds, 0.3);
    }
    String py = python != null ? python : Processes.defaultPython();
    Path checkout = Processes.checkout();
    Path harness = checkout == null ? null : checkout.resolve("bench/peers/peers.py");
    String why = Processes.pythonUnavailable(py);
    if (why == null && (harness == null || !Files.isRegularFile(harness))) {
      why = "the peers' harness is bench/peers/peers.py of a checkout, and this strata runs from none";
    }
    if (why == null) {
      why = missingPeers(py);
    }
    if (why != null) {
      return BenchPeers.notMeasured(out, json, "peers", why);
    }
    boolean ownWork = work == null;
    Path dir = ownWork ? Files.createTempDirectory("strata-bench-peers-") : work;
    Files.createDirectories(dir);
    try {
      return run(out, dir, py, harness);
    } finally {
      if (ownWork) {
        Processes.deleteTree(dir);
      }
    }
  }

  /** Null when the peers import, else what is missing. */
  private static String missingPeers(String py) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(py, "-c", "import numpy, pyarrow, torch, duckdb, datasets, lz4").redirectErrorStream(true).start();
    String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    return p.waitFor() == 0 ? null : "the peers are not installed in " + py + " (.ci/run installs them): "
        + text.strip().lines().reduce((a, b) -> b).orElse("");
  }

  private boolean wanted(String scenario) {
    return only == null || only.contains(scenario);
  }

  private int run(PrintWriter out, Path dir, String py, Path harness) throws Exception {
    PrintWriter log = spec.commandLine().getErr();
    Path data = dir.resolve("data-" + rows);
    BenchAll.prepare(data, rows, log);
    Path peerData = data.resolve("peers-" + docs);
    Path docsDs = peerData.resolve("docs-dataset");
    Path docsSsd = peerData.resolve("docs-ssd");
    ObjectNode s = Json.object().put("dataset", data.resolve("hdd").toString()).put("ssd", data.resolve("ssd").toString())
        .put("peerData", peerData.toString()).put("seconds", seconds).put("checkBatches", quick ? 1 : 3)
        .put("batchRows", 16384).put("threads", threads).put("docs", docs).put("docsBatch", 64)
        .put("docsPerProcess", quick ? 500 : 20_000).put("docsDataset", docsDs.toString()).put("docsSsd", docsSsd.toString())
        .put("memoryBatches", quick ? 5 : 200).put("ray", true)
        // Seed 000's memory for its data: 8 GB for 400 M rows, here for this run's rows, and at least
        // what a Python job and the loader service need to run at all (the quick run's data is tiny).
        .put("coldMemoryBytes", Math.max(COLD_MIN_BYTES, rows * (8L << 30) / 400_000_000L)).put("coldTurns", quick ? 1 : 3)
        .put("quick", quick);
    List.of("sample_id", "event_time", "amount", "merchant_category", "is_online", "merchant_id", "quantity", "embedding",
        "balance", "score").forEach(s.putArray("atomFeatures")::add);
    ROW_FEATURES.forEach(s.putArray("rowFeatures")::add);
    (quick ? List.of(1, 2) : List.of(1, 2, 4, 8)).forEach(s.putArray("docsProcesses")::add);
    (quick ? List.of(1, 3) : List.of(1, 3, 8)).forEach(s.putArray("memoryJobs")::add);
    Path specFile = dir.resolve("peers-spec.json");
    Files.writeString(specFile, Json.pretty(s));
    Path socket = dir.resolve("service/loader.sock");

    ObjectNode result = Json.object().put("benchmark", "peers").put("available", true).put("rows", rows).put("documents", docs)
        .put("secondsPerPeer", seconds).put("cores", Runtime.getRuntime().availableProcessors()).put("machine", BenchAll.machine())
        .put("data", "warm: every file in the page cache (the machine holds them), except the cold scenario: data larger than"
            + " the memory given (a memory cgroup, page cache included), the page cache dropped before each run");
    result.set("versions", harness(py, harness, specFile, "versions", socket));
    if (!Files.exists(peerData.resolve("READY"))) {
      log.println("preparing the peers' copies of the data (Arrow IPC, Parquet, .npy, a Hugging Face dataset, documents) ...");
      log.flush();
      harness(py, harness, specFile, "prepare", socket);
      BenchAll.runQuietly(List.of("dataset", "import", "--out", docsDs.toString(), "--sample-column", "doc_id", "--replace",
          peerData.resolve("docs/orc/docs.orc").toString()));
      BenchAll.runQuietly(List.of("promote", "--dataset", docsDs.toString(), "--ssd", docsSsd.toString()));
      Files.writeString(peerData.resolve("READY"), "ok");
    }
    ObjectNode ratios = result.putObject("ratios");
    if (wanted("cold")) {
      // First: no loader service of this run holds pages of the data mapped yet (the page cache is
      // dropped for files no process maps).
      JsonNode cold = harness(py, harness, specFile, "cold", socket);
      result.set("cold", cold);
      if (cold.path("available").asBoolean()) {
        ratios.put("atomColdVsBestPeer", vsBest(cold.path("peers"), "strata", "rowsPerSecond", "strata"));
        ratios.put("rowsColdVsBestPeer", vsBest(cold.path("rows").path("peers"), "strata", "batchesPerSecond", "strata"));
      }
    }
    // Equal cores: the atom and rows scenarios on every core of the machine (their figures as
    // before), then again with every process of the run (the harness, its workers, the loader
    // service) confined to one core; the best set-up of each side on the same cores compared.
    ObjectNode equal = Json.object();
    ObjectNode cpuPerBatch = Json.object();
    ObjectNode oneCore = Json.object();
    ObjectNode which = Json.object();
    if (wanted("atom")) {
      JsonNode atom = harness(py, harness, specFile, "atom", socket, "all");
      result.set("atom", atom);
      ratios.put("atomVsBestPeer", vsBest(atom.path("peers"), "strata" + threads, "rowsPerSecond", "strata"));
      JsonNode atom1 = harness(py, harness, specFile, "atom", dir.resolve("service-1core/loader.sock"), "1");
      oneCore.set("atom", atom1);
      EqualCores.compare(equal, cpuPerBatch, which, "atom", "rowsPerSecond", List.of(atom1.path("peers")), List.of(atom.path("peers")));
    }
    if (wanted("rows")) {
      JsonNode r = harness(py, harness, specFile, "rows", socket, "all");
      result.set("rows", r);
      ratios.put("rowsVsBestPeer0", vsBest(r.path("workers0"), "strata", "batchesPerSecond", "strata"));
      // As many workers as the cores the harness found it may use (its affinity, not the JVM's count).
      String everyCore = "workers" + r.path("cores").asInt();
      ratios.put("rowsVsBestPeerN", vsBest(r.path(everyCore), "strata", "batchesPerSecond", "strata"));
      JsonNode r1 = harness(py, harness, specFile, "rows", dir.resolve("service-1core/loader.sock"), "1");
      oneCore.set("rows", r1);
      EqualCores.compare(equal, cpuPerBatch, which, "rows", "batchesPerSecond", List.of(r1.path("workers0"), r1.path("workers1")),
          List.of(r.path("workers0"), r.path(everyCore)));
    }
    if (!equal.isEmpty()) {
      ratios.set("equalCores", equal);
      ratios.set("cpuPerBatchVsBestPeer", cpuPerBatch);
      result.set("oneCore", oneCore);
      result.set("equalCoresBest", which);
    }
    if (wanted("docs")) {
      JsonNode d = harness(py, harness, specFile, "docs", socket);
      result.set("docs", d);
      double worst = Double.MAX_VALUE;
      double memory = Double.MAX_VALUE;
      for (var e : d.path("processes").properties()) {
        JsonNode row = e.getValue();
        worst = Math.min(worst, row.path("strata").path("docsPerSecond").asDouble() / row.path("lz4").path("docsPerSecond").asDouble());
        memory = Math.min(memory, row.path("lz4").path("hostBytes").asDouble() / row.path("strata").path("hostBytes").asDouble());
      }
      ratios.put("docsVsIrDatasets", worst);
      ratios.put("docsMemoryLz4VsStrata", memory);
    }
    if (wanted("memory")) {
      JsonNode m = harness(py, harness, specFile, "memory", socket);
      result.set("memory", m);
      for (var e : m.path("jobs").properties()) {
        JsonNode row = e.getValue();
        ratios.put("memoryVsLeanestPeer" + e.getKey(), row.path("strata").path("hostBytes").asDouble()
            / row.path("numpy").path("hostBytes").asDouble());
      }
    }
    if (wanted("floor")) {
      ObjectNode floor = new GatherFloor(quick, seconds, threads).measure(data.resolve("hdd"), data.resolve("ssd"));
      result.set("floor", floor);
      // Medians of ratios of slices taken side by side (GatherFloor), not ratios of medians.
      ratios.put("assemblyVsGatherFloor1", floor.path("ratio1").asDouble());
      ratios.put("assemblyVsGatherFloorN", floor.path("ratioN").asDouble());
    }
    if (json) {
      out.println(Json.compact(result));
    } else {
      print(out, result);
    }
    out.flush();
    return 0;
  }

  /** Strata's figure over the best other peer's (every field but those whose name starts with {@code ours}). */
  private static double vsBest(JsonNode peers, String strata, String field, String ours) {
    double best = 0;
    for (var e : peers.properties()) {
      if (!e.getKey().startsWith(ours) && e.getValue().has(field)) {
        best = Math.max(best, e.getValue().path(field).asDouble());
      }
    }
    return best == 0 ? 0 : peers.path(strata).path(field).asDouble() / best;
  }

  /** Runs scenario {@code scenario} of the harness; {@code cores}: "1" or "all" for atom and rows (every process on one core, on every one). */
  private JsonNode harness(String py, Path harness, Path specFile, String scenario, Path socket, String... cores)
      throws Exception {
    List<String> command = new ArrayList<>(List.of(py, harness.toString(), specFile.toString(), scenario));
    command.addAll(List.of(cores));
    ProcessBuilder pb = new ProcessBuilder(command);
    Processes.clientEnvironment(pb, socket, 10);
    pb.redirectError(ProcessBuilder.Redirect.INHERIT);
    Process p = pb.start();
    p.getOutputStream().close();
    String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.MINUTES) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IOException("the peers' " + scenario + " run failed: " + text.strip().lines().reduce((a, b) -> b).orElse(""));
    }
    JsonNode r = Processes.jsonResult(text);
    if (r == null) {
      throw new IOException("the peers' " + scenario + " run printed no result: " + text.strip());
    }
    return r;
  }

  private static void print(PrintWriter out, JsonNode r) {
    JsonNode ratios = r.path("ratios");
    out.printf("Strata vs the peers (warm data, %d cores; JSON: --json)%n", r.path("cores").asInt());
    if (r.has("cold")) {
      JsonNode c = r.path("cold");
      if (c.path("available").asBoolean()) {
        out.printf("seed 000 cold: data larger than the %.0f MiB given, page cache dropped (rows/s, first batch s, MiB read):%n",
            c.path("memoryBytes").asDouble() / (1 << 20));
        c.path("peers").properties().forEach(e -> out.printf("  %-16s %12.0f rows/s  %6.2f s  %8.0f MiB%n", e.getKey(),
            e.getValue().path("rowsPerSecond").asDouble(), e.getValue().path("firstBatchSeconds").asDouble(),
            e.getValue().path("readBytes").asDouble() / (1 << 20)));
        out.printf("  atomColdVsBestPeer %.2f%n", ratios.path("atomColdVsBestPeer").asDouble());
        c.path("rows").path("peers").properties().forEach(e -> out.printf("  rows: %-16s %8.1f batches/s  %8.0f MiB%n",
            e.getKey(), e.getValue().path("batchesPerSecond").asDouble(), e.getValue().path("readBytes").asDouble() / (1 << 20)));
        out.printf("  rowsColdVsBestPeer %.2f%n", ratios.path("rowsColdVsBestPeer").asDouble());
      } else {
        out.println("seed 000 cold: not run (" + c.path("reason").asText() + ")");
      }
    }
    if (r.has("atom")) {
      out.println("seed 000, ATOM: 512 random identifiers per batch, all their rows, 10 columns (rows/s):");
      r.path("atom").path("peers").properties().forEach(e -> out.printf("  %-16s %12.0f rows/s  %8.1f batches/s%n", e.getKey(),
          e.getValue().path("rowsPerSecond").asDouble(), e.getValue().path("batchesPerSecond").asDouble()));
      out.printf("  atomVsBestPeer %.2f%n", ratios.path("atomVsBestPeer").asDouble());
    }
    if (r.has("rows")) {
      for (String w : List.of("workers0", "workers" + r.path("rows").path("cores").asInt())) {
        out.printf("shuffled single rows, 16,384 a batch, 5 features, as tensors, %s (batches/s, CPU ms a batch):%n", w);
        r.path("rows").path(w).properties().forEach(e -> out.printf("  %-18s %8.1f %8.2f%n", e.getKey(),
            e.getValue().path("batchesPerSecond").asDouble(), e.getValue().path("cpuSecondsPerBatch").asDouble() * 1e3));
      }
      out.printf("  rowsVsBestPeer0 %.2f, rowsVsBestPeerN %.2f%n", ratios.path("rowsVsBestPeer0").asDouble(),
          ratios.path("rowsVsBestPeerN").asDouble());
    }
    if (ratios.has("equalCores")) {
      out.println("equal cores (every process of a side on the same CPUs; best set-up of each side):");
      ratios.path("equalCores").properties().forEach(e -> out.printf("  %-6s %.2f  (%s against %s)%n", e.getKey(),
          e.getValue().asDouble(), r.path("equalCoresBest").path(e.getKey()).path("strata").asText(),
          r.path("equalCoresBest").path(e.getKey()).path("peer").asText()));
      out.println("  CPU a batch, Strata over the best peer: " + ratios.path("cpuPerBatchVsBestPeer"));
    }
    if (r.has("docs")) {
      out.println("seed 004: random documents by id (docs/s, host MiB):");
      r.path("docs").path("processes").properties().forEach(e -> {
        StringBuilder sb = new StringBuilder("  " + e.getKey() + " processes:");
        e.getValue().properties().forEach(x -> sb.append(String.format(" %s %.0f (%.0f MiB)", x.getKey(),
            x.getValue().path("docsPerSecond").asDouble(), x.getValue().path("hostBytes").asDouble() / (1 << 20))));
        out.println(sb);
      });
      out.printf("  docsVsIrDatasets %.2f%n", ratios.path("docsVsIrDatasets").asDouble());
    }
    if (r.has("memory")) {
      out.println("seed 001: host memory of concurrent jobs (every process, the loader service included; PSS MiB):");
      r.path("memory").path("jobs").properties().forEach(e -> out.printf("  %s jobs: numpy %.0f, strata %.0f%n", e.getKey(),
          e.getValue().path("numpy").path("hostBytes").asDouble() / (1 << 20),
          e.getValue().path("strata").path("hostBytes").asDouble() / (1 << 20)));
    }
    if (r.has("floor")) {
      JsonNode f = r.path("floor");
      out.printf("gather floor (batches/s): 1 thread %.0f, loader %.0f (%.2f); %d threads %.0f, loader %.0f (%.2f)%n",
          f.path("floor1").asDouble(), f.path("loader1").asDouble(), ratios.path("assemblyVsGatherFloor1").asDouble(),
          f.path("threads").asInt(), f.path("floorN").asDouble(), f.path("loaderN").asDouble(),
          ratios.path("assemblyVsGatherFloorN").asDouble());
    }
  }
}
