package io.strata.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.ops.Processes;
import io.strata.ops.Terminal;
import io.strata.sdk.Progress;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.hadoop.HadoopFileSystems;
import io.strata.sdk.derive.Derivation;
import io.strata.sdk.derive.Spec;
import io.strata.sdk.internal.Json;
import io.strata.sdk.node.NodeClient;
import io.strata.store.FeatureMeta;
import io.strata.store.FeatureStore;
import io.strata.tools.DatasetGenerator;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * {@code strata bench derived --cluster}: CPU spent computing one derived feature for a cluster of
 * three hosts (network namespaces, {@link ClusterLab}), three jobs on each host asking their node
 * for it at once, the dataset on storage every host reads. Two ways, one after the other on fresh
 * hosts:
 *
 * <ul>
 *   <li><b>per host</b> (what Strata did before): each node computes the feature for its own jobs
 *       (its jobs wait for that one computation);
 *   <li><b>Spark</b>: a standalone Master (host 1) and a Worker on hosts 2 and 3 ({@link SparkLab}),
 *       {@code strata features promote --spark} run on host 1 stages the feature once; the nodes,
 *       whose {@code featureStaging} is that directory, ingest it when their jobs ask (optionally an
 *       executor is killed mid-job and Spark retries its tasks, and the driver is killed and the
 *       job run again, computing only the chunks not staged yet);
 *   <li><b>peers</b>: the nodes clustered, host 1's jobs first: its node computes the feature, and
 *       hosts 2 and 3's nodes, asked next, copy it from host 1's store (no Spark).
 * </ul>
 *
 * <p>Counted as "computing it": the CPU of the nodes' derivation threads (the source checksums for
 * the fingerprint, statistics and chunks; or finding the staged feature by name and ingesting it:
 * each derivation's {@code cpuSeconds}, once however many jobs it answered), plus on the Spark side
 * the job's tasks and its driver's planning. Placing the segments on the SSD tier afterwards (the
 * same on both sides) and the nodes' whole processes (idle threads, the HTTP server, the JIT) are
 * reported beside. Spark's own processes (Master, Workers,
 * the executors' start, the driver JVM) are reported apart, and in a second ratio with them. Every
 * host's stored chunks are compared byte for byte with a local promote.
 */
public final class DerivedClusterBench {
  static final String TOKEN = "strata-bench-derived-token-01";
  static final int JOBS_PER_HOST = 3;

  private DerivedClusterBench() {}

  /** Why the comparison cannot run here, or null. */
  public static String unavailable() {
    String why = ClusterLab.unavailable();
    if (why != null) {
      return "network namespaces: " + why;
    }
    return SparkLab.unavailable() == null ? null : "Spark: " + SparkLab.unavailable();
  }

  /** The whole comparison in {@code dir}; the JSON it reports. */
  public static ObjectNode run(Path dir, long rows, String specText, boolean killExecutor, boolean killDriver, PrintWriter log)
      throws Exception {
    return run(dir, rows, specText, killExecutor, killDriver, false, log);
  }

