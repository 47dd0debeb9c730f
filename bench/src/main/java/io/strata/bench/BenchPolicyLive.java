package io.strata.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.node.Setting;
import io.strata.node.policy.FrequencyPolicy;
import io.strata.node.policy.LruPolicy;
import io.strata.node.policy.Policies;
import io.strata.node.policy.S3FifoPolicy;
import io.strata.node.policy.StrataPolicy;
import io.strata.node.sim.CaffeinePolicy;
import io.strata.node.sim.OptPolicy;
import io.strata.node.sim.Simulator;
import io.strata.node.sim.Trace;
import io.strata.ops.NodeCommand;
import io.strata.ops.Processes;
import io.strata.ops.Terminal;
import io.strata.sdk.internal.Json;
import io.strata.sdk.node.NodeClient;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code strata bench policy-live}: the plan-aware policy on the path real jobs take. A real node
 * (its own process) with an SSD budget of a tenth of the bytes the jobs will read; concurrent
 * loader jobs as separate processes (shuffled, staggered, overlapping feature sets, 1 to 3
 * epochs, two datasets) that declare their plans as programs and report their reads and steps;
 * then the trace the node recorded replayed offline through OPT, LRU, Caffeine W-TinyLFU, a
 * frequency-admission cache and Strata's policy itself, beside what the node did live.
 */
@Command(name = "policy-live", mixinStandardHelpOptions = true,
    description = "Concurrent real loader jobs against a real node at a 10%% SSD budget; the node's live byte hit ratio and flash "
        + "writes beside OPT, LRU and Caffeine replayed on the trace it recorded.")
