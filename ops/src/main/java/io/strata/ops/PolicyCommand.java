package io.strata.ops;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.node.Setting;
import io.strata.node.Sizes;
import io.strata.node.policy.LruPolicy;
import io.strata.node.policy.Policies;
import io.strata.node.policy.StrataPolicy;
import io.strata.node.sim.CaffeinePolicy;
import io.strata.node.sim.OptPolicy;
import io.strata.node.sim.Simulator;
import io.strata.node.sim.Trace;
import io.strata.node.sim.TraceGenerator;
import io.strata.sdk.internal.Json;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code strata policy ...}: a node's tiering policy (get, set) and the policy offline (simulate, trace). */
@Command(name = "policy", mixinStandardHelpOptions = true,
    description = "Tiering policy: show and change a node's (get, set); simulate on traces, generate traces.",
    subcommands = {PolicyCommand.GetPolicy.class, PolicyCommand.SetPolicy.class, PolicyCommand.Simulate.class, PolicyCommand.GenerateTrace.class})
final class PolicyCommand implements Runnable {
  @Spec CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /** What the policy's decision counters mean, for people. */
  private static final Map<String, String> DECISIONS = Map.of(
      "admittedPlanned", "admitted: a declared plan reads it again",
      "admittedPopular", "admitted: its stream is popular",
      "bypassNoNextUse", "not admitted: no one is expected to read it",
      "bypassNoFlashBudget", "not admitted: flash write budget spent",
      "bypassVictimNeededSooner", "not admitted: what it would evict is needed sooner",
      "bypassNotWorthTheWrite", "not admitted: what it would evict saves the slow tier as many bytes",
      "admittedForSlowTierBytes", "admitted: its victims save the slow tier far fewer bytes per SSD byte",
      "bypassBelowWhatFillsTheBudget", "not admitted: worth far less than what fills the budget",
      "keysWeighedBySlowTierBytes", "chunks weighed by their stored (compressed) bytes");

  static void printPolicy(PrintWriter out, JsonNode p) {
    JsonNode src = p.path("sources");
    Terminal.Table t = new Terminal.Table("setting", "value", "from");
    if (p.has("policy")) {
      List<String> others = new ArrayList<>();
      p.path("policies").forEach(n -> others.add(n.asText()));
      t.row("policy", p.path("policy").asText() + " (of " + String.join(", ", others) + ")", src.path("policy").asText(""));
    }
    String budget = Setting.SSD_BUDGET_BYTES.key();
    t.row("SSD budget", Terminal.bytes(p.path(budget).asLong()), src.path(budget).asText(""));
    long flash = p.path("flashWriteBudgetBytesPerHour").asLong();
    t.row("flash write budget", flash == 0 ? "none" : Terminal.bytes(flash) + "/h", src.path("flashWriteBudgetBytesPerHour").asText(""));
    t.row("popularity discount", p.path("popularityDiscount").asText(), src.path("popularityDiscount").asText(""));
    long rate = p.path("promotionBytesPerSecond").asLong();
    t.row("promotion rate limit", rate == 0 ? "none" : Terminal.bytes(rate) + "/s", "");
    p.path("hddRoots").forEach(r -> t.row("HDD root", r.asText(), src.path("hddRoots").asText("")));
    p.path("quotas").properties().forEach(e -> t.row("quota " + e.getKey(), Terminal.bytes(e.getValue().asLong()),
        src.path("quotas").asText("")));
    p.path("pins").forEach(x -> t.row("pinned", x.asText(), src.path("pins").asText("")));
    p.path("decisions").properties().forEach(e -> t.row(DECISIONS.getOrDefault(e.getKey(), e.getKey()), e.getValue().asText(), ""));
    t.print(out);
  }

  @Command(name = "get", mixinStandardHelpOptions = true,
      description = "Show a node's policy: SSD budget, flash write budget, admission knobs, quotas, pins, decision counts.")
  static final class GetPolicy implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Mixin NodeOptions node;

