package io.strata.bench;

import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.files.HddTable;
import io.strata.sdk.format.Columns;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.Loader;
import io.strata.sdk.tiering.SegmentStore;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Seed 000's workload: batches of 512 random samples (about 400 rows each, 10 mixed features).
 * Three peers read the same batches in the same run:
 *
 * <ul>
 *   <li>{@code strataSegments}: the Strata loader (one assembly thread) from memory-mapped
 *       segments; {@code strataSegmentsTwoThreads} with two assembly threads;
 *   <li>{@code orcDirect}: the same samples read from ORC with projection, a seek and a decode per
 *       sample (orc-core's {@code seekToRow} through a kept-open reader);
 *   <li>{@code memcpy}: copying the same number of bytes, one native-to-native copy per feature
 *       (the ceiling);
 *   <li>{@code memcpyGather}: copying exactly the same source bytes, range by range out of the
 *       mapped segments, with no column bookkeeping (the floor of any gather from these files).
 * </ul>
 *
 * <p>Each operation is one batch; the average bytes per batch are written to
 * {@code $STRATA_BENCH_DATA/sample-batch-bytes} so that GB/s can be computed.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow", "-Xmx2g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class SampleBatchBenchmark {
  @Param({"4000000"})
  public long rows;

  @Param({"512"})
  public int samples;

  private Dataset dataset;
  private SegmentStore store;
  private Loader loader;
  private Loader loader2;
  private List<long[][]> batches;
  private long batchBytes;
  private int nextOrc;
  private HddTable.Cursor cursor;
  private Arena arena;
  private MemorySegment[] memSrc;
  private MemorySegment[] memDst;
  private Column[][] gatherSources;
  private MemorySegment[] gatherDst;
  private final List<SegmentStore.Lease> leases = new ArrayList<>();
  private int nextGather;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    Path dir = BenchData.events(rows, 10, 400);
    dataset = Dataset.open(dir.resolve("hdd"));
    store = SegmentStore.open(dir.resolve("ssd"), false, SegmentFile.Verify.NEVER);
    // The batches the loader will produce, so that the ORC and memcpy peers read the same rows.
    batches = new ArrayList<>();
    long bytes = 0;
    long[] perFeature = new long[dataset.featureNames().size()];
    try (Loader probe = newLoader(1)) {
      for (int i = 0; i < 8; i++) {
        try (Batch b = probe.next()) {
          long[][] units = new long[b.units()][2];
          for (int k = 0; k < b.units(); k++) {
            long ordinal = dataset.sampleIndex().orElseThrow().find(b.unitId(k));
            units[k][0] = dataset.sampleIndex().orElseThrow().start(ordinal);
            units[k][1] = (long) b.unitStart(k + 1) - b.unitStart(k);
          }
          batches.add(units);
          bytes += b.dataBytes();
          int f = 0;
          for (Column c : b.columns().values()) {
            perFeature[f++] += Columns.dataBytes(c);
          }
        }
      }
    }
    batchBytes = bytes / batches.size();
    loader = newLoader(1_000_000);
    loader2 = Loader.builder(dataset).features(dataset.featureNames()).segments(store).sampleBatches(samples).seed(5)
        .dropLast(true).epochs(1_000_000).prefetch(4, 2).name("bench2").build();
    cursor = dataset.table().cursor(dataset.featureNames());
    arena = Arena.ofShared();
    memSrc = new MemorySegment[perFeature.length];
    memDst = new MemorySegment[perFeature.length];
    for (int f = 0; f < perFeature.length; f++) {
      long n = perFeature[f] / batches.size();
      memSrc[f] = arena.allocate(n, 64).fill((byte) f);
      memDst[f] = arena.allocate(n, 64).fill((byte) 0);
    }
    List<String> names = dataset.featureNames();
    gatherSources = new Column[names.size()][dataset.chunks().size()];
    gatherDst = new MemorySegment[names.size()];
    for (int f = 0; f < names.size(); f++) {
      for (int c = 0; c < dataset.chunks().size(); c++) {
        var ref = store.find(dataset.name(), dataset.version(), names.get(f), c).orElseThrow();
        SegmentStore.Lease lease = store.map(ref);
        leases.add(lease);
        gatherSources[f][c] = lease.column(names.get(f));
      }
      gatherDst[f] = arena.allocate(2 * perFeature[f] / batches.size() + (1 << 20), 64).fill((byte) 0);
    }
    System.out.printf("%nbatch: %d samples, %.1f MB of column data on average%n", samples, batchBytes / 1e6);
    Files.writeString(BenchData.root().resolve("sample-batch-bytes"), Long.toString(batchBytes));
  }

  private Loader newLoader(int epochs) throws IOException {
    return Loader.builder(dataset).features(dataset.featureNames()).segments(store).sampleBatches(samples).seed(5)
        .dropLast(true).epochs(epochs).prefetch(2, 1).name("bench").build();
  }

  @Benchmark
  public void strataSegments(Blackhole bh) throws IOException {
    try (Batch b = loader.next()) {
      bh.consume(b.column("amount").values().address());
    }
  }

  /** The loader as a job on this 2-core machine runs it: two assembly threads. */
  @Benchmark
  public void strataSegmentsTwoThreads(Blackhole bh) throws IOException {
    try (Batch b = loader2.next()) {
      bh.consume(b.column("amount").values().address());
    }
  }

  @Benchmark
  public void orcDirect(Blackhole bh) throws IOException {
    long[][] units = batches.get(nextOrc++ % batches.size());
    try (Arena batchArena = Arena.ofConfined()) {
      for (long[] u : units) {
        bh.consume(cursor.readRows(u[0], (int) u[1], batchArena));
      }
    }
  }

  @Benchmark
  public void memcpy(Blackhole bh) {
    for (int f = 0; f < memSrc.length; f++) {
      MemorySegment.copy(memSrc[f], 0, memDst[f], 0, memDst[f].byteSize());
    }
    bh.consume(memDst[0].address());
  }

  @Benchmark
  public void memcpyGather(Blackhole bh) throws IOException {
    long[][] units = batches.get(nextGather++ % batches.size());
    for (int f = 0; f < gatherSources.length; f++) {
      long at = 0;
      MemorySegment dst = gatherDst[f];
      for (long[] u : units) {
        for (MemorySegment[] part : gatherRanges(f, u[0], (int) u[1])) {
          for (MemorySegment src : part) {
            MemorySegment.copy(src, 0, dst, at, src.byteSize());
            at += src.byteSize();
          }
        }
      }
    }
    bh.consume(gatherDst[0].address());
  }

  /** The raw source ranges of feature {@code f} for rows {@code [row, row + n)}: values (and data or child values). */
  private List<MemorySegment[]> gatherRanges(int f, long row, int n) {
    List<MemorySegment[]> out = new ArrayList<>(2);
    long end = row + n;
    while (row < end) {
      int chunk = dataset.chunkOf(row);
      long first = dataset.chunks().get(chunk).firstRow();
      int local = (int) (row - first);
      int take = (int) Math.min(end - row, dataset.chunks().get(chunk).endRow() - row);
      Column c = gatherSources[f][chunk];
      int width = c.type().kind().width();
      if (width > 0) {
        out.add(new MemorySegment[] {c.values().asSlice((long) local * width, (long) take * width)});
      } else if (width == 0) {
        out.add(new MemorySegment[] {c.values().asSlice(local / 8, (take + 7) / 8)});
      } else {
        MemorySegment offs = c.offsets().asSlice(4L * local, 4L * (take + 1));
        int s = c.start(local);
        int e = c.end(local + take - 1);
        MemorySegment data;
        if (c.type().isVariableWidth()) {
          data = c.values().asSlice(s, e - s);
        } else {
          int w = Math.max(1, c.child().type().kind().width());
          data = c.child().values().asSlice((long) s * w, (long) (e - s) * w);
        }
        out.add(new MemorySegment[] {offs, data});
      }
      row += take;
    }
    return out;
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    loader.close();
    loader2.close();
    cursor.close();
    leases.forEach(SegmentStore.Lease::close);
    store.close();
    dataset.close();
    arena.close();
  }
}
