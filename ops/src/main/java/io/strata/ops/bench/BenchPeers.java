package io.strata.ops.bench;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.node.policy.LruPolicy;
import io.strata.node.policy.OptPolicy;
import io.strata.node.policy.Simulator;
import io.strata.node.policy.StrataPolicy;
import io.strata.node.policy.Trace;
import io.strata.node.policy.TraceGenerator;
import io.strata.ops.NodeCommand;
import io.strata.ops.Processes;
import io.strata.ops.Terminal;
import io.strata.sdk.Column;
import io.strata.sdk.Columns;
import io.strata.sdk.Dataset;
import io.strata.sdk.FeatureType;
import io.strata.sdk.dataset.SampleIndex;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.Json;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.Loader;
import io.strata.sdk.node.NodeClient;
import io.strata.sdk.tier.SegmentRef;
import io.strata.sdk.tier.SegmentStore;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.Writer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** The side-by-side comparisons of {@code strata bench}: each peer measured in the same run, reported as ratios. */
final class BenchPeers {
  private BenchPeers() {}

  static double median(List<Double> xs) {
    double[] a = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return a.length == 0 ? 0 : a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
  }

  static String f3(double v) {
    return String.format(Locale.ROOT, "%.3f", v);
  }

  static String f2(double v) {
    return String.format(Locale.ROOT, "%.2f", v);
  }

  // ------------------------------------------------------------------------------------------ sample

  @Command(name = "sample", mixinStandardHelpOptions = true,
      description = "Batches of random samples (seed 000): Strata from segments vs ORC read directly vs numpy.memmap fancy indexing over the same Arrow buffers vs memcpy of the same bytes.")
  static final class Sample implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--dataset", required = true, description = "Dataset directory (with samples.idx).")
    Path dataset;

    @Option(names = "--ssd", required = true, description = "SSD tier with every feature promoted.")
    Path ssd;

    @Option(names = "--samples", defaultValue = "512", description = "Samples per batch; default ${DEFAULT-VALUE}.")
    int samples;

    @Option(names = "--rounds", defaultValue = "5", description = "Rounds; each runs every peer once; default ${DEFAULT-VALUE}.")
    int rounds;

    @Option(names = "--batches", defaultValue = "24", description = "Batches per peer per round (ORC: a tenth); default ${DEFAULT-VALUE}.")
    int batchesPerRound;

    @Option(names = "--python", defaultValue = "python3", description = "Python with numpy for the numpy.memmap peer; default ${DEFAULT-VALUE}.")
    String python;

    @Option(names = "--keep-peer-files", hidden = true, description = "Keep the numpy peer's spec and script (to profile it).")
    boolean keep;

