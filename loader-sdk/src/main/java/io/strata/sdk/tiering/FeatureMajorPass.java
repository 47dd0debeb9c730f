package io.strata.sdk.tiering;

import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.format.ColumnBuilder;
import io.strata.sdk.tier.SegmentSource;
import io.strata.sdk.tier.Tier;
import io.strata.sdk.tier.TierStats;
import java.util.List;

/**
 * A {@link TieredReader}'s batch assembled feature by feature ({@link #run}): each feature's part
 * appended in one pass, its reads counted once a chunk per tier and reported to the store, a
 * damaged segment undoing the whole batch's appends.
 *
 * <p>Not thread-safe: its reader's alone, on the reader's thread.
 */
final class FeatureMajorPass {
  private final Dataset dataset;
  private final SegmentSource store;
  private final List<String> features;
  /** The reader's resident columns by feature and chunk (null: decoded from the slow tier). */
  private final Column[][] columns;
  private final TierStats stats;
  private final SlowSources slowSources;

  FeatureMajorPass(Dataset dataset, SegmentSource store, List<String> features, Column[][] columns, TierStats stats,
      SlowSources slowSources) {
    this.dataset = dataset;
    this.store = store;
    this.features = features;
    this.columns = columns;
    this.stats = stats;
    this.slowSources = slowSources;
  }

  /**
   * What a feature-major pass does for feature {@code i}: append its part of the batch to {@code
   * into} (or, where one loop fills every builder, leave it to the first feature's call), adding
   * what it read of each chunk to {@code read}.
   */
  @FunctionalInterface
  interface Step {
    void append(int i, ColumnBuilder into, ChunkBytes read);
  }

  private ChunkBytes chunkBytes;

  /**
   * The one loop of a batch assembled feature by feature from resident segments (ranges or single
   * rows): each feature's part appended by {@code pass}, its reads reported to the store once per
   * chunk, the whole timed as one SSD read. A segment that went bad after it was mapped (an
   * access out of its bounds, or the JVM's InternalError on a truncated mapping) undoes every
   * append of the batch and returns false: the caller then takes the unit-by-unit path, which finds
   * the damaged chunk and reads it from ORC.
   */
  boolean run(List<ColumnBuilder> out, Step pass) {
    long t0 = System.nanoTime();
    long slowNanos = slowSources.takeSlowNanos();
    long bytes = 0;
    long slowBytes = 0;
    int[] before = new int[features.size()];
    for (int i = 0; i < features.size(); i++) {
      before[i] = out.get(i).rows();
    }
    if (chunkBytes == null) {
      chunkBytes = new ChunkBytes(dataset.chunks().size());
    }
    ChunkBytes read = chunkBytes;
    for (int i = 0; i < features.size(); i++) {
      read.clear();
      try {
        pass.append(i, out.get(i), read);
      } catch (IndexOutOfBoundsException | InternalError fault) {
        for (int j = 0; j < features.size(); j++) { // every builder: one pass may append to several
          out.get(j).truncate(before[j]);
        }
        read.clear();
        return false;
      }
      for (int k = 0; k < read.n; k++) {
        int c = read.touched[k];
        Tier tier = columns[i][c] != null ? Tier.SSD : Tier.HDD; // HDD: decoded by SlowSources
        if (tier == Tier.SSD) {
          bytes += read.bytes[c];
        } else {
          slowBytes += read.bytes[c];
        }
        if (store != null) {
          store.read(dataset, features.get(i), c, read.bytes[c], tier);
        }
      }
    }
    read.clear();
    if (bytes > 0 || slowBytes == 0) {
      stats.record(Tier.SSD, bytes, System.nanoTime() - t0);
    }
    if (slowBytes > 0) {
      stats.record(Tier.HDD, slowBytes, slowNanos);
    }
    return true;
  }
}
