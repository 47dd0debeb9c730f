package io.strata.sdk.loader;

import io.strata.sdk.internal.Chunks;

/**
 * An epoch's order that reads the slow tier in whole chunks: the chunks in a shuffled order, taken
 * {@code blockChunks} at a time (a block), and the units (rows, row blocks, samples) of each block
 * shuffled among themselves. An epoch then reads every chunk once, a block's chunks together, while
 * a batch still mixes units of {@code blockChunks} chunks drawn at random from the whole dataset:
 * the shuffle MosaicML Streaming calls {@code py1b} (shards shuffled, then samples within blocks
 * spanning shards) with its blocks aligned to chunks, and what Ray Data's local shuffle buffer
 * approximates with a buffer of the same rows. A block of one chunk shuffles within each chunk
 * (Streaming's {@code py1s}); a block of every chunk is a global shuffle.
 *
 * <p>A unit belongs to the chunk holding its first row; units are numbered in row order, so a
 * chunk's units are a range ({@code firstUnit[c] .. firstUnit[c + 1]}). Position {@code p} of
 * the epoch lies in the block whose range of positions holds it; its offset there is permuted
 * ({@link Permutation}, keyed by the epoch's seed and the block) and mapped back through the
 * block's chunks. Immutable once built (O(chunks) to build, O(log blocks + blockChunks) a
 * position); {@link #apply} may be called from any thread, {@link #applyAll} from one thread at a
 * time (the permutations' scratch).
 */
final class ChunkBlockOrder implements EpochOrder {
  private final long[] firstUnit;
  private final int blockChunks;
  /** The chunks in the epoch's order. */
  private final int[] chunks;
  /** Where each block's positions start; the last entry is the units. */
  private final long[] blockStart;
  private final Permutation[] within;

  /**
   * @param firstUnit the first unit of each chunk, then the number of units (non-decreasing)
   * @param blockChunks chunks per block, at least 1
   * @param seed the epoch's seed
   */
  ChunkBlockOrder(long[] firstUnit, int blockChunks, long seed) {
    if (blockChunks < 1) {
      throw new IllegalArgumentException("a shuffle block holds at least one chunk, got " + blockChunks);
    }
    int n = firstUnit.length - 1;
    this.firstUnit = firstUnit;
    this.blockChunks = blockChunks;
    this.chunks = new int[n];
    Permutation order = new Permutation(n, Permutation.mix(seed ^ 0x5851F42D4C957F2DL));
    for (int i = 0; i < n; i++) {
      chunks[i] = (int) order.apply(i);
    }
    int blocks = (n + blockChunks - 1) / blockChunks;
    this.blockStart = new long[blocks + 1];
    this.within = new Permutation[blocks];
    for (int g = 0; g < blocks; g++) {
      long units = 0;
      for (int k = g * blockChunks; k < Math.min(n, (g + 1) * blockChunks); k++) {
        units += firstUnit[chunks[k] + 1] - firstUnit[chunks[k]];
      }
      blockStart[g + 1] = blockStart[g] + units;
      within[g] = new Permutation(units, Permutation.mix(seed + 0x9E3779B97F4A7C15L * (g + 1)));
    }
  }

  @Override
  public long apply(long p) {
    if (p < 0 || p >= blockStart[blockStart.length - 1]) {
      throw new IndexOutOfBoundsException("position " + p + " outside [0, " + blockStart[blockStart.length - 1] + ")");
    }
    int g = Chunks.of(blockStart, p); // the last block starting at or before p: a non-empty one
    long o = within[g].apply(p - blockStart[g]);
    for (int k = g * blockChunks; k < Math.min(chunks.length, (g + 1) * blockChunks); k++) {
      int c = chunks[k];
      long units = firstUnit[c + 1] - firstUnit[c];
      if (o < units) {
        return firstUnit[c] + o;
      }
      o -= units;
    }
    throw new IllegalStateException("position " + p + " maps past its block");
  }

  /** Offsets within a block, for {@link #applyAll} (one thread at a time). */
  private long[] scratch = new long[0];

  /**
   * As {@link #apply} for each position: the positions that lie in one block are permuted at once
   * ({@link Permutation#applyAll}, the vectorized loop), then mapped through the block's chunks
   * (one per-unit {@code apply} was a twelfth of a fleet node's CPU).
   */
  @Override
  public void applyAll(long first, long stride, long[] out, int count) {
    long end = blockStart[blockStart.length - 1];
    int k = 0;
    while (k < count) {
      long p = first + k * stride;
      if (p < 0 || p >= end) {
        throw new IndexOutOfBoundsException("position " + p + " outside [0, " + end + ")");
      }
      int g = Chunks.of(blockStart, p);
      int m = stride > 0 ? (int) Math.min(count - k, (blockStart[g + 1] - 1 - p) / stride + 1) : 1;
      if (scratch.length < m) {
        scratch = new long[Math.max(m, 2 * scratch.length)];
      }
      within[g].applyAll(p - blockStart[g], stride, scratch, m);
      int firstChunk = g * blockChunks;
      int lastChunk = Math.min(chunks.length, (g + 1) * blockChunks);
      for (int j = 0; j < m; j++) {
        long o = scratch[j];
        long mapped = -1;
        for (int q = firstChunk; q < lastChunk; q++) {
          int c = chunks[q];
          long units = firstUnit[c + 1] - firstUnit[c];
          if (o < units) {
            mapped = firstUnit[c] + o;
            break;
          }
          o -= units;
        }
        if (mapped < 0) {
          throw new IllegalStateException("position " + (p + j * stride) + " maps past its block");
        }
        out[k + j] = mapped;
      }
      k += m;
    }
  }

  /**
   * How many chunks the positions {@code from..to} (inclusive) can reach: the chunks holding units
   * of the blocks those positions lie in. A step of single-row units that has touched that many
   * has touched every chunk it will (its remaining units add none).
   */
  int reachableChunks(long from, long to) {
    int g0 = Chunks.of(blockStart, from);
    int g1 = Chunks.of(blockStart, to);
    int n = 0;
    for (int k = g0 * blockChunks; k < Math.min(chunks.length, (g1 + 1) * blockChunks); k++) {
      if (firstUnit[chunks[k] + 1] > firstUnit[chunks[k]]) {
        n++;
      }
    }
    return n;
  }

  /** The block position {@code p} lies in (0 for a position past the end: callers ask of positions they read). */
  int blockOf(long p) {
    return p < 0 || p >= blockStart[blockStart.length - 1] ? 0 : Chunks.of(blockStart, p);
  }

  /** The chunks of block {@code g}, or an empty array past the last block. */
  int[] chunksOfBlock(int g) {
    if (g < 0 || g >= within.length) {
      return new int[0];
    }
    return java.util.Arrays.copyOfRange(chunks, g * blockChunks, Math.min(chunks.length, (g + 1) * blockChunks));
  }

  /** The chunk at place {@code i} of this epoch's order (tests, the bench's description of the shuffle). */
  int chunkAt(int i) {
    return chunks[i];
  }
}
