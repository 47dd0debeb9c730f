package io.strata.sdk.loader;

/**
 * The order in which an epoch visits its units: a bijection of {@code [0, units)} from positions
 * to units, computed, never stored ({@link Permutation}: the whole epoch shuffled at once; {@link
 * ChunkBlockOrder}: shuffled within blocks of whole chunks).
 */
interface EpochOrder {
  /** The unit at position {@code i}. */
  long apply(long i);

  /** {@code out[k] = apply(first + k * stride)} for {@code k < count}: a batch's units at once. */
  void applyAll(long first, long stride, long[] out, int count);
}
