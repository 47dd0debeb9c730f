package io.strata.sdk.tiering;

import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.tier.TierStats;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The columns a {@link TieredReader}'s feature-major pass reads from ({@link #of}): the resident
 * segments' where the SSD tier holds a chunk, chunks decoded whole from the slow tier where it
 * does not, within the reader's block budget.
 *
 * <p>Not thread-safe: its reader's alone, on the reader's thread.
 */
final class SlowSources {
  private final Dataset dataset;
  private final List<String> features;
  /** The reader's resident columns by feature and chunk (null: not resident), shared. */
  private final Column[][] columns;
  /** Estimated decoded bytes a row of each feature (its width; a guess for strings and lists). */
  private final long[] rowBytes;
  private final OrcBlockCache orcBlocks;
  private final TierStats stats;
  /** Nanoseconds the last {@link #of} spent decoding from the slow tier (recorded with the HDD bytes of its pass). */
  private long slowNanos;

  SlowSources(Dataset dataset, List<String> features, Column[][] columns, long[] rowBytes, OrcBlockCache orcBlocks,
      TierStats stats) {
    this.dataset = dataset;
    this.features = features;
    this.columns = columns;
    this.rowBytes = rowBytes;
    this.orcBlocks = orcBlocks;
    this.stats = stats;
  }

  /** The nanoseconds the last {@link #of} spent decoding, once: 0 after. */
  long takeSlowNanos() {
    long n = slowNanos;
    slowNanos = 0;
    return n;
  }

  /**
   * What a feature-major pass over chunks {@code touched[0..n)} reads from: per feature, its
   * resident columns by chunk (the resident columns' own row where every touched chunk is resident),
   * else a copy of that row with each touched chunk not resident filled with the chunk decoded whole
   * from the slow tier ({@link OrcBlockCache#chunk}: one decode a chunk for every feature it lacks,
   * kept while the reader's block budget allows and always for the rest of this batch). A batch of
   * rows shuffled within blocks of chunks gathers from these as it does from mapped segments,
   * instead of row by row (issue 58: 36 % of a fleet node's CPU was single rows appended one by one
   * through the slow tier's block lookups). Null (the unit-by-unit path then) where the chunks to
   * decode would take more than twice the block budget (a global shuffle's batch touches every
   * chunk: decoding them all at once is not bounded by the budget; a block shuffle's batch that
   * straddles two blocks is). Residency must have been looked up for every feature and touched
   * chunk; no feature is derived and not resident.
   */
  Column[][] of(int[] touched, int n) throws IOException {
    List<ChunkInfo> chunks = dataset.chunks();
    long estimate = 0;
    for (int k = 0; k < n; k++) {
      int c = touched[k];
      for (int i = 0; i < features.size(); i++) {
        if (columns[i][c] == null) {
          estimate += chunks.get(c).rows() * rowBytes[i];
        }
      }
    }
    if (estimate > 2 * orcBlocks.budgetBytes()) {
      return null;
    }
    orcBlocks.beginBatch();
    Column[][] src = new Column[features.size()][];
    long t0 = System.nanoTime();
    long before = orcBlocks.decodedBytes();
    boolean decoded = false;
    for (int k = 0; k < n; k++) {
      int c = touched[k];
      List<String> missing = null;
      for (int i = 0; i < features.size(); i++) {
        if (columns[i][c] == null) {
          if (missing == null) {
            missing = new ArrayList<>(features.size());
          }
          missing.add(features.get(i));
        }
      }
      if (missing == null) {
        continue;
      }
      Map<String, Column> block = orcBlocks.chunk(chunks.get(c), missing);
      decoded = true;
      for (int i = 0; i < features.size(); i++) {
        if (columns[i][c] == null) {
          if (src[i] == null) {
            src[i] = columns[i].clone();
          }
          src[i][c] = block.get(features.get(i));
        }
      }
    }
    for (int i = 0; i < features.size(); i++) {
      if (src[i] == null) {
        src[i] = columns[i];
      }
    }
    slowNanos = decoded ? System.nanoTime() - t0 : 0;
    if (decoded) {
      stats.recordOrcDecoded(orcBlocks.decodedBytes() - before);
    }
    return src;
  }
}