  /** As above; with {@code hdfs} the dataset is on an HDFS (a NameNode and three DataNodes on a fourth host) every host reads. */
  public static ObjectNode run(Path dir, long rows, String specText, boolean killExecutor, boolean killDriver, boolean hdfs,
      PrintWriter log) throws Exception {
    Path data = dir.resolve("shared/events");
    log.println("generating " + Terminal.count(rows) + " rows ...");
    DatasetGenerator.generate(data, DatasetGenerator.Options.of("events", rows, 13).withFeatures(10)
        .withChunking((int) Math.max(2000, rows / 12), 4).withMeanSampleLength(40), Progress.NONE);
    // The reference: a local promote in this process (not counted).
    String fp;
    List<byte[]> reference = new ArrayList<>();
    String canonical;
    double referenceSeconds;
    try (Dataset ds = Dataset.open(data); FeatureStore fs = FeatureStore.openWriter(dir.resolve("reference"))) {
      Derivation d = Derivation.of(Spec.parse(specText), ds);
      canonical = d.spec().canonical();
      FeatureMeta m = fs.getOrCompute(d, Derivation.SourceReader.orc(ds), Progress.NONE);
      fp = m.fingerprint();
      referenceSeconds = m.computeSeconds();
      for (int c = 0; c < m.chunks(); c++) {
        reference.add(fs.encodedChunk(fp, c));
      }
    }
    log.printf("reference (a local promote): %s, %d chunks, %s of CPU%n", canonical, reference.size(),
        Terminal.seconds(referenceSeconds));
    ObjectNode r = Json.object();
    r.put("available", true).put("benchmark", "derived-cluster").put("hdd", hdfs ? "hdfs" : "local").put("hosts", 3).put("jobsPerHost", JOBS_PER_HOST)
        .put("rows", rows).put("spec", canonical).put("chunks", reference.size()).put("fingerprint", fp)
        .put("referenceComputeSeconds", referenceSeconds);
    ObjectNode perHost = mode(dir.resolve("per-host"), data, hdfs, canonical, fp, reference, "per-host", false, false, log);
    ObjectNode spark = mode(dir.resolve("spark"), data, hdfs, canonical, fp, reference, "spark", killExecutor, killDriver, log);
    ObjectNode peers = mode(dir.resolve("peers"), data, hdfs, canonical, fp, reference, "peers", false, false, log);
    r.set("perHost", perHost);
    r.set("spark", spark);
    r.set("peers", peers);
    double base = perHost.path("computeCpuSeconds").asDouble();
    r.putObject("ratios").put("clusterComputeVsPerHost", spark.path("computeCpuSeconds").asDouble() / base)
        .put("clusterProcessCpuVsPerHost",
            (spark.path("computeCpuSeconds").asDouble() + spark.path("sparkOverheadCpuSeconds").asDouble()) / base)
        .put("peersComputeVsPerHost", peers.path("computeCpuSeconds").asDouble() / base);
    r.put("mismatches", perHost.path("mismatches").asLong() + spark.path("mismatches").asLong()
        + peers.path("mismatches").asLong());
    r.put("assumes", "one machine: the hosts share its 2 cores, disk and page cache; the dataset is "
        + (hdfs ? "on an HDFS (a NameNode and three DataNodes as processes of a fourth host)" : "a directory of this machine")
        + " and the staging directory a directory of this machine, which every host reads (a shared mount); Spark standalone, one core per Worker;"
        + " computing it = CPU of the nodes' threads serving their jobs' requests, plus the Spark job's tasks and driver planning;"
        + " Spark's own processes counted apart (clusterProcessCpuVsPerHost)");
    return r;
  }

