package io.strata.sdk.loader;

import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.tier.SegmentSource;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;

/**
 * Substitutable reads (after Quiver): within an epoch, the loader may deliver its steps in another
 * order, so that steps whose chunks are on the SSD tier now come before those that would be read
 * from ORC. Every step of every epoch is still delivered exactly once; only the order within the
 * epoch changes, and never beyond a window: the next batch is the step, among the first {@code
 * window} not yet chosen, with the largest share of its rows' feature chunks resident, when that
 * share exceeds the next step's by at least {@link #MARGIN} (otherwise the next step: with nothing
 * resident, or everything alike, the order is the plan's). The steps delivered are
 * what a checkpoint records ({@link Checkpoint#ahead}), so a resumed loader delivers exactly the
 * rest of the epoch.
 *
 * <p>Threads: {@link #choose} runs under the prefetcher's lock (one call at a time, in order of
 * delivery); {@link #delivered} and {@link #position} on the consumer's thread. The two sides
 * share nothing but immutable configuration.
 */
final class Substitution {
  private final Plan plan;
  private final Dataset dataset;
  private final SegmentSource store;
  private final List<String> features;
  private final long stepsPerEpoch;
  private final int window;
  private final int planHash;
  /** The share of a step's rows a later step must have resident beyond the next step's to be taken first. */
  static final double MARGIN = 0.1;

  // The choosing side.
  private int chooseEpoch = -1;
  private BitSet chosen = new BitSet();
  private long chooseBase;
  private EpochOrder order;
  /** Scores of the window's steps (slot {@code s % window}), valid while the store's residency generation holds. */
  private final double[] scores;
  private final long[] scoreStep;
  private long scoresGeneration = Long.MIN_VALUE;
  private final Checkpoint resume;

  // The delivering side.
  private int deliverEpoch;
  private BitSet delivered = new BitSet();
  private long deliverBase;

  /**
   * @param depth batches prefetched at most: chosen steps not yet delivered; the window is narrowed
   *     so that every step delivered ahead fits the checkpoint's 63 bits
   */
  Substitution(Plan plan, Dataset dataset, SegmentSource store, List<String> features, long stepsPerEpoch, int depth,
      int planHash, Checkpoint resume) {
    this.plan = plan;
    this.dataset = dataset;
    this.store = store;
    this.features = List.copyOf(features);
    this.stepsPerEpoch = stepsPerEpoch;
    this.window = Math.max(1, Math.min(32, 63 - depth));
    this.planHash = planHash;
    this.resume = resume;
    this.scores = new double[window];
    this.scoreStep = new long[window];
    if (resume != null) {
      deliverEpoch = resume.epoch();
      deliverBase = resume.step();
      delivered = ahead(resume);
    }
  }

  /** The steps of the resumed epoch delivered before the checkpoint. */
  private static BitSet ahead(Checkpoint c) {
    BitSet b = new BitSet();
    b.set(0, (int) Math.min(Integer.MAX_VALUE, c.step()));
    for (int i = 1; i < 64; i++) {
      if ((c.ahead() >>> i & 1) != 0) {
        b.set((int) (c.step() + i));
      }
    }
    return b;
  }

  /** The first delivery position of a loader resumed at {@code c}: the epoch's steps already delivered. */
  static long start(Checkpoint c, long stepsPerEpoch) {
    return c.epoch() * stepsPerEpoch + c.step() + Long.bitCount(c.ahead());
  }

  /** The global step the {@code n}-th batch (in delivery order) is. */
  long choose(long n) {
    int epoch = (int) (n / stepsPerEpoch);
    if (epoch != chooseEpoch) {
      chooseEpoch = epoch;
      chosen = resume != null && resume.epoch() == epoch ? ahead(resume) : new BitSet();
      chooseBase = chosen.nextClearBit(0);
      order = plan.order(epoch);
      scoresGeneration = Long.MIN_VALUE;
    }
    long generation = store == null ? 0 : store.generation();
    if (generation != scoresGeneration) {
      Arrays.fill(scoreStep, -1);
      scoresGeneration = generation;
    }
    long best = -1;
    double bestScore = -1;
    double first = -1;
    long end = Math.min(stepsPerEpoch, chooseBase + window);
    for (long s = chooseBase; s < end; s++) {
      if (chosen.get((int) s)) {
        continue;
      }
      int slot = (int) (s % window);
      double score;
      if (scoreStep[slot] == s) {
        score = scores[slot];
      } else {
        score = score(s);
        scores[slot] = score;
        scoreStep[slot] = s;
      }
      if (first < 0) {
        first = score;
      }
      if (score > bestScore) {
        bestScore = score;
        best = s;
      }
    }
    // Out of order only for a clear gain: reordering for a few rows more costs the node its view of
    // where the job is (it hears the last step before which every step was delivered).
    if (bestScore < first + MARGIN) {
      best = chooseBase;
    }
    chosen.set((int) best);
    chooseBase = chosen.nextClearBit((int) chooseBase);
    // The node hears, as the loader's steps are produced (as without substitution), the last step
    // before which every step of the epoch is being produced.
    if (store != null && epoch * stepsPerEpoch + chooseBase - 1 >= 0) {
      store.step(epoch * stepsPerEpoch + chooseBase - 1);
    }
    return epoch * stepsPerEpoch + best;
  }

  /** The share of step {@code s}'s rows and features that the SSD tier holds now. */
  private double score(long s) {
    if (store == null) {
      return 0;
    }
    int units = plan.unitsInStep(s);
    long rows = 0;
    double resident = 0;
    int lastChunk = -1;
    double lastShare = 0;
    for (int k = 0; k < units; k++) {
      long u = plan.unit(order, s, k);
      int r = plan.unitRows(u);
      if (r == 0) {
        continue;
      }
      int c = dataset.chunkOf(plan.unitStart(u));
      if (c != lastChunk) {
        int held = 0;
        for (String f : features) {
          if (store.resident(dataset, f, c)) {
            held++;
          }
        }
        lastChunk = c;
        lastShare = features.isEmpty() ? 0 : (double) held / features.size();
      }
      rows += r;
      resident += r * lastShare;
    }
    return rows == 0 ? 0 : resident / rows;
  }

  /** The consumer received the batch of {@code epoch}, {@code step}. */
  void delivered(int epoch, long step) {
    if (epoch != deliverEpoch) {
      deliverEpoch = epoch;
      delivered = new BitSet();
      deliverBase = 0;
    }
    delivered.set((int) step);
    deliverBase = delivered.nextClearBit((int) deliverBase);
  }

  /** The checkpoint that resumes after what was delivered. */
  Checkpoint position() {
    if (deliverBase >= stepsPerEpoch) {
      return new Checkpoint(deliverEpoch + 1, 0, planHash);
    }
    long ahead = 0;
    for (int i = delivered.nextSetBit((int) deliverBase + 1); i >= 0; i = delivered.nextSetBit(i + 1)) {
      long d = i - deliverBase;
      if (d >= 64) {
        throw new IllegalStateException("step " + i + " was delivered more than 63 steps ahead of step " + deliverBase);
      }
      ahead |= 1L << d;
    }
    return new Checkpoint(deliverEpoch, deliverBase, planHash, ahead);
  }
}
