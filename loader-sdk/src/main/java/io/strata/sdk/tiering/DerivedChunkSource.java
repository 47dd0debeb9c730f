package io.strata.sdk.tiering;

import io.strata.sdk.Column;
import io.strata.sdk.FeatureType;
import java.io.IOException;
import java.lang.foreign.SegmentAllocator;

/** Chunks of a derived feature for a {@link TieredReader}: from a feature store, or computed. Thread-safe. */
public interface DerivedChunkSource {
  /** The name the SSD tier stores it under (the canonical spec). */
  String storageName();

  FeatureType type();

  /** Chunk {@code chunk} of the derived feature, in memory of {@code allocator}. */
  Column chunk(int chunk, SegmentAllocator allocator) throws IOException;

  /** Whether chunks come from a store (true) or are computed (false), for the per-tier counts. */
  boolean stored();
}
