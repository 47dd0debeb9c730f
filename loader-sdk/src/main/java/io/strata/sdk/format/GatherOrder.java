package io.strata.sdk.format;

import io.strata.sdk.internal.Chunks;
import java.util.Arrays;

/**
 * The order in which a batch of single rows is gathered: the batch's rows grouped by region of
 * the dataset (one counting pass over the high bits of the row number, at most 4,096 regions in
 * ascending order, the batch's order kept within one), each with its position in the batch, and
 * cut into runs of one chunk. Gathering then reads one region of one chunk's segment at a time,
 * so the random loads of a run stay within a few megabytes (the reach of the processor's TLB)
 * instead of roaming the whole segment, and writes each value to its batch position, so the
 * batch keeps its shuffled order. One order serves every feature of the batch.
 *
 * <p>Threads: {@link #compute} fills it on one thread; after that it is read-only and may be read
 * by several (the parts of one batch), handed over with a happens-before edge (an executor's
 * submit). Reused batch after batch by its owner, so its arrays are allocated once.
 */
public final class GatherOrder {
  private static final int DIGIT_BITS = 12;

  private int n;
  private int[] pos = new int[0];
  private int[] local = new int[0];
  private int[] runChunk = new int[0];
  private int[] runStart = new int[1];
  private int[] runChunkRows = new int[1];
  private int runs;
  private final int[] count = new int[(1 << DIGIT_BITS) + 1];

  /**
   * Orders {@code batchRows[0..n)} (dataset row numbers in {@code [0, totalRows)}), whose chunks
   * start at {@code chunkFirstRows} (ascending, the first 0), by region, and cuts them into runs
   * by chunk.
   */
  public GatherOrder compute(long[] batchRows, int n, long[] chunkFirstRows, long totalRows) {
    if (pos.length < n) {
      int cap = Math.max(n, pos.length + pos.length / 2);
      pos = new int[cap];
      local = new int[cap];
    }
    this.n = n;
    // One counting pass over the high bits of the row number: regions of 2^shift rows, at most
    // 2^12 of them, in ascending order; within a region the batch's order is kept.
    int bits = totalRows <= 1 ? 1 : 64 - Long.numberOfLeadingZeros(totalRows - 1);
    int shift = Math.max(0, bits - DIGIT_BITS);
    int regions = (int) ((totalRows - 1) >>> shift) + 1;
    int[] c = count;
    Arrays.fill(c, 0, regions + 1, 0);
    for (int k = 0; k < n; k++) {
      long r = batchRows[k];
      if (r < 0 || r >= totalRows) {
        throw new IndexOutOfBoundsException("row " + r + " is outside [0, " + totalRows + ")");
      }
      c[(int) (r >>> shift) + 1]++;
    }
    for (int d = 0; d < regions; d++) {
      c[d + 1] += c[d];
    }
    // Only the batch positions are scattered (one int store a row: the scatter's random stores are
    // most of this method's cost); each entry's row is read back from the batch below.
    int[] p = pos;
    for (int k = 0; k < n; k++) {
      p[c[(int) (batchRows[k] >>> shift)]++] = k;
    }
    // Runs of one chunk (a region that straddles a chunk boundary may alternate between the two)
    // and each row's place in its chunk.
    runs = 0;
    long chunkFirst = 0;
    long nextFirst = -1;
    int[] l = local;
    for (int k = 0; k < n; k++) {
      long row = batchRows[p[k]];
      if (row < chunkFirst || row >= nextFirst) {
        int chunk = Chunks.of(chunkFirstRows, row);
        chunkFirst = chunkFirstRows[chunk];
        nextFirst = chunk + 1 < chunkFirstRows.length ? chunkFirstRows[chunk + 1] : totalRows;
        if (runs + 1 >= runStart.length) {
          runStart = Arrays.copyOf(runStart, Math.max(8, runStart.length * 2));
          runChunk = Arrays.copyOf(runChunk, runStart.length);
          runChunkRows = Arrays.copyOf(runChunkRows, runStart.length);
        }
        runChunk[runs] = chunk;
        runChunkRows[runs] = Math.toIntExact(nextFirst - chunkFirst);
        runStart[runs++] = k;
      }
      l[k] = (int) (row - chunkFirst);
    }
    runStart[runs] = n;
    return this;
  }

  /** Rows in the batch. */
  public int size() {
    return n;
  }

  /** Runs (chunks the batch touches). */
  public int runs() {
    return runs;
  }

  /** The chunk of run {@code r}. */
  public int runChunk(int r) {
    return runChunk[r];
  }

  /** Rows of run {@code r}. */
  public int runRows(int r) {
    return runStart[r + 1] - runStart[r];
  }

  /** The rows of the chunk of run {@code r} (every row of the run is below it within its chunk). */
  int runChunkRows(int r) {
    return runChunkRows[r];
  }

  /** The first entry of run {@code r} (entries are numbered in gather order). */
  public int runStart(int r) {
    return runStart[r];
  }

  /** The run holding entry {@code j} (a binary search over the runs' first entries). */
  public int runOf(int j) {
    int lo = 0;
    int hi = runs - 1;
    while (lo < hi) {
      int mid = (lo + hi + 1) >>> 1;
      if (runStart[mid] <= j) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }

  /** Entry {@code j}'s row within its chunk. */
  public int localRow(int j) {
    return local[j];
  }

  /** Entry {@code j}'s position in the batch. */
  public int position(int j) {
    return pos[j];
  }

  /** Rows within their chunk, in gather order. */
  int[] local() {
    return local;
  }

  /** Batch positions, in gather order. */
  int[] positions() {
    return pos;
  }
}
