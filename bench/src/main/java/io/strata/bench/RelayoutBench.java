package io.strata.bench;

import static io.strata.bench.RelayoutEpochs.dropper;
import static io.strata.bench.RelayoutEpochs.epochs;
import static io.strata.bench.RelayoutEpochs.modelled;

import io.strata.bench.RelayoutEpochs.Epochs;
import io.strata.bench.RelayoutEpochs.Job;
import static io.strata.bench.BenchPeers.f2;
import static io.strata.bench.BenchPeers.median;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.ops.Processes;
import io.strata.ops.RelayoutCommand;
import io.strata.ops.Terminal;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.Progress;
import io.strata.tools.CoAccessOrder;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.files.DiskModel;
import io.strata.sdk.files.Manifest;
import io.strata.sdk.files.OrcReads;
import io.strata.tools.Relayout;
import io.strata.sdk.format.Columns;
import io.strata.sdk.internal.Json;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code strata bench relayout}: the same jobs' epochs read from ORC before and after a relayout
 * learned from their trace (features stored twice within {@code --replicas}, 15 % of the bytes by
 * default, as {@code dataset relayout --replicas}). Two copies of one generated dataset, one
 * relaid out, read in alternating rounds; read requests and bytes counted where the ORC reader issues them ({@link
 * OrcReads}); cold epochs with the files and their sidecars dropped from the page cache first
 * ({@code posix_fadvise(DONTNEED)}, which needs no root); each job opens the dataset itself (as its
 * own process would); values compared by checksum. With {@code --emulate-hdd} both copies live on
 * an {@link EmulatedHdd} and the requests the device saw are counted too.
 */
@Command(name = "relayout", mixinStandardHelpOptions = true,
    description = "Read requests and cold-epoch time from ORC for jobs reading 5-20 of 60+ features (Zipf popularity),"
        + " before and after 'dataset relayout' learned from their trace.")
