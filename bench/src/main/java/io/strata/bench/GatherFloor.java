package io.strata.bench;

import io.strata.sdk.SegmentLease;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.format.GatherOrder;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.Chunks;
import io.strata.sdk.internal.Json;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.Loader;
import io.strata.sdk.tiering.SegmentStore;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;

/**
 * The gather floor {@code bench peers} judges the Java loader's assembly against (issue 33): the
 * same rows of the same segments, copied by the tightest loop in orders given beforehand, beside
 * the loader's own assembly of them, on one and N threads. See {@link #measure}.
 */
final class GatherFloor {
  private final boolean quick;
  private final double seconds;
  private final int threads;

  GatherFloor(boolean quick, double seconds, int threads) {
    this.quick = quick;
    this.seconds = seconds;
    this.threads = threads;
  }

  /**
   * The gather floor of shuffled single rows: the same rows of the same segments the loader
   * gathers (its first batches' rows), values and, for a column with nulls, validity bits, copied
   * by the tightest loops found, the best of three: a pass a feature (one source segment per
   * loop, one {@code get}/{@code set} a row) in either of two orders given beforehand, grouped by
   * chunk in batch order or the loader's own gather order ({@link GatherOrder}, grouped by
   * region), and every feature in one pass in the region order ({@link #fused}, where the
   * features have the widths it is written for); on one thread and on {@code threads} threads
   * each doing whole batches. Beside it the loader's own assembly of those batches in this
   * process (computing its order, the permutation and the grouping, itself — on its planning
   * thread where a core is spare, {@code PlanAhead}, so the process CPU time a batch of each side is
   * reported too; since 2026-11-26 its gather a pass for every feature too, {@code FusedGather}),
   * on one and on {@code threads} prefetch threads, batches closed as they come
   * (no consumer cost). The machine is shared and its speed drifts: after a warm-up of each (not
   * timed), floor and loader are timed in short slices side by side, 15 pairs of them (3 with
   * --quick); the ratios are the medians of the pairs' ratios, each figure the median of its slices.
   */
  ObjectNode measure(Path ds, Path ssd) throws Exception {
    int batchRows = 16384;
    int batches = quick ? 8 : 64;
    try (Dataset d = Dataset.open(ds); SegmentStore store = SegmentStore.open(ssd, false, SegmentFile.Verify.FIRST_OPEN);
        Arena arena = Arena.ofShared()) {
      // The rows of the loader's first batches.
      long[][] rows = new long[batches][];
      try (Loader l = Loader.builder(d).features(PeersBench.ROW_FEATURES).segments(store).rowBatches(batchRows, true).seed(1).epochs(1000)
          .build()) {
        var it = l.iterator();
        for (int b = 0; b < batches; b++) {
          try (Batch batch = it.next()) {
            rows[b] = new long[batch.units()];
            for (int k = 0; k < batch.units(); k++) {
              rows[b][k] = batch.unitId(k);
            }
          }
        }
      }
      long[] chunkFirst = d.chunks().stream().mapToLong(ChunkInfo::firstRow).toArray();
      // Each feature's values in each chunk's segment, mapped once.
      List<SegmentLease> leases = new ArrayList<>();
      MemorySegment[][] src = new MemorySegment[PeersBench.ROW_FEATURES.size()][d.chunks().size()];
      // A column's validity bitmap where it has nulls (the gather copies those bits too), else null.
      MemorySegment[][] valid = new MemorySegment[PeersBench.ROW_FEATURES.size()][d.chunks().size()];
      long[][] validBase = new long[PeersBench.ROW_FEATURES.size()][d.chunks().size()];
      int[] width = new int[PeersBench.ROW_FEATURES.size()];
      try {
        for (int f = 0; f < PeersBench.ROW_FEATURES.size(); f++) {
          for (int c = 0; c < d.chunks().size(); c++) {
            SegmentLease lease = store.lease(d, PeersBench.ROW_FEATURES.get(f), c);
            if (lease == null) {
              throw new IOException(PeersBench.ROW_FEATURES.get(f) + " chunk " + c + " is not on the SSD tier");
            }
            leases.add(lease);
            Column col = lease.column(PeersBench.ROW_FEATURES.get(f));
            width[f] = col.type().kind().width();
            src[f][c] = col.values().asSlice((long) col.offset() * width[f]);
            if (col.validity() != MemorySegment.NULL && col.nullCount() > 0) {
              valid[f][c] = col.validity();
              validBase[f][c] = col.offset();
            }
          }
        }
        // The two orders, as runs of one chunk: (chunk, rows within it, batch positions).
        FloorOrder[] byChunk = new FloorOrder[batches];
        FloorOrder[] byRegion = new FloorOrder[batches];
        for (int b = 0; b < batches; b++) {
          byChunk[b] = FloorOrder.byChunk(rows[b], chunkFirst);
          byRegion[b] = FloorOrder.of(new GatherOrder().compute(rows[b], rows[b].length, chunkFirst, d.rows()));
        }
        // The loader's own assembly: one loader a thread count, open throughout, so that its slices
        // can be interleaved with the floor's (see LoaderSlices).
        try (LoaderSlices one = new LoaderSlices(d, store, batchRows, 1);
            LoaderSlices many = new LoaderSlices(d, store, batchRows, threads)) {
          // Warm-up, not timed: the JIT compiles each loop first (on a small machine its compiler
          // threads compete with the gathers, and a short first slice would time the interpreter).
          double warm = quick ? 0.2 : 1.5;
          floorRate(src, valid, validBase, width, byChunk, 1, arena, warm / 3);
          floorRate(src, valid, validBase, width, byRegion, 1, arena, warm / 3);
          // The fused loop where this feature set has the widths it is written for (else left out).
          boolean fusable = Arrays.equals(width, FUSED_WIDTHS);
          if (fusable) {
            floorRate(src, valid, validBase, width, byRegion, 1, arena, warm / 3, true);
          }
          many.rate(warm);
          one.rate(warm / 3);
          // The machine's speed drifts by up to 2x within a minute (other tenants): floor and loader
          // are timed in short slices, side by side, many times over; each pair's ratio compares
          // figures taken within a second of each other, and the figures are the medians.
          int pairs = quick ? 3 : 15;
          double slice = Math.max(seconds, 0.3) / pairs;
          double[][] m = new double[8][pairs];
          // Process CPU time a batch (ms) in the slices of: floor 1 thread, loader 1, floor N, loader N
          // (the floor's fused loop where it fits, else its region loop once more). A floor slice
          // also counts the few batches the idle loaders make to fill their prefetch depth.
          double[][] cpu = new double[4][pairs];
          double[] ratio1 = new double[pairs];
          double[] ratioN = new double[pairs];
          for (int r = 0; r < pairs; r++) {
            // The order within a pair turns, so that neither side always follows the other.
            if (r % 2 == 0) {
              m[0][r] = floorRate(src, valid, validBase, width, byChunk, 1, arena, slice);
              m[1][r] = floorRate(src, valid, validBase, width, byRegion, 1, arena, slice);
              long c0 = cpuNanos();
              m[6][r] = floorRate(src, valid, validBase, width, byRegion, 1, arena, slice, fusable);
              cpu[0][r] = perBatch(c0, lastBatches);
              c0 = cpuNanos();
              m[2][r] = one.rate(slice);
              cpu[1][r] = perBatch(c0, one.lastBatches);
              m[3][r] = floorRate(src, valid, validBase, width, byChunk, threads, arena, slice);
              m[4][r] = floorRate(src, valid, validBase, width, byRegion, threads, arena, slice);
              c0 = cpuNanos();
              m[7][r] = floorRate(src, valid, validBase, width, byRegion, threads, arena, slice, fusable);
              cpu[2][r] = perBatch(c0, lastBatches);
              c0 = cpuNanos();
              m[5][r] = many.rate(slice);
              cpu[3][r] = perBatch(c0, many.lastBatches);
            } else {
              long c0 = cpuNanos();
              m[2][r] = one.rate(slice);
              cpu[1][r] = perBatch(c0, one.lastBatches);
              c0 = cpuNanos();
              m[6][r] = floorRate(src, valid, validBase, width, byRegion, 1, arena, slice, fusable);
              cpu[0][r] = perBatch(c0, lastBatches);
              m[1][r] = floorRate(src, valid, validBase, width, byRegion, 1, arena, slice);
              m[0][r] = floorRate(src, valid, validBase, width, byChunk, 1, arena, slice);
              c0 = cpuNanos();
              m[5][r] = many.rate(slice);
              cpu[3][r] = perBatch(c0, many.lastBatches);
              c0 = cpuNanos();
              m[7][r] = floorRate(src, valid, validBase, width, byRegion, threads, arena, slice, fusable);
              cpu[2][r] = perBatch(c0, lastBatches);
              m[4][r] = floorRate(src, valid, validBase, width, byRegion, threads, arena, slice);
              m[3][r] = floorRate(src, valid, validBase, width, byChunk, threads, arena, slice);
            }
            ratio1[r] = m[2][r] / Math.max(m[6][r], Math.max(m[0][r], m[1][r]));
            ratioN[r] = m[5][r] / Math.max(m[7][r], Math.max(m[3][r], m[4][r]));
          }
          double chunk1 = median(m[0]);
          double region1 = median(m[1]);
          double chunkN = median(m[3]);
          double regionN = median(m[4]);
          double fused1 = fusable ? median(m[6]) : 0;
          double fusedN = fusable ? median(m[7]) : 0;
          ObjectNode o = Json.object().put("batchRows", batchRows).put("threads", threads).put("pairs", pairs)
              .put("secondsPerSlice", slice).put("floor1", Math.max(fused1, Math.max(chunk1, region1)))
              .put("floorN", Math.max(fusedN, Math.max(chunkN, regionN)))
              .put("loader1", median(m[2])).put("loaderN", median(m[5])).put("unit", "batches per second")
              .put("ratio1", median(ratio1)).put("ratioN", median(ratioN));
          // What each side spends a batch in CPU time, every thread of the process counted: the
          // loader's planning thread (where it plans ahead) and the consumer taking its batches too.
          o.putObject("cpuMsPerBatch").put("floor1", median(cpu[0])).put("loader1", median(cpu[1]))
              .put("floorN", median(cpu[2])).put("loaderN", median(cpu[3]));
          o.putObject("loaderPlansAhead").put("threads1", one.plansAhead()).put("threadsN", many.plansAhead());
          o.putObject("floorByChunk").put("threads1", chunk1).put("threadsN", chunkN);
          o.putObject("floorByRegion").put("threads1", region1).put("threadsN", regionN);
          if (fusable) {
            o.putObject("floorFusedByRegion").put("threads1", fused1).put("threadsN", fusedN);
          } else {
            o.put("floorFusedByRegion", "left out: the features' widths are not the " + Arrays.toString(FUSED_WIDTHS)
                + " its loop is written for");
          }
          var spread = o.putObject("pairRatios");
          var s1 = spread.putArray("threads1");
          var sN = spread.putArray("threadsN");
          for (int r = 0; r < pairs; r++) {
            s1.add(ratio1[r]);
            sN.add(ratioN[r]);
          }
          return o;
        }
      } finally {
        for (SegmentLease l : leases) {
          l.close();
        }
      }
    }
  }