    @Option(names = "--json", description = "Print the figures as one JSON object.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter log = spec.commandLine().getErr();
      Path tmp = Files.createTempDirectory("strata-bench-sample");
      List<SegmentStore.Lease> leases = new ArrayList<>();
      Process py = null;
      try (Dataset ds = Dataset.open(dataset); SegmentStore store = SegmentStore.open(ssd, false, SegmentFile.Verify.NEVER);
          Arena arena = Arena.ofShared()) {
        SampleIndex index = ds.sampleIndex().orElseThrow(() -> new IllegalArgumentException(dataset + " has no samples.idx"));
        if (index.size() < samples) {
          throw new IllegalArgumentException(dataset + " has " + index.size() + " samples, fewer than --samples " + samples);
        }
        List<String> features = ds.featureNames();
        int defs = 32;
        List<long[][]> batches = new ArrayList<>();
        long bytes = 0;
        long[] perFeature = new long[features.size()];
        String crcFeature = features.stream().filter(f -> ds.feature(f).type().kind() == FeatureType.Kind.FLOAT64).findFirst()
            .orElse(null);
        long javaCrc = -1;
        try (Loader probe = Loader.builder(ds).features(features).segments(store).sampleBatches(samples).seed(5)
            .dropLast(true).epochs(1_000).prefetch(2, 1).name("bench-probe").build()) {
          for (int i = 0; i < defs; i++) {
            try (Batch b = probe.next()) {
              long[][] units = new long[b.units()][2];
              for (int k = 0; k < b.units(); k++) {
                long ordinal = index.find(b.unitId(k));
                units[k][0] = index.start(ordinal);
                units[k][1] = b.unitStart(k + 1) - b.unitStart(k);
              }
              batches.add(units);
              bytes += b.dataBytes();
              int f = 0;
              for (Column c : b.columns().values()) {
                perFeature[f++] += Columns.dataBytes(c);
              }
              if (i == 0 && crcFeature != null && !b.column(crcFeature).hasNulls()) {
                javaCrc = chunkOrderedCrc(ds, b.column(crcFeature), units);
              }
            }
          }
        }
        long batchBytes = bytes / defs;
        // The numpy peer: the same buffers of the same segment files, located by the Java reader.
        Path specFile = tmp.resolve("spec.json");
        writeNumpySpec(ds, store, features, batches, specFile, leases);
        Path script = tmp.resolve("numpy_peer.py");
        try (InputStream in = BenchPeers.class.getResourceAsStream("numpy_peer.py")) {
          Files.write(script, in.readAllBytes());
        }
        py = new ProcessBuilder(python, script.toString(), specFile.toString()).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader pyOut = new BufferedReader(new InputStreamReader(py.getInputStream(), StandardCharsets.UTF_8));
        Writer pyIn = new java.io.OutputStreamWriter(py.getOutputStream(), StandardCharsets.UTF_8);
        String ready = pyOut.readLine();
        if (!"ready".equals(ready)) {
          throw new IOException("the numpy peer did not start (" + python + " with numpy needed): " + ready);
        }
        boolean crcMatch = true;
        if (javaCrc >= 0) {
          pyIn.write("crc 0 " + crcFeature + "\n");
          pyIn.flush();
          crcMatch = Long.parseLong(pyOut.readLine().strip()) == javaCrc;
          if (!crcMatch) {
            throw new IllegalStateException("the numpy peer gathered other bytes than Strata for " + crcFeature);
          }
        }
        // Peers.
        MemorySegment[] src = new MemorySegment[features.size()];
        MemorySegment[] dst = new MemorySegment[features.size()];
        for (int f = 0; f < features.size(); f++) {
          src[f] = arena.allocate(Math.max(64, perFeature[f] / defs), 64).fill((byte) f);
          dst[f] = arena.allocate(Math.max(64, perFeature[f] / defs), 64).fill((byte) 0);
        }
        Loader one = Loader.builder(ds).features(features).segments(store).sampleBatches(samples).seed(7).dropLast(true)
            .epochs(1_000_000).prefetch(2, 1).name("bench-1").build();
        Loader two = Loader.builder(ds).features(features).segments(store).sampleBatches(samples).seed(9).dropLast(true)
            .epochs(1_000_000).prefetch(4, 2).name("bench-2").build();
        var cursor = ds.orc().cursor(features);
        Map<String, List<Double>> perRound = new LinkedHashMap<>();
        for (String p : List.of("memcpy", "strata", "strata2threads", "numpy", "orc")) {
          perRound.put(p, new ArrayList<>());
        }
        int next = 0;
        try {
          for (int r = -1; r < rounds; r++) { // round -1 warms up every peer
            int n = batchesPerRound;
            // memcpy
            long t = System.nanoTime();
            for (int i = 0; i < n; i++) {
              for (int f = 0; f < src.length; f++) {
                MemorySegment.copy(src[f], 0, dst[f], 0, dst[f].byteSize());
              }
            }
            record(perRound, "memcpy", r, n, t);
            t = System.nanoTime();
            for (int i = 0; i < n; i++) {
              one.next().close();
            }
            record(perRound, "strata", r, n, t);
            t = System.nanoTime();
            for (int i = 0; i < n; i++) {
              two.next().close();
            }
            record(perRound, "strata2threads", r, n, t);
            pyIn.write("run " + next + " " + n + "\n");
            pyIn.flush();
            String[] answer = pyOut.readLine().strip().split(" ");
            if (r >= 0) {
              perRound.get("numpy").add(n / Double.parseDouble(answer[0]));
            }
            int orcN = Math.max(1, n / 10);
            t = System.nanoTime();
            for (int i = 0; i < orcN; i++) {
              long[][] units = batches.get((next + i) % batches.size());
              try (Arena a = Arena.ofConfined()) {
                for (long[] u : units) {
                  cursor.readRows(u[0], (int) u[1], a);
                }
              }
            }
            record(perRound, "orc", r, orcN, t);
            next += n;
            if (r >= 0) {
              log.printf("round %d/%d: %s%n", r + 1, rounds, perRound.entrySet().stream()
                  .map(e -> e.getKey() + " " + f2(e.getValue().getLast()) + " batches/s").toList());
              log.flush();
            }
          }
        } finally {
          one.close();
          two.close();
          cursor.close();
        }
        ObjectNode res = Json.object();
        res.put("benchmark", "sample").put("rows", ds.rows()).put("features", features.size()).put("samples", samples)
            .put("bytesPerBatch", batchBytes).put("rounds", rounds).put("numpyGathersTheSameBytes", crcMatch);
        ObjectNode peers = res.putObject("peers");
        Map<String, Double> bps = new LinkedHashMap<>();
        for (var e : perRound.entrySet()) {
          double m = median(e.getValue());
          bps.put(e.getKey(), m);
          ObjectNode o = peers.putObject(e.getKey());
          o.put("batchesPerSecond", m).put("gbPerSecond", m * batchBytes / 1e9);
          ArrayNode a = o.putArray("rounds");
          e.getValue().forEach(a::add);
        }
        ObjectNode ratios = res.putObject("ratios");
        ratios.put("strataVsMemcpy", bps.get("strata") / bps.get("memcpy"));
        ratios.put("strata2threadsVsMemcpy", bps.get("strata2threads") / bps.get("memcpy"));
        ratios.put("strataVsOrc", bps.get("strata") / bps.get("orc"));
        ratios.put("strataVsNumpy", bps.get("strata") / bps.get("numpy"));
        ratios.put("numpyVsMemcpy", bps.get("numpy") / bps.get("memcpy"));
        if (json) {
          out.println(Json.compact(res));
        } else {
          out.printf("%s rows, %d features, %d samples per batch (%s of column data per batch), median of %d rounds%n",
              Terminal.count(ds.rows()), features.size(), samples, Terminal.bytes(batchBytes), rounds);
          Terminal.Table t = new Terminal.Table("peer", "batches/s", "GB/s", "vs memcpy", "Strata (1 thread) vs peer");
          for (var e : bps.entrySet()) {
            t.row(e.getKey(), f2(e.getValue()), f2(e.getValue() * batchBytes / 1e9), f2(e.getValue() / bps.get("memcpy")),
                f2(bps.get("strata") / e.getValue()) + "x");
          }
          t.print(out);
        }
        return 0;
      } finally {
        if (py != null) {
          py.destroy();
          py.waitFor(10, TimeUnit.SECONDS);
        }
        leases.forEach(SegmentStore.Lease::close);
        if (keep) {
          log.println("peer files kept in " + tmp);
        } else {
          Processes.deleteTree(tmp);
        }
      }
    }

