package io.strata.bench;

import static io.strata.bench.BenchPeers.f2;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.ops.GroundTruth;
import io.strata.ops.Main;
import io.strata.ops.Processes;
import io.strata.ops.Terminal;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.hadoop.HadoopFileSystems;
import io.strata.sdk.s3.S3FileSystems;
import io.strata.sdk.Progress;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.internal.Json;
import io.strata.sdk.node.NodeClient;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code strata bench cluster}: three hosts as network namespaces on a private bridge ({@link
 * ClusterLab}), one node per host bound to its host's address, a dataset on storage every host
 * reads (the "shared HDD tier": one directory of this machine), and the same real loader jobs
 * run twice, the nodes alone and then clustered. Job A runs on host 1; then jobs B and C, whose
 * features overlap A's, run on hosts 2 and 3 at once. Every job checks every sample against the
 * ORC ground truth. HDD bytes are what the ORC readers of every process read (the jobs' misses
 * and the nodes' promotions, counted where the reads are issued). Optionally the node of host 1
 * is killed (SIGKILL) while B and C run; otherwise host 3's node is killed at the end, and the
 * time until host 1's node drops it is measured.
 */
@Command(name = "cluster", mixinStandardHelpOptions = true,
    description = "Three hosts (network namespaces, needs root): HDD bytes read with the nodes clustered vs alone for the same jobs,"
        + " peer-read vs ORC-decode speed, and how long the cluster takes to notice a dead host.")
public final class ClusterBench implements Callable<Integer> {
  static final String TOKEN = "strata-bench-cluster-token-0001";

  @Spec CommandSpec spec;

  @Option(names = "--work", description = "Working directory (default: a new temporary one, removed after).")
  Path work;

  @Option(names = "--rows", defaultValue = "600000", description = "Rows of the dataset; default ${DEFAULT-VALUE}.")
  long rows;

  @Option(names = "--step-ms", defaultValue = "20", description = "Simulated training per batch; default ${DEFAULT-VALUE}.")
  int stepMs;

  @Option(names = "--quick", description = "Small data (CI).")
  boolean quick;

  @Option(names = "--kill-during", description = "Kill host 1's node (SIGKILL) while the jobs of hosts 2 and 3 run.")
  boolean killDuring;

  @Option(names = "--json", description = "Print the figures as one JSON object.")
  boolean json;

  @Option(names = "--hdd", defaultValue = "local", description = "Where the shared HDD tier is: local (a directory of this"
      + " machine), hdfs (a real HDFS, a NameNode and three DataNodes as processes of a fourth host, reached over the hosts'"
      + " network, with a DataNode killed and the NameNode restarted while jobs read) or s3 (a real S3 server, S3Proxy, as a"
      + " process of a fourth host whose link is shaped to --s3-mbps, killed and restarted while jobs read);"
      + " default ${DEFAULT-VALUE}.")
  String hdd;

  @Option(names = "--s3-mbps", defaultValue = "100", description = "With --hdd s3: the store's link to the hosts, MB/s"
      + " (tc tbf); 0 leaves it unshaped; default ${DEFAULT-VALUE}.")
  long s3MBps;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter log = spec.commandLine().getErr();
    if (!List.of("local", "hdfs", "s3").contains(hdd)) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--hdd is local, hdfs or s3, not '" + hdd + "'");
    }
    if (s3MBps < 0) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--s3-mbps must be 0 or more, not " + s3MBps);
    }
    boolean hdfs = hdd.equals("hdfs");
    String why = ClusterLab.unavailable();
    if (why != null) {
      why = "network namespaces: " + why;
    } else if (hdfs && HdfsLab.unavailable() != null) {
      why = "an HDFS: " + HdfsLab.unavailable();
    } else if (hdd.equals("s3") && S3Lab.unavailable() != null) {
      why = "an S3 server: " + S3Lab.unavailable();
    }
    if (why != null) {
      // As 'bench gpu' without a GPU: say what is missing, measure nothing.
      if (json) {
        out.println(Json.compact(Json.object().put("available", false).put("reason", why)));
      } else {
        out.println("not measured: bench cluster needs " + why);
      }
      return 0;
    }
    boolean temporary = work == null;
    Path dir = temporary ? Files.createTempDirectory("strata-bench-cluster") : work;
    try {
      ObjectNode r = run(dir, quick ? Math.min(rows, 120_000) : rows, stepMs, killDuring, hdd, s3MBps * 1_000_000, log);
      if (json) {
        out.println(Json.compact(r));
      } else {
        JsonNode a = r.path("alone");
        JsonNode c = r.path("clustered");
        out.printf("3 hosts, jobs A then B+C: HDD bytes alone %s, clustered %s (%.2fx); %d chunks copied from peers at %s GB/s"
            + " (ORC decode %s GB/s); a killed host noticed after %s, a partitioned one after %s; %,d values verified,"
            + " %d mismatches%n",
            Terminal.bytes(a.path("hddBytes").asLong()), Terminal.bytes(c.path("hddBytes").asLong()),
            r.path("ratios").path("hddClusteredVsAlone").asDouble(), c.path("peerReads").asLong(),
            f2(c.path("peerCopyGBps").asDouble()), f2(c.path("orcDecodeCopyGBps").asDouble()),
            Terminal.seconds(r.path("deadHostNoticedSeconds").asDouble()),
            r.has("partitionNoticedSeconds") ? Terminal.seconds(r.path("partitionNoticedSeconds").asDouble()) : "-",
            r.path("valuesVerified").asLong(),
            r.path("mismatches").asLong());
        if (hdfs) {
          out.printf("HDD tier on HDFS (3 DataNodes): a DataNode killed and the NameNode restarted (%s) while jobs B and C"
              + " read, in both runs%n", Terminal.seconds(c.path("hdfs").path("nameNodeRestartSeconds").asDouble()));
        }
        if (hdd.equals("s3")) {
          out.printf("HDD tier on S3 (S3Proxy, link %s): the server killed and restarted (%s) while jobs B and C read, in both"
              + " runs%n", s3MBps == 0 ? "unshaped" : s3MBps + " MB/s", Terminal.seconds(c.path("s3").path("restartSeconds").asDouble()));
        }
      }
      return r.path("mismatches").asLong() == 0 && r.path("jobFailures").asInt() == 0 ? 0 : 1;
    } finally {
      if (temporary) {
        Processes.deleteTree(dir);
      }
    }
  }

  /** The whole comparison in {@code dir} with the shared HDD tier a local directory; the JSON it reports. */
  public static ObjectNode run(Path dir, long rows, int stepMs, boolean killDuring, PrintWriter log) throws Exception {
    return run(dir, rows, stepMs, killDuring, "local", 0, log);
  }

  /** As below, the shared HDD tier local or on HDFS. */
  public static ObjectNode run(Path dir, long rows, int stepMs, boolean killDuring, boolean hdfs, PrintWriter log)
      throws Exception {
    return run(dir, rows, stepMs, killDuring, hdfs ? "hdfs" : "local", 0, log);
  }

  /**
   * The whole comparison in {@code dir}; with {@code hdd} "hdfs" the shared HDD tier is an HDFS
   * ({@link HdfsLab}) every host reads over its network, and in each run a DataNode is killed and
   * the NameNode restarted while jobs B and C read; with "s3" it is a bucket of an S3 server
   * ({@link S3Lab}) whose link sends {@code s3BytesPerSecond} (0: unshaped), killed and restarted
   * while jobs B and C read. The JSON it reports.
   */
  public static ObjectNode run(Path dir, long rows, int stepMs, boolean killDuring, String hdd, long s3BytesPerSecond,
      PrintWriter log) throws Exception {
    boolean hdfs = hdd.equals("hdfs");
    Path data = dir.resolve("shared/events");
    log.println("generating " + Terminal.count(rows) + " rows ...");
    DatasetGenerator.generate(data, DatasetGenerator.Options.of("events", rows, 11).withFeatures(12)
        .withChunking((int) Math.max(2000, rows / 6), 2).withMeanSampleLength(40).withReplace(true), Progress.NONE);
    List<String> names;
    Path truth = dir.resolve("truth.bin");
    try (Dataset ds = Dataset.open(data)) {
      names = ds.featureNames();
      GroundTruth.compute(ds).write(truth);
    }
    // Popular features: B and C read A's eight, and one of their own each.
    List<List<String>> jobs = List.of(names.subList(0, 8),
        concat(names.subList(0, 8), names.get(8)), concat(names.subList(0, 8), names.get(9)));
    ObjectNode r = Json.object();
    r.put("available", true).put("hdd", hdd).put("hosts", 3).put("rows", rows).put("features", names.size()).put("stepMs", stepMs);
    ArrayNode js = r.putArray("jobs");
    for (int j = 0; j < jobs.size(); j++) {
      js.addObject().put("job", "job-" + (char) ('a' + j)).put("host", j + 1).put("features", String.join(",", jobs.get(j)));
    }
    ObjectNode alone = mode(dir.resolve("alone"), data, truth, jobs, false, false, hdd, s3BytesPerSecond, stepMs, log);
    ObjectNode clustered = mode(dir.resolve("clustered"), data, truth, jobs, true, killDuring, hdd, s3BytesPerSecond, stepMs, log);
    r.set("alone", alone);
    r.set("clustered", clustered);
    r.put("deadHostNoticedSeconds", clustered.path("deadHostNoticedSeconds").asDouble());
    if (clustered.has("partitionNoticedSeconds")) {
      r.put("partitionNoticedSeconds", clustered.path("partitionNoticedSeconds").asDouble());
    }
    r.put("valuesVerified", alone.path("valuesVerified").asLong() + clustered.path("valuesVerified").asLong());
    r.put("mismatches", alone.path("mismatches").asLong() + clustered.path("mismatches").asLong());
    r.put("jobFailures", alone.path("jobFailures").asInt() + clustered.path("jobFailures").asInt());
    long ha = alone.path("hddBytes").asLong();
    r.putObject("ratios").put("hddClusteredVsAlone", ha == 0 ? 0 : (double) clustered.path("hddBytes").asLong() / ha)
        .put("peerVsOrcDecode", clustered.path("orcDecodeCopyGBps").asDouble() == 0 ? 0
            : clustered.path("peerCopyGBps").asDouble() / clustered.path("orcDecodeCopyGBps").asDouble());
    r.put("assumes", "one machine: the hosts share its cores, disk and page cache; the shared HDD tier is "
        + (hdfs ? "an HDFS (a NameNode and three DataNodes, replication 3, processes of a fourth host, their blocks on this"
            + " machine's disk, reached over the hosts' bridge: no network cost beyond the kernel's, no disk of their own)"
            : hdd.equals("s3") ? "a bucket of S3Proxy (filesystem backend, a process of a fourth host, its objects on this"
            + " machine's disk, its link to the hosts shaped by tc tbf to " + (s3BytesPerSecond == 0 ? "nothing"
            : s3BytesPerSecond / 1_000_000 + " MB/s") + "; no first-byte latency beyond the server's own: a region's"
            + " 100-200 ms are not modelled)"
            : "a local directory")
        + "; job A runs before B and C (a popular feature set, read again later on other hosts)");
    return r;
  }

  private static List<String> concat(List<String> a, String b) {
    List<String> out = new ArrayList<>(a);
    out.add(b);
    return out;
  }

  private static List<String> java() {
    return java("768m");
  }

  /** The command line of a {@code strata} JVM of this build with a heap of {@code heap}; its arguments follow. */
  static List<String> java(String heap) {
    return new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow", "-Xmx" + heap, "-cp",
        Processes.classPath(), Main.class.getName()));
  }

  /** One run of the three jobs with the nodes alone or clustered. */
  private static ObjectNode mode(Path dir, Path localData, Path truth, List<List<String>> jobs, boolean clustered,
      boolean killDuring, String hdd, long s3BytesPerSecond, int stepMs, PrintWriter log) throws Exception {
    boolean hdfs = hdd.equals("hdfs");
    boolean s3 = hdd.equals("s3");
    String label = clustered ? "clustered" : "alone";
    Files.createDirectories(dir);
    ObjectNode m = Json.object();
    // With HDFS, a fourth host holds it (its NameNode and DataNodes, a process each).
    try (ClusterLab lab = ClusterLab.create(hdfs || s3 ? 4 : 3);
        HdfsLab dfs = hdfs ? HdfsLab.start(lab, 4, dir.resolve("hdfs"), 3, 8L << 20, localData, "/shared/events") : null;
        S3Lab store = s3 ? S3Lab.start(lab, 4, dir.resolve("s3"), s3BytesPerSecond, localData, "strata", "shared/events") : null) {
      if (store != null) {
        S3FileSystems.configure(store.settings()); // this process reads the bucket too (the features' names)
      }
      // The shared tier: the local directory, or its copy on the HDFS or in the bucket (a URI every host resolves alike).
      Path data = dfs != null ? HadoopFileSystems.path(dfs.uri().resolve("/shared/events"))
          : store != null ? S3FileSystems.path(java.net.URI.create("s3://strata/shared/events")) : localData;
      if (dfs != null) {
        log.printf("%s: HDFS at %s, the dataset copied in%n", label, dfs.uri());
      }
      Map<String, String> env = new java.util.HashMap<>(Map.of("STRATA_TOKEN", TOKEN));
      if (store != null) {
        env.putAll(store.environment()); // every job reads the bucket with the AWS SDK's own variables
        double[] model = probe(data);
        m.putObject("s3").put("linkBytesPerSecond", s3BytesPerSecond).put("probeFirstByteMs", model[0] * 1e3)
            .put("probeConnectionMBps", model[1] / 1e6).put("gapBytes", (long) Math.min(64 << 20, model[0] * model[1]));
        log.printf("%s: the store as this process measured it: first byte %.1f ms, %.0f MB/s a connection%n", label,
            model[0] * 1e3, model[1] / 1e6);
        log.printf("%s: S3 at %s (link %s), the dataset uploaded%n", label, store.endpoint(),
            s3BytesPerSecond == 0 ? "unshaped" : s3BytesPerSecond / 1_000_000 + " MB/s");
      }
      List<Process> nodes = new ArrayList<>();
      List<NodeClient> clients = new ArrayList<>();
      for (int h = 1; h <= 3; h++) {
        Path home = dir.resolve("h" + h);
        Files.createDirectories(home);
        ObjectNode c = Json.object().put("home", home.toString()).put("ssdDir", home.resolve("ssd").toString())
            .put("ssdBudget", "2g").put("bind", lab.address(h)).put("port", 7070).put("token", TOKEN)
            .put("promotionThreads", 4).put("promotionBytesPerSecond", 0);
        c.putArray("hddRoots").add(data.getParent().toString());
        if (store != null) {
          ObjectNode sc = c.putObject("s3"); // the node's own section, as an operator writes it
          store.settings().forEach(sc::put);
        }
        if (clustered) {
          ObjectNode cl = c.putObject("cluster").put("host", lab.address(h)).put("name", "bench");
          ArrayNode members = cl.putArray("members");
          for (int k = 1; k <= 3; k++) {
            members.add(lab.address(k));
          }
        }
        nodes.add(LabProcesses.startNode(lab, h, c, home, java(), env));
        clients.add(new NodeClient("http://" + lab.address(h) + ":7070", TOKEN));
      }
      for (int h = 1; h <= 3; h++) {
        LabProcesses.awaitHealth(clients.get(h - 1), nodes.get(h - 1), dir.resolve("h" + h + "/node.log"));
        clients.get(h - 1).registerDataset(data);
      }
      if (clustered) {
        for (NodeClient c : clients) {
          LabProcesses.await(() -> c.tiers().path("cluster").path("members").size() == 3, 120, "three members");
        }
      }
      log.printf("%s: nodes up; job A on host 1 ...%n", label);
      ArrayNode results = m.putArray("jobs");
      Process a = job(lab, 1, "job-a", data, truth, jobs.get(0), stepMs, env, dir);
      LabProcesses.finish(a, "job-a");
      results.add(LabProcesses.jobResult(dir, "job-a", a));
      LabProcesses.await(() -> clients.get(0).tiers().path("ssd").path("pendingPromotions").asInt() == 0, 120, "host 1's promotions");
      JsonNode node1 = clients.get(0).tiers();
      log.printf("%s: jobs B and C on hosts 2 and 3 ...%n", label);
      // On HDFS, B and C train slower (at least 500 ms a batch), so that they still read when the
      // NameNode comes back (a restart takes some 5 s here).
      int stepBC = dfs == null && store == null ? stepMs : Math.max(stepMs, 500);
      Process b = job(lab, 2, "job-b", data, truth, jobs.get(1), stepBC, env, dir);
      Process c = job(lab, 3, "job-c", data, truth, jobs.get(2), stepBC, env, dir);
      double noticed = Double.NaN;
      if (dfs != null) {
        LabProcesses.await(() -> !b.isAlive() || clients.get(1).tiers().path("traffic").path("reads").asLong() > 0, 120,
            "host 2's first reads");
        boolean during = b.isAlive() && c.isAlive();
        dfs.killDataNode(0);
        log.printf("%s: HDFS DataNode 0 killed (SIGKILL) while B and C run%n", label);
        Thread.sleep(1000);
        long t0 = System.nanoTime();
        dfs.restartNameNode();
        double restart = (System.nanoTime() - t0) / 1e9;
        log.printf("%s: HDFS NameNode restarted (%s)%n", label, Terminal.seconds(restart));
        m.putObject("hdfs").put("dataNodes", 3).put("blockBytes", 8L << 20).put("stepMsOfJobsBC", stepBC)
            .put("dataNodeKilledDuringJobs", during)
            .put("nameNodeRestartedDuringJobs", b.isAlive() && c.isAlive()).put("nameNodeRestartSeconds", restart);
      }
      if (store != null) {
        LabProcesses.await(() -> !b.isAlive() || clients.get(1).tiers().path("traffic").path("reads").asLong() > 0, 120,
            "host 2's first reads");
        boolean during = b.isAlive() && c.isAlive();
        double gone = store.restart();
        log.printf("%s: S3 server killed (SIGKILL) and restarted (%s) while B and C run%n", label, Terminal.seconds(gone));
        ((ObjectNode) m.get("s3")).put("stepMsOfJobsBC", stepBC)
            .put("restartedDuringJobs", during && b.isAlive() && c.isAlive()).put("restartSeconds", gone);
      }
      if (clustered && killDuring) {
        LabProcesses.await(() -> !b.isAlive() || clients.get(1).tiers().path("cluster").path("peerReads").asLong() > 0, 120,
            "host 2's first peer read");
        node1 = clients.get(0).tiers();
        long t0 = System.nanoTime();
        nodes.get(0).destroyForcibly();
        nodes.get(0).waitFor();
        log.printf("%s: host 1's node killed (SIGKILL) while B and C run%n", label);
        LabProcesses.await(() -> clients.get(1).tiers().path("cluster").path("members").size() == 2, 120, "host 2 to drop host 1");
        noticed = (System.nanoTime() - t0) / 1e9;
      }
      LabProcesses.finish(b, "job-b");
      LabProcesses.finish(c, "job-c");
      results.add(LabProcesses.jobResult(dir, "job-b", b));
      results.add(LabProcesses.jobResult(dir, "job-c", c));
      for (int h = 2; h <= 3; h++) {
        NodeClient cl = clients.get(h - 1);
        LabProcesses.await(() -> cl.tiers().path("ssd").path("pendingPromotions").asInt() == 0, 120, "promotions");
      }
      List<JsonNode> status = new ArrayList<>(List.of(node1, clients.get(1).tiers(), clients.get(2).tiers()));
      if (clustered && !killDuring) {
        // Side by side on host 2, nothing else running: job A's features copied from peers, then
        // two features no job read (no peer holds them) decoded from ORC.
        NodeClient n2 = clients.get(1);
        double[] peer = timedPromote(n2, jobs.get(0), "peerBytes");
        List<String> unread = names(data).subList(10, 12);
        double[] orc = timedPromote(n2, unread, "orcSegmentBytes");
        m.put("peerCopyGBps", peer[1] / peer[0] / 1e9).put("orcDecodeCopyGBps", orc[1] / orc[0] / 1e9);
        log.printf("%s: on host 2 alone, copied %s from peers in %s, decoded %s from ORC in %s%n", label,
            Terminal.bytes((long) peer[1]), Terminal.seconds(peer[0]), Terminal.bytes((long) orc[1]), Terminal.seconds(orc[0]));
        long t0 = System.nanoTime();
        nodes.get(2).destroyForcibly();
        nodes.get(2).waitFor();
        LabProcesses.await(() -> clients.get(0).tiers().path("cluster").path("members").size() == 2, 120, "host 1 to drop host 3");
        noticed = (System.nanoTime() - t0) / 1e9;
        // A partition kills nothing and closes no connection: only the missing heartbeats tell.
        t0 = System.nanoTime();
        lab.partition(2);
        LabProcesses.await(() -> clients.get(0).tiers().path("cluster").path("members").size() == 1, 120, "host 1 to drop host 2");
        m.put("partitionNoticedSeconds", (System.nanoTime() - t0) / 1e9);
      }
      long loaderOrc = 0;
      long verified = 0;
      long mismatches = 0;
      int failures = 0;
      for (JsonNode j : results) {
        loaderOrc += j.path("orcReadBytes").asLong();
        verified += j.path("verifiedValues").asLong();
        mismatches += j.path("mismatches").asLong();
        failures += j.path("exit").asInt() == 0 ? 0 : 1;
      }
      long promotionOrc = 0;
      long peerReads = 0;
      long peerBytes = 0;
      double peerSeconds = 0;
      long orcSegmentBytes = 0;
      double orcSeconds = 0;
      long peerFailures = 0;
      ArrayNode ns = m.putArray("nodes");
      for (JsonNode s : status) {
        promotionOrc += s.path("hdd").path("promotionReadBytes").asLong();
        JsonNode cl = s.path("cluster");
        peerReads += cl.path("peerReads").asLong();
        peerBytes += cl.path("peerBytes").asLong();
        peerSeconds += cl.path("peerSeconds").asDouble();
        peerFailures += cl.path("peerFailures").asLong();
        orcSegmentBytes += cl.path("orcSegmentBytes").asLong();
        orcSeconds += cl.path("orcSeconds").asDouble();
        ns.addObject().put("promotions", s.path("traffic").path("promotions").asLong())
            .put("promotionReadBytes", s.path("hdd").path("promotionReadBytes").asLong())
            .put("peerReads", cl.path("peerReads").asLong()).put("servedToPeers", cl.path("servedToPeers").asLong())
            .put("byteHitRatio", s.path("traffic").path("byteHitRatio").asDouble());
      }
      m.put("hddBytes", loaderOrc + promotionOrc).put("loaderOrcBytes", loaderOrc).put("promotionOrcBytes", promotionOrc);
      if (store != null) {
        data.getFileSystem().close(); // the next run's server is another: a client made anew
      }
      m.put("valuesVerified", verified).put("mismatches", mismatches).put("jobFailures", failures);
      if (clustered) {
        m.put("peerReads", peerReads).put("peerBytes", peerBytes).put("peerFailures", peerFailures)
.put("peerGBpsPerFetch", peerSeconds == 0 ? 0 : peerBytes / peerSeconds / 1e9)
            .put("orcDecodeGBpsPerPromotion", orcSeconds == 0 ? 0 : orcSegmentBytes / orcSeconds / 1e9)
            .put("deadHostNoticedSeconds", noticed).put("killedDuringJobs", killDuring);
      }
      log.printf("%s: HDD bytes %s (jobs %s, promotions %s)%s%n", label, Terminal.bytes(loaderOrc + promotionOrc),
          Terminal.bytes(loaderOrc), Terminal.bytes(promotionOrc), clustered ? "; peer reads " + peerReads : "");
    }
    return m;
  }

  /**
   * Times 24 range GETs of 2 MiB spread over the dataset's largest file (as the jobs' and nodes'
   * reads are timed): the store's model as this process measured it, {@code [first byte seconds,
   * bytes per second per connection]}.
   */
  private static double[] probe(Path data) throws IOException {
    Path largest;
    try (var files = Files.list(data)) {
      largest = files.filter(f -> f.getFileName().toString().endsWith(".orc")).max((a, b) -> {
        try {
          return Long.compare(Files.size(a), Files.size(b));
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }).orElseThrow(() -> new IOException("no ORC file in " + data));
    }
    try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(largest)) {
      long size = ch.size();
      java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate((int) Math.min(2 << 20, size));
      for (int i = 0; i < 24; i++) {
        b.clear();
        ch.read(b, (size - b.capacity()) * i / 23);
      }
    }
    return S3FileSystems.model(largest);
  }

  private static List<String> names(Path data) throws IOException {
    try (Dataset ds = Dataset.open(data)) {
      return ds.featureNames();
    }
  }

  /**
   * Evicts {@code features} on a node, promotes them again and waits until they landed: the wall
   * seconds and how much the node's {@code cluster.<counter>} grew.
   */
  private static double[] timedPromote(NodeClient c, List<String> features, String counter) throws Exception {
    c.evict("events", features, null);
    LabProcesses.await(() -> c.tiers().path("ssd").path("pendingPromotions").asInt() == 0, 60, "evictions");
    long before = c.tiers().path("cluster").path(counter).asLong();
    long t0 = System.nanoTime();
    int scheduled = c.promote("events", features, null).path("scheduled").asInt();
    LabProcesses.await(() -> c.tiers().path("ssd").path("pendingPromotions").asInt() == 0, 300, "promotions");
    double seconds = (System.nanoTime() - t0) / 1e9;
    long grew = c.tiers().path("cluster").path(counter).asLong() - before;
    if (scheduled == 0 || grew == 0) {
      throw new IllegalStateException("promoting " + features + " placed nothing by " + counter + " (" + scheduled + " scheduled)");
    }
    return new double[] {seconds, grew};
  }

  private static Process job(ClusterLab lab, int host, String name, Path data, Path truth, List<String> features, int stepMs,
      Map<String, String> env, Path dir) throws IOException {
    List<String> cmd = java();
    // The shared HDD tier named as the Hadoop file system URI every host resolves to the same directory.
    cmd.addAll(List.of("loader", "run", "--dataset", data.toUri().toString(), "--node", "http://" + lab.address(host) + ":7070",
        "--job", name, "--features", String.join(",", features), "--epochs", "2", "--batch", "256", "--seed",
        Integer.toString(host), "--step-ms", Integer.toString(stepMs), "--verify-against", truth.toString(), "--json"));
    Path out = dir.resolve(name + ".log");
    Files.deleteIfExists(out);
    return lab.start(host, cmd, env, out);
  }
}
