package io.strata.node.policy;

/**
 * The constants {@link StrataPolicy} is tuned by, each with the measurement that chose it
 * (recorded live traces of {@code bench policy-live} and the generated traces of {@code bench
 * policy}); shared with the parts that compute next uses ({@link DeclaredPlans}, {@link StreamStats}).
 */
final class StrataTuning {
  private StrataTuning() {}

  /** No expected use. */
  static final double NEVER = Double.POSITIVE_INFINITY;
  /**
   * A job's rate is known once its position has moved for this long. Jobs report their step every
   * quarter second; on recorded live traces 1–2 s gave 3–5 points of byte hit ratio over 30 s
   * (a rate unknown for the first half minute of every job), on generated traces 1–2 points.
   */
  static final double RATE_WINDOW_SECONDS = 2;
  /**
   * The next-use heap is rebuilt (stale-early entries corrected) every {@code max(REBUILD_MIN,
   * resident / REBUILD_SHARE)} reads: at most REBUILD_SHARE next-use computations per read,
   * amortized. Rebuilding only every 4,096 reads cost 4–5 points of byte hit ratio on the
   * generated traces; this schedule is within 0.5 point of recomputing before every decision.
   */
  static final int REBUILD_MIN = 64;
  static final int REBUILD_SHARE = 4;

  /**
   * A chunk displaces resident ones only if they are needed at least this many times farther
   * away than it is. On a live node an admission is not instant (the segment must be written)
   * while an eviction is, so swapping chunks whose next uses are nearly equal loses reads; on
   * recorded live traces 1.5 cut flash writes by a fifth to a half at no loss of byte hit ratio,
   * and cost under a point on generated traces (where admission is instant).
   */
  static final double HYSTERESIS = 1.5;

  /**
   * A job's reads of one chunk sooner than this after each other are one read: the loader reports
   * its reads every quarter second, aggregated per chunk, and serves the repeats in between from
   * the blocks it decoded (what one more read of the HDD tier costs is one decode, not one batch).
   * A job's next read of a chunk therefore counts as no sooner than this, whatever its step rate:
   * without the floor, sample-grain shuffles (a step touches nearly every chunk of a stream) made
   * every chunk of a fast job look needed within milliseconds and the policy kept swapping chunks
   * of near-equal worth. On a recorded `bench policy-live` trace, 0.1–0.25 s gave 0.883 of OPT
   * against 0.863 without (0.5 s: 0.849) and cut flash writes 16×; on generated traces, where a
   * job reads a chunk once an epoch, it changes nothing.
   */
  static final double REUSE_SECONDS = 0.25;
}
