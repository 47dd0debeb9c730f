package io.strata.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.node.Sizes;
import io.strata.ops.Main;
import io.strata.ops.MemoryCgroup;
import io.strata.ops.Processes;
import io.strata.ops.Terminal;
import io.strata.sdk.internal.Json;
import io.strata.sdk.loader.Checkpoint;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code strata bench ...}: benchmarks that need real processes. JMH ones live in bench/. */
@Command(name = "bench", mixinStandardHelpOptions = true,
    description = "Side-by-side benchmarks against peers; 'bench all' runs every one and writes BENCHMARKS.md's results and charts.",
    subcommands = {BenchAll.class, SampleBench.class, ScanBench.class, BenchCommand.Memory.class, PolicyBench.class,
      BenchCommand.Derived.class, BenchCommand.Restart.class, ApiBench.class, GpuBench.class, BenchPython.class, PeersBench.class,
      BenchPolicyLive.class, RelayoutBench.class, ClusterBench.class, FleetBench.class, BenchSetup.class})
public final class BenchCommand implements Runnable {
  @Spec CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /** The kB fields of /proc/PID/smaps_rollup. */
  static Map<String, Long> smapsRollup(long pid) throws IOException {
    Map<String, Long> out = new LinkedHashMap<>();
    for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "smaps_rollup"))) {
      String[] p = line.trim().split("\\s+");
      if (p.length == 3 && p[0].endsWith(":") && p[2].equals("kB")) {
        out.put(p[0].substring(0, p[0].length() - 1), Long.parseLong(p[1]));
      }
    }
    return out;
  }

  @Command(name = "memory", mixinStandardHelpOptions = true,
      description = "Private and shared memory (smaps_rollup) of N concurrent loader processes reading one dataset from segments.")
  static final class Memory implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--dataset", required = true, description = "Dataset directory.")
    Path dataset;

    @Option(names = "--ssd", required = true, description = "SSD tier with every feature promoted.")
    Path ssd;

    @Option(names = "--processes", split = ",", defaultValue = "1,2,4", description = "Process counts to measure; default ${DEFAULT-VALUE}.")
    List<Integer> processes;

    @Option(names = "--heap", defaultValue = "64m", description = "Java heap of each loader process; default ${DEFAULT-VALUE}.")
    String heap;

    @Option(names = "--batch", defaultValue = "8192", description = "Rows per batch; default ${DEFAULT-VALUE}.")
    int batch;

    @Option(names = "--jvm-opts", defaultValue = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k",
        description = "Other JVM options of each loader; default: ${DEFAULT-VALUE}.")
    String jvmOpts;

    @Option(names = "--memory-limit", paramLabel = "SIZE",
        description = "Run each group of loaders in a memory cgroup of this size (page cache included): a dataset larger than the memory the jobs may use. Needs root; drops the host's page cache first so that the group starts cold.")
    String memoryLimit;

    @Option(names = "--json", description = "Print the figures as one JSON object.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      List<String> jvm = new ArrayList<>();
      jvm.add("-Xmx" + heap);
      for (String o : jvmOpts.trim().split("\\s+")) {
        if (!o.isEmpty()) {
          jvm.add(o);
        }
      }
      long segmentBytes;
      try (Stream<Path> s = Files.walk(ssd)) {
        segmentBytes = s.filter(Files::isRegularFile).mapToLong(p -> p.toFile().length()).sum();
      }
      ObjectNode result = Json.object();
      result.put("benchmark", "memory").put("segmentBytes", segmentBytes).put("heap", heap).put("jvmOpts", jvmOpts);
      long limit = memoryLimit == null ? 0 : Sizes.parse(memoryLimit);
      if (limit > 0) {
        result.put("memoryLimitBytes", limit);
      }
      ArrayNode runs = result.putArray("runs");
      Terminal.Table table = new Terminal.Table("processes", "private/process (max)", "anonymous/process (max)",
          "shared/process", "PSS/process", "RSS/process", "s to read all");
      for (int n : processes) {
        Path tmp = Files.createTempDirectory("strata-bench-memory");
        List<Process> procs = new ArrayList<>();
        MemoryCgroup group = limit > 0 ? MemoryCgroup.create("strata-bench-" + ProcessHandle.current().pid() + "-" + n, limit) : null;
        long started = System.nanoTime();
        try {
          for (int i = 0; i < n; i++) {
            procs.add(Processes.spawn(
                jvm,
                List.of("loader", "run", "--dataset", dataset.toString(), "--ssd", ssd.toString(), "--mode", "rows",
                    "--no-shuffle", "--batch", Integer.toString(batch), "--prefetch", "2", "--ready-file",
                    tmp.resolve("ready-" + i).toString(), "--hold", "600"),
                tmp.resolve("out-" + i)));
            if (group != null) {
              group.add(procs.getLast().pid());
            }
          }
          long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(10);
          for (int i = 0; i < n; i++) {
            while (!Files.exists(tmp.resolve("ready-" + i))) {
              Process p = procs.get(i);
              if (!p.isAlive()) {
                throw new IOException("loader process " + i + " exited with " + p.exitValue() + ": "
                    + Files.readString(tmp.resolve("out-" + i), StandardCharsets.UTF_8));
              }
              if (System.nanoTime() > deadline) {
                throw new IOException("loader process " + i + " did not finish its epoch in 10 minutes");
              }
              Thread.sleep(100);
            }
          }
          ObjectNode run = runs.addObject();
          run.put("processes", n).put("secondsToReadAll", (System.nanoTime() - started) / 1e9);
          if (group != null) {
            run.put("cgroupPeakBytes", group.peakBytes()).put("cgroupLimitHits", group.limitHits());
          }
          ArrayNode per = run.putArray("perProcess");
          long maxPrivate = 0;
          long maxAnonymous = 0;
          long sumShared = 0;
          long sumPss = 0;
          long sumRss = 0;
          for (Process p : procs) {
            Map<String, Long> m = smapsRollup(p.pid());
            long priv = m.getOrDefault("Private_Clean", 0L) + m.getOrDefault("Private_Dirty", 0L);
            long shared = m.getOrDefault("Shared_Clean", 0L) + m.getOrDefault("Shared_Dirty", 0L);
            ObjectNode o = per.addObject();
            o.put("pid", p.pid()).put("privateKiB", priv).put("sharedKiB", shared).put("pssKiB", m.getOrDefault("Pss", 0L))
                .put("rssKiB", m.getOrDefault("Rss", 0L)).put("anonymousKiB", m.getOrDefault("Anonymous", 0L));
            maxPrivate = Math.max(maxPrivate, priv);
            maxAnonymous = Math.max(maxAnonymous, m.getOrDefault("Anonymous", 0L));
            sumShared += shared;
            sumPss += m.getOrDefault("Pss", 0L);
            sumRss += m.getOrDefault("Rss", 0L);
          }
          run.put("maxPrivateKiB", maxPrivate).put("maxAnonymousKiB", maxAnonymous).put("meanSharedKiB", sumShared / n)
              .put("meanPssKiB", sumPss / n)
              .put("meanRssKiB", sumRss / n);
          table.row(n, Terminal.bytes(maxPrivate << 10), Terminal.bytes(maxAnonymous << 10), Terminal.bytes((sumShared / n) << 10),
              Terminal.bytes((sumPss / n) << 10), Terminal.bytes((sumRss / n) << 10),
              BenchPeers.f2(run.path("secondsToReadAll").asDouble()));
        } finally {
          for (Process p : procs) {
            p.destroyForcibly();
            p.waitFor(30, TimeUnit.SECONDS);
          }
          if (group != null) {
            group.close();
          }
          Processes.deleteTree(tmp);
        }
      }
      if (json) {
        out.println(Json.compact(result));
      } else {
        out.printf("loader processes (%s), each reading every segment of %s (%s of segments)%s%n", String.join(" ", jvm),
            dataset, Terminal.bytes(segmentBytes), limit > 0 ? ", all of them in a memory cgroup of " + Terminal.bytes(limit) : "");
        table.print(out);
      }
      return 0;
    }
  }

  @Command(name = "derived", mixinStandardHelpOptions = true,
      description = {"A first job computes an expensive derived feature and stores it; a later job, another process, gets it from the store.",
          "With --cluster: three hosts (network namespaces, needs root), three jobs on each asking their node for the feature:"
              + " CPU spent computing it when every node computes it, against one Spark job whose staged chunks the nodes ingest."})
  static final class Derived implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--dataset", description = "Dataset directory (without --cluster).")
    Path dataset;

    @Option(names = "--cluster", description = "The cluster comparison (a dataset of --rows rows is generated).")
    boolean cluster;

    @Option(names = "--rows", defaultValue = "1200000", description = "With --cluster: rows of the dataset; default ${DEFAULT-VALUE}.")
    long rows;

    @Option(names = "--quick", description = "With --cluster: small data (CI).")
    boolean quick;

    @Option(names = "--kill-executor", description = "With --cluster: kill an executor (SIGKILL) once the Spark job staged its first chunk.")
    boolean killExecutor;

    @Option(names = "--hdd", defaultValue = "local", description = "With --cluster: where the dataset is, local (a directory"
        + " every host reads) or hdfs (a real HDFS on a fourth host); default ${DEFAULT-VALUE}.")
    String hdd;

    @Option(names = "--kill-driver", description = "With --cluster: kill the Spark job's driver (SIGKILL) once it staged three"
        + " chunks, and run the job again.")
    boolean killDriver;

    @Option(names = "--work", description = "With --cluster: working directory (default: a new temporary one, removed after).")
    Path work;

    @Option(names = "--spec", defaultValue = "zscore(seq_mean(log1p(amount), last=64))",
        description = "The derived feature; default ${DEFAULT-VALUE}.")
    String derived;

    @Option(names = "--later-jobs", defaultValue = "3", description = "Later jobs to run; default ${DEFAULT-VALUE}.")
    int laterJobs;

    @Option(names = "--json", description = "Print the figures as one JSON object.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      if (cluster) {
        return cluster(out);
      }
      if (dataset == null) {
        throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--dataset is needed (or --cluster)");
      }
      Path store = Files.createTempDirectory("strata-bench-derived");
      try {
        List<JsonNode> runs = new ArrayList<>();
        for (int j = 0; j <= laterJobs; j++) {
          Path log = store.resolve("job-" + j + ".log");
          Process p = Processes.spawn(List.of("-Xmx2g"), List.of("features", "derive", "--dataset", dataset.toString(), "--spec", derived,
              "--store", store.resolve("fs").toString(), "--json", "--checksum"), log);
          if (!p.waitFor(30, TimeUnit.MINUTES) || p.exitValue() != 0) {
            throw new IOException("job " + j + " failed: " + Files.readString(log));
          }
          JsonNode r = Processes.jsonResult(Files.readString(log));
          if (r == null) {
            throw new IOException("job " + j + " printed no result: " + Files.readString(log));
          }
          runs.add(r);
        }
        JsonNode first = runs.getFirst();
        ObjectNode result = Json.object();
        result.put("benchmark", "derived").put("spec", first.path("spec").asText()).put("dataset", dataset.toString());
        result.put("firstJobSeconds", first.path("seconds").asDouble()).put("firstJobState", first.path("state").asText());
        ArrayNode later = result.putArray("laterJobSeconds");
        boolean identical = true;
        double best = Double.MAX_VALUE;
        for (JsonNode r : runs.subList(1, runs.size())) {
          later.add(r.path("seconds").asDouble());
          best = Math.min(best, r.path("seconds").asDouble());
          identical &= r.path("checksum").asText().equals(first.path("checksum").asText())
              && r.path("state").asText().equals("already stored");
        }
        double median = runs.subList(1, runs.size()).stream().mapToDouble(r -> r.path("seconds").asDouble()).sorted()
            .toArray()[(runs.size() - 1) / 2];
        result.put("speedup", first.path("seconds").asDouble() / median).put("byteIdentical", identical);
        result.put("storedBytes", first.path("bytes").asLong()).put("chunks", first.path("chunks").asInt());
        if (json) {
          out.println(Json.compact(result));
        } else {
          out.printf("derived feature %s on %s (%d chunks, %s stored)%n", first.path("spec").asText(), dataset,
              first.path("chunks").asInt(), Terminal.bytes(first.path("bytes").asLong()));
          out.printf("  first job (computes and stores): %s%n", Terminal.seconds(first.path("seconds").asDouble()));
          out.printf("  later jobs (from the store):     %s%n", later);
          out.printf("  speedup (median later job): %.1fx; values byte-identical: %s%n", first.path("seconds").asDouble() / median,
              identical);
        }
        return identical ? 0 : Main.FAILURE;
      } finally {
        Processes.deleteTree(store);
      }
    }

    private int cluster(PrintWriter out) throws Exception {
      if (!List.of("local", "hdfs").contains(hdd)) {
        throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--hdd is local or hdfs, not '" + hdd + "'");
      }
      String why = DerivedClusterBench.unavailable();
      if (why == null && hdd.equals("hdfs") && HdfsLab.unavailable() != null) {
        why = "an HDFS: " + HdfsLab.unavailable();
      }
      if (why != null) {
        if (json) {
          out.println(Json.compact(Json.object().put("available", false).put("reason", why)));
        } else {
          out.println("not measured: bench derived --cluster needs " + why);
        }
        return 0;
      }
      boolean temporary = work == null;
      Path dir = temporary ? Files.createTempDirectory("strata-bench-derived-cluster") : work;
      try {
        ObjectNode r = DerivedClusterBench.run(dir, quick ? Math.min(rows, 120_000) : rows, derived, killExecutor, killDriver,
            hdd.equals("hdfs"), spec.commandLine().getErr());
        if (json) {
          out.println(Json.compact(r));
        } else {
          JsonNode a = r.path("perHost");
          JsonNode b = r.path("spark");
          out.printf("3 hosts, %d jobs each asking for %s (%d chunks):%n", DerivedClusterBench.JOBS_PER_HOST,
              r.path("spec").asText(), r.path("chunks").asInt());
          out.printf("  each node computes it:        %s of CPU%n", Terminal.seconds(a.path("computeCpuSeconds").asDouble()));
          out.printf("  one Spark job, nodes ingest:  %s of CPU (tasks %s, driver %s, nodes %s); Spark's own processes %s%n",
              Terminal.seconds(b.path("computeCpuSeconds").asDouble()), Terminal.seconds(b.path("taskCpuSeconds").asDouble()),
              Terminal.seconds(b.path("driverPlanningCpuSeconds").asDouble()), Terminal.seconds(b.path("nodesCpuSeconds").asDouble()),
              Terminal.seconds(b.path("sparkOverheadCpuSeconds").asDouble()));
          out.printf("  clustered nodes, host 1 first, the others copy it from its node: %s of CPU%n",
              Terminal.seconds(r.path("peers").path("computeCpuSeconds").asDouble()));
          out.printf("  ratio %.2f (with Spark's own processes %.2f; peers %.2f); %d chunks differ from a local promote%s%n",
              r.path("ratios").path("clusterComputeVsPerHost").asDouble(),
              r.path("ratios").path("clusterProcessCpuVsPerHost").asDouble(),
              r.path("ratios").path("peersComputeVsPerHost").asDouble(), r.path("mismatches").asLong(),
              b.path("executorKilled").asBoolean() ? "; an executor was killed mid-job" : "");
        }
        int failures = r.path("perHost").path("jobFailures").asInt() + r.path("spark").path("jobFailures").asInt()
            + r.path("peers").path("jobFailures").asInt();
        return r.path("mismatches").asLong() == 0 && failures == 0 ? 0 : Main.FAILURE;
      } finally {
        if (temporary) {
          Processes.deleteTree(dir);
        }
      }
    }
  }

  @Command(name = "restart", mixinStandardHelpOptions = true,
      description = "Time to the first batch after a SIGKILL, with and without the persistent batch cache.")
  static final class Restart implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--dataset", required = true, description = "Dataset directory.")
    Path dataset;

    @Option(names = "--ssd", description = "SSD tier directory (optional).")
    Path ssd;

    @Option(names = "--batch", defaultValue = "512", description = "Samples per batch; default ${DEFAULT-VALUE}.")
    int batch;

    @Option(names = "--step-ms", defaultValue = "200",
        description = "Simulated training step per batch before the kill, so that prefetch runs ahead; default ${DEFAULT-VALUE}.")
    int stepMs;

    @Option(names = "--kill-after", defaultValue = "5", description = "Batches read before the SIGKILL; default ${DEFAULT-VALUE}.")
    int killAfter;

    @Option(names = "--heap", defaultValue = "2g",
        description = "Java heap of the loader processes (reading ORC stripes needs room); default ${DEFAULT-VALUE}.")
    String heap;

    @Option(names = "--json", description = "Print the figures as one JSON object.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      ObjectNode result = Json.object();
      result.put("benchmark", "restart");
      for (boolean withCache : new boolean[] {false, true}) {
        Path tmp = Files.createTempDirectory("strata-bench-restart");
        try {
          Path ckpt = tmp.resolve("checkpoint");
          List<String> args = new ArrayList<>(List.of("loader", "run", "--dataset", dataset.toString(), "--batch",
              Integer.toString(batch), "--checkpoint", ckpt.toString(), "--prefetch", "4", "--epochs", "1000", "--json",
              "--max-batches"));
          List<String> first = new ArrayList<>(args);
          first.add(Integer.toString(killAfter + 1000));
          List<String> extra = new ArrayList<>();
          if (ssd != null) {
            extra.addAll(List.of("--ssd", ssd.toString()));
          }
          if (withCache) {
            extra.addAll(List.of("--batch-cache", tmp.resolve("cache").toString()));
          }
          first.addAll(extra);
          first.addAll(List.of("--print-checksums", "--step-ms", Integer.toString(stepMs)));
          Path log = tmp.resolve("first.log");
          Process p = Processes.spawn(List.of("-Xmx" + heap), first, log);
          long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
          while (countBatches(log) < killAfter) {
            if (!p.isAlive() || System.nanoTime() > deadline) {
              throw new IOException("the first loader did not reach " + killAfter + " batches: " + Files.readString(log));
            }
            Thread.sleep(20);
          }
          p.destroyForcibly();
          p.waitFor(30, TimeUnit.SECONDS);
          Checkpoint cp = Checkpoint.parse(Files.readAllBytes(ckpt));
          List<String> second = new ArrayList<>(args);
          second.add("3");
          second.addAll(extra);
          Path log2 = tmp.resolve("second.log");
          Process q = Processes.spawn(List.of("-Xmx" + heap), second, log2);
          if (!q.waitFor(5, TimeUnit.MINUTES) || q.exitValue() != 0) {
            throw new IOException("the restarted loader failed: " + Files.readString(log2));
          }
          JsonNode summary = Processes.jsonResult(Files.readString(log2));
          if (summary == null) {
            throw new IOException("no summary from the restarted loader: " + Files.readString(log2));
          }
          String key = withCache ? "withBatchCache" : "withoutBatchCache";
          ObjectNode o = result.putObject(key);
          o.put("resumedAtEpoch", cp.epoch()).put("resumedAtStep", cp.step());
          o.put("timeToFirstBatchMs", summary.get("timeToFirstBatchMs").asDouble());
          o.put("batchesFromCache", summary.get("batchesFromCache").asLong());
        } finally {
          Processes.deleteTree(tmp);
        }
      }
      double without = result.get("withoutBatchCache").get("timeToFirstBatchMs").asDouble();
      double with = result.get("withBatchCache").get("timeToFirstBatchMs").asDouble();
      result.put("speedup", without / with);
      if (json) {
        out.println(Json.compact(result));
      } else {
        out.printf("time to the first batch after SIGKILL and restart (from the loader's start, JVM start-up excluded):%n");
        out.printf("  without the batch cache: %s%n", Terminal.seconds(without / 1e3));
        out.printf("  with the batch cache:    %s (%d of the first 3 batches from the cache)%n", Terminal.seconds(with / 1e3),
            result.get("withBatchCache").get("batchesFromCache").asLong());
        out.printf("  ratio: %.1fx%n", without / with);
      }
      return 0;
    }

    private static long countBatches(Path log) throws IOException {
      if (!Files.exists(log)) {
        return 0;
      }
      try (Stream<String> lines = Files.lines(log)) {
        return lines.filter(l -> l.startsWith("batch ")).count();
      }
    }
  }
}