  /** Batches the last {@link #floorRate} made. */
  private long lastBatches;

  private static long cpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }

  /** Milliseconds of process CPU time a batch since {@code cpu0}, over {@code batches}. */
  private static double perBatch(long cpu0, long batches) {
    return (cpuNanos() - cpu0) / 1e6 / Math.max(1, batches);
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s[s.length / 2];
  }

  /** One batch's rows as runs of one chunk: the chunk, the rows within it and their batch positions. */
  private record FloorOrder(int[] chunk, int[][] row, int[][] at) {
    static FloorOrder of(GatherOrder g) {
      int runs = g.runs();
      int[] chunk = new int[runs];
      int[][] row = new int[runs][];
      int[][] at = new int[runs][];
      for (int r = 0; r < runs; r++) {
        chunk[r] = g.runChunk(r);
        int from = g.runStart(r);
        int n = g.runRows(r);
        row[r] = new int[n];
        at[r] = new int[n];
        for (int j = 0; j < n; j++) {
          row[r][j] = g.localRow(from + j);
          at[r][j] = g.position(from + j);
        }
      }
      return new FloorOrder(chunk, row, at);
    }

    /** Grouped by chunk, in batch order within one. */
    static FloorOrder byChunk(long[] rows, long[] chunkFirst) {
      int chunks = chunkFirst.length;
      int[] ofRow = new int[rows.length];
      int[] count = new int[chunks];
      for (int k = 0; k < rows.length; k++) {
        int c = Chunks.of(chunkFirst, rows[k]);
        ofRow[k] = c;
        count[c]++;
      }
      int used = 0;
      for (int c : count) {
        used += c > 0 ? 1 : 0;
      }
      int[] chunk = new int[used];
      int[][] row = new int[used][];
      int[][] at = new int[used][];
      int[] slot = new int[chunks];
      int r = 0;
      for (int c = 0; c < chunks; c++) {
        if (count[c] > 0) {
          chunk[r] = c;
          row[r] = new int[count[c]];
          at[r] = new int[count[c]];
          slot[c] = r++;
        }
      }
      int[] fill = new int[used];
      for (int k = 0; k < rows.length; k++) {
        int run = slot[ofRow[k]];
        row[run][fill[run]] = (int) (rows[k] - chunkFirst[ofRow[k]]);
        at[run][fill[run]++] = k;
      }
      return new FloorOrder(chunk, row, at);
    }
  }

  private double floorRate(MemorySegment[][] src, MemorySegment[][] valid, long[][] validBase, int[] width, FloorOrder[] orders,
      int nThreads, Arena arena, double secs)
      throws Exception {
    return floorRate(src, valid, validBase, width, orders, nThreads, arena, secs, false);
  }

  /**
   * Batches a second of the floor: {@code orders} cycled through on {@code nThreads} threads for
   * {@code secs}; with {@code fused}, each run's rows are copied for every feature in one pass
   * ({@link #fused}) instead of a pass a feature.
   */
  private double floorRate(MemorySegment[][] src, MemorySegment[][] valid, long[][] validBase, int[] width, FloorOrder[] orders,
      int nThreads, Arena arena, double secs, boolean fused)
      throws Exception {
    int batches = orders.length;
    long nanos = (long) (secs * 1e9);
    long[] done = new long[nThreads];
    List<Thread> ts = new ArrayList<>();
    long t0 = System.nanoTime();
    for (int t = 0; t < nThreads; t++) {
      int me = t;
      MemorySegment[] out = new MemorySegment[width.length];
      MemorySegment[] outValid = new MemorySegment[width.length];
      for (int f = 0; f < width.length; f++) {
        out[f] = arena.allocate(16384L * Math.max(1, width[f]), 64);
        outValid[f] = arena.allocate(16384 / 8, 64);
      }
      ts.add(Thread.ofPlatform().name("strata-gather-floor-" + t).start(() -> {
        int b = me;
        while (System.nanoTime() - t0 < nanos) {
          FloorOrder o = orders[b % batches];
          if (fused) {
            for (int r = 0; r < o.chunk().length; r++) {
              int c = o.chunk()[r];
              fused(src[0][c], src[1][c], src[2][c], src[3][c], src[4][c], out, o.row()[r], o.at()[r]);
            }
          }
          for (int f = 0; f < width.length; f++) {
            for (int r = 0; r < o.chunk().length; r++) {
              int c = o.chunk()[r];
              if (!fused) {
                floorGather(src[f][c], out[f], width[f], o.row()[r], o.at()[r]);
              }
              if (valid[f][c] != null) {
                floorBits(valid[f][c], validBase[f][c], outValid[f], o.row()[r], o.at()[r]);
              }
            }
          }
          done[me]++;
          b += nThreads;
        }
      }));
    }
    for (Thread t : ts) {
      t.join();
    }
    long n = 0;
    for (long x : done) {
      n += x;
    }
    lastBatches = n;
    return n / ((System.nanoTime() - t0) / 1e9);
  }

  /** The tightest loop: the rows of one chunk, from its one segment, each one load and one store to its place in the batch. */
  private static void floorGather(MemorySegment src, MemorySegment out, int width, int[] row, int[] at) {
    int n = row.length;
    switch (width) {
      case 8 -> {
        for (int k = 0; k < n; k++) {
          out.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, at[k], src.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, row[k]));
        }
      }
      case 4 -> {
        for (int k = 0; k < n; k++) {
          out.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, at[k], src.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, row[k]));
        }
      }
      case 2 -> {
        for (int k = 0; k < n; k++) {
          out.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, at[k], src.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, row[k]));
        }
      }
      default -> {
        for (int k = 0; k < n; k++) {
          MemorySegment.copy(src, (long) row[k] * width, out, (long) at[k] * width, width);
        }
      }
    }
  }

  /** The widths of the features, in order, that {@link #fused} is written for. */
  static final int[] FUSED_WIDTHS = {8, 4, 2, 4, 8};

  /**
   * The tightest loop found for this feature set: every feature of one chunk's rows in one pass,
   * each row's place read once and its five loads independent of each other (a pass a feature
   * reads the order five times and has one load in flight a row). Written for the widths
   * {@link #FUSED_WIDTHS}, which {@link PeersBench#ROW_FEATURES} have.
   */
  private static void fused(MemorySegment s0, MemorySegment s1, MemorySegment s2, MemorySegment s3, MemorySegment s4,
      MemorySegment[] out, int[] row, int[] at) {
    MemorySegment d0 = out[0];
    MemorySegment d1 = out[1];
    MemorySegment d2 = out[2];
    MemorySegment d3 = out[3];
    MemorySegment d4 = out[4];
    for (int k = 0; k < row.length; k++) {
      int r = row[k];
      int p = at[k];
      d0.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, p, s0.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, r));
      d1.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, p, s1.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, r));
      d2.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, p, s2.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, r));
      d3.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, p, s3.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, r));
      d4.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, p, s4.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, r));
    }
  }

  /** The validity bits of the rows of one chunk, each one load and one store to its place in the batch. */
  private static void floorBits(MemorySegment src, long base, MemorySegment out, int[] row, int[] at) {
    for (int k = 0; k < row.length; k++) {
      long i = base + row[k];
      boolean v = (src.get(ValueLayout.JAVA_BYTE, i >>> 3) & (1 << (i & 7))) != 0;
      int byteAt = at[k] >>> 3;
      byte b = out.get(ValueLayout.JAVA_BYTE, byteAt);
      int bit = 1 << (at[k] & 7);
      out.set(ValueLayout.JAVA_BYTE, byteAt, (byte) (v ? b | bit : b & ~bit));
    }
  }

  /**
   * One loader (shuffled single rows, {@code threads} prefetch threads, batches closed as they
   * come: no consumer cost), open across slices. Between slices nobody takes its batches, so its
   * threads fill the prefetch depth and wait; a slice first takes those ready batches untimed (made
   * while the floor ran), then times the batches its threads make from then on.
   */
  private static final class LoaderSlices implements AutoCloseable {
    private static final int DEPTH = 4;
    private final Loader loader;
    private final Iterator<Batch> it;

    LoaderSlices(Dataset d, SegmentStore store, int batchRows, int threads) throws IOException {
      loader = Loader.builder(d).features(PeersBench.ROW_FEATURES).segments(store).rowBatches(batchRows, true).seed(1)
          .epochs(100000).prefetch(DEPTH, threads).build();
      it = loader.iterator();
    }

    /** Batches the last {@link #rate} timed. */
    long lastBatches;

    double rate(double secs) {
      for (int i = 0; i < DEPTH; i++) {
        it.next().close();
      }
      long t0 = System.nanoTime();
      long n = 0;
      while (n < 10 || System.nanoTime() - t0 < secs * 1e9) {
        it.next().close();
        n++;
      }
      lastBatches = n;
      return n / ((System.nanoTime() - t0) / 1e9);
    }

    boolean plansAhead() {
      return loader.plansAhead();
    }

    @Override
    public void close() throws IOException {
      loader.close();
    }
  }
}
