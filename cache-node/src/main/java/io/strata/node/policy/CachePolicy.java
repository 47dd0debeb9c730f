package io.strata.node.policy;

/**
 * A policy for the SSD tier: on every read of a feature chunk it says whether the chunk was
 * resident and, on a miss, whether to admit it (write a segment), evicting others to stay within
 * the byte budget. Keys are dense ints; sizes are passed with every call.
 *
 * <p>The same implementations run inside the cache node and in {@code strata policy simulate}.
 */
public interface CachePolicy {
  /** What a read did. */
  enum Outcome {
    HIT,
    MISS_ADMITTED,
    MISS_BYPASSED
  }

  String name();

  /**
   * A read of {@code key} ({@code bytes} bytes) by {@code job} at {@code time} seconds. A
   * {@link Outcome#MISS_ADMITTED} key is resident from now on (the caller writes it); keys
   * evicted to make room are reported to {@code evictions}.
   */
  Outcome access(double time, int job, int key, long bytes, Evictions evictions);

  /**
   * What a job will read, in order, from its next read on: its declared plan. {@code epochEnds}
   * holds the index in {@code keys} where each epoch ends (exclusive); with {@code
   * substitutable}, reads within an epoch may come in another order.
   */
  default void plan(int job, int[] keys, int[] epochEnds, boolean substitutable) {}

  /**
   * Declares that {@code key} belongs to feature stream {@code group} (one feature of one dataset
   * version): jobs read whole features, so popularity is learned per group.
   */
  default void group(int key, int group) {}

  /** The job finished or left. */
  default void jobEnded(int job) {}

  /** The key must stay resident (pinned) or may be evicted again. */
  default void pin(int key, long bytes, boolean pinned) {}

  /** The caller removed a key from the tier (operator eviction, a damaged file). */
  void removed(int key);

  /** Bytes resident. */
  long residentBytes();

  boolean resident(int key);

  /** Receives the keys a policy evicts. */
  @FunctionalInterface
  interface Evictions {
    Evictions NONE = key -> {};

    void evicted(int key);
  }
}