  /** One way of doing it on three fresh hosts. */
  private static ObjectNode mode(Path dir, Path localData, boolean hdfs, String spec, String fp, List<byte[]> reference,
      String way, boolean killExecutor, boolean killDriver, PrintWriter log) throws Exception {
    boolean useSpark = way.equals("spark");
    boolean peers = way.equals("peers");
    String label = way;
    Files.createDirectories(dir);
    Path staging = dir.resolve("staging");
    ObjectNode m = Json.object();
    // With HDFS, a fourth host holds it (its NameNode and three DataNodes, a process each).
    try (ClusterLab lab = ClusterLab.create(hdfs ? 4 : 3);
        HdfsLab dfs = hdfs ? HdfsLab.start(lab, 4, dir.resolve("hdfs"), 3, 8L << 20, localData, "/shared/events") : null;
        SparkLab spark = useSpark ? SparkLab.start(lab, 1, List.of(2, 3), dir.resolve("spark-cluster")) : null) {
      Path data = dfs != null ? HadoopFileSystems.path(dfs.uri().resolve("/shared/events")) : localData;
      if (dfs != null) {
        log.printf("%s: HDFS at %s, the dataset copied in%n", label, dfs.uri());
      }
      double sparkOverhead = 0;
      double jobCompute = 0;
      if (spark != null) {
        double before = spark.cpuSeconds();
        log.printf("%s: Spark Master on host 1, Workers on hosts 2 and 3; the promotion job on host 1 ...%n", label);
        List<String> cmd = new ArrayList<>(List.of("bash", "-c", "\"$@\"; rc=$?; times >&2; exit $rc", "bash"));
        cmd.addAll(ClusterBench.java("512m"));
        cmd.addAll(List.of("features", "promote", "--spark", spark.masterUrl(), "--staging", staging.toString(), "--dataset",
            data.toString(), "--spec", spec, "--json"));
        Path jobLog = dir.resolve("promote.log");
        long t0 = System.nanoTime();
        boolean killed = false;
        long stagedAtDriverKill = -1;
        if (killExecutor || killDriver) {
          // A first attempt that is interrupted: once the first chunk is staged, the executor of
          // Worker 1 (host 2) dies (its running tasks are lost and retried); with killDriver, once a
          // third chunk is staged the driver dies too, and the job is run again.
          Process first = lab.start(1, cmd, spark.environment(1), dir.resolve("promote-interrupted.log"));
          while (first.isAlive()) {
            long staged = staged(staging.resolve(fp));
            if (killExecutor && !killed && staged > 0) {
              killed = spark.killExecutor(0);
              log.printf("%s: the executor on host 2 %s%n", label, killed ? "killed (SIGKILL) mid-job" : "was not running");
            }
            if (killDriver && staged >= 3 && (killed || !killExecutor)) {
              first.descendants().forEach(ProcessHandle::destroyForcibly);
              first.destroyForcibly();
              first.waitFor();
              stagedAtDriverKill = staged(staging.resolve(fp));
              log.printf("%s: the driver killed (SIGKILL) with %d chunks staged; the job runs again%n", label, stagedAtDriverKill);
              break;
            }
            Thread.sleep(20);
          }
          if (stagedAtDriverKill < 0 && (!first.waitFor(30, TimeUnit.MINUTES) || first.exitValue() != 0)) {
            throw new IOException("the promotion job failed: " + Files.readString(dir.resolve("promote-interrupted.log")));
          }
        }
        Process job = lab.start(1, cmd, spark.environment(1), jobLog);
        if (!job.waitFor(30, TimeUnit.MINUTES) || job.exitValue() != 0) {
          throw new IOException("the promotion job failed: " + Files.readString(jobLog));
        }
        double jobSeconds = (System.nanoTime() - t0) / 1e9;
        String out = Files.readString(jobLog);
        JsonNode result = Processes.jsonResult(out);
        JsonNode outcome = result == null ? null : result.path("spark").get(0);
        if (outcome == null) {
          throw new IOException("the promotion job printed no result: " + out);
        }
        double driverProcess = childrenCpu(out);
        double sparkProcesses = spark.cpuSeconds() - before;
        double tasks = outcome.path("taskCpuSeconds").asDouble();
        jobCompute = tasks + outcome.path("driverCpuSeconds").asDouble();
        // Spark's own: the cluster's processes beyond the tasks, and the driver's processes beyond its planning.
        sparkOverhead = Math.max(0, sparkProcesses - tasks) + Math.max(0, driverProcess - outcome.path("driverCpuSeconds").asDouble());
        m.put("jobSeconds", jobSeconds).put("taskCpuSeconds", tasks).put("driverPlanningCpuSeconds",
            outcome.path("driverCpuSeconds").asDouble()).put("chunksComputed", outcome.path("computed").asInt())
            .put("sparkProcessesCpuSeconds", sparkProcesses).put("driverProcessCpuSeconds", driverProcess)
            .put("executorKilled", killed).put("stagedAtDriverKill", stagedAtDriverKill)
            .put("chunksSkipped", outcome.path("skipped").asInt());
        log.printf("%s: the job staged %d chunks in %s (tasks %s of CPU, driver planning %s; Spark's processes %s)%n", label,
            outcome.path("chunks").asInt(), Terminal.seconds(jobSeconds), Terminal.seconds(tasks),
            Terminal.seconds(outcome.path("driverCpuSeconds").asDouble()), Terminal.seconds(sparkProcesses));
      }
      List<Process> nodes = new ArrayList<>();
      List<NodeClient> clients = new ArrayList<>();
      Map<String, String> env = Map.of("STRATA_TOKEN", TOKEN);
      for (int h = 1; h <= 3; h++) {
        Path home = dir.resolve("h" + h);
        Files.createDirectories(home);
        ObjectNode c = Json.object().put("home", home.toString()).put("ssdDir", home.resolve("ssd").toString())
            .put("ssdBudget", "2g").put("bind", lab.address(h)).put("port", 7070).put("token", TOKEN);
        c.putArray("hddRoots").add(data.getParent().toString());
        if (useSpark) {
          c.put("featureStaging", staging.toString());
        }
        if (peers) {
          ObjectNode cl = c.putObject("cluster").put("host", lab.address(h)).put("name", "bench-derived");
          ArrayNode members = cl.putArray("members");
          for (int k = 1; k <= 3; k++) {
            members.add(lab.address(k));
          }
        }
        nodes.add(LabProcesses.startNode(lab, h, c, home, ClusterBench.java("512m"), env));
        clients.add(new NodeClient("http://" + lab.address(h) + ":7070", TOKEN));
      }
      for (int h = 1; h <= 3; h++) {
        LabProcesses.awaitHealth(clients.get(h - 1), nodes.get(h - 1), dir.resolve("h" + h + "/node.log"));
        clients.get(h - 1).registerDataset(data);
      }
      if (peers) {
        for (NodeClient c : clients) {
          long end = System.nanoTime() + 120_000_000_000L;
          while (c.tiers().path("cluster").path("members").size() < 3) {
            if (System.nanoTime() > end) {
              throw new IOException("the nodes did not form a cluster of three: " + c.tiers().path("cluster"));
            }
            Thread.sleep(200);
          }
        }
      }
      double[] before = nodes.stream().mapToDouble(p -> ProcCpu.tree(p.toHandle())).toArray();
      log.printf("%s: nodes up; %d jobs on each host ask for %s ...%n", label, JOBS_PER_HOST, spec);
      long t0 = System.nanoTime();
      // Each job asks its node for the feature and waits for it: a request of its own, from a
      // thread of this process (jobs' JVMs starting on the lab's two cores would compete with the
      // nodes' work and blur what each side costs).
      List<java.util.concurrent.Future<JsonNode>> jobs = new ArrayList<>();
      java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(3 * JOBS_PER_HOST,
          r -> Thread.ofPlatform().name("bench-derived-job").daemon(true).unstarted(r));
      try {
        for (int h = 1; h <= 3; h++) {
          NodeClient c = clients.get(h - 1);
          for (int j = 0; j < JOBS_PER_HOST; j++) {
            jobs.add(pool.submit(() -> c.derive("events", spec)));
          }
          if (peers && h == 1) {
            // Clustered: host 1's jobs come first; hosts 2 and 3's come once it has the feature.
            for (var job : jobs) {
              job.get(30, TimeUnit.MINUTES);
            }
          }
        }
      } finally {
        pool.shutdown();
      }
      int failures = 0;
      double[] deriveCpu = new double[3];
      double[] placeCpu = new double[3];
      // A node serves requests for one feature that arrive together with one derivation, and each
      // of them answers with its figures: each derivation is counted once.
      List<java.util.Set<String>> derivations = List.of(new java.util.HashSet<>(), new java.util.HashSet<>(), new java.util.HashSet<>());
      List<java.util.Set<String>> sources = List.of(new java.util.TreeSet<>(), new java.util.TreeSet<>(), new java.util.TreeSet<>());
      for (int i = 0; i < jobs.size(); i++) {
        JsonNode answer;
        try {
          answer = jobs.get(i).get(30, TimeUnit.MINUTES);
        } catch (java.util.concurrent.ExecutionException e) {
          failures++;
          log.printf("%s: job %d failed: %s%n", label, i, e.getCause());
          continue;
        }
        int h = i / JOBS_PER_HOST;
        if (derivations.get(h).add(Json.compact(answer))) {
          sources.get(h).add(answer.path("source").asText());
          deriveCpu[h] += answer.path("cpuSeconds").asDouble();
          placeCpu[h] += answer.path("placeCpuSeconds").asDouble();
        }
      }
      double seconds = (System.nanoTime() - t0) / 1e9;
      double[] after = nodes.stream().mapToDouble(p -> ProcCpu.tree(p.toHandle())).toArray();
      double nodesCpu = 0;
      double nodesProcessCpu = 0;
      ArrayNode hosts = m.putArray("hosts");
      long mismatches = 0;
      for (int h = 1; h <= 3; h++) {
        double cpu = after[h - 1] - before[h - 1];
        nodesProcessCpu += cpu;
        nodesCpu += deriveCpu[h - 1];
        JsonNode list = clients.get(h - 1).derivedFeatures();
        try (FeatureStore fs = FeatureStore.openReader(dir.resolve("h" + h + "/features"))) {
          FeatureMeta meta = fs.meta(fp).orElseThrow(() -> new IOException("a host's node lacks the feature"));
          long differ = 0;
          for (int c = 0; c < reference.size(); c++) {
            if (!meta.complete() || !Arrays.equals(reference.get(c), fs.encodedChunk(fp, c))) {
              differ++;
            }
          }
          mismatches += differ;
          hosts.addObject().put("host", h).put("derivations", derivations.get(h - 1).size())
              .put("source", String.join(",", sources.get(h - 1)))
              .put("deriveCpuSeconds", deriveCpu[h - 1]).put("placeSegmentsCpuSeconds", placeCpu[h - 1])
              .put("nodeProcessCpuSeconds", cpu)
              .put("featureComputeSeconds", meta.computeSeconds())
              .put("chunksDiffering", differ).put("features", list.size());
        }
      }
      double compute = nodesCpu + jobCompute;
      m.put("jobsSeconds", seconds).put("jobFailures", failures).put("nodesCpuSeconds", nodesCpu)
          .put("nodesProcessCpuSeconds", nodesProcessCpu)
          .put("computeCpuSeconds", compute).put("sparkOverheadCpuSeconds", sparkOverhead).put("mismatches", mismatches);
      log.printf("%s: the jobs were served in %s; the nodes' derivations used %s of CPU (their processes %s); computing it"
          + " cost %s in all; %d chunks differ from the local promote%n", label, Terminal.seconds(seconds),
          Terminal.seconds(nodesCpu), Terminal.seconds(nodesProcessCpu), Terminal.seconds(compute), mismatches);
      for (Process p : nodes) {
        p.destroy();
      }
      for (Process p : nodes) {
        p.waitFor(30, TimeUnit.SECONDS);
      }
    }
    return m;
  }

  /** Staged chunk files in {@code dir} (none while it does not exist). */
  private static long staged(Path dir) throws IOException {
    if (!Files.isDirectory(dir)) {
      return 0;
    }
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.getFileName().toString().startsWith("chunk-")).count();
    }
  }

  /** The children's CPU seconds bash's {@code times} printed last (its second line: user, then system). */
  static double childrenCpu(String output) {
    List<String> lines = output.lines().filter(l -> l.matches("\\d+m[\\d.]+s \\d+m[\\d.]+s")).toList();
    if (lines.size() < 2) {
      return 0;
    }
    double sum = 0;
    for (String t : lines.getLast().split(" ")) {
      int mIdx = t.indexOf('m');
      sum += Double.parseDouble(t.substring(0, mIdx)) * 60 + Double.parseDouble(t.substring(mIdx + 1, t.length() - 1));
    }
    return sum;
  }
}