final class BenchPolicyLive implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--quick", description = "Small data and 6 short jobs (CI): checks that OPT bounds the live ratio and the trace has every read.")
  boolean quick;

  @Option(names = "--jobs", description = "Concurrent loader jobs (at least 6; default 8, 6 with --quick).")
  Integer jobs;

  @Option(names = "--budget-share", defaultValue = "10", description = "SSD budget in percent of the bytes the jobs read; default ${DEFAULT-VALUE}.")
  double budgetShare;

  @Option(names = "--work", description = "Work directory (default: a new temporary directory, removed afterwards).")
  Path work;

  @Option(names = "--policy", defaultValue = "strata",
      description = "The policy the live node runs (strata, lru, frequency, s3fifo); default ${DEFAULT-VALUE}.")
  String policy;

  @Option(names = "--seed", defaultValue = "1", description = "Seed of the job mix; default ${DEFAULT-VALUE}.")
  long seed;

  @Option(names = "--json", description = "Print the figures as one JSON object.")
  boolean json;

  @Option(names = "--substitution", description = "Then run the same job mix again with substitutable reads (a fresh node, the"
      + " same budget) and compare the live byte hit ratios.")
  boolean substitution;

  /** Features a job may read (the generated datasets' columns besides sample_id and event_time). */
  private static final List<String> FEATURES = List.of("amount", "merchant_category", "is_online", "merchant_id", "quantity",
      "embedding", "balance", "score", "channel", "event_date");

  private record Job(String name, String dataset, List<String> features, int epochs, long seed, double startSeconds, int stepMs,
      String mode) {}

  @Override
  public Integer call() throws Exception {
    int n = jobs != null ? jobs : quick ? 6 : 8;
    if (n < 6 || n > 64) {
      throw new IllegalArgumentException("--jobs must be in 6..64, got " + n);
    }
    if (!(budgetShare > 0 && budgetShare <= 100)) {
      throw new IllegalArgumentException("--budget-share must be in (0, 100], got " + budgetShare);
    }
    if (!Policies.known(policy)) {
      throw new IllegalArgumentException("--policy must be one of " + Policies.names() + ", got " + policy);
    }
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter log = json ? new PrintWriter(new StringWriter()) : out;
    boolean temporary = work == null;
    Path dir = temporary ? Files.createTempDirectory("strata-policy-live") : work.toAbsolutePath();
    Files.createDirectories(dir);
    try {
      return run(n, dir, out, log);
    } finally {
      if (temporary) {
        Processes.deleteTree(dir);
      }
    }
  }

  private int run(int n, Path dir, PrintWriter out, PrintWriter log) throws Exception {
    ObjectNode res = once(n, dir, out, log, false);
    if (substitution) {
      ObjectNode sub = once(n, dir, out, log, true);
      double plain = res.path("byteHitRatio").path("live").asDouble();
      double substituted = sub.path("byteHitRatio").path("live").asDouble();
      res.putObject("substitution").put("plainLive", plain).put("substitutedLive", substituted)
          .put("substitutedVsPlain", substituted / Math.max(1e-12, plain))
          .put("plainFlashBytes", res.path("flashBytes").path("live").asLong())
          .put("substitutedFlashBytes", sub.path("flashBytes").path("live").asLong())
          .put("substitutedSeconds", sub.path("seconds").asDouble()).put("plainSeconds", res.path("seconds").asDouble());
      if (!json) {
        out.printf("substitutable reads, the same jobs on a fresh node: live byte hit ratio %s -> %s (%sx), %s -> %s in flash"
            + " writes (not a ratio to OPT: the order changed)%n", Terminal.percent(plain), Terminal.percent(substituted),
            f2(substituted / Math.max(1e-12, plain)), Terminal.bytes(res.path("flashBytes").path("live").asLong()),
            Terminal.bytes(sub.path("flashBytes").path("live").asLong()));
      }
    }
    if (json) {
      out.println(Json.compact(res));
    }
    out.flush();
    return 0;
  }

  /** One run of the job mix on a fresh node; {@code substitutable}: the jobs let the loader reorder their epochs. */
  private ObjectNode once(int n, Path dir, PrintWriter out, PrintWriter log, boolean substitutable) throws Exception {
    long rows = quick ? 96_000 : 1_200_000;
    int rowsPerChunk = quick ? 8_000 : 50_000;
    List<String> datasets = List.of("clicks", "views");
    Path hdd = dir.resolve("hdd");
    for (int d = 0; d < datasets.size(); d++) {
      Path ds = hdd.resolve(datasets.get(d));
      if (!Files.exists(ds.resolve("READY"))) {
        log.printf("generating %s (%s rows) ...%n", ds, Terminal.count(rows));
        log.flush();
        List<String> a = List.of("dataset", "generate", "--out", ds.toString(), "--rows", Long.toString(rows), "--features", "12",
            "--seed", Integer.toString(3 + 4 * d), "--rows-per-chunk", Integer.toString(rowsPerChunk), "--chunks-per-file", "2",
            "--mean-sample-length", "20", "--replace");
        BenchAll.runQuietly(a);
        Files.writeString(ds.resolve("READY"), "ok");
      }
    }
    List<Job> mix = mix(n, datasets);
    Path home = dir.resolve("node");
    Processes.deleteTree(home);
    NodeCommand.Child node = NodeCommand.startChild(List.of("-Xmx1g"), home, List.of("--port", "0", "--hdd-root", hdd.toString()),
        dir.resolve("node.log"));
    List<Process> running = new ArrayList<>();
    try {
      NodeClient client = new NodeClient(node.url(), null);
      for (String d : datasets) {
        client.registerDataset(hdd.resolve(d));
      }
      // The budget: a share of the distinct bytes the jobs will read, in the policy's own units.
      long distinct = 0;
      for (String d : datasets) {
        LinkedHashSet<String> used = new LinkedHashSet<>();
        mix.stream().filter(j -> j.dataset().equals(d)).forEach(j -> used.addAll(j.features()));
        for (JsonNode f : client.dataset(d).path("features")) {
          if (used.contains(f.path("name").asText())) {
            distinct += f.path("policyBytes").asLong();
          }
        }
      }
      long budget = (long) (distinct * budgetShare / 100);
      client.setPolicy(Json.object().put(Setting.POLICY.key(), policy).put(Setting.SSD_BUDGET_BYTES.key(), budget)
          .put(Setting.FLASH_WRITE_BUDGET_BYTES_PER_HOUR.key(), 0));
      client.clearTrace();
      log.printf("node %s, SSD budget %s (%.0f%% of %s the jobs read); %d jobs ...%n", node.url(), Terminal.bytes(budget),
          budgetShare, Terminal.bytes(distinct), n);
      log.flush();
      long t0 = System.nanoTime();
      List<Path> outputs = new ArrayList<>();
      for (Job j : mix) {
        long wait = (long) (j.startSeconds() * 1e9) - (System.nanoTime() - t0);
        if (wait > 0) {
          TimeUnit.NANOSECONDS.sleep(wait);
        }
        List<String> args = new ArrayList<>(List.of("loader", "run", "--dataset", hdd.resolve(j.dataset()).toString(), "--node",
            node.url(), "--job", j.name(), "--features", String.join(",", j.features()), "--epochs", Integer.toString(j.epochs()),
            "--seed", Long.toString(j.seed()), "--step-ms", Integer.toString(j.stepMs()), "--mode", j.mode(), "--json"));
        args.addAll(j.mode().equals("rows") ? List.of("--batch", "2048", "--shuffle-block", "256") : List.of("--batch", "64"));
        if (substitutable) {
          args.add("--substitutable");
        }
        Path o = dir.resolve(j.name() + ".out");
        outputs.add(o);
        running.add(Processes.spawn(List.of("-Xmx512m"), args, o));
      }
      long jobReads = 0;
      for (int i = 0; i < running.size(); i++) {
        Process p = running.get(i);
        if (!p.waitFor(30, TimeUnit.MINUTES)) {
          throw new IOException(mix.get(i).name() + " did not finish within 30 minutes");
        }
        String text = Files.readString(outputs.get(i), StandardCharsets.UTF_8);
        JsonNode r = Processes.jsonResult(text);
        if (p.exitValue() != 0 || r == null) {
          throw new IOException(mix.get(i).name() + " failed (exit " + p.exitValue() + "): " + text.strip());
        }
        jobReads += r.path("nodeReadsReported").asLong();
      }
      // Every job has exited: its loader flushed its last reads and ended its plan before that.
      double seconds = (System.nanoTime() - t0) / 1e9;
      Path tracePath = dir.resolve("trace.csv");
      NodeClient.RecordedTrace recorded = client.trace();
      Files.writeString(tracePath, recorded.csv(), StandardCharsets.UTF_8);
      Trace trace = Trace.read(tracePath);
      JsonNode traffic = client.tiers().path("traffic");
      long liveFlash = traffic.path("flashBytesWritten").asLong();
      Simulator.Result live = Simulator.live(trace);
      live = new Simulator.Result("live node", live.reads(), live.hits(), live.hitBytes(), live.hddBytes(), liveFlash, seconds);
      Simulator.Result opt = Simulator.run(trace, new OptPolicy(trace, budget));
      Simulator.Result lru = Simulator.run(trace, new LruPolicy(budget));
      Simulator.Result caffeine = Simulator.run(trace, new CaffeinePolicy(budget));
      Simulator.Result frequency = Simulator.run(trace, new FrequencyPolicy(budget));
      Simulator.Result s3fifo = Simulator.run(trace, new S3FifoPolicy(budget));
      Simulator.Result replay = Simulator.run(trace, new StrataPolicy(budget, 0));
      replay = new Simulator.Result("strata (replayed)", replay.reads(), replay.hits(), replay.hitBytes(), replay.hddBytes(),
          replay.flashBytes(), replay.seconds());
      Simulator.Result online = Simulator.run(trace.withoutPlans(), new StrataPolicy(budget, 0));
      online = new Simulator.Result("strata (replayed, no plans)", online.reads(), online.hits(), online.hitBytes(), online.hddBytes(),
          online.flashBytes(), online.seconds());

      boolean everyRead = trace.size() == jobReads && recorded.droppedRows() == 0;
      boolean optBounds = opt.byteHitRatio() + 1e-9 >= live.byteHitRatio();
      ObjectNode res = Json.object().put("benchmark", "policy-live").put("livePolicy", policy).put("quick", quick).put("jobs", n)
          .put("datasets", datasets.size()).put(Setting.SSD_BUDGET_BYTES.key(), budget).put("distinctBytes", distinct)
          .put("budgetShare", budgetShare / 100).put("seconds", seconds).put("reads", trace.size()).put("jobReads", jobReads)
          .put("planRecords", trace.controls().stream().filter(c -> c instanceof Trace.PlanRecord).count());
      ObjectNode ratios = res.putObject("ratios");
      ratios.put("liveVsOpt", live.byteHitRatio() / Math.max(1e-12, opt.byteHitRatio()));
      ratios.put("liveVsLru", live.byteHitRatio() / Math.max(1e-12, lru.byteHitRatio()));
      ratios.put("flashVsLru", (double) liveFlash / Math.max(1, lru.flashBytes()));
      ratios.put("liveVsCaffeine", live.byteHitRatio() / Math.max(1e-12, caffeine.byteHitRatio()));
      ratios.put("replayVsOpt", replay.byteHitRatio() / Math.max(1e-12, opt.byteHitRatio()));
      ObjectNode figures = res.putObject("byteHitRatio");
      ObjectNode flash = res.putObject("flashBytes");
      Terminal.Table table = new Terminal.Table("policy", "byte hit ratio", "vs OPT", "vs LRU", "flash written", "flash vs LRU");
      for (Simulator.Result r : List.of(live, replay, online, opt, lru, caffeine, frequency, s3fifo)) {
        String key = switch (r.policy()) {
          case "live node" -> "live";
          case "strata (replayed)" -> "strataReplayed";
          case "strata (replayed, no plans)" -> "strataReplayedNoPlans";
          default -> r.policy();
        };
        figures.put(key, r.byteHitRatio());
        flash.put(key, r.flashBytes());
        table.row(r.policy(), Terminal.percent(r.byteHitRatio()), f2(r.byteHitRatio() / Math.max(1e-12, opt.byteHitRatio())),
            f2(r.byteHitRatio() / Math.max(1e-12, lru.byteHitRatio())) + "x", Terminal.bytes(r.flashBytes()),
            f2((double) r.flashBytes() / Math.max(1, lru.flashBytes())));
      }
      // What placement latency cost live: ORC reads of chunks being written, or landed but not yet re-resolved.
      double readBytes = Math.max(1, traffic.path("ssdBytes").asDouble() + traffic.path("hddBytes").asDouble());
      res.putObject("placementLatency").put("meanLandingSeconds", traffic.path("meanLandingSeconds").asDouble())
          .put("missedInFlightShare", traffic.path("hddBytesInFlight").asDouble() / readBytes)
          .put("missedLandedShare", traffic.path("hddBytesLanded").asDouble() / readBytes);
      res.putObject("checks").put("traceHasEveryRead", everyRead).put("optBoundsLive", optBounds);
      res.put("substitutable", substitutable);
      if (!json) {
        out.printf("%s%n", substitutable ? "-- the same jobs, substitutable reads:" : "-- the jobs in their plans' order:");
        out.printf("%d jobs in %.0f s; the node recorded %s reads (%s reported by the jobs), %d plans%n", n, seconds,
            Terminal.count(trace.size()), Terminal.count(jobReads), res.path("planRecords").asLong());
        table.print(out);
        out.printf("live/OPT %.2f, live/LRU %.2fx, flash/LRU %.2f (SSD budget %s, %.0f%% of the bytes read)%n",
            ratios.path("liveVsOpt").asDouble(), ratios.path("liveVsLru").asDouble(), ratios.path("flashVsLru").asDouble(),
            Terminal.bytes(budget), budgetShare);
        JsonNode pl = res.path("placementLatency");
        out.printf("placements landed %.2f s after the decision on average; read from ORC meanwhile: %s of the bytes while"
                + " being written, %s after landing, before the reader re-resolved%n", pl.path("meanLandingSeconds").asDouble(),
            Terminal.percent(pl.path("missedInFlightShare").asDouble()), Terminal.percent(pl.path("missedLandedShare").asDouble()));
      }
      out.flush();
      if (!everyRead) {
        throw new IOException("the recorded trace has " + trace.size() + " reads but the jobs reported " + jobReads
            + (recorded.droppedRows() > 0 ? " (the node dropped " + recorded.droppedRows() + " rows)" : ""));
      }
      if (!optBounds) {
        throw new IOException("the live byte hit ratio " + f3(live.byteHitRatio()) + " exceeds OPT's " + f3(opt.byteHitRatio())
            + " on the same trace: the live figures or the replay are wrong");
      }
      return res;
    } finally {
      for (Process p : running) {
        p.destroyForcibly();
      }
      node.process().destroy();
      if (!node.process().waitFor(30, TimeUnit.SECONDS)) {
        node.process().destroyForcibly();
      }
    }
  }

  /**
   * The job mix: two thirds of the jobs on the first dataset; each reads a popular core of
   * features plus a few others (feature sets overlap), 1 to 3 epochs, shuffled samples (one job in
   * four shuffled row blocks), starts staggered, and a per-batch compute time that differs by job.
   */
  private List<Job> mix(int n, List<String> datasets) {
    SplittableRandom r = new SplittableRandom(seed);
    List<Job> out = new ArrayList<>();
    double start = 0;
    for (int i = 0; i < n; i++) {
      String ds = datasets.get(r.nextInt(3) < 2 ? 0 : 1);
      LinkedHashSet<String> f = new LinkedHashSet<>();
      int core = 2 + r.nextInt(2);
      for (int k = 0; k < core; k++) {
        f.add(FEATURES.get(k));
      }
      int extra = 1 + r.nextInt(3);
      while (f.size() < core + extra) {
        f.add(FEATURES.get(r.nextInt(FEATURES.size())));
      }
      int epochs = 1 + r.nextInt(3);
      String mode = i % 4 == 3 ? "rows" : "samples";
      int stepMs = quick ? 2 + r.nextInt(4) : 4 + r.nextInt(8);
      out.add(new Job("job" + i, ds, List.copyOf(f), epochs, 1000 + i, start, stepMs, mode));
      start += quick ? 1 + r.nextDouble() * 2 : 5 + r.nextDouble() * 10;
    }
    return out;
  }

  private static String f2(double v) {
    return String.format(Locale.ROOT, "%.2f", v);
  }

  private static String f3(double v) {
    return String.format(Locale.ROOT, "%.3f", v);
  }
}