    private static void record(Map<String, List<Double>> perRound, String peer, int round, int n, long t0) {
      if (round >= 0) {
        perRound.get(peer).add(n / ((System.nanoTime() - t0) / 1e9));
      }
    }

    /** CRC-32 of a fixed-width column's values, rows grouped by chunk (ascending), batch order within a chunk: numpy's order. */
    private static long chunkOrderedCrc(Dataset ds, Column c, long[][] units) {
      int width = c.type().kind().width();
      List<long[]> rows = new ArrayList<>(); // {global row, batch row}
      int at = 0;
      for (long[] u : units) {
        for (int i = 0; i < u[1]; i++) {
          rows.add(new long[] {u[0] + i, at++});
        }
      }
      rows.sort((a, b) -> Integer.compare(ds.chunkOf(a[0]), ds.chunkOf(b[0])));
      CRC32 crc = new CRC32();
      byte[] v = new byte[width];
      for (long[] r : rows) {
        MemorySegment.copy(c.values(), java.lang.foreign.ValueLayout.JAVA_BYTE, (c.offset() + r[1]) * width, v, 0, width);
        crc.update(v);
      }
      return crc.getValue();
    }

    private static void writeNumpySpec(Dataset ds, SegmentStore store, List<String> features, List<long[][]> batches, Path file,
        List<SegmentStore.Lease> leases) throws IOException {
      ObjectNode spec = Json.object();
      ArrayNode fs = spec.putArray("features");
      for (String name : features) {
        FeatureType type = ds.feature(name).type();
        ObjectNode f = fs.addObject();
        f.put("name", name).put("kind", type.kind().name().toLowerCase(Locale.ROOT)).put("width", type.kind().width());
        ArrayNode chunks = f.putArray("chunks");
        for (int c = 0; c < ds.chunks().size(); c++) {
          SegmentRef ref = store.find(ds.name(), ds.version(), name, c)
              .orElseThrow(() -> new IllegalArgumentException("feature " + name + " is not promoted in " + store.root()));
          SegmentStore.Lease lease = store.map(ref);
          leases.add(lease);
          SegmentFile sf = lease.file();
          Column col = lease.column(name);
          ObjectNode o = chunks.addObject();
          o.put("first", ds.chunks().get(c).firstRow()).put("file", ref.path().toString());
          o.set("validity", buffer(sf, col.hasNulls() ? col.validity() : MemorySegment.NULL));
          if (type.isFixedWidth()) {
            o.set("values", buffer(sf, col.values()));
          } else if (type.isVariableWidth()) {
            o.set("offsets", buffer(sf, col.offsets()));
            o.set("data", buffer(sf, col.values()));
          } else {
            o.set("offsets", buffer(sf, col.offsets()));
            o.set("data", buffer(sf, col.child().values()));
            f.put("childWidth", col.child().type().kind().width());
          }
        }
      }
      ArrayNode bs = spec.putArray("batches");
      for (long[][] b : batches) {
        ArrayNode a = bs.addArray();
        for (long[] u : b) {
          a.addArray().add(u[0]).add(u[1]);
        }
      }
      Files.writeString(file, Json.compact(spec));
    }

