package io.strata.sdk.loader;

import io.strata.sdk.files.SampleIndex;
import io.strata.sdk.internal.Chunks;

/**
 * What a loader reads: the epoch's units (samples, row blocks or windows), their order, the shard
 * of this rank and their grouping into batches. A plan is a pure function of its parameters, so
 * {@code (epoch, step)} identifies a batch completely.
 *
 * <p>Units are numbered {@code 0..units()-1}. Each epoch visits them in a permuted order (or in
 * order when not shuffled); position {@code p} of that order belongs to rank {@code p % world};
 * rank {@code r}'s positions are grouped into batches of {@code unitsPerBatch}. The permutation
 * shuffles the whole epoch at once, or, with {@link #shuffleChunkBlocks}, the units within blocks
 * of whole chunks taken in a shuffled order ({@link ChunkBlockOrder}: the slow tier read a chunk
 * at a time, each once an epoch).
 */
abstract class Plan {
  final long seed;
  final boolean shuffle;
  final int rank;
  final int world;
  final int unitsPerBatch;
  final boolean dropLast;
  /** Chunks per shuffle block (0: the whole epoch shuffled at once); set before the plan is used. */
  private int blockChunks;
  /** The first unit of each chunk, then the units: built with the blocks. */
  private long[] chunkFirstUnits;

  Plan(long seed, boolean shuffle, int rank, int world, int unitsPerBatch, boolean dropLast) {
    if (world < 1 || rank < 0 || rank >= world) {
      throw new IllegalArgumentException("rank must be in [0, world size); got rank " + rank + " of " + world);
    }
    if (unitsPerBatch < 1) {
      throw new IllegalArgumentException("a batch needs at least one unit, got " + unitsPerBatch);
    }
    this.seed = seed;
    this.shuffle = shuffle;
    this.rank = rank;
    this.world = world;
    this.unitsPerBatch = unitsPerBatch;
    this.dropLast = dropLast;
  }

  /** Units in one epoch, all ranks together. */
  abstract long units();

  /** First row of unit {@code u}. */
  abstract long unitStart(long u);

  /** Rows of unit {@code u}. */
  abstract int unitRows(long u);

  /** The identifier reported for unit {@code u} (sample id, first row, window number). */
  abstract long unitId(long u);

  /** A text that changes whenever the plan's batches would change. */
  abstract String describe();

  /** Units that this rank reads per epoch. */
  final long unitsForRank() {
    long n = units();
    return n <= rank ? 0 : (n - rank + world - 1) / world;
  }

  /** Batches per epoch for this rank. */
  final long stepsPerEpoch() {
    long u = unitsForRank();
    return dropLast ? u / unitsPerBatch : (u + unitsPerBatch - 1) / unitsPerBatch;
  }

  /** Units in batch {@code step} (the last batch of an epoch may be short). */
  final int unitsInStep(long step) {
    long first = step * unitsPerBatch;
    return (int) Math.min(unitsPerBatch, unitsForRank() - first);
  }

  /**
   * Shuffles within blocks of {@code chunks} whole chunks ({@link ChunkBlockOrder}) instead of
   * across the whole epoch; {@code chunkFirstRows} are the dataset's chunks' first rows. Only
   * where units lie in row order (samples, row blocks); 0 keeps the global shuffle.
   */
  final void shuffleChunkBlocks(int chunks, long[] chunkFirstRows) {
    if (chunks < 0) {
      throw new IllegalArgumentException("chunks per shuffle block must not be negative, got " + chunks);
    }
    if (chunks == 0) {
      blockChunks = 0;
      chunkFirstUnits = null;
      return;
    }
    long[] first = new long[chunkFirstRows.length + 1];
    for (int c = 0; c < chunkFirstRows.length; c++) {
      first[c] = firstUnitAtOrAfter(chunkFirstRows[c]);
    }
    first[chunkFirstRows.length] = units();
    first[0] = 0; // units before the first chunk's first row (none in a dataset) belong to it
    blockChunks = chunks;
    chunkFirstUnits = first;
  }

  /** Chunks per shuffle block; 0 when the whole epoch is shuffled at once. */
  final int blockChunks() {
    return blockChunks;
  }

  /** The first unit whose first row is at or after {@code row} (units lie in row order). */
  long firstUnitAtOrAfter(long row) {
    throw new IllegalArgumentException(describe() + " cannot be shuffled by chunk blocks: its units do not follow the rows");
  }

  /** The order of epoch {@code epoch}, or null for natural order. */
  final EpochOrder order(int epoch) {
    if (!shuffle) {
      return null;
    }
    long key = Permutation.mix(seed * 0x2545F4914F6CDD1DL + epoch);
    return blockChunks > 0 ? new ChunkBlockOrder(chunkFirstUnits, blockChunks, key) : new Permutation(units(), key);
  }

  /** What {@link #describe} says, and the shuffle's blocks: what changes the batches. */
  final String identity() {
    return describe() + (blockChunks > 0 ? "|chunkblocks:" + blockChunks : "");
  }

  /** The epoch position of unit {@code k} of batch {@code step} (before the order). */
  final long position(long step, int k) {
    return (step * unitsPerBatch + k) * world + rank;
  }

  /** Unit {@code k} (0-based) of batch {@code step} in an epoch whose order is {@code order}. */
  final long unit(EpochOrder order, long step, int k) {
    long position = (step * unitsPerBatch + k) * world + rank;
    return order == null ? position : order.apply(position);
  }

