package io.strata.node.policy;

import static io.strata.node.policy.StrataTuning.NEVER;

import java.util.Arrays;

/**
 * The part of {@link StrataPolicy} that says when each key is expected to be read next ({@link
 * #of}): from the plans jobs declared ({@link DeclaredPlans}), the passes of jobs that declared
 * nothing and the popularity of the key's feature stream ({@link StreamStats}: the next job to
 * come, discounted as a guess), and the key's own history ({@link ReadHistory}); see "Next use" and
 * "In a cluster" in the policy's note. It keeps each key's stream ({@link #group}) and whether
 * another node of the cluster holds it ({@link #heldElsewhere}).
 *
 * <p>Not thread-safe: the policy's, under its caller's lock.
 */
final class NextUses {
  private final DeclaredPlans plans;
  private final StreamStats streams;
  private final ReadHistory history;
  /** How much farther a guessed next use counts than a declared one (at least 1). */
  private double discount = StrataPolicy.DEFAULT_POPULARITY_DISCOUNT;
  /** Each key's feature stream (-1: none told). */
  private int[] groupOf = new int[256];
  /** Keys another node of the cluster holds. */
  private boolean[] elsewhere = new boolean[256];

  NextUses(DeclaredPlans plans, StreamStats streams, ReadHistory history) {
    this.plans = plans;
    this.streams = streams;
    this.history = history;
    Arrays.fill(groupOf, -1);
  }

  /** Room for keys below {@code n}. */
  void ensure(int n) {
    if (n > groupOf.length) {
      int old = groupOf.length;
      groupOf = Arrays.copyOf(groupOf, n);
      Arrays.fill(groupOf, old, n, -1);
      elsewhere = Arrays.copyOf(elsewhere, n);
    }
  }

  void group(int key, int group) {
    groupOf[key] = group;
  }

  /** Key {@code key}'s feature stream, or -1. */
  int groupOf(int key) {
    return groupOf[key];
  }

  /** Records whether another node holds {@code key}; whether that changed. */
  boolean heldElsewhere(int key, boolean held) {
    if (elsewhere[key] == held) {
      return false;
    }
    elsewhere[key] = held;
    return true;
  }

  double discount() {
    return discount;
  }

  void setDiscount(double d) {
    discount = d;
  }

  /**
   * When a job not yet declared is expected to read {@code key}: the next job of its feature
   * stream plus half an epoch (a new job reaches a given chunk half way through its epoch on
   * average), its distance discounted. Infinite until two jobs have read the stream.
   */
  private double popular(int key, double now, long accesses) {
    double arrival = streams.nextArrival(groupOf[key], now);
    if (arrival == NEVER) {
      return NEVER;
    }
    double eta = arrival + plans.typicalEpochSeconds(accesses) / 2;
    return now + (eta - now) * discount;
  }

  /**
   * When {@code key} is expected to be read next, from declared plans or its own history, after
   * {@code accesses} reads of the policy. Several jobs' reads combine as rates: a chunk that two
   * jobs will read in ten seconds each is worth what one read in five seconds is (with one job
   * this is Belady's next use).
   */
  double of(int key, double now, long accesses) {
    double rate = plans.rate(key, accesses);
    rate += streams.passRate(key, groupOf[key], now);
    double popular = elsewhere[key] ? NEVER : popular(key, now, accesses);
    double best;
    if (rate > 0) {
      // Expected reads per second from every source; a popularity guess adds its own rate.
      best = popular < NEVER ? now + 1 / (rate + 1 / Math.max(1e-9, popular - now)) : now + 1 / rate;
    } else {
      best = popular;
    }
    if (best == NEVER && !plans.planned(key) && !elsewhere[key]) {
      best = history.expected(key, now, NEVER);
    }
    return best;
  }
}
