package io.strata.bench;

import static io.strata.bench.BenchPeers.f2;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.node.policy.CachePolicy;
import io.strata.node.policy.FrequencyPolicy;
import io.strata.node.policy.LruPolicy;
import io.strata.node.policy.S3FifoPolicy;
import io.strata.node.policy.StrataPolicy;
import io.strata.node.sim.CaffeinePolicy;
import io.strata.node.sim.OptPolicy;
import io.strata.node.sim.Simulator;
import io.strata.node.sim.Trace;
import io.strata.node.sim.TraceGenerator;
import io.strata.ops.Terminal;
import io.strata.sdk.internal.Json;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "policy", mixinStandardHelpOptions = true,
    description = "The cache policy on generated multi-job traces at several SSD budgets: Strata (plans declared, and online only) "
        + "vs LRU, Caffeine W-TinyLFU, a frequency cache and OPT; replay speed on a 1 M-event trace.")
final class PolicyBench implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--budgets", split = ",", defaultValue = "5,10,20,30", description = "SSD budgets, %% of distinct bytes; default ${DEFAULT-VALUE}.")
  List<Double> budgets;

  @Option(names = "--seeds", split = ",", defaultValue = "1,2,3", description = "Trace seeds; default ${DEFAULT-VALUE}.")
  List<Long> seeds;

  @Option(names = "--speed-jobs", defaultValue = "600", description = "Jobs of the trace the replay speed is measured on (600: about 1 M reads); 0 skips it.")
  int speedJobs;

  @Option(names = "--json", description = "Print the figures as one JSON object.")
  boolean json;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    ObjectNode res = Json.object();
    res.put("benchmark", "policy");
    seeds.forEach(res.putArray("seeds")::add);
    ArrayNode runs = res.putArray("budgets");
    List<Trace> traces = new ArrayList<>();
    for (long s : seeds) {
      traces.add(TraceGenerator.generate(TraceGenerator.Spec.defaults(s)));
    }
    Terminal.Table t = new Terminal.Table("SSD budget", "Strata", "Strata online", "LRU", "Caffeine", "frequency", "S3-FIFO", "OPT",
        "Strata/OPT", "Strata/LRU", "online/LRU");
    for (double b : budgets) {
      double[][] r = new double[7][traces.size()];
      double[] s3 = new double[traces.size()];
      for (int i = 0; i < traces.size(); i++) {
        Trace tr = traces.get(i);
        Trace bare = tr.withoutPlans();
        long budget = (long) (tr.distinctBytes() * b / 100);
        r[0][i] = Simulator.run(tr, new StrataPolicy(budget, 0)).byteHitRatio();
        r[1][i] = Simulator.run(bare, new StrataPolicy(budget, 0)).byteHitRatio();
        r[2][i] = Simulator.run(tr, new LruPolicy(budget)).byteHitRatio();
        r[3][i] = Simulator.run(tr, new CaffeinePolicy(budget)).byteHitRatio();
        r[4][i] = Simulator.run(tr, new FrequencyPolicy(budget)).byteHitRatio();
        r[5][i] = Simulator.run(tr, new OptPolicy(tr, budget)).byteHitRatio();
        s3[i] = Simulator.run(tr, new S3FifoPolicy(budget)).byteHitRatio();
      }
      double s3fifo = Arrays.stream(s3).average().orElse(0);
      double[] m = new double[6];
      for (int k = 0; k < 6; k++) {
        m[k] = Arrays.stream(r[k]).average().orElse(0);
      }
      ObjectNode run = runs.addObject();
      run.put("ssdBudgetPercent", b).put("strata", m[0]).put("strataOnline", m[1]).put("lru", m[2]).put("caffeine", m[3])
          .put("frequency", m[4]).put("s3fifo", s3fifo).put("opt", m[5]).put("strataVsOpt", m[0] / m[5]).put("strataVsLru", m[0] / Math.max(1e-12, m[2]))
          .put("onlineVsLru", m[1] / Math.max(1e-12, m[2]));
      t.row(f2(b) + " %", Terminal.percent(m[0]), Terminal.percent(m[1]), Terminal.percent(m[2]), Terminal.percent(m[3]),
          Terminal.percent(m[4]), Terminal.percent(s3fifo), Terminal.percent(m[5]), f2(m[0] / m[5]),
          f2(m[0] / Math.max(1e-12, m[2])) + "x", f2(m[1] / Math.max(1e-12, m[2])) + "x");
    }
    if (speedJobs > 0) {
      // Replay speed: one warm-up replay, then the best of three of each policy.
      Trace big = TraceGenerator.generate(new TraceGenerator.Spec(4, 60, 48, speedJobs, 1.1, 60, 7));
      long budget = big.distinctBytes() / 10;
      ObjectNode speed = res.putObject("eventsPerSecond");
      speed.put("traceReads", big.size());
      List<Map.Entry<String, Supplier<CachePolicy>>> ps = List.of(
          Map.entry("strata", () -> new StrataPolicy(budget, 0)), Map.entry("opt", () -> new OptPolicy(big, budget)),
          Map.entry("lru", () -> new LruPolicy(budget)));
      for (var e : ps) {
        Simulator.run(big, e.getValue().get());
        double best = 0;
        for (int k = 0; k < 3; k++) {
          best = Math.max(best, Simulator.run(big, e.getValue().get()).eventsPerSecond());
        }
        speed.put(e.getKey(), best);
      }
    }
    if (json) {
      out.println(Json.compact(res));
    } else {
      out.printf("byte hit ratio, mean over %d generated traces (seeds %s); Strata online: the same reads without plan records%n",
          traces.size(), seeds);
      t.print(out);
      if (res.has("eventsPerSecond")) {
        com.fasterxml.jackson.databind.JsonNode sp = res.get("eventsPerSecond");
        out.printf("replay speed on a %s-read trace: Strata %s events/s, OPT %s, LRU %s%n", Terminal.count(sp.path("traceReads").asLong()),
            Terminal.count((long) sp.path("strata").asDouble()), Terminal.count((long) sp.path("opt").asDouble()),
            Terminal.count((long) sp.path("lru").asDouble()));
      }
    }
    return 0;
  }
}