  /**
   * The first {@code count} units of batch {@code step} in an epoch whose order is {@code order},
   * into {@code out}: {@code out[k] = unit(order, step, k)}, a batch at a time.
   */
  final void units(EpochOrder order, long step, long[] out, int count) {
    long first = step * unitsPerBatch * world + rank;
    if (order != null) {
      order.applyAll(first, world, out, count);
    } else {
      for (int k = 0; k < count; k++) {
        out[k] = first + (long) k * world;
      }
    }
  }

  /** Whether every unit is one row whose identifier is its row number (single shuffled rows). */
  boolean singleRowUnits() {
    return false;
  }

  /** Sample batches: each unit is one sample with all its rows (seed 000). */
  static final class Samples extends Plan {
    private final SampleIndex index;

    Samples(SampleIndex index, int samplesPerBatch, long seed, boolean shuffle, int rank, int world, boolean dropLast) {
      super(seed, shuffle, rank, world, samplesPerBatch, dropLast);
      this.index = index;
    }

    @Override
    long units() {
      return index.size();
    }

    @Override
    long unitStart(long u) {
      return index.start(u);
    }

    @Override
    int unitRows(long u) {
      return Math.toIntExact(index.end(u) - index.start(u));
    }

    @Override
    long unitId(long u) {
      return index.sampleId(u);
    }

    @Override
    long firstUnitAtOrAfter(long row) {
      long lo = 0;
      long hi = index.size();
      while (lo < hi) { // samples lie in row order: their starts ascend
        long mid = (lo + hi) >>> 1;
        if (index.start(mid) < row) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      return lo;
    }

    @Override
    String describe() {
      return "samples:" + unitsPerBatch;
    }
  }

  /** Row batches: units are blocks of {@code blockRows} consecutive rows (the last may be short). */
  static final class Rows extends Plan {
    private final long rows;
    private final int blockRows;

    Rows(long rows, int blockRows, int blocksPerBatch, long seed, boolean shuffle, int rank, int world, boolean dropLast) {
      super(seed, shuffle, rank, world, blocksPerBatch, dropLast);
      if (blockRows < 1) {
        throw new IllegalArgumentException("block rows must be at least 1, got " + blockRows);
      }
      this.rows = rows;
      this.blockRows = blockRows;
    }

    @Override
    long units() {
      return (rows + blockRows - 1) / blockRows;
    }

    @Override
    long unitStart(long u) {
      return u * blockRows;
    }

    @Override
    int unitRows(long u) {
      return (int) Math.min(blockRows, rows - u * blockRows);
    }

    @Override
    long unitId(long u) {
      return u * blockRows;
    }

    @Override
    long firstUnitAtOrAfter(long row) {
      return Math.min(units(), (row + blockRows - 1) / blockRows);
    }

    int blockRows() {
      return blockRows;
    }

    @Override
    boolean singleRowUnits() {
      return blockRows == 1;
    }

    @Override
    String describe() {
      return "rows:" + blockRows + "x" + unitsPerBatch;
    }
  }

  /**
   * Windows (seed 003): sequences of {@code length} rows inside one entity (a sample), followed by
   * {@code lookahead} rows for labels, starting every {@code stride} rows. Window {@code u} is
   * found by a binary search over the cumulative window counts of the entities.
   */
  static final class Windows extends Plan {
    private final SampleIndex index;
    private final int length;
    private final int lookahead;
    private final int stride;
    private final long[] cumulative;

    Windows(SampleIndex index, int length, int lookahead, int stride, int windowsPerBatch, long seed, boolean shuffle,
        int rank, int world, boolean dropLast) {
      super(seed, shuffle, rank, world, windowsPerBatch, dropLast);
      if (length < 1 || lookahead < 0 || stride < 1) {
        throw new IllegalArgumentException(
            "window length must be >= 1, lookahead >= 0 and stride >= 1; got " + length + ", " + lookahead + ", " + stride);
      }
      if (index.size() > Integer.MAX_VALUE - 1) {
        throw new IllegalArgumentException("too many entities for windows: " + index.size());
      }
      this.index = index;
      this.length = length;
      this.lookahead = lookahead;
      this.stride = stride;
      int entities = (int) index.size();
      cumulative = new long[entities + 1];
      long span = (long) length + lookahead;
      for (int e = 0; e < entities; e++) {
        long rows = index.end(e) - index.start(e);
        long windows = rows < span ? 0 : (rows - span) / stride + 1;
        cumulative[e + 1] = cumulative[e] + windows;
      }
    }

    @Override
    long units() {
      return cumulative[cumulative.length - 1];
    }

    /** The entity holding window {@code u}: the last entity whose cumulative count is at most {@code u}. */
    int entity(long u) {
      // cumulative's last entry is the total, above every u: the search never stops there.
      return Chunks.of(cumulative, u);
    }

    @Override
    long unitStart(long u) {
      int e = entity(u);
      return index.start(e) + (u - cumulative[e]) * stride;
    }

    @Override
    int unitRows(long u) {
      return length + lookahead;
    }

    @Override
    long unitId(long u) {
      return u;
    }

    int length() {
      return length;
    }

    int lookahead() {
      return lookahead;
    }

    int stride() {
      return stride;
    }

    @Override
    String describe() {
      return "windows:" + length + "+" + lookahead + "/" + stride + "x" + unitsPerBatch;
    }
  }
}
