package io.strata.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.ops.Main;
import io.strata.ops.Processes;
import io.strata.ops.Terminal;
import io.strata.sdk.Progress;
import io.strata.sdk.files.DiskModel;
import io.strata.sdk.files.Manifest;
import io.strata.sdk.internal.Json;
import io.strata.sdk.internal.PrivateDirs;
import io.strata.sdk.node.NodeClient;
import io.strata.tools.DatasetGenerator;
import io.strata.tools.DatasetImporter;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code strata bench fleet} (issue 58): the job Strata exists for. Several training jobs at once
 * on one host, each its own process, over a dataset larger than the host's memory kept on a slow
 * disk, for several epochs; Strata (a cache node with an SSD tier of a quarter of the dataset, the
 * jobs through the Python client and its one loader service) against what users do instead, each
 * side in turn on the same disk, cores and memory.
 *
 * <p>The set-up, every side alike: the dataset's Parquet files (row groups cut at sample
 * boundaries, so that a sample lies in one chunk) and flat per-column files on an ext4 file
 * system in a loop device whose reads the kernel throttles (blkio) to {@link DiskModel#HDD}'s
 * transfer rate and its random-read IOPS; a memory cgroup holding every process of the side, page
 * cache included, at a third of the dataset's bytes; one cpuset of every core and a cpuacct group
 * for the CPU. The page cache is dropped before each side. The jobs: half read shuffled sample
 * batches (seed 000's shape), half shuffled rows, each 3 or 4 of 8 features drawn by Zipf
 * popularity (seed 002), every side shuffling the same way ({@code fleet.py}'s block shuffle over
 * whole chunks, Strata's {@code shuffle_chunks}), one thread a job. The peers' code and the value
 * checks are in {@code bench/peers/fleet.py}. With {@code --tier s3} the same files are objects
 * of a real S3 server (S3Proxy) in a cgroup of its own (its reads throttled as a side's would be,
 * its heap and page cache bounded): Strata's node is rooted in the bucket, pyarrow reads it
 * through its {@code S3FileSystem}; numpy.memmap and fsspec's cache have no S3 side here.
 *
 * <p>Threads: the calling thread runs the sides one after another; a sampler thread per side
 * reads the processes' PSS and the disk's counters every quarter second (its peaks in atomics).
 */
@Command(name = "fleet", mixinStandardHelpOptions = true,
    description = "Several jobs on one host over a dataset larger than memory on a throttled disk: Strata against pyarrow,"
        + " numpy.memmap and fsspec's cache, the same cores, memory cgroup and disk for each (issue 58).")
final class FleetBench implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--rows", defaultValue = "30000000", description = "Rows of the generated dataset; default ${DEFAULT-VALUE}.")
  long rows;

  @Option(names = "--jobs", defaultValue = "4", description = "Concurrent jobs; default ${DEFAULT-VALUE}.")
  int jobs;

  @Option(names = "--epochs", defaultValue = "3", description = "Epochs each job reads; default ${DEFAULT-VALUE}.")
  int epochs;

  @Option(names = "--flash-writes-per-hour", defaultValue = "3",
      description = "Strata's node's flash write budget, in SSD budgets an hour (what an operator minding the SSD's endurance"
          + " sets: the policy then admits a chunk only where it is worth the write); 0 for none; default ${DEFAULT-VALUE}.")
  double flashWritesPerHour;

  @Option(names = "--block-chunks", defaultValue = "2",
      description = "Chunks per shuffle block (the buffer every side shuffles within); default ${DEFAULT-VALUE}.")
  int blockChunks;

  @Option(names = "--sides", split = ",",
      description = "Sides to run; default strata,pyarrow,numpy,fsspec (with --tier s3: strata,pyarrow).")
  List<String> sides;

  @Option(names = "--tier", defaultValue = "local", description = "Where the slow tier is: local (the throttled disk's"
      + " files) or s3 (the same files as objects of a real S3 server, S3Proxy, that reads them from that disk in a cgroup"
      + " of its own: its page cache bounded, its reads throttled); default ${DEFAULT-VALUE}.")
  String tier;

  /** The store's cgroup memory (S3Proxy's heap and what page cache it may keep) with --tier s3. */
  static final long STORE_MEMORY = 640L << 20;

  @Option(names = "--row-group-rows", defaultValue = "262144",
      description = "Rows of a Parquet row group (the chunk every side reads; cut at the next sample's start); default ${DEFAULT-VALUE}.")
  int rowGroupRowsOption;

  @Option(names = "--memory-fraction", defaultValue = "0.3333333",
      description = "The memory cgroup's limit as a fraction of the dataset's bytes; the goals are judged at the default (a third); another is for diagnosis.")
  double memoryFraction;

  @Option(names = "--python", description = "Python with the peers installed (default: target/pyvenv/bin/python of the checkout).")
  String python;

  @Option(names = "--work", description = "Work directory (default: a temporary one; a given one keeps the data for the next run).")
  Path work;

  @Option(names = "--timeout", defaultValue = "1800", description = "Seconds a side may take; default ${DEFAULT-VALUE}.")
  int timeoutSeconds;

  @Option(names = "--quick", description = "A small dataset and no throttle: every side present and its values checked, not a measurement.")
  boolean quick;

  @Option(names = "--json", description = "Print the figures as one JSON object.")
  boolean json;

  @Option(names = "--svg", paramLabel = "FILE", description = "Also draw the run's units/s, side by side, as an SVG chart in FILE.")
  Path svg;

  /**
   * The JVM options of Strata's one JVM on the host (the node, hosting the loader service of the Python jobs): the
   * service's own (python/strata/_service.py) — a serial collector with a small young generation that gives memory
   * back — under one heap bound for both. The node's heap holds plans and the catalog, not data (segments are
   * mapped, promotions stream); the sessions' batches live in shared memory and their decoded blocks off the heap.
   * Measured at the third-of-the-data limit (2026-11-28): with -Xmx384m, then 192m, the JVM reached ~650 MiB
   * anonymous (heap filled by parquet-java's page buffers, ~210 MiB of decoded blocks, ~145 MiB of malloc arenas)
   * and was killed; at 128m, C1 only and two malloc arenas it stayed under ~530 MiB and finished. C2 came back
   * (with two compiler threads) once the profile showed what C1 cost: C1 neither inlines nor removes the bounds
   * and alignment checks of memory-segment access, so decoding and gathering took 1.6x the CPU (463 against
   * 294 CPU seconds for the same run, peak PSS 843 against 857 MiB).
   */
  static final String NODE_JAVA_OPTS =
      "-XX:+UseSerialGC -Xss512k -Xmx128m -Xmn24m -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30 -XX:CICompilerCount=2";

  @Option(names = "--node-java-opts", defaultValue = NODE_JAVA_OPTS, description = "JVM options of Strata's node; default: ${DEFAULT-VALUE}.")
  String nodeJavaOpts;

  @Option(names = "--separate-service", description = "Run Strata's loader service in a JVM of its own beside the node's (as before one JVM a host; for comparison).")
  boolean separateService;

  /** The stored columns beyond the sample id, and the jobs' features, most popular first. */
  static final List<String> STORED = List.of("event_time", "amount", "is_online", "merchant_id", "quantity", "embedding",
      "score", "channel", "event_date", "amount_2", "merchant_id_2", "embedding_2");
  static final List<String> FEATURES = List.of("amount", "merchant_id", "embedding", "score", "quantity", "channel",
      "embedding_2", "is_online", "amount_2", "merchant_id_2", "event_date");

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter log = spec.commandLine().getErr();
    if (quick) {
      rows = Math.min(rows, 400_000);
      timeoutSeconds = Math.min(timeoutSeconds, 600);
    }
    if (!tier.equals("local") && !tier.equals("s3")) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--tier is local or s3, not '" + tier + "'");
    }
    if (sides == null) {
      sides = tier.equals("s3") ? List.of("strata", "pyarrow") : List.of("strata", "pyarrow", "numpy", "fsspec");
    }
    if (tier.equals("s3") && (sides.contains("numpy") || sides.contains("fsspec"))) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--tier s3 runs strata and pyarrow (S3FileSystem):"
          + " numpy.memmap reads local files only, and fsspec's S3 is s3fs, which the package mirror does not have");
    }
    if (tier.equals("s3") && S3Lab.unavailable() != null) {
      return BenchPeers.notMeasured(out, json, "fleet", "an S3 server: " + S3Lab.unavailable());
    }
    if (jobs < 1 || epochs < 1 || blockChunks < 1) {
      throw new IllegalArgumentException("--jobs, --epochs and --block-chunks must be at least 1");
    }
    if (!(flashWritesPerHour >= 0) || Double.isInfinite(flashWritesPerHour)) {
      throw new IllegalArgumentException("--flash-writes-per-hour must be a finite number at least 0: " + flashWritesPerHour);
    }
    String py = python != null ? python : Processes.defaultPython();
    Path checkout = Processes.checkout();
    Path harness = checkout == null ? null : checkout.resolve("bench/peers/fleet.py");
    String why = Processes.pythonUnavailable(py);
    if (why == null && (harness == null || !Files.isRegularFile(harness))) {
      why = "the jobs' harness is bench/peers/fleet.py of a checkout, and this strata runs from none";
    }
    if (why == null) {
      Process p = new ProcessBuilder(py, "-c", "import numpy, pyarrow, pyarrow.orc, fsspec").redirectErrorStream(true).start();
      String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (p.waitFor() != 0) {
        why = "the peers are not installed in " + py + " (.ci/run installs them): " + text.strip().lines().reduce((a, b) -> b).orElse("");
      }
    }
    if (why != null) {
      return BenchPeers.notMeasured(out, json, "fleet", why);
    }
    boolean ownWork = work == null;
    Path dir = ownWork ? Files.createTempDirectory("strata-bench-fleet-") : work.toAbsolutePath();
    Files.createDirectories(dir);
    try {
      ObjectNode result = run(dir, py, harness, log);
      String chart = svg == null ? null : BenchCharts.chart("fleet", result);
      if (chart != null) {
        io.strata.sdk.internal.AtomicFiles.write(svg.toAbsolutePath(), chart.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      }
      if (json) {
        out.println(Json.compact(result));
      } else {
        FleetResults.printTable(out, result, jobs, epochs);
      }
      return 0;
    } finally {
      if (ownWork) {
        Processes.deleteTree(dir);
      }
    }
  }

  /**
   * Row groups of about this many rows (the chunks every side reads); 64 Ki for --quick. A
   * quarter of pyarrow's default (1 Mi): at a third of the dataset's bytes for four jobs, a
   * pyarrow job holding two row groups of 1 Mi rows decoded was killed for memory (anon RSS
   * 325 MiB), as the first measurement's were.
   */
  private int rowGroupRows() {
    return quick ? 65_536 : rowGroupRowsOption;
  }

  private ObjectNode run(Path dir, String py, Path harness, PrintWriter log) throws Exception {
    Path data = dir.resolve("fleet-" + rows);
    Path orc = data.resolve("orc");
    if (!Files.exists(orc.resolve(Manifest.FILE_NAME))) {
      log.printf("fleet: generating %s rows ...%n", Terminal.count(rows));
      DatasetGenerator.generate(orc, DatasetGenerator.Options.of("fleet-src", rows, 58).withFeatures(21)
          .withChunking(1 << 20, 4).withMeanSampleLength(400), Progress.NONE);
    }
    long orcBytes = Manifest.read(orc).fileBytes();
    boolean root = PrivateDirs.uid() == 0;
    try (SlowTier slow = SlowTier.open(data, orcBytes * 3 + (256L << 20), !quick && root, log)) {
      FleetCleanup cleanup = new FleetCleanup(slow);
      try {
        return measure(slow, data, orc, py, harness, log);
      } finally {
        cleanup.close();
      }
    }
  }

  private ObjectNode measure(SlowTier slow, Path data, Path orc, String py, Path harness, PrintWriter log) throws Exception {
    Path ds = slow.mount().resolve("ds");
    Path flat = slow.mount().resolve("flat");
    // The slow tier's files are of one row-group size at a time (the image holds one layout).
    Path layout = Files.createDirectories(data.resolve("rg-" + rowGroupRows()));
    if (!Files.exists(layout.resolve("reference.json"))) {
      Processes.deleteTree(ds);
      Processes.deleteTree(flat);
      try (var old = Files.newDirectoryStream(data, "rg-*")) {
        for (Path o : old) {
          if (!o.equals(layout)) {
            Processes.deleteTree(o);
          }
        }
      }
    }
    ObjectNode base = Json.object().put("orc", orc.toString()).put("parquet", ds.toString()).put("flat", flat.toString())
        .put("work", layout.toString()).put("rowGroupRows", rowGroupRows()).put("rowGroupsPerFile", 16);
    base.set("stored", Json.MAPPER.valueToTree(STORED));
    base.set("features", Json.MAPPER.valueToTree(FEATURES));
    if (!Files.exists(ds.resolve(Manifest.FILE_NAME)) || !Files.exists(layout.resolve("reference.json"))) {
      log.printf("fleet: writing the slow tier's Parquet and flat files ...%n");
      Path specFile = layout.resolve("prepare.json");
      Files.writeString(specFile, Json.compact(base));
      runPython(py, harness, "prepare", specFile, layout.resolve("prepare.log"), 3600);
      DatasetImporter.importFiles(new DatasetImporter.Options("fleet", List.of(ds), ds, "sample_id", true, true), Progress.NONE);
    }
    JsonNode reference = Json.parse(Files.readAllBytes(layout.resolve("reference.json")));
    long datasetBytes = Manifest.read(ds).fileBytes();
    // A third of the dataset: the measurement. --quick's dataset is too small for that to hold two JVMs and
    // four Python jobs: 2 GiB there (it checks that every side runs and is right, not how fast).
    long third = (long) (datasetBytes * memoryFraction);
    long memoryLimit = quick ? Math.max(third, 2L << 30) : third;
    long ssdBudget = datasetBytes / 4;
    List<FleetJob> plan = FleetJob.draw(jobs);
    ObjectNode result = Json.object().put("benchmark", "fleet").put("quick", quick)
        .put("rows", reference.path("rows").asLong()).put("samples", reference.path("samples").asLong())
        .put("datasetBytes", datasetBytes).put("chunks", reference.path("rowGroups").size())
        .put("memoryLimitBytes", memoryLimit).put("memoryFraction", memoryFraction).put("ssdBudgetBytes", ssdBudget)
        .put("flashWriteBudgetBytesPerHour", (long) (flashWritesPerHour * ssdBudget)).put("jobs", jobs).put("epochs", epochs)
        .put("cores", Runtime.getRuntime().availableProcessors());
    result.putObject("slowTier").put("device", slow.describe()).put("throttled", slow.throttled())
        .put("bytesPerSecond", slow.bytesPerSecond()).put("iops", slow.iops()).put("model", DiskModel.HDD.name())
        .put("readAheadKb", slow.queueSetting("read_ahead_kb")).put("maxSectorsKb", slow.queueSetting("max_sectors_kb"))
        .put("why", slow.why());
    result.putObject("shuffle").put("kind", "block shuffle over whole chunks (MosaicML Streaming's py1b, blocks aligned to chunks)")
        .put("blockChunks", blockChunks).put("chunkRows", rowGroupRows())
        .put("description", "each epoch: the chunks in a shuffled order, " + blockChunks + " at a time; the units whose"
            + " rows lie in a block's chunks shuffled among themselves and batched; every chunk read once an epoch");
    ArrayNode js = result.putArray("jobPlan");
    Map<String, Long> colBytes = new LinkedHashMap<>();
    // By column: a list's leaf ("embedding.list.element") counts for its column.
    reference.path("columnBytes").properties().forEach(e -> colBytes.merge(e.getKey().split("\\.", 2)[0], e.getValue().asLong(),
        Long::sum));
    long stored = colBytes.values().stream().mapToLong(Long::longValue).sum();
    for (FleetJob j : plan) {
      long mine = j.features().stream().mapToLong(f -> colBytes.getOrDefault(f, 0L)).sum();
      js.addObject().put("name", j.name()).put("mode", j.mode()).put("features", String.join(",", j.features()))
          .put("shareOfStoredBytes", stored == 0 ? 0 : (double) mine / stored);
    }
    ObjectNode bySide = result.putObject("sides");
    result.put("tier", tier);
    // With --tier s3 the slow tier's files are served as objects of bucket "slow" (the mount's
    // directory) by S3Proxy, in a cgroup of its own that reads the throttled disk and keeps at most
    // STORE_MEMORY (heap and page cache).
    try (SideGroup storeGroup = tier.equals("s3") ? SideGroup.create("strata-fleet-store", STORE_MEMORY, slow, log) : null;
        S3Lab store = storeGroup == null ? null : S3Lab.startLocal(layout.resolve("s3proxy"), slow.mount().getParent(),
            storeGroup::wrap)) {
      if (store != null) {
        result.putObject("store").put("server", "S3Proxy 2.6.0 (filesystem backend over the slow tier's files)")
            .put("endpoint", store.endpoint().toString()).put("memoryBytes", STORE_MEMORY).put("cgroups", storeGroup.describe())
            .put("dataset", bucketPath(slow, ds));
        log.printf("fleet: the slow tier as bucket '%s' of S3Proxy at %s%n", slow.mount().getFileName(), store.endpoint());
      }
      for (String side : sides) {
        log.printf("fleet: %s: %d jobs x %d epochs ...%n", side, jobs, epochs);
        bySide.set(side, runSide(side, layout, ds, base, plan, py, harness, slow, memoryLimit, ssdBudget, store, log));
      }
    }
    result.set("ratios", FleetResults.ratios(bySide, ssdBudget));
    return result;
  }

  /** The dataset's directory as an object prefix of the store: {@code s3://<mount's name>/<path in the mount>}. */
  private static String bucketPath(SlowTier slow, Path ds) {
    return "s3://" + slow.mount().getFileName() + "/" + slow.mount().relativize(ds);
  }

  private ObjectNode runSide(String side, Path data, Path ds, ObjectNode base, List<FleetJob> plan, String py, Path harness,
      SlowTier slow, long memoryLimit, long ssdBudget, S3Lab store, PrintWriter log) throws Exception {
    // What the side reads: the dataset's directory, or the bucket the store serves it as.
    String dataset = store == null ? ds.toString() : bucketPath(slow, ds);
    if (!List.of("strata", "pyarrow", "numpy", "fsspec").contains(side)) {
      throw new IllegalArgumentException("no side '" + side + "' (strata, pyarrow, numpy, fsspec)");
    }
    Path sideDir = data.resolve("run-" + side);
    Processes.deleteTree(sideDir);
    Files.createDirectories(sideDir);
    ObjectNode r = Json.object();
    dropCaches();
    try (SideGroup group = SideGroup.create("strata-fleet-" + side, memoryLimit, slow, log)) {
      r.put("cgroups", group.describe());
      Process node = null;
      NodeClient client = null;
      List<Process> procs = new ArrayList<>();
      FleetSampler sampler = new FleetSampler(group, slow);
      Thread sampling = Thread.ofPlatform().name("strata-fleet-sampler").daemon(true).start(sampler);
      long t0 = System.nanoTime();
      long cpu0 = group.cpuNanos();
      long sys0 = group.cpuSystemNanos();
      long majors0 = group.memoryStat("pgmajfault");
      long requests0 = slow.readRequests();
      try {
        if (side.equals("strata")) {
          int port;
          try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
          }
          List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
              "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"));
          cmd.addAll(List.of(nodeJavaOpts.trim().split("\\s+")));
          cmd.addAll(List.of("-cp", Processes.classPath(), Main.class.getName(), "node", "start", "--foreground", "--home",
              sideDir.resolve("node").toString(), "--hdd-root", store == null ? slow.mount().toString()
                  : "s3://" + slow.mount().getFileName() + "/", "--port",
              Integer.toString(port),
              "--ssd-budget", Long.toString(ssdBudget)));
          if (!separateService) {
            cmd.addAll(List.of("--loader-socket", serviceSocket(sideDir).toString()));
          }
          ProcessBuilder pb = new ProcessBuilder(group.wrap(cmd)).redirectErrorStream(true)
              .redirectOutput(sideDir.resolve("node.log").toFile());
          // As the strata launcher runs every JVM: glibc's per-thread malloc arenas (64 MiB each) otherwise hold memory freed long ago.
          pb.environment().putIfAbsent("MALLOC_ARENA_MAX", "2");
          if (store != null) {
            pb.environment().putAll(store.environment()); // the node reads the bucket with the AWS SDK's own variables
          }
          node = pb.start();
          group.track(node);
          client = new NodeClient("http://127.0.0.1:" + port, null);
          LabProcesses.awaitHealth(client, node, sideDir.resolve("node.log"));
          client.registerDataset(store == null ? ds : io.strata.sdk.files.Locations.dataset(dataset));
          if (flashWritesPerHour > 0) {
            client.setPolicy(Json.object().put("flashWriteBudgetBytesPerHour", (long) (flashWritesPerHour * ssdBudget)));
          }
          r.put("nodeJavaOpts", nodeJavaOpts).put("loaderService", separateService ? "a JVM of its own" : "in the node's JVM");
        }
        for (FleetJob j : plan) {
          ObjectNode s = base.deepCopy().put("side", side).put("name", j.name()).put("mode", j.mode()).put("epochs", epochs)
              .put("seed", j.seed()).put("batchRows", 8192).put("batchSamples", 32).put("blockChunks", blockChunks)
              .put("dataset", dataset).put("fsspecCache", sideDir.resolve("fsspec-cache").toString());
          if (store != null) {
            // pyarrow's S3FileSystem, configured as its documentation shows for an S3-compatible endpoint.
            s.putObject("s3").put("endpoint", store.endpoint().getAuthority()).put("scheme", store.endpoint().getScheme())
                .put("accessKey", S3Lab.IDENTITY).put("secretKey", S3Lab.CREDENTIAL).put("region", "us-east-1")
                .put("bucket", slow.mount().getFileName() + "/" + slow.mount().relativize(ds));
          }
          s.set("features", Json.MAPPER.valueToTree(j.features()));
          if (client != null) {
            s.put("node", client.url());
          }
          Path specFile = sideDir.resolve(j.name() + ".json");
          Files.writeString(specFile, Json.compact(s));
          List<String> cmd = List.of(py, harness.toString(), "job", specFile.toString());
          ProcessBuilder pb = new ProcessBuilder(group.wrap(cmd)).redirectError(sideDir.resolve(j.name() + ".err").toFile())
              .redirectOutput(sideDir.resolve(j.name() + ".out").toFile());
          if (side.equals("strata")) {
            Processes.clientEnvironment(pb, serviceSocket(sideDir), 2);
          }
          if (store != null) {
            pb.environment().putAll(store.environment());
          }
          Process started = pb.start();
          group.track(started);
          procs.add(started);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        for (Process p : procs) {
          if (!p.waitFor(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
            throw new IOException(side + ": the jobs did not finish in " + timeoutSeconds + " s (see " + sideDir + ")");
          }
        }
        if (client != null && !node.isAlive()) {
          // Killed (the memory cgroup's OOM killer, most likely: oomKills says): its jobs failed with it, and the figures say so.
          r.put("nodeDied", true).put("ssdBytesWritten", 0);
        } else if (client != null) {
          JsonNode t = client.tiers();
          r.put("ssdBytesWritten", t.path("traffic").path("flashBytesWritten").asLong())
              .put("promotions", t.path("traffic").path("promotions").asLong())
              .put("evictions", t.path("traffic").path("evictions").asLong())
              .put("promotionsFromReaders", t.path("hdd").path("promotionsFromReaders").asLong())
              .put("promotionReadBytes", t.path("hdd").path("promotionReadBytes").asLong())
              .put("byteHitRatio", t.path("traffic").path("byteHitRatio").asDouble());
          // Why the policy admitted or bypassed what it did (StrataPolicy's counts of each kind of decision).
          r.set("policyDecisions", client.policy().path("decisions"));
          // Per feature stream, the bytes its reads took from each tier: what the SSD held for whom.
          r.set("streams", t.path("topStreams"));
        } else if (side.equals("fsspec")) {
          r.put("ssdBytesWritten", Files.exists(sideDir.resolve("fsspec-cache")) ? treeBytes(sideDir.resolve("fsspec-cache")) : 0);
        } else {
          r.put("ssdBytesWritten", 0);
        }
      } finally {
        sampler.stop();
        sampling.join();
        for (Process p : procs) {
          p.destroyForcibly();
        }
        if (node != null) {
          node.destroy();
          if (!node.waitFor(20, TimeUnit.SECONDS)) {
            node.destroyForcibly();
          }
        }
      }
      double seconds = (System.nanoTime() - t0) / 1e9;
      long cpu = group.cpuNanos() - cpu0;
      // Kernel time and page faults that read from a device: where a side's CPU went besides its own code.
      r.put("cpuSystemSeconds", (group.cpuSystemNanos() - sys0) / 1e9).put("majorFaults", group.memoryStat("pgmajfault") - majors0);
      // The slow tier's requests (as the device completed them): under its IOPS limit, their size sets what it delivers.
      r.put("slowTierRequests", slow.readRequests() - requests0);
      List<Integer> codes = new ArrayList<>();
      for (Process p : procs) {
        codes.add(p.exitValue());
      }
      r.set("exitCodes", Json.MAPPER.valueToTree(codes));
      r.put("seconds", seconds).put("slowTierBytes", sampler.slowBytes()).put("peakPssBytes", sampler.peakPss())
          .put("cgroupPeakBytes", group.peakBytes()).put("oomKills", group.oomKills()).put("cpuSeconds", cpu / 1e9);
      FleetResults.collect(r, plan, epochs, sideDir, sampler, cpu);
      log.printf("fleet: %s: %s, %s read from the slow tier, peak PSS %s, values %s%n", side, Terminal.seconds(seconds),
          Terminal.bytes(r.path("slowTierBytes").asLong()), Terminal.bytes(r.path("peakPssBytes").asLong()),
          r.path("valuesChecked").asBoolean() ? "checked" : "NOT all checked");
      return r;
    }
  }

  private static void runPython(String py, Path harness, String what, Path specFile, Path logFile, int seconds) throws Exception {
    Process p = new ProcessBuilder(py, harness.toString(), what, specFile.toString()).redirectErrorStream(true)
        .redirectOutput(logFile.toFile()).start();
    if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IOException("fleet.py " + what + " did not finish in " + seconds + " s");
    }
    if (p.exitValue() != 0) {
      throw new IOException("fleet.py " + what + " failed: " + tail(Files.readString(logFile)));
    }
  }

  static String tail(String s) {
    String t = s.strip();
    return t.length() > 600 ? "..." + t.substring(t.length() - 600) : t;
  }

  private static long treeBytes(Path dir) throws IOException {
    try (var w = Files.walk(dir)) {
      return w.filter(Files::isRegularFile).mapToLong(p -> {
        try {
          return Files.size(p);
        } catch (IOException e) {
          return 0;
        }
      }).sum();
    }
  }

  private static void dropCaches() {
    try {
      Files.writeString(Path.of("/proc/sys/vm/drop_caches"), "3");
    } catch (IOException ignored) {
      // Not allowed here: each side starts with what the page cache holds (said in the JSON's cgroups line).
    }
  }

  /** Where Strata's jobs find their loader service (the node's, unless --separate-service). */
  private static Path serviceSocket(Path sideDir) throws IOException {
    return PrivateDirs.ensure(sideDir.resolve("svc")).resolve("loader.sock");
  }
}
