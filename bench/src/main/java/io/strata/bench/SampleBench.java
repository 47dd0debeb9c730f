package io.strata.bench;

import static io.strata.bench.BenchPeers.median;
import static io.strata.bench.BenchPeers.f2;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.ops.Processes;
import io.strata.ops.Terminal;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.FeatureType;
import io.strata.sdk.files.SampleIndex;
import io.strata.sdk.format.Columns;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.Json;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.Loader;
import io.strata.sdk.tiering.SegmentRef;
import io.strata.sdk.tiering.SegmentStore;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.Writer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "sample", mixinStandardHelpOptions = true,
    description = "Batches of random samples (seed 000): Strata from segments vs ORC read directly vs numpy.memmap fancy indexing over the same Arrow buffers vs memcpy of the same bytes.")
final class SampleBench implements Callable<Integer> {
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

  @Option(names = "--parquet", description = "A Parquet copy of the dataset as a second HDD-tier peer (made there by pyarrow"
      + " when the directory holds no dataset, as 'bench scan --parquet' makes it).")
  Path parquet;

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
              units[k][1] = (long) b.unitStart(k + 1) - b.unitStart(k);
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
      Writer pyIn = new OutputStreamWriter(py.getOutputStream(), StandardCharsets.UTF_8);
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
      var cursor = ds.table().cursor(features);
      Map<String, List<Double>> perRound = new LinkedHashMap<>();
      for (String p : List.of("memcpy", "strata", "strata2threads", "numpy", "orc")) {
        perRound.put(p, new ArrayList<>());
      }
      String noParquet = parquet == null ? "no --parquet given"
          : Files.exists(parquet.resolve("manifest.json")) ? null : ParquetCopy.unavailable(io.strata.ops.Processes.defaultPython());
      if (parquet != null && noParquet != null) {
        log.printf("no Parquet peer: %s%n", noParquet);
      }
      Dataset pq = noParquet != null ? null : ParquetCopy.open(ds, parquet, io.strata.ops.Processes.defaultPython(), log);
      var pqCursor = pq == null ? null : pq.table().cursor(features);
      if (pq != null) {
        ParquetCopy.checkSame(ds, pq, features);
        perRound.put("parquet", new ArrayList<>());
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
          if (pqCursor != null) {
            t = System.nanoTime();
            for (int i = 0; i < orcN; i++) {
              long[][] units = batches.get((next + i) % batches.size());
              try (Arena a = Arena.ofConfined()) {
                for (long[] u : units) {
                  pqCursor.readRows(u[0], (int) u[1], a);
                }
              }
            }
            record(perRound, "parquet", r, orcN, t);
          }
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
        if (pq != null) {
          pqCursor.close();
          pq.close();
        }
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
      if (bps.containsKey("parquet")) {
        ratios.put("strataVsParquet", bps.get("strata") / bps.get("parquet"));
        ratios.put("parquetVsOrc", bps.get("parquet") / bps.get("orc"));
      } else {
        res.put("parquetSkipped", noParquet);
      }
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
      MemorySegment.copy(c.values(), ValueLayout.JAVA_BYTE, (c.offset() + r[1]) * width, v, 0, width);
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
