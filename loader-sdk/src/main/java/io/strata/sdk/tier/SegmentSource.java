package io.strata.sdk.tier;

import io.strata.sdk.SegmentLease;
import io.strata.sdk.dataset.Dataset;
import java.io.IOException;
import java.nio.file.Path;

/**
 * Where a reader finds resident feature chunks on the SSD tier: a local segment store
 * ({@code io.strata.sdk.tiering.SegmentStore}), or
 * a cache node ({@code io.strata.sdk.node.NodeSegments}). Thread-safe.
 */
public interface SegmentSource {
  /** A lease on a segment holding {@code feature} of {@code chunk}, or null when it is not resident. */
  SegmentLease lease(Dataset dataset, String feature, int chunk) throws IOException;

  /**
   * A number that changes whenever chunks may have become resident; readers recheck chunks they
   * found absent when it changes.
   */
  long generation();

  /**
   * Whether {@code feature} of {@code chunk} is still resident in {@code file} as far as this
   * source knows (a reader holding a lease on that file releases it when not: the chunk was
   * evicted, or written again to another file, so that the old one is unmapped and its SSD blocks
   * freed). True by default.
   */
  default boolean stillResident(Dataset dataset, String feature, int chunk, Path file) {
    return true;
  }

  /** Told about every read a reader makes and the tier that served it (for reporting to a node); nothing by default. */
  default void read(Dataset dataset, String feature, int chunk, long bytes, Tier tier) {}

  /**
   * The calling thread starts reading the batch at global step {@code step} of its loader's plan
   * (or the loader served that batch from its batch cache); the reads it reports next belong to
   * that batch. Nothing by default; a node source reports the job's position with its reads.
   */
  default void step(long step) {}

  /**
   * Whether {@code feature} of {@code chunk} is on the SSD tier now, as far as this source knows
   * without mapping anything (substitutable reads prefer steps whose chunks are); false by default.
   */
  default boolean resident(Dataset dataset, String feature, int chunk) {
    return false;
  }

  /**
   * A reader found the leased segment of {@code feature} of {@code chunk} damaged after it was
   * mapped ({@code problem} says how) and reads the chunk from ORC instead. A source checks the
   * file again and, if it is damaged, drops it so that no reader maps it again; nothing by default.
   */
  default void damaged(Dataset dataset, String feature, int chunk, Path file, String problem) {}
}
