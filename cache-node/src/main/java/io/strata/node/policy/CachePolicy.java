package io.strata.node.policy;

import java.util.Map;

/**
 * A policy for the SSD tier: on every read of a feature chunk it says whether the chunk was
 * resident and, on a miss, whether to admit it (write a segment), evicting others to stay within
 * the byte budget, which it owns. Keys are dense ints; sizes are passed with every call. The node
 * holds one policy, chosen by name from {@link Policies} (a setting an operator changes); every
 * decision about what is resident is the policy's: reads ({@link #access}), placements the node
 * makes for other reasons ({@link #place}), a segment's real size ({@link #resize}) and budget
 * changes ({@link #setBudget}). Pinned keys ({@link #pin}) are never chosen as victims while
 * anything else can be.
 *
 * <p>The same implementations run inside the cache node and in {@code strata policy simulate}.
 * Not thread-safe: the node calls its policy under one monitor.
 */
public interface CachePolicy {
  /** Why a key becomes resident without a read deciding it ({@link #place}). */
  enum Placement {
    /** A segment found on disk when the node starts: resident whatever the budget (a later budget check sheds any excess). */
    FOUND,
    /** An operator's promotion or a pin. */
    OPERATOR,
    /** A copy from a peer, prefetched for a declared plan. */
    PEER,
    /** A segment found gone or damaged, written again. */
    REPAIR,
    /** A derived feature's chunk the node computes. */
    DERIVED
  }

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
   * What a job will read from now on, as the node expanded it from the job's plan: {@code keys}
   * grouped into steps (batches), step {@code i} being {@code keys[stepEnds[i-1]..stepEnds[i])}
   * ({@code stepEnds[-1]} is 0). Step 0 is the job's global step {@code firstStep} (its position
   * when it declared: resumed jobs start mid-plan); an epoch is {@code stepsPerEpoch} steps. With
   * {@code substitutable}, the job may read the steps of an epoch in another order.
   */
  record JobPlan(int[] keys, int[] stepEnds, long firstStep, long stepsPerEpoch, boolean substitutable) {
    public JobPlan {
      if (stepEnds.length > 0 && stepEnds[stepEnds.length - 1] != keys.length) {
        throw new IllegalArgumentException("the last step must end at the last key");
      }
      for (int i = 1; i < stepEnds.length; i++) {
        if (stepEnds[i] < stepEnds[i - 1]) {
          throw new IllegalArgumentException("step ends must not decrease");
        }
      }
      if (firstStep < 0 || stepsPerEpoch < 1) {
        throw new IllegalArgumentException("first step must be >= 0 and an epoch at least one step");
      }
    }

    /** Steps in the plan. */
    public int steps() {
      return stepEnds.length;
    }

    /** Index in {@code keys} where step {@code s} starts. */
    public int stepStart(int s) {
      return s == 0 ? 0 : stepEnds[s - 1];
    }
  }

  /** {@code job} declared {@code plan}, replacing any plan it had. */
  default void plan(int job, JobPlan plan) {}

  /** {@code job} is now at global step {@code step} of its plan (it reports it with its reads). */
  default void progress(int job, long step, double time) {}

  /**
   * Declares that {@code key} belongs to feature stream {@code group} (one feature of one dataset
   * version): jobs read whole features, so popularity is learned per group.
   */
  default void group(int key, int group) {}

  /** The job finished or left. */
  default void jobEnded(int job) {}

  /**
   * Whether another node of the cluster holds {@code key}: a copy from that peer reads nothing
   * from the HDD tier, so the key is worth keeping here only for reads this node's jobs declared.
   */
  default void heldElsewhere(int key, boolean held) {}

  /**
   * What a miss of {@code key} costs the slow tier, where the node can tell it: {@code slowBytes},
   * its stored (compressed) bytes plus the read's positioning as the bytes the tier transfers in
   * that time (the node's {@code SlowCosts}: 2.35 MB for an HDD's 11.8 ms), and {@code ssdBytes},
   * the node's estimate of its segment (until a read says). A policy that weighs what an admission
   * saves counts these instead of the SSD bytes of {@link #access}: a 52 KB column chunk that fills
   * 1 MB of SSD saves the disk about as much time as a 2.4 MB one, not a twentieth of it.
   */
  default void slowBytes(int key, long slowBytes, long ssdBytes) {}

  /** The key must stay resident (pinned) or may be evicted again. */
  default void pin(int key, long bytes, boolean pinned) {}

  /** The caller removed a key from the tier (operator eviction, a damaged file). */
  void removed(int key);

  /** The SSD bytes the policy may fill. */
  long budget();

  /** {@code bytes} as a budget: IllegalArgumentException when negative (every policy's constructor and {@link #setBudget}). */
  static long checkBudget(long bytes) {
    if (bytes < 0) {
      throw new IllegalArgumentException("SSD budget must not be negative: " + bytes);
    }
    return bytes;
  }

  /**
   * Changes the budget; when it shrinks, evicts (reported to {@code evictions}; pinned keys last)
   * until the resident bytes fit.
   */
  void setBudget(long bytes, double now, Evictions evictions);

  /**
   * Makes {@code key} resident without a read deciding it, spending no flash write budget: true
   * if it is resident afterwards; false, and nothing changed, if it does not fit in the budget
   * left ({@link Placement#FOUND} always fits). A key already resident just takes the new size.
   */
  boolean place(int key, long bytes, Placement why);

  /**
   * The real size of a resident key (its segment's bytes) is known: the policy evicts (reported to
   * {@code evictions}, possibly {@code key} itself) if that takes the tier over its budget.
   */
  void resize(int key, long bytes, double now, Evictions evictions);

  /** Counts of the policy's decisions by kind, for the operator (empty when it keeps none). */
  default Map<String, Long> decisionCounts() {
    return Map.of();
  }

  /** A flash write budget in bytes per hour (0: none); a policy that keeps none ignores it. */
  default void setFlashBudget(double bytesPerHour) {}

  /** How much farther a guessed next use counts than a declared one; a policy that guesses none ignores it. */
  default void setPopularityDiscount(double discount) {}

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
