package io.strata.sdk.dataset;

import java.util.ArrayList;
import java.util.List;

/**
 * Which of a stripe's top-level fields a reader reads for a set of features when some features are
 * stored twice (replicas, docs/FORMAT.md §1.5): the whole of some maximal runs of fields that hold
 * wanted features, as few runs as hold every wanted feature. Adjacent column streams are
 * contiguous in a stripe, so a run is about one read request; reading a run whole, a second copy of
 * a feature inside it included, costs bytes but no request. Without replicas every run holds a
 * feature no other run holds, and the answer is every run: the plain projection.
 *
 * <p>The relayout's cost model ({@link CoAccessOrder}) and the ORC reader ({@link OrcTable}) both
 * ask this class, so the runs a layout is chosen for are the runs the reader then issues.
 * Stateless and thread-safe.
 */
final class FieldCover {
  /** Runs with a choice beyond which the cover is found greedily instead of exactly. */
  private static final int EXACT_CHOICES = 12;

  private FieldCover() {}

  /**
   * The fields to read: {@code fieldFeature[i]} is the feature field {@code i} holds (-1 for none
   * that is ever read), {@code wanted} the features to read.
   */
  static boolean[] choose(int[] fieldFeature, boolean[] wanted) {
    List<int[]> runs = runs(fieldFeature, wanted);
    boolean[] take = new boolean[fieldFeature.length];
    for (int r : pick(fieldFeature, wanted, runs)) {
      for (int i = runs.get(r)[0]; i < runs.get(r)[1]; i++) {
        take[i] = true;
      }
    }
    return take;
  }

  /** The number of runs {@link #choose} reads: about the read requests per stripe. */
  static int count(int[] fieldFeature, boolean[] wanted) {
    return pick(fieldFeature, wanted, runs(fieldFeature, wanted)).size();
  }

  /** Maximal runs [start, end) of fields holding wanted features. */
  private static List<int[]> runs(int[] fieldFeature, boolean[] wanted) {
    List<int[]> runs = new ArrayList<>();
    int start = -1;
    for (int i = 0; i <= fieldFeature.length; i++) {
      boolean in = i < fieldFeature.length && fieldFeature[i] >= 0 && wanted[fieldFeature[i]];
      if (in && start < 0) {
        start = i;
      } else if (!in && start >= 0) {
        runs.add(new int[] {start, i});
        start = -1;
      }
    }
    return runs;
  }

  /** Indices of the runs to read: those that alone hold a feature, then the fewest that hold the rest. */
  private static List<Integer> pick(int[] fieldFeature, boolean[] wanted, List<int[]> runs) {
    int features = wanted.length;
    // For each feature, the runs holding it (a feature is stored at most a few times).
    int[] holders = new int[features];
    int[] only = new int[features];
    java.util.Arrays.fill(only, -1);
    for (int r = 0; r < runs.size(); r++) {
      for (int i = runs.get(r)[0]; i < runs.get(r)[1]; i++) {
        int f = fieldFeature[i];
        if (only[f] != r) {
          holders[f]++;
          only[f] = r;
        }
      }
    }
    boolean[] chosen = new boolean[runs.size()];
    boolean[] covered = new boolean[features];
    List<Integer> out = new ArrayList<>();
    for (int f = 0; f < features; f++) {
      if (wanted[f] && holders[f] == 1 && !chosen[only[f]]) {
        chosen[only[f]] = true;
        out.add(only[f]);
        mark(fieldFeature, runs.get(only[f]), covered);
      }
    }
    List<Integer> choices = new ArrayList<>();
    for (int r = 0; r < runs.size(); r++) {
      if (!chosen[r] && addsAny(fieldFeature, runs.get(r), covered)) {
        choices.add(r);
      }
    }
    if (choices.isEmpty()) {
      out.sort(null);
      return out;
    }
    if (choices.size() <= EXACT_CHOICES) {
      // Fewest runs first, then fewest fields (bytes), then the earliest: deterministic.
      List<Integer> best = null;
      int bestFields = Integer.MAX_VALUE;
      for (int k = 1; k <= choices.size() && best == null; k++) {
        for (int mask = 1; mask < (1 << choices.size()); mask++) {
          if (Integer.bitCount(mask) != k) {
            continue;
          }
          boolean[] cov = covered.clone();
          int fields = 0;
          List<Integer> set = new ArrayList<>();
          for (int b = 0; b < choices.size(); b++) {
            if ((mask & (1 << b)) != 0) {
              int[] run = runs.get(choices.get(b));
              mark(fieldFeature, run, cov);
              fields += run[1] - run[0];
              set.add(choices.get(b));
            }
          }
          if (coversAll(wanted, cov) && fields < bestFields) {
            best = set;
            bestFields = fields;
          }
        }
      }
      out.addAll(best);
    } else {
      // Greedy: the run that holds the most features still missing, until none is missing.
      while (!coversAll(wanted, covered)) {
        int bestRun = -1;
        int bestGain = 0;
        for (int r : choices) {
          int gain = 0;
          for (int i = runs.get(r)[0]; i < runs.get(r)[1]; i++) {
            gain += covered[fieldFeature[i]] ? 0 : 1;
          }
          if (gain > bestGain) {
            bestGain = gain;
            bestRun = r;
          }
        }
        out.add(bestRun);
        mark(fieldFeature, runs.get(bestRun), covered);
      }
    }
    out.sort(null);
    return out;
  }

  private static void mark(int[] fieldFeature, int[] run, boolean[] covered) {
    for (int i = run[0]; i < run[1]; i++) {
      covered[fieldFeature[i]] = true;
    }
  }

  private static boolean addsAny(int[] fieldFeature, int[] run, boolean[] covered) {
    for (int i = run[0]; i < run[1]; i++) {
      if (!covered[fieldFeature[i]]) {
        return true;
      }
    }
    return false;
  }

  private static boolean coversAll(boolean[] wanted, boolean[] covered) {
    for (int f = 0; f < wanted.length; f++) {
      if (wanted[f] && !covered[f]) {
        return false;
      }
    }
    return true;
  }
}