final class RelayoutBench implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--work", description = "Working directory (default: a new temporary one, removed after).")
  Path work;

  @Option(names = "--features", defaultValue = "64", description = "Columns of the dataset; default ${DEFAULT-VALUE}.")
  int features;

  @Option(names = "--rows", defaultValue = "400000", description = "Rows; default ${DEFAULT-VALUE}.")
  long rows;

  @Option(names = "--jobs", defaultValue = "12", description = "Jobs; default ${DEFAULT-VALUE}.")
  int jobs;

  @Option(names = "--rounds", defaultValue = "3", description = "Rounds (before and after alternate); default ${DEFAULT-VALUE}.")
  int rounds;

  @Option(names = "--seed", defaultValue = "5")
  long seed;

  @Option(names = "--quick", description = "Small data, one round (CI).")
  boolean quick;

  @Option(names = "--json", description = "Print the figures as one JSON object.")
  boolean json;

  @Option(names = "--emulate-hdd", description = "Put both copies on an emulated HDD (a loop-mounted ext4 whose reads"
      + " the blkio cgroup throttles; needs root): cold epochs then pay per request as on a disk that seeks.")
  boolean emulateHdd;

  @Option(names = "--hdd-iops", defaultValue = "100", description = "Requests per second of the emulated HDD; default ${DEFAULT-VALUE}.")
  int hddIops;

  @Option(names = "--hdd-mbps", defaultValue = "150", description = "MB/s of the emulated HDD; default ${DEFAULT-VALUE}.")
  int hddMbps;

  @Option(names = "--disk-model", paramLabel = "MODEL", defaultValue = "hdd", description = "Replay every epoch's read"
      + " requests on a model of a disk: 'hdd' (a 7,200 rpm drive that seeks, DiskModel.HDD) or 'none'; default ${DEFAULT-VALUE}.")
  String diskModel;

  @Option(names = "--replicas", paramLabel = "PCT", defaultValue = "15%", description = "As 'dataset relayout --replicas':"
      + " store features twice where that saves read requests, up to this share of the dataset's bytes; default ${DEFAULT-VALUE}.")
  String replicas;

  @Option(names = "--stripe-mib", paramLabel = "MIB", defaultValue = "" + Relayout.DEFAULT_STRIPE_MIB, description = "As 'dataset relayout"
      + " --stripe-mib': consecutive stripes merged up to this many MiB (0 keeps them); default ${DEFAULT-VALUE}.")
  int stripeMib;

  @Option(names = "--plan-only", description = "Time the relayout's planning alone (the order, then the copies) on"
      + " the jobs' trace over a small dataset of --features columns: no rewrite, no epochs.")
  boolean planOnly;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter log = spec.commandLine().getErr();
    if (quick) {
      rows = Math.min(rows, 60_000);
      rounds = 1;
      jobs = Math.min(jobs, 8);
    }
    double share = RelayoutCommand.replicaShare(replicas);
    if (features < 20 || jobs < 1 || rounds < 1 || rows < 1000 || hddIops < 1 || hddMbps < 1) {
      throw new IllegalArgumentException(
          "need --features >= 20, --jobs >= 1, --rounds >= 1, --rows >= 1000, --hdd-iops >= 1 and --hdd-mbps >= 1");
    }
    long stripeBytes = RelayoutCommand.stripeBytes(stripeMib);
    if (planOnly && emulateHdd) {
      throw new IllegalArgumentException("--plan-only reads no data: it takes no --emulate-hdd");
    }
    if (!diskModel.equals("hdd") && !diskModel.equals("none")) {
      throw new IllegalArgumentException("--disk-model is 'hdd' or 'none', not '" + diskModel + "'");
    }
    DiskModel model = diskModel.equals("hdd") ? DiskModel.HDD : null;
    boolean temporary = work == null;
    Path dir = temporary ? Files.createTempDirectory("strata-bench-relayout") : work;
    EmulatedHdd hdd = null;
    try {
      if (planOnly) {
        return planOnly(dir, share, out, log);
      }
      if (emulateHdd) {
        // Room for two copies, the relayout's rewrite and ext4's own, at up to 8 bytes a value.
        long bytes = Math.max(256L << 20, 4 * rows * features * 8 + (64L << 20));
        hdd = EmulatedHdd.create(dir, bytes, hddIops, hddMbps * 1_000_000L);
        log.println("emulated HDD: " + hdd.describe());
      }
      Path data = hdd != null ? hdd.root() : dir;
      Path before = data.resolve("before");
      Path after = data.resolve("after");
      log.println("generating " + Terminal.count(rows) + " rows x " + features + " columns ...");
      DatasetGenerator.generate(before, options(rows), Progress.NONE);
      DatasetGenerator.generate(after, options(rows), Progress.NONE);
      Instance in = instance(before);
      List<Job> js = in.jobs();
      List<Job> heldOut = heldOut(before);
      String trace = in.trace();
      List<String> columns = in.columns();
      Files.writeString(dir.resolve("trace.csv"), trace, StandardCharsets.UTF_8);
      // The command's own path: reads learned from the trace, the order, the verified rewrite.
      Map<String, Map<String, Long>> reads = CoAccessOrder.readsFromTrace(trace, "relayout", "trace.csv");
      long datasetBytes = Manifest.read(after).fileBytes();
      CoAccessOrder.Plan plan = RelayoutCommand.plan(after, columns, reads, share, datasetBytes);
      Relayout.Result r = Relayout.rewrite(after, plan.layout(),
          Relayout.mergeBytes(stripeBytes, datasetBytes, plan.replicaBytes()), Progress.NONE);
      long afterBytes = r.manifest().fileBytes();
      log.printf("relayout: %s -> %s reads per stripe per job expected; rewritten and verified in %s%n",
          f2(plan.runsBefore()), f2(plan.runsAfter()), Terminal.seconds(r.seconds()));
      String dropper = dropper();
      List<Double> beforeSecs = new ArrayList<>();
      List<Double> afterSecs = new ArrayList<>();
      Epochs b = null;
      Epochs a = null;
      long gap = (model != null ? model : DiskModel.HDD).breakEvenGapBytes();
      // The same cold epochs read through gaps (the model's break-even), before and after.
      List<Double> gapBeforeSecs = new ArrayList<>();
      List<Double> gapAfterSecs = new ArrayList<>();
      Epochs gb = null;
      Epochs ga = null;
      long[] grain = RelayoutEpochs.grain(before);
      for (int round = 0; round < rounds; round++) {
        b = epochs(before, js, dropper, hdd, 0, grain);
        a = epochs(after, js, dropper, hdd, 0, grain);
        gb = epochs(before, js, dropper, hdd, gap, grain);
        ga = epochs(after, js, dropper, hdd, gap, grain);
        beforeSecs.add(b.seconds());
        afterSecs.add(a.seconds());
        gapBeforeSecs.add(gb.seconds());
        gapAfterSecs.add(ga.seconds());
        log.printf("round %d/%d: before %d requests %s, after %d requests %s; through gaps before %d requests %s, after %d"
            + " requests %s%s%n", round + 1, rounds, b.requests(), Terminal.seconds(b.seconds()), a.requests(),
            Terminal.seconds(a.seconds()), gb.requests(), Terminal.seconds(gb.seconds()), ga.requests(),
            Terminal.seconds(ga.seconds()),
            hdd == null ? "" : " (the device saw " + b.deviceRequests() + ", " + a.deviceRequests() + ", "
                + gb.deviceRequests() + " and " + ga.deviceRequests() + ")");
      }
      boolean identical = a.checksum() == b.checksum() && gb.checksum() == b.checksum() && ga.checksum() == b.checksum();
      ObjectNode modelled = null;
      if (model != null) {
        // The disk model: every configuration's epoch warm (its CPU: decoding, copying from the
        // page cache), its requests replayed on the model (its I/O); touching reads pay the two in
        // series, the gap reader overlaps them by reading ahead.
        modelled = modelled(model, gap, before, after, js, heldOut, rounds, log);
        identical &= modelled.path("identical").asBoolean()
            && modelled.path("touchingBefore").path("checksum").asLong() == b.checksum();
      }
      double tb = median(beforeSecs);
      double ta = median(afterSecs);
      ObjectNode o2 = Json.object();
      o2.put("features", features).put("rows", rows).put("chunks", Manifest.read(before).chunks().size())
          .put("chunksAfter", r.manifest().chunks().size()).put("stripeMib", stripeMib).put("jobs", js.size());
      o2.put("featuresPerJobMean", js.stream().mapToInt(j -> j.features().size()).average().orElse(0));
      o2.put("runsPerStripeBefore", plan.runsBefore()).put("runsPerStripeAfter", plan.runsAfter());
      // What the command estimates for jobs it did not learn from, beside what held-out jobs measure.
      double[] estimate = RelayoutCommand.heldOut(before, Manifest.read(before).layout(), columns, reads, share,
          datasetBytes);
      if (estimate != null) {
        o2.putObject("heldOutEstimate").put("runsPerStripeBefore", estimate[0]).put("runsPerStripeAfter", estimate[1]);
      }
      String heldOutTrace;
      try (Dataset ds = Dataset.open(before)) {
        heldOutTrace = trace(ds, heldOut);
      }
      Map<String, Map<String, Long>> heldOutReads = CoAccessOrder.readsFromTrace(heldOutTrace, "relayout", "held-out jobs");
      o2.putObject("heldOutRuns").put("runsPerStripeBefore", CoAccessOrder.runs(Manifest.read(before).layout(), columns,
          heldOutReads)).put("runsPerStripeAfter", CoAccessOrder.runs(plan.layout(), columns, heldOutReads));
      o2.putObject("replicas").put("budget", share / 100).put("features", plan.replicated().size())
          .put("datasetBytesBefore", datasetBytes).put("datasetBytesAfter", afterBytes);
      o2.put("cold", dropper != null
          ? "posix_fadvise(DONTNEED) on every ORC file and its stripe-footer sidecar before each job's epoch"
          : "not dropped (no python3 with os.posix_fadvise): warm page cache");
      if (hdd != null) {
        o2.putObject("disk").put("emulatedHdd", true).put("iops", hdd.iops()).put("bytesPerSecond", hdd.bytesPerSecond())
            .put("readAheadKiB", EmulatedHdd.READ_AHEAD_KIB).put("what", hdd.describe());
      } else {
        o2.putObject("disk").put("emulatedHdd", false).put("what", "the working directory's own disk");
      }
      ObjectNode ob = o2.putObject("before").put("requestsPerEpoch", b.requests()).put("bytesPerEpoch", b.bytes())
          .put("epochSeconds", tb);
      ObjectNode oa = o2.putObject("after").put("requestsPerEpoch", a.requests()).put("bytesPerEpoch", a.bytes())
          .put("epochSeconds", ta);
      ObjectNode ogb = o2.putObject("gapBefore").put("gapBytes", gap).put("requestsPerEpoch", gb.requests())
          .put("bytesPerEpoch", gb.bytes()).put("epochSeconds", median(gapBeforeSecs));
      ObjectNode oga = o2.putObject("gapAfter").put("gapBytes", gap).put("requestsPerEpoch", ga.requests())
          .put("bytesPerEpoch", ga.bytes()).put("epochSeconds", median(gapAfterSecs));
      if (hdd != null) {
        ob.put("deviceRequestsPerEpoch", b.deviceRequests()).put("deviceBytesPerEpoch", b.deviceBytes());
        oa.put("deviceRequestsPerEpoch", a.deviceRequests()).put("deviceBytesPerEpoch", a.deviceBytes());
        ogb.put("deviceRequestsPerEpoch", gb.deviceRequests()).put("deviceBytesPerEpoch", gb.deviceBytes());
        oga.put("deviceRequestsPerEpoch", ga.deviceRequests()).put("deviceBytesPerEpoch", ga.deviceBytes());
      }
      o2.put("identical", identical);
      o2.putObject("ratios")
          .put("readsAfterVsBefore", b.requests() == 0 ? 0 : (double) a.requests() / b.requests())
          .put("bytesAfterVsBefore", b.bytes() == 0 ? 0 : (double) a.bytes() / b.bytes())
          .put("epochTimeAfterVsBefore", tb == 0 ? 0 : ta / tb)
          .put("coldGapReaderVsTouching", median(gapBeforeSecs) / tb)
          .put("coldRelayoutVsGapReader", Math.min(ta, median(gapAfterSecs)) / median(gapBeforeSecs))
          .put("storedBytesAfterVsBefore", (double) afterBytes / datasetBytes);
      if (modelled != null) {
        o2.set("model", modelled);
        ObjectNode ratios = (ObjectNode) o2.get("ratios");
        for (String k : List.of("gapReaderVsTouching", "relayoutVsGapReader", "relayoutHeldOutVsGapReader", "relayoutVsTouching",
            "relayoutHeldOutVsTouching")) {
          ratios.set(k, modelled.path("ratios").path(k));
        }
      }
      if (hdd != null) {
        ((ObjectNode) o2.get("ratios")).put("deviceReadsAfterVsBefore",
            b.deviceRequests() == 0 ? 0 : (double) a.deviceRequests() / b.deviceRequests());
      }
      if (!identical) {
        throw new IllegalStateException("the relaid-out dataset read different values than the original");
      }
      if (json) {
        out.println(Json.compact(o2));
      } else {
        out.printf("relayout of %d columns for %d jobs (%.1f features each; %d stored twice, %+.1f%% bytes): read requests"
            + " per epoch %d -> %d (%.2fx), bytes %s -> %s, cold epoch %s -> %s (%.2fx); values identical%n", features, js.size(),
            o2.path("featuresPerJobMean").asDouble(), plan.replicated().size(), 100.0 * (afterBytes - datasetBytes) / datasetBytes,
            b.requests(), a.requests(), o2.path("ratios").path("readsAfterVsBefore").asDouble(),
            Terminal.bytes(b.bytes()), Terminal.bytes(a.bytes()), Terminal.seconds(tb), Terminal.seconds(ta),
            o2.path("ratios").path("epochTimeAfterVsBefore").asDouble());
        if (modelled != null) {
          JsonNode r2 = modelled.path("ratios");
          out.printf("on the disk model (%s; CPU in series): gap reader vs touching %.2fx; relayout vs the best reader without it"
              + " %.2fx (traced jobs), %.2fx (held-out jobs)%n", model.name(), r2.path("gapReaderVsTouching").asDouble(),
              r2.path("relayoutVsGapReader").asDouble(), r2.path("relayoutHeldOutVsGapReader").asDouble());
        }
      }
      return 0;
    } finally {
      if (hdd != null) {
        hdd.close();
      }
      if (temporary) {
        Processes.deleteTree(dir);
      }
    }
  }

  /** The generated dataset: {@code --features} columns, {@code n} rows in about 20 chunks (at least 1,000 rows each). */
  private DatasetGenerator.Options options(long n) {
    return DatasetGenerator.Options.of("relayout", n, seed).withFeatures(features)
        .withChunking((int) Math.max(1000, n / 20), 5).withReplace(true);
  }

  /** The jobs (from {@code --seed}), the trace their epochs leave, and the dataset's columns in their order. */
  private record Instance(List<Job> jobs, String trace, List<String> columns) {}

  private Instance instance(Path data) throws IOException {
    try (Dataset ds = Dataset.open(data)) {
      List<Job> js = jobs(ds.featureNames(), seed, seed);
      return new Instance(js, trace(ds, js), ds.columns().stream().map(FeatureInfo::name).toList());
    }
  }

  /**
   * {@code --plan-only}: the jobs' trace over a dataset of at most 20,000 rows (the trace's reads
   * per job and feature depend on the chunks, not on the rows), the order planned alone and then
   * with copies within the budget, each timed.
   */
  private int planOnly(Path dir, double share, PrintWriter out, PrintWriter log) throws IOException {
    Path data = dir.resolve("plan");
    long planRows = Math.min(rows, 20_000);
    log.println("generating " + Terminal.count(planRows) + " rows x " + features + " columns ...");
    DatasetGenerator.generate(data, options(planRows), Progress.NONE);
    Instance in = instance(data);
    List<Job> js = in.jobs();
    List<String> columns = in.columns();
    Map<String, Map<String, Long>> reads = CoAccessOrder.readsFromTrace(in.trace(), "relayout", "trace.csv");
    Map<String, Long> columnBytes = Relayout.columnBytes(data);
    long datasetBytes = Manifest.read(data).fileBytes();
    long t0 = System.nanoTime();
    CoAccessOrder.Plan order = CoAccessOrder.plan(columns, reads);
    long t1 = System.nanoTime();
    CoAccessOrder.Plan copies = CoAccessOrder.plan(columns, reads, columnBytes, (long) (share / 100 * datasetBytes));
    long t2 = System.nanoTime();
    ObjectNode o = Json.object();
    o.put("planOnly", true).put("features", features).put("jobs", js.size())
        .put("featuresPerJobMean", js.stream().mapToInt(j -> j.features().size()).average().orElse(0));
    o.put("runsPerStripeBefore", order.runsBefore()).put("runsPerStripeOrder", order.runsAfter())
        .put("runsPerStripeWithCopies", copies.runsAfter());
    o.put("orderSeconds", (t1 - t0) / 1e9).put("orderAndCopiesSeconds", (t2 - t1) / 1e9);
    o.putObject("replicas").put("budget", share / 100).put("features", copies.replicated().size())
        .put("bytes", copies.replicaBytes()).put("datasetBytes", datasetBytes);
    if (json) {
      out.println(Json.compact(o));
    } else {
      out.printf("planning %d columns for %d jobs (%.1f features each): runs per stripe %s -> %s by the order (%s),"
          + " %s with %d features stored twice (%.1f%% of the bytes; order and copies %s)%n", features, js.size(),
          o.path("featuresPerJobMean").asDouble(), f2(order.runsBefore()), f2(order.runsAfter()),
          Terminal.seconds((t1 - t0) / 1e9), f2(copies.runsAfter()), copies.replicated().size(),
          100.0 * copies.replicaBytes() / datasetBytes, Terminal.seconds((t2 - t1) / 1e9));
    }
    return 0;
  }

  /**
   * Held-out jobs: as many, from the same popularity (the feature order {@code --seed} shuffles),
   * their features drawn with another seed; the relayout never saw their trace.
   */
  private List<Job> heldOut(Path data) throws IOException {
    try (Dataset ds = Dataset.open(data)) {
      return jobs(ds.featureNames(), seed, seed + 1_000_003).stream()
          .map(j -> new Job("held-out-" + j.name(), j.features())).toList();
    }
  }

  /**
   * Jobs reading 5 to 20 features each, picked by Zipf popularity (exponent 1.1) over a feature
   * order shuffled by {@code popularitySeed}; the features drawn by {@code drawSeed} (the same
   * seed: one generator for both, as the traced jobs have always been drawn).
   */
  private List<Job> jobs(List<String> served, long popularitySeed, long drawSeed) {
    Random rnd = new Random(popularitySeed);
    List<String> byPopularity = new ArrayList<>(served);
    Collections.shuffle(byPopularity, rnd);
    if (drawSeed != popularitySeed) {
      rnd = new Random(drawSeed);
    }
    double[] cdf = new double[byPopularity.size()];
    double sum = 0;
    for (int i = 0; i < cdf.length; i++) {
      sum += 1 / Math.pow(i + 1, 1.1);
      cdf[i] = sum;
    }
    List<Job> out = new ArrayList<>();
    for (int j = 0; j < jobs; j++) {
      int k = Math.min(served.size(), 5 + rnd.nextInt(16));
      Set<String> fs = new LinkedHashSet<>();
      while (fs.size() < k) {
        double u = rnd.nextDouble() * sum;
        int i = 0;
        while (cdf[i] < u) {
          i++;
        }
        fs.add(byPopularity.get(i));
      }
      out.add(new Job("job-" + j, List.copyOf(fs)));
    }
    return out;
  }

  /** The trace the jobs' epochs would leave on a node (one read per job, chunk and feature). */
  private static String trace(Dataset ds, List<Job> js) {
    StringBuilder sb = new StringBuilder("time,job,dataset,feature,chunk,bytes\n");
    int t = 0;
    for (Job j : js) {
      for (int c = 0; c < ds.chunks().size(); c++) {
        for (String f : j.features()) {
          int w = ds.feature(f).type().kind().width();
          long bytes = ds.chunks().get(c).rows() * (w > 0 ? w : w == 0 ? 1 : 16);
          sb.append(t++).append(',').append(j.name()).append(',').append(ds.name()).append(',').append(f).append(',')
              .append(c).append(',').append(bytes).append('\n');
        }
      }
    }
    return sb.toString();
  }
}
