package io.strata.bench;

import io.strata.node.Setting;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.ops.GroundTruth;
import io.strata.ops.Main;
import io.strata.ops.NodeCommand;
import io.strata.ops.Processes;
import io.strata.ops.Terminal;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.internal.Json;
import io.strata.sdk.node.NodeClient;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code strata soak}: a node process, N loader processes reading through it for a long time with
 * promotion and eviction churn and random SIGKILLs of loaders, every sample of every batch checked
 * against a ground truth computed from ORC alone; the node's memory, file descriptors and mappings
 * sampled throughout.
 */
@Command(name = "soak", mixinStandardHelpOptions = true,
    description = "Long run: a node, N job processes with promotion/eviction churn and random loader kills, every batch checked against ORC ground truth; reports mismatches, leaks and the node's memory.")
public final class SoakCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--minutes", defaultValue = "30", description = "How long the jobs run; default ${DEFAULT-VALUE}.")
  double minutes;

  @Option(names = "--jobs", defaultValue = "8", description = "Concurrent job processes; default ${DEFAULT-VALUE}.")
  int jobs;

  @Option(names = "--rows", defaultValue = "2000000", description = "Rows of the generated dataset; default ${DEFAULT-VALUE}.")
  long rows;

  @Option(names = "--rows-per-chunk", defaultValue = "131072", description = "Rows per chunk; default ${DEFAULT-VALUE}.")
  int rowsPerChunk;

  @Option(names = "--ssd-share", defaultValue = "0.4",
      description = "SSD budget as a share of the dataset's segment bytes (small: constant eviction); default ${DEFAULT-VALUE}.")
  double ssdShare;

  @Option(names = "--churn-seconds", defaultValue = "4", description = "Seconds between forced promotions/evictions; default ${DEFAULT-VALUE}.")
  double churnSeconds;

  @Option(names = "--kill-share", defaultValue = "0.25", description = "Share of job runs SIGKILLed at a random point; default ${DEFAULT-VALUE}.")
  double killShare;

  @Option(names = "--seed", defaultValue = "1")
  long seed;

  @Option(names = "--work", description = "Working directory (default: a new temporary one, deleted afterwards).")
  Path work;

  @Option(names = "--json", description = "Print the result as one JSON object (progress goes to stderr).")
  boolean json;

  private final AtomicLong runs = new AtomicLong();
  private final AtomicLong completed = new AtomicLong();
  private final AtomicLong killed = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  private final AtomicLong batches = new AtomicLong();
  private final AtomicLong values = new AtomicLong();
  private final AtomicLong mismatches = new AtomicLong();
  private final List<String> failures = Collections.synchronizedList(new ArrayList<>());
  private final AtomicLong loaderMaxDeletedMaps = new AtomicLong();

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter log = json ? spec.commandLine().getErr() : out;
    if (jobs < 1 || minutes <= 0 || rows < 1000 || ssdShare <= 0) {
      throw new IllegalArgumentException("--jobs, --minutes, --rows and --ssd-share must be positive (rows at least 1000)");
    }
    boolean temp = work == null;
    Path dir = temp ? Files.createTempDirectory("strata-soak") : work.toAbsolutePath();
    Process node = null;
    try {
      Path hdd = dir.resolve("hdd").resolve("soak");
      Path truthFile = dir.resolve("truth.bin");
      long t0 = System.nanoTime();
      if (!Files.exists(truthFile)) {
        log.printf("generating %s rows in %s ...%n", Terminal.count(rows), hdd);
        log.flush();
        DatasetGenerator.generate(hdd, new DatasetGenerator.Options("soak", rows, 10, seed, 400, rowsPerChunk, 4, 8,
            Runtime.getRuntime().availableProcessors(), true), Progress.NONE);
        try (Dataset ds = Dataset.open(hdd)) {
          GroundTruth.compute(ds).write(truthFile);
        }
      }
      List<String> features;
      long orcBytes;
      try (Dataset ds = Dataset.open(hdd); Stream<Path> s = Files.list(hdd)) {
        features = ds.featureNames();
        orcBytes = s.filter(p -> p.toString().endsWith(".orc")).mapToLong(p -> p.toFile().length()).sum();
      }
      log.printf("ground truth from ORC ready (%s)%n", Terminal.seconds((System.nanoTime() - t0) / 1e9));
      // Segments are about 2.2x the ORC bytes for this generator's columns; the budget is a share of that.
      long budget = (long) (orcBytes * 2.2 * ssdShare);
      NodeCommand.Child child = NodeCommand.startChild(List.of("-Xmx512m", "-XX:+UseSerialGC"), dir.resolve("node"),
          List.of("--port", "0", "--hdd-root", dir.resolve("hdd").toString(), "--ssd-budget", Long.toString(budget)),
          dir.resolve("node.log"));
      node = child.process();
      String url = child.url();
      NodeClient client = new NodeClient(url, null);
      client.registerDataset(hdd);
      log.printf("node %s (pid %d), SSD budget %s; %d jobs for %.1f min%n", url, node.pid(), Terminal.bytes(budget), jobs, minutes);
      log.flush();

      long deadline = System.nanoTime() + (long) (minutes * 60e9);
      List<Thread> slots = new ArrayList<>();
      for (int i = 0; i < jobs; i++) {
        int slot = i;
        Path hddDir = hdd;
        Thread t = Thread.ofPlatform().name("soak-job-" + i).start(() -> runSlot(slot, hddDir, url, truthFile, features, dir, deadline));
        slots.add(t);
      }
      Random rnd = new Random(seed);
      List<ObjectNode> samples = new ArrayList<>();
      long promotions = 0;
      long evictions = 0;
      long nextChurn = System.nanoTime();
      long nextSample = System.nanoTime();
      long nextReport = System.nanoTime() + 30_000_000_000L;
      while (System.nanoTime() < deadline) {
        if (!node.isAlive()) {
          throw new IOException("the node died during the soak (exit " + node.exitValue() + "); see " + dir.resolve("node.log"));
        }
        if (System.nanoTime() >= nextChurn) {
          String f = features.get(rnd.nextInt(features.size()));
          try {
            if (rnd.nextBoolean()) {
              client.evict("soak", List.of(f), null);
              evictions++;
            } else {
              client.promote("soak", List.of(f), null);
              promotions++;
            }
          } catch (NodeClient.NodeRequestException e) {
            // A refusal (over budget, already resident) is part of the churn.
          }
          nextChurn = System.nanoTime() + (long) (churnSeconds * 1e9);
        }
        if (System.nanoTime() >= nextSample) {
          samples.add(sample(node.pid(), (System.nanoTime() - t0) / 1e9));
          nextSample = System.nanoTime() + 5_000_000_000L;
        }
        if (System.nanoTime() >= nextReport) {
          log.printf("%s: %d job runs (%d killed, %d failed), %s values checked, %d mismatches, node RSS %s%n",
              Terminal.seconds((System.nanoTime() - t0) / 1e9), runs.get(), killed.get(), failed.get(),
              Terminal.count(values.get()), mismatches.get(), Terminal.bytes(samples.getLast().path("rssKiB").asLong() << 10));
          log.flush();
          nextReport = System.nanoTime() + 30_000_000_000L;
        }
        Thread.sleep(100);
      }
      for (Thread t : slots) {
        t.join(TimeUnit.MINUTES.toMillis(2));
      }
      // Idle: every job gone; the node should hold no mapping of a deleted segment and no extra descriptors.
      Thread.sleep(3000);
      ObjectNode idle = sample(node.pid(), (System.nanoTime() - t0) / 1e9);
      JsonNode tiers = client.tiers();
      ObjectNode r = Json.object();
      r.put("minutes", minutes).put("jobs", jobs).put("rows", rows).put(Setting.SSD_BUDGET_BYTES.key(), budget);
      r.put("jobRuns", runs.get()).put("jobRunsCompleted", completed.get()).put("loadersKilled", killed.get())
          .put("jobRunsFailed", failed.get());
      r.put("batchesChecked", batches.get()).put("sampleValuesChecked", values.get()).put("mismatches", mismatches.get());
      r.put("forcedPromotions", promotions).put("forcedEvictions", evictions);
      r.put("nodePromotions", tiers.path("traffic").path("promotions").asLong())
          .put("nodeEvictions", tiers.path("traffic").path("evictions").asLong())
          .put("byteHitRatio", tiers.path("traffic").path("byteHitRatio").asDouble());
      ArrayNode series = r.putArray("nodeSamples");
      samples.forEach(series::add);
      r.set("nodeIdleAtEnd", idle);
      r.put("loaderMaxDeletedSegmentMappings", loaderMaxDeletedMaps.get());
      // Memory flat: the last quarter's mean RSS against the second quarter's (the first is warm-up).
      double q2 = meanRss(samples, 0.25, 0.5);
      double q4 = meanRss(samples, 0.75, 1.0);
      boolean memoryFlat = q4 <= q2 * 1.10 + 32 * 1024;
      int fdsEarly = samples.size() > 1 ? samples.get(1).path("fds").asInt() : idle.path("fds").asInt();
      boolean fdFlat = idle.path("fds").asInt() <= fdsEarly + 16;
      boolean noDeletedMaps = idle.path("deletedSegmentMappings").asInt() == 0;
      r.put("nodeRssSecondQuarterKiB", (long) q2).put("nodeRssLastQuarterKiB", (long) q4).put("memoryFlat", memoryFlat);
      r.put("nodeFdsEarly", fdsEarly).put("nodeFdsIdleAtEnd", idle.path("fds").asInt()).put("fdLeak", !fdFlat);
      r.put("mappingLeak", !noDeletedMaps);
      failures.stream().limit(10).forEach(r.putArray("failures")::add);
      boolean ok = mismatches.get() == 0 && failed.get() == 0 && memoryFlat && fdFlat && noDeletedMaps && batches.get() > 0;
      r.put("ok", ok);
      if (json) {
        out.println(Json.compact(r));
      } else {
        Terminal.Table t = new Terminal.Table("figure", "value").leftAligned();
        t.row("job runs (completed / SIGKILLed / failed)", runs.get() + " (" + completed.get() + " / " + killed.get() + " / " + failed.get() + ")");
        t.row("batches checked", Terminal.count(batches.get()));
        t.row("sample values checked vs ORC", Terminal.count(values.get()));
        t.row("mismatches", Long.toString(mismatches.get()));
        t.row("forced promotions / evictions", promotions + " / " + evictions);
        t.row("node promotions / evictions", r.path("nodePromotions").asLong() + " / " + r.path("nodeEvictions").asLong());
        t.row("node RSS 2nd quarter -> last quarter", Terminal.bytes((long) q2 << 10) + " -> " + Terminal.bytes((long) q4 << 10)
            + (memoryFlat ? " (flat)" : " (GROWING)"));
        t.row("node fds early -> idle at end", fdsEarly + " -> " + idle.path("fds").asInt() + (fdFlat ? "" : " (LEAK)"));
        t.row("node mappings of deleted segments, idle", idle.path("deletedSegmentMappings").asText());
        t.row("loader mappings of deleted segments (max)", Long.toString(loaderMaxDeletedMaps.get()));
        t.print(out);
        failures.stream().limit(10).forEach(f -> out.println("  failure: " + f));
        out.println(ok ? "soak passed" : "soak FAILED");
      }
      return ok ? 0 : Main.FAILURE;
    } finally {
      if (node != null) {
        node.destroy();
        if (!node.waitFor(20, TimeUnit.SECONDS)) {
          node.destroyForcibly();
        }
      }
      if (temp) {
        Processes.deleteTree(dir);
      }
    }
  }

  private void runSlot(int slot, Path hdd, String url, Path truth, List<String> features, Path dir, long deadline) {
    Random rnd = new Random(seed * 1000 + slot);
    int run = 0;
    while (System.nanoTime() < deadline) {
      run++;
      List<String> mine = new ArrayList<>(features);
      Collections.shuffle(mine, rnd);
      mine = mine.subList(0, 3 + rnd.nextInt(features.size() - 2));
      boolean kill = rnd.nextDouble() < killShare;
      Path logFile = dir.resolve("job-" + slot + ".log");
      runs.incrementAndGet();
      try {
        Process p = Processes.spawn(List.of("-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"),
            List.of("loader", "run", "--dataset", hdd.toString(), "--node", url, "--job", "soak-" + slot + "-" + run,
                "--features", String.join(",", mine), "--batch", Integer.toString(64 + rnd.nextInt(192)), "--epochs",
                Integer.toString(1 + rnd.nextInt(2)), "--seed", Integer.toString(rnd.nextInt(1_000_000)), "--prefetch", "2",
                "--verify-against", truth.toString(), "--json"),
            logFile);
        long killAt = kill ? System.nanoTime() + (long) (rnd.nextDouble() * 20e9) : Long.MAX_VALUE;
        boolean destroyed = false;
        while (p.isAlive()) {
          if (System.nanoTime() >= killAt || System.nanoTime() >= deadline) {
            destroyed = true;
            p.destroyForcibly();
            p.waitFor(30, TimeUnit.SECONDS);
            break;
          }
          loaderMaxDeletedMaps.accumulateAndGet(deletedSegmentMappings(p.pid()), Math::max);
          p.waitFor(500, TimeUnit.MILLISECONDS);
        }
        List<String> lines = Files.readAllLines(logFile);
        JsonNode summary = null;
        String lastProgress = null;
        for (String l : lines) {
          if (l.startsWith("{")) {
            summary = Json.parse(l);
          } else if (l.startsWith("verified ")) {
            lastProgress = l;
          }
        }
        if (summary != null) {
          batches.addAndGet(summary.path("verifiedBatches").asLong());
          values.addAndGet(summary.path("verifiedValues").asLong());
          mismatches.addAndGet(summary.path("mismatches").asLong());
          String jobName = "job soak-" + slot + "-" + run;
          summary.path("firstMismatches").forEach(m -> failures.add(jobName + ": mismatch " + m.asText()));
        } else if (lastProgress != null) {
          String[] f = lastProgress.split(" ");
          batches.addAndGet(Long.parseLong(f[1]));
          values.addAndGet(Long.parseLong(f[2]));
          mismatches.addAndGet(Long.parseLong(f[3]));
        }
        if (destroyed) {
          if (System.nanoTime() < deadline) {
            killed.incrementAndGet();
          }
        } else if (p.exitValue() == 0 && summary != null) {
          completed.incrementAndGet();
        } else {
          failed.incrementAndGet();
          failures.add("job soak-" + slot + "-" + run + " exited " + p.exitValue() + ": "
              + String.join(" | ", lines.subList(Math.max(0, lines.size() - 3), lines.size())));
        }
      } catch (IOException | InterruptedException e) {
        failed.incrementAndGet();
        failures.add("job soak-" + slot + "-" + run + ": " + e);
        return;
      }
    }
  }

  /** RSS, open descriptors, mappings and mappings of deleted segment files of a process. */
  static ObjectNode sample(long pid, double atSeconds) throws IOException {
    ObjectNode o = Json.object();
    o.put("seconds", Math.round(atSeconds * 10) / 10.0);
    long rss = 0;
    for (String l : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
      if (l.startsWith("VmRSS:")) {
        rss = Long.parseLong(l.replaceAll("[^0-9]", ""));
      }
    }
    long fds;
    try (Stream<Path> s = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
      fds = s.count();
    }
    List<String> maps = Files.readAllLines(Path.of("/proc", Long.toString(pid), "maps"));
    o.put("rssKiB", rss).put("fds", fds).put("mappings", maps.size())
        .put("segmentMappings", maps.stream().filter(l -> l.contains(".arrow")).count())
        .put("deletedSegmentMappings", maps.stream().filter(SoakCommand::isDeletedSegment).count());
    return o;
  }

  static long deletedSegmentMappings(long pid) {
    try {
      return Files.readAllLines(Path.of("/proc", Long.toString(pid), "maps")).stream().filter(SoakCommand::isDeletedSegment).count();
    } catch (IOException e) {
      return 0; // The process has just exited.
    }
  }

  /** A line of /proc/PID/maps mapping a segment file that has been unlinked. */
  private static boolean isDeletedSegment(String mapsLine) {
    return mapsLine.contains(".arrow") && mapsLine.endsWith("(deleted)");
  }

  private static double meanRss(List<ObjectNode> samples, double from, double to) {
    int a = (int) (samples.size() * from);
    int b = Math.max(a + 1, (int) (samples.size() * to));
    return samples.subList(Math.min(a, samples.size() - 1), Math.min(b, samples.size())).stream()
        .mapToLong(s -> s.path("rssKiB").asLong()).average().orElse(0);
  }
}