    @Option(names = "--json", description = "Print the node's answer as one JSON object.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      JsonNode p = node.client().policy();
      if (json) {
        spec.commandLine().getOut().println(Json.compact(p));
      } else {
        printPolicy(spec.commandLine().getOut(), p);
      }
      return 0;
    }
  }

  @Command(name = "set", mixinStandardHelpOptions = true,
      description = "Change a node's policy; a smaller SSD budget evicts at once.")
  static final class SetPolicy implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Mixin NodeOptions node;

    @Option(names = "--policy", paramLabel = "NAME",
        description = "The policy to run (strata, lru, frequency, s3fifo): replaces the running one at once; plans, pins and what is resident carry over.")
    String policy;

    @Option(names = "--ssd-budget", paramLabel = "SIZE", description = "SSD tier budget (3000, 512m, 10g).")
    String ssdBudget;

    @Option(names = "--flash-budget", paramLabel = "SIZE", description = "Flash write budget per hour (0: none).")
    String flashBudget;

    @Option(names = "--popularity-discount", paramLabel = "X",
        description = "Admission knob: how much less a stream read by one job weighs than one read by many (at least 1).")
    Double popularityDiscount;

    @Option(names = "--quota", paramLabel = "DATASET=SIZE",
        description = "SSD quota of a dataset (repeatable); SIZE 'none' removes the quota.")
    Map<String, String> quotas;

    @Option(names = "--json", description = "Print the new policy as one JSON object.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      ObjectNode change = Json.object();
      if (policy != null) {
        if (!Policies.known(policy)) {
          throw new ParameterException(spec.commandLine(), "no policy '" + policy + "' (known: " + String.join(", ", Policies.names()) + ")");
        }
        change.put("policy", policy);
      }
      if (ssdBudget != null) {
        change.put(Setting.SSD_BUDGET_BYTES.key(), Sizes.parse(ssdBudget));
      }
      if (flashBudget != null) {
        change.put("flashWriteBudgetBytesPerHour", Sizes.parse(flashBudget));
      }
      if (popularityDiscount != null) {
        change.put("popularityDiscount", popularityDiscount);
      }
      if (quotas != null) {
        ObjectNode q = change.putObject("quotas");
        quotas.forEach((ds, size) -> {
          if (size.equalsIgnoreCase("none")) {
            q.putNull(ds);
          } else {
            q.put(ds, Sizes.parse(size));
          }
        });
      }
      if (change.isEmpty()) {
        throw new ParameterException(spec.commandLine(),
            "nothing to change: give --policy, --ssd-budget, --flash-budget, --popularity-discount or --quota");
      }
      JsonNode p = node.client().setPolicy(change);
      if (json) {
        spec.commandLine().getOut().println(Json.compact(p));
      } else {
        printPolicy(spec.commandLine().getOut(), p);
      }
      return 0;
    }
  }

  @Command(name = "simulate", mixinStandardHelpOptions = true,
      description = "Replay a trace (CSV: time,job,dataset,feature,chunk,bytes) through every policy a node can run (strata, lru, frequency, s3fifo), Caffeine W-TinyLFU and offline Belady (OPT).")
  static final class Simulate implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--trace", required = true, description = "Trace CSV file.")
    Path trace;

    @Option(names = "--ssd-budget", required = true, split = ",",
        description = "SSD budget in bytes (3000, 512m, 10g) or as a share of the trace's distinct bytes (10%%); several allowed, comma-separated.")
    List<String> budgets;

    @Option(names = "--flash-budget", defaultValue = "0", description = "Flash write budget per hour for Strata's policy (0: none).")
    String flashBudget;

    @Option(names = "--json", description = "Print the results as one JSON object.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      // The arguments first (exit 2), then the file (exit 1).
      for (String b : budgets) {
        String v = b.strip();
        if (v.endsWith("%")) {
          try {
            double share = Double.parseDouble(v.substring(0, v.length() - 1));
            if (!(share > 0 && share <= 100)) {
              throw new IllegalArgumentException("an SSD budget share must be in (0, 100]%, got " + v);
            }
          } catch (NumberFormatException e) {
            throw new IllegalArgumentException("bad SSD budget share '" + v + "' (examples: 10%, 2.5%)");
          }
        } else {
          Sizes.parse(v);
        }
      }
      double flash = Sizes.parse(flashBudget);
      if (!Files.isRegularFile(trace)) {
        throw new NoSuchFileException(trace.toString(), null, "no such trace file");
      }
      // A malformed file is a failure of the input, not of the command line: exit 1.
      Trace t;
      try {
        t = Trace.read(trace);
      } catch (IllegalArgumentException e) {
        throw new IOException(trace + ": " + e.getMessage(), e);
      }
      if (t.size() == 0) {
        throw new IOException(trace + " has no reads");
      }
      ObjectNode result = Json.object();
      result.put("trace", trace.toString()).put("reads", t.size()).put("jobs", t.jobs()).put("chunks", t.keys())
          .put("distinctBytes", t.distinctBytes()).put("totalBytes", t.totalBytes());
      ArrayNode runs = result.putArray("runs");
      if (!json) {
        out.printf("trace %s: %s reads by %d jobs of %d feature chunks; %s distinct, %s read%n", trace, Terminal.count(t.size()),
            t.jobs(), t.keys(), Terminal.bytes(t.distinctBytes()), Terminal.bytes(t.totalBytes()));
      }
      for (String b : budgets) {
        long budget = b.strip().endsWith("%")
            ? (long) (t.distinctBytes() * Double.parseDouble(b.strip().replace("%", "")) / 100)
            : Sizes.parse(b);
        List<Simulator.Result> results = new ArrayList<>();
        Simulator.Result strata = Simulator.run(t, new StrataPolicy(budget, flash));
        Simulator.Result lru = Simulator.run(t, new LruPolicy(budget));
        Simulator.Result opt = Simulator.run(t, new OptPolicy(t, budget));
        results.add(strata);
        if (!t.controls().isEmpty()) {
          // The same reads with nothing declared: what the plans were worth.
          Simulator.Result online = Simulator.run(t.withoutPlans(), new StrataPolicy(budget, flash));
          results.add(new Simulator.Result("strata-online", online.reads(), online.hits(), online.hitBytes(), online.hddBytes(),
              online.flashBytes(), online.seconds()));
        }
        if (t.tier(0) != Trace.Tier.UNKNOWN) {
          results.add(Simulator.live(t));
        }
        results.add(lru);
        results.add(Simulator.run(t, new CaffeinePolicy(budget)));
        // Every other policy a node can run, as registered.
        for (Policies.Entry e : Policies.entries()) {
          if (!e.name().equals("strata") && !e.name().equals("lru")) {
            results.add(Simulator.run(t, e.make().apply(new Policies.Options(budget, flash, StrataPolicy.DEFAULT_POPULARITY_DISCOUNT))));
          }
        }
        results.add(opt);
        ObjectNode run = runs.addObject();
        run.put(Setting.SSD_BUDGET_BYTES.key(), budget).put("ssdBudgetShare", (double) budget / t.distinctBytes());
        ArrayNode policies = run.putArray("policies");
        Terminal.Table table = new Terminal.Table("policy", "byte hit ratio", "HDD bytes read", "HDD bytes absorbed", "flash written", "vs OPT", "absorbed vs LRU", "flash vs LRU");
        for (Simulator.Result r : results) {
          ObjectNode o = policies.addObject();
          o.put("policy", r.policy()).put("byteHitRatio", r.byteHitRatio()).put("hddBytesRead", r.hddBytes())
              .put("hddBytesAbsorbed", r.hitBytes()).put("flashBytesWritten", r.flashBytes()).put("hits", r.hits())
              .put("seconds", r.seconds()).put("eventsPerSecond", r.eventsPerSecond());
          table.row(r.policy(), Terminal.percent(r.byteHitRatio()), Terminal.bytes(r.hddBytes()),
              Terminal.bytes(r.hitBytes()), r.flashBytes() < 0 ? "n/a" : Terminal.bytes(r.flashBytes()),
              String.format(Locale.ROOT, "%.2f", r.byteHitRatio() / Math.max(1e-12, opt.byteHitRatio())),
              String.format(Locale.ROOT, "%.2fx", (double) r.hitBytes() / Math.max(1, lru.hitBytes())),
              String.format(Locale.ROOT, "%.2f", (double) r.flashBytes() / Math.max(1, lru.flashBytes())));
        }
        run.put("strataVsOpt", strata.byteHitRatio() / Math.max(1e-12, opt.byteHitRatio()));
        run.put("strataAbsorbedVsLru", (double) strata.hitBytes() / Math.max(1, lru.hitBytes()));
        run.put("strataFlashVsLru", (double) strata.flashBytes() / Math.max(1, lru.flashBytes()));
        if (!json) {
          out.printf("%nSSD budget %s (%.1f%% of distinct bytes)%n", Terminal.bytes(budget), 100.0 * budget / t.distinctBytes());
          table.print(out);
        }
      }
      if (json) {
        out.println(Json.compact(result));
      }
      return 0;
    }
  }

  @Command(name = "trace", mixinStandardHelpOptions = true,
      description = "Generate a realistic multi-job trace: Zipf feature popularity, jobs reading 20-37%% of a dataset's features for 1-3 epochs, staggered starts, several datasets.")
  static final class GenerateTrace implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = {"-o", "--out"}, required = true, description = "CSV file to write.")
    Path out;

    @Option(names = "--datasets", defaultValue = "4")
    int datasets;

    @Option(names = "--features", defaultValue = "60", description = "Feature columns per dataset.")
    int features;

    @Option(names = "--chunks", defaultValue = "48", description = "Chunks per dataset.")
    int chunks;

    @Option(names = "--jobs", defaultValue = "40")
    int jobs;

    @Option(names = "--zipf", defaultValue = "1.1", description = "Zipf exponent of feature popularity.")
    double zipf;

    @Option(names = "--arrival", defaultValue = "60", description = "Mean seconds between job starts.")
    double arrival;

    @Option(names = "--seed", defaultValue = "1")
    long seed;

    @Option(names = "--json", description = "Print the trace's size as JSON.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      Trace t = TraceGenerator.generate(new TraceGenerator.Spec(datasets, features, chunks, jobs, zipf, arrival, seed));
      t.write(out);
      if (json) {
        spec.commandLine().getOut().println(Json.compact(Json.object().put("trace", out.toString()).put("reads", t.size())
            .put("jobs", t.jobs()).put("chunks", t.keys()).put("distinctBytes", t.distinctBytes())));
        return 0;
      }
      spec.commandLine().getOut().printf("wrote %s: %s reads by %d jobs of %d feature chunks, %s distinct%n", out,
          Terminal.count(t.size()), t.jobs(), t.keys(), Terminal.bytes(t.distinctBytes()));
      return 0;
    }
  }
}