    private static ArrayNode buffer(SegmentFile f, MemorySegment b) {
      ArrayNode a = Json.array();
      if (b == null || b.byteSize() == 0) {
        return a.add(0).add(0);
      }
      return a.add(f.fileOffset(b)).add(b.byteSize());
    }
  }

  // ------------------------------------------------------------------------------------------ scan

  @Command(name = "scan", mixinStandardHelpOptions = true,
      description = "An epoch scan of 30%% of the features: Strata from segments vs ORC with projection vs ORC without projection.")
  static final class Scan implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--dataset", required = true, description = "Dataset directory.")
    Path dataset;

    @Option(names = "--ssd", required = true, description = "SSD tier with the features promoted.")
    Path ssd;

    @Option(names = "--share", defaultValue = "0.3", description = "Share of the features scanned; default ${DEFAULT-VALUE}.")
    double share;

    @Option(names = "--rounds", defaultValue = "3", description = "Rounds; default ${DEFAULT-VALUE}.")
    int rounds;

    @Option(names = "--json", description = "Print the figures as one JSON object.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter log = spec.commandLine().getErr();
      try (Dataset ds = Dataset.open(dataset); SegmentStore store = SegmentStore.open(ssd, false, SegmentFile.Verify.NEVER)) {
        List<String> all = ds.featureNames();
        int n = Math.max(1, (int) Math.round(all.size() * share));
        List<String> picked = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          picked.add(all.get((int) ((i + 0.5) * all.size() / n)));
        }
        Map<String, List<Double>> secs = new LinkedHashMap<>();
        for (String p : List.of("strata", "orcProjection", "orcNoProjection")) {
          secs.put(p, new ArrayList<>());
        }
        long scanBytes = 0;
        for (int r = 0; r < rounds; r++) {
          long t = System.nanoTime();
          long b = 0;
          try (Loader l = Loader.builder(ds).features(picked).segments(store).rowBatches(65_536, false).shuffle(false).epochs(1)
              .prefetch(2, 1).name("bench-scan").build()) {
            for (Batch batch : l) {
              b += batch.dataBytes();
              batch.close();
            }
          }
          secs.get("strata").add((System.nanoTime() - t) / 1e9);
          scanBytes = b;
          t = System.nanoTime();
          for (int c = 0; c < ds.chunks().size(); c++) {
            try (Arena a = Arena.ofConfined()) {
              ds.orc().readChunk(c, picked, a);
            }
          }
          secs.get("orcProjection").add((System.nanoTime() - t) / 1e9);
          t = System.nanoTime();
          for (int c = 0; c < ds.chunks().size(); c++) {
            try (Arena a = Arena.ofConfined()) {
              ds.orc().readChunk(c, all, a);
            }
          }
          secs.get("orcNoProjection").add((System.nanoTime() - t) / 1e9);
          log.printf("round %d/%d: %s%n", r + 1, rounds, secs.entrySet().stream()
              .map(e -> e.getKey() + " " + f2(e.getValue().getLast()) + " s").toList());
          log.flush();
        }
        ObjectNode res = Json.object();
        res.put("benchmark", "scan").put("rows", ds.rows()).put("featuresScanned", picked.size()).put("featuresTotal", all.size())
            .put("scanBytes", scanBytes).set("features", Json.MAPPER.valueToTree(picked));
        ObjectNode peers = res.putObject("peers");
        Map<String, Double> med = new LinkedHashMap<>();
        for (var e : secs.entrySet()) {
          med.put(e.getKey(), median(e.getValue()));
          ObjectNode o = peers.putObject(e.getKey());
          o.put("seconds", med.get(e.getKey())).put("rowsPerSecond", ds.rows() / med.get(e.getKey()));
          e.getValue().forEach(o.putArray("rounds")::add);
        }
        res.putObject("ratios").put("strataVsOrcProjection", med.get("orcProjection") / med.get("strata"))
            .put("strataVsOrcNoProjection", med.get("orcNoProjection") / med.get("strata"))
            .put("projectionGain", med.get("orcNoProjection") / med.get("orcProjection"));
        if (json) {
          out.println(Json.compact(res));
        } else {
          out.printf("epoch scan of %d of %d features %s over %s rows (%s of column data), median of %d rounds%n", picked.size(),
              all.size(), picked, Terminal.count(ds.rows()), Terminal.bytes(scanBytes), rounds);
          Terminal.Table t = new Terminal.Table("peer", "seconds", "M rows/s", "Strata faster by");
          for (var e : med.entrySet()) {
            t.row(e.getKey(), f2(e.getValue()), f2(ds.rows() / e.getValue() / 1e6), f2(e.getValue() / med.get("strata")) + "x");
          }
          t.print(out);
        }
        return 0;
      }
    }
  }

  // ------------------------------------------------------------------------------------------ policy

  @Command(name = "policy", mixinStandardHelpOptions = true,
      description = "The cache policy on generated multi-job traces at several SSD budgets: Strata (plans declared, and online only) "
          + "vs LRU, Caffeine W-TinyLFU, a frequency cache and OPT; replay speed on a 1 M-event trace.")
  static final class Policy implements Callable<Integer> {
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
      Terminal.Table t = new Terminal.Table("SSD budget", "Strata", "Strata online", "LRU", "Caffeine", "frequency", "OPT", "Strata/OPT",
          "Strata/LRU", "online/LRU");
      for (double b : budgets) {
        double[][] r = new double[7][traces.size()];
        for (int i = 0; i < traces.size(); i++) {
          Trace tr = traces.get(i);
          Trace bare = tr.withoutPlans();
          long budget = (long) (tr.distinctBytes() * b / 100);
          r[0][i] = Simulator.run(tr, new StrataPolicy(budget, 0)).byteHitRatio();
          r[1][i] = Simulator.run(bare, new StrataPolicy(budget, 0)).byteHitRatio();
          r[2][i] = Simulator.run(tr, new LruPolicy(budget)).byteHitRatio();
          r[3][i] = Simulator.run(tr, new io.strata.node.policy.CaffeinePolicy(budget)).byteHitRatio();
          r[4][i] = Simulator.run(tr, new io.strata.node.policy.FrequencyPolicy(budget)).byteHitRatio();
          r[5][i] = Simulator.run(tr, new OptPolicy(tr, budget)).byteHitRatio();
        }
        double[] m = new double[6];
        for (int k = 0; k < 6; k++) {
          m[k] = Arrays.stream(r[k]).average().orElse(0);
        }
        ObjectNode run = runs.addObject();
        run.put("ssdBudgetPercent", b).put("strata", m[0]).put("strataOnline", m[1]).put("lru", m[2]).put("caffeine", m[3])
            .put("frequency", m[4]).put("opt", m[5]).put("strataVsOpt", m[0] / m[5]).put("strataVsLru", m[0] / Math.max(1e-12, m[2]))
            .put("onlineVsLru", m[1] / Math.max(1e-12, m[2]));
        t.row(f2(b) + " %", Terminal.percent(m[0]), Terminal.percent(m[1]), Terminal.percent(m[2]), Terminal.percent(m[3]),
            Terminal.percent(m[4]), Terminal.percent(m[5]), f2(m[0] / m[5]),
            f2(m[0] / Math.max(1e-12, m[2])) + "x", f2(m[1] / Math.max(1e-12, m[2])) + "x");
      }
      if (speedJobs > 0) {
        // Replay speed: one warm-up replay, then the best of three of each policy.
        Trace big = TraceGenerator.generate(new TraceGenerator.Spec(4, 60, 48, speedJobs, 1.1, 60, 7));
        long budget = big.distinctBytes() / 10;
        ObjectNode speed = res.putObject("eventsPerSecond");
        speed.put("traceReads", big.size());
        List<Map.Entry<String, java.util.function.Supplier<io.strata.node.policy.CachePolicy>>> ps = List.of(
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

  // ------------------------------------------------------------------------------------------ api

  @Command(name = "api", mixinStandardHelpOptions = true,
      description = "The node API on loopback: requests/s and latency of resolve under concurrent clients, beside /health (the HTTP floor).")
  static final class Api implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--clients", split = ",", defaultValue = "1,8,32,128", description = "Concurrent clients; default ${DEFAULT-VALUE}.")
    List<Integer> clients;

    @Option(names = "--seconds", defaultValue = "5", description = "Seconds per measurement; default ${DEFAULT-VALUE}.")
    double seconds;

    @Option(names = "--json", description = "Print the figures as one JSON object.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter log = spec.commandLine().getErr();
      Path dir = Files.createTempDirectory("strata-bench-api");
      Process node = null;
      try {
        Path ds = dir.resolve("hdd/events");
        io.strata.sdk.dataset.DatasetGenerator.generate(ds, io.strata.sdk.dataset.DatasetGenerator.Options.of("events", 400_000, 1)
            .withChunking(25_000, 4), io.strata.sdk.Progress.NONE);
        NodeCommand.Child child = NodeCommand.startChild(List.of("-Xmx512m"), dir.resolve("node"),
            List.of("--port", "0", "--hdd-root", dir.resolve("hdd").toString()), dir.resolve("node.log"));
        node = child.process();
        String url = child.url();
        NodeClient client = new NodeClient(url, null);
        client.registerDataset(ds);
        client.promote("events", List.of("amount", "score"), null);
        String body = Json.compact(Json.object().put("job", "bench").put("dataset", "events")
            .<ObjectNode>set("features", Json.MAPPER.valueToTree(List.of("amount", "score", "merchant_category")))
            .set("chunks", Json.MAPPER.valueToTree(List.of(0, 1, 2, 3, 4, 5, 6, 7))));
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        HttpRequest resolve = HttpRequest.newBuilder(URI.create(url + "/v1/resolve")).header("content-type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        HttpRequest health = HttpRequest.newBuilder(URI.create(url + "/health")).GET().build();
        measure(http, resolve, 4, 1.0);
        measure(http, health, 4, 1.0);
        ObjectNode res = Json.object();
        res.put("benchmark", "api").put("secondsPerPoint", seconds);
        ArrayNode points = res.putArray("points");
        Terminal.Table t = new Terminal.Table("clients", "resolve req/s", "p50 ms", "p99 ms", "/health req/s", "p99 ms",
            "resolve/health");
        for (int c : clients) {
          double[] r = measure(http, resolve, c, seconds);
          double[] h = measure(http, health, c, seconds);
          points.addObject().put("clients", c).put("resolveRps", r[0]).put("resolveP50Ms", r[1]).put("resolveP99Ms", r[2])
              .put("healthRps", h[0]).put("healthP50Ms", h[1]).put("healthP99Ms", h[2]).put("resolveVsHealth", r[0] / h[0]);
          t.row(c, String.format(Locale.ROOT, "%.0f", r[0]), f2(r[1]), f2(r[2]), String.format(Locale.ROOT, "%.0f", h[0]), f2(h[2]),
              f2(r[0] / h[0]));
          log.printf("%d clients: resolve %.0f req/s p99 %.2f ms; health %.0f req/s%n", c, r[0], r[2], h[0]);
          log.flush();
        }
        if (json) {
          out.println(Json.compact(res));
        } else {
          out.printf("node %s on loopback (a separate process); Java HttpClient load from this process%n", url);
          t.print(out);
        }
        return 0;
      } finally {
        if (node != null) {
          node.destroy();
          node.waitFor(20, TimeUnit.SECONDS);
        }
        Processes.deleteTree(dir);
      }
    }

    /** {requests/s, p50 ms, p99 ms} of {@code clients} closed-loop clients for {@code seconds}. */
    private static double[] measure(HttpClient http, HttpRequest req, int clients, double seconds) throws Exception {
      long end = System.nanoTime() + (long) (seconds * 1e9);
      List<long[]> lat = new ArrayList<>();
      CountDownLatch done = new CountDownLatch(clients);
      long[] errors = new long[1];
      long t0 = System.nanoTime();
      for (int i = 0; i < clients; i++) {
        long[] mine = new long[1 << 20];
        lat.add(mine);
        Thread.ofVirtual().start(() -> {
          int n = 1;
          try {
            while (System.nanoTime() < end && n < mine.length) {
              long t = System.nanoTime();
              HttpResponse<Void> r = http.send(req, HttpResponse.BodyHandlers.discarding());
              if (r.statusCode() != 200) {
                synchronized (errors) {
                  errors[0]++;
                }
              }
              mine[n++] = System.nanoTime() - t;
            }
          } catch (Exception e) {
            synchronized (errors) {
              errors[0]++;
            }
          } finally {
            mine[0] = n - 1;
            done.countDown();
          }
        });
      }
      done.await();
      double elapsed = (System.nanoTime() - t0) / 1e9;
      if (errors[0] > 0) {
        throw new IOException(errors[0] + " requests failed during the API benchmark");
      }
      int total = lat.stream().mapToInt(a -> (int) a[0]).sum();
      long[] all = new long[total];
      int k = 0;
      for (long[] a : lat) {
        System.arraycopy(a, 1, all, k, (int) a[0]);
        k += (int) a[0];
      }
      Arrays.sort(all);
      return new double[] {total / elapsed, all[total / 2] / 1e6, all[(int) Math.min(total - 1, total * 0.99)] / 1e6};
    }
  }

  // ------------------------------------------------------------------------------------------ gpu

  @Command(name = "gpu", mixinStandardHelpOptions = true,
      description = "Host-to-device GB/s of batches shipped through pinned memory, where a CUDA GPU is available.")
  static final class Gpu implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--dataset", description = "Dataset directory (needed when a GPU is there).")
    Path dataset;

    @Option(names = "--ssd", description = "SSD tier with the features promoted.")
    Path ssd;

    @Option(names = "--batches", defaultValue = "200", description = "Batches shipped; default ${DEFAULT-VALUE}.")
    int batches;

    @Option(names = "--threads", description = "Assembly and memcpy threads of the N-thread figures; default: the cores.")
    Integer threads;

    @Option(names = "--seconds", defaultValue = "3", description = "Seconds per CPU measurement; default ${DEFAULT-VALUE}.")
    double seconds;

    @Option(names = "--json", description = "Print the figures as one JSON object.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      ObjectNode res = Json.object().put("benchmark", "gpu");
      if (dataset != null) {
        ObjectNode cpu = cpuPart();
        res.set("cpu", cpu);
        res.putObject("ratios").put("assemblyVsMemcpy1", cpu.path("assembly1GBps").asDouble() / cpu.path("memcpy1GBps").asDouble())
            .put("assemblyVsMemcpyN", cpu.path("assemblyNGBps").asDouble() / cpu.path("memcpyNGBps").asDouble());
        // Every byte delivered is copied once from a mapped segment into the batch's memory; on the
        // GPU path GpuShipper copies it a second time into its pinned staging slot.
        res.put("copiesPerByte", io.strata.gpu.GpuShipper.available() ? 2.0 : 1.0);
        if (!json) {
          out.printf("CPU: assembly %.2f GB/s on 1 thread (%.0f %% of memcpy's %.2f GB/s), %.2f GB/s on %d threads (%.0f %% of"
                  + " memcpy's %.2f GB/s; %.2f GB/s with each batch split across them); %.1f copies per byte delivered%n",
              cpu.path("assembly1GBps").asDouble(), 100 * res.path("ratios").path("assemblyVsMemcpy1").asDouble(),
              cpu.path("memcpy1GBps").asDouble(), cpu.path("assemblyNGBps").asDouble(), cpu.path("threads").asInt(),
              100 * res.path("ratios").path("assemblyVsMemcpyN").asDouble(), cpu.path("memcpyNGBps").asDouble(),
              cpu.path("assemblySplitNGBps").asDouble(), res.path("copiesPerByte").asDouble());
        }
      }
      if (!io.strata.gpu.GpuShipper.available()) {
        res.put("available", false).put("reason", io.strata.gpu.GpuShipper.unavailableReason());
        if (json) {
          out.println(Json.compact(res));
        } else {
          out.println("no GPU: " + io.strata.gpu.GpuShipper.unavailableReason() + " (nothing shipped)");
        }
        return 0;
      }
      if (dataset == null) {
        throw new IllegalArgumentException("--dataset is required when a GPU is available");
      }
      try (Dataset ds = Dataset.open(dataset);
          SegmentStore store = ssd == null ? null : SegmentStore.open(ssd, false, SegmentFile.Verify.NEVER);
          Loader l = Loader.builder(ds).features(ds.featureNames()).segments(store).sampleBatches(512).epochs(1000)
              .prefetch(4, 2).name("bench-gpu").build()) {
        io.strata.gpu.GpuShipper shipper = null;
        long bytes = 0;
        long shipNanos = 0;
        long waitNanos = 0;
        long t0 = System.nanoTime();
        try {
          for (int i = 0; i < batches; i++) {
            long w = System.nanoTime();
            Batch b = l.next();
            waitNanos += System.nanoTime() - w;
            try (b) {
              if (shipper == null) {
                shipper = io.strata.gpu.GpuShipper.open(0, Math.max(64L << 20, 2 * b.dataBytes()));
              }
              long t = System.nanoTime();
              var d = shipper.ship(b);
              d.await();
              shipNanos += System.nanoTime() - t;
              bytes += d.bytes();
            }
          }
        } finally {
          if (shipper != null) {
            shipper.close();
          }
        }
        double total = (System.nanoTime() - t0) / 1e9;
        res.put("available", true).put("batches", batches).put("bytes", bytes).put("h2dGBps", bytes / 1e9 / (shipNanos / 1e9))
            .put("loaderWaitFraction", waitNanos / 1e9 / total).put("seconds", total);
        if (json) {
          out.println(Json.compact(res));
        } else {
          out.printf("shipped %d batches (%s) at %.2f GB/s host-to-device; waiting on the loader %.1f%% of the time%n", batches,
              Terminal.bytes(bytes), bytes / 1e9 / (shipNanos / 1e9), 100 * waitNanos / 1e9 / total);
        }
        return 0;
      }
    }

    /**
     * The CPU side of feeding a GPU, measured on any host: sample batches (512 samples, every
     * feature, from the SSD tier) assembled on 1 and on N threads (N batches at once: the
     * loader's prefetch workers; and one batch at a time split across N threads), next to memcpy of batch-sized off-heap buffers on 1 and N
     * threads (each thread its own buffers, larger than the caches), in GB/s of batch data.
     */
    private ObjectNode cpuPart() throws Exception {
      int n = threads != null ? threads : Runtime.getRuntime().availableProcessors();
      if (n < 1) {
        throw new IllegalArgumentException("--threads must be at least 1");
      }
      ObjectNode cpu = Json.object().put("threads", n).put("secondsPerMeasurement", seconds);
      try (Dataset ds = Dataset.open(dataset);
          SegmentStore store = ssd == null ? null : SegmentStore.open(ssd, false, SegmentFile.Verify.NEVER)) {
        long[] batchBytes = new long[1];
        cpu.put("assembly1GBps", assemble(ds, store, 1, 1, batchBytes));
        cpu.put("assemblyNGBps", assemble(ds, store, n, 1, batchBytes));
        cpu.put("assemblySplitNGBps", assemble(ds, store, 1, n, batchBytes));
        cpu.put("batchBytes", batchBytes[0]);
        long size = Math.max(1 << 20, batchBytes[0]);
        cpu.put("memcpy1GBps", memcpy(size, 1));
        cpu.put("memcpyNGBps", memcpy(size, n));
      }
      return cpu;
    }

    /**
     * GB/s of batch data assembled by one loader on {@code workers} threads (a batch each), each
     * batch split across {@code split} threads, after a warm-up.
     */
    private double assemble(Dataset ds, SegmentStore store, int workers, int split, long[] batchBytes) throws IOException {
      try (Loader l = Loader.builder(ds).features(ds.featureNames()).segments(store).sampleBatches(512).epochs(1000)
          .prefetch(2 * workers, workers).assemblyThreads(split).name("bench-gpu-cpu").build()) {
        long bytes = 0;
        int count = 0;
        long t0 = 0;
        long end = Long.MAX_VALUE;
        for (int i = 0; ; i++) {
          Batch b = l.next();
          if (b == null) {
            break;
          }
          try (b) {
            if (i == 2 * workers) {
              t0 = System.nanoTime();
              end = t0 + (long) (seconds * 1e9);
            } else if (i > 2 * workers) {
              bytes += b.dataBytes();
              count++;
            }
          }
          if (System.nanoTime() > end) {
            break;
          }
        }
        batchBytes[0] = count == 0 ? 0 : bytes / count;
        return bytes / 1e9 / ((System.nanoTime() - t0) / 1e9);
      }
    }

    /** GB/s of {@code size}-byte off-heap copies on {@code n} threads, each with its own source and target. */
    private double memcpy(long size, int n) throws Exception {
      java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(n,
          r -> Thread.ofPlatform().name("bench-memcpy").daemon(true).unstarted(r));
      try {
        java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(n);
        List<java.util.concurrent.Future<Long>> done = new ArrayList<>();
        long[] window = new long[2];
        for (int t = 0; t < n; t++) {
          done.add(pool.submit(() -> {
            try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
              java.lang.foreign.MemorySegment from = arena.allocate(size, 64);
              java.lang.foreign.MemorySegment to = arena.allocate(size, 64);
              from.fill((byte) 7);
              java.lang.foreign.MemorySegment.copy(from, 0, to, 0, size); // touch both
              start.await();
              long t0 = System.nanoTime();
              long end = t0 + (long) (seconds * 1e9);
              long copied = 0;
              while (System.nanoTime() < end) {
                java.lang.foreign.MemorySegment.copy(from, 0, to, 0, size);
                copied += size;
              }
              synchronized (window) {
                window[0] = window[0] == 0 ? t0 : Math.min(window[0], t0);
                window[1] = Math.max(window[1], System.nanoTime());
              }
              return copied;
            }
          }));
        }
        long copied = 0;
        for (var f : done) {
          copied += f.get();
        }
        return copied / 1e9 / ((window[1] - window[0]) / 1e9);
      } finally {
        pool.shutdownNow();
      }
    }
  }
}
