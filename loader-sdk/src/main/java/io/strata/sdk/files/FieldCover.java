package io.strata.sdk.files;

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
public final class FieldCover {
  /** Runs with a choice beyond which the cover is found greedily instead of exactly. */
  private static final int EXACT_CHOICES = 12;

  private FieldCover() {}

  /**
   * The fields to read: {@code fieldFeature[i]} is the feature field {@code i} holds (-1 for none
   * that is ever read), {@code wanted} the features to read.
   */
  static boolean[] choose(int[] fieldFeature, boolean[] wanted) {
    Runs runs = runs(fieldFeature, wanted);
    boolean[] take = new boolean[fieldFeature.length];
    for (int r : pick(runs.holds, runs.words, runs.lengths, runs.n, runs.k)) {
      for (int i = runs.starts[r]; i < runs.starts[r] + runs.lengths[r]; i++) {
        take[i] = true;
      }
    }
    return take;
  }

  /** The number of runs {@link #choose} reads: about the read requests per stripe. */
  public static int count(int[] fieldFeature, boolean[] wanted) {
    Runs runs = runs(fieldFeature, wanted);
    return pick(runs.holds, runs.words, runs.lengths, runs.n, runs.k).length;
  }

  /**
   * As {@link #count(int[], boolean[])} for runs already found: run {@code r} holds the features
   * whose bits (0 to {@code k - 1}) are set in {@code holds[r * words .. (r + 1) * words)} and has
   * {@code lengths[r]} fields; every one of the {@code k} features is held by some run.
   */
  public static int count(long[] holds, int words, int[] lengths, int n, int k) {
    return pick(holds, words, lengths, n, k).length;
  }

  /** Maximal runs of fields holding wanted features, the features numbered by first appearance. */
  private record Runs(int[] starts, int[] lengths, long[] holds, int words, int n, int k) {}

  private static Runs runs(int[] fieldFeature, boolean[] wanted) {
    int[] local = new int[wanted.length];
    int k = 0;
    int n = 0;
    int[] starts = new int[(fieldFeature.length + 1) / 2];
    int[] lengths = new int[starts.length];
    int start = -1;
    for (int i = 0; i <= fieldFeature.length; i++) {
      boolean in = i < fieldFeature.length && fieldFeature[i] >= 0 && wanted[fieldFeature[i]];
      if (in && local[fieldFeature[i]] == 0) {
        local[fieldFeature[i]] = ++k; // 1-based: 0 is "not numbered yet"
      }
      if (in && start < 0) {
        start = i;
      } else if (!in && start >= 0) {
        starts[n] = start;
        lengths[n++] = i - start;
        start = -1;
      }
    }
    int words = (k + 63) >>> 6;
    long[] holds = new long[n * words];
    for (int r = 0; r < n; r++) {
      for (int i = starts[r]; i < starts[r] + lengths[r]; i++) {
        int f = local[fieldFeature[i]] - 1;
        holds[r * words + (f >>> 6)] |= 1L << (f & 63);
      }
    }
    return new Runs(starts, lengths, holds, words, n, k);
  }

  /**
   * Indices of the runs to read, in increasing order: those that alone hold a feature, then the
   * fewest that hold the rest (exactly up to {@value #EXACT_CHOICES} runs with a choice: fewest
   * runs, then fewest fields, then the first set in order; greedily beyond). A run is a bit set of
   * the features it holds, so trying a set of runs takes a few word operations.
   */
  private static int[] pick(long[] holds, int words, int[] lengths, int n, int k) {
    int[] holders = new int[k];
    int[] only = new int[k];
    for (int r = 0; r < n; r++) {
      for (int w = 0; w < words; w++) {
        for (long bits = holds[r * words + w]; bits != 0; bits &= bits - 1) {
          int f = (w << 6) + Long.numberOfTrailingZeros(bits);
          holders[f]++;
          only[f] = r;
        }
      }
    }
    boolean[] chosen = new boolean[n];
    long[] covered = new long[words];
    int picked = 0;
    for (int f = 0; f < k; f++) {
      if (holders[f] == 1 && !chosen[only[f]]) {
        chosen[only[f]] = true;
        picked++;
        or(covered, holds, only[f], words);
      }
    }
    int[] choices = new int[n];
    int c = 0;
    for (int r = 0; r < n; r++) {
      if (!chosen[r] && missing(holds, r, words, covered) > 0) {
        choices[c++] = r;
      }
    }
    if (c > 0 && c <= EXACT_CHOICES) {
      Exact e = new Exact(holds, words, lengths, choices, c, k);
      e.search(covered, 0, 0, 0, 0);
      for (int m = e.bestMask; m != 0; m &= m - 1) {
        chosen[choices[Integer.numberOfTrailingZeros(m)]] = true;
        picked++;
      }
    } else if (c > 0) {
      // Greedy: the run that holds the most features still missing (the first of equals), until
      // none is missing.
      while (!all(covered, k)) {
        int bestRun = -1;
        int bestGain = 0;
        for (int x = 0; x < c; x++) {
          int gain = missing(holds, choices[x], words, covered);
          if (gain > bestGain) {
            bestGain = gain;
            bestRun = choices[x];
          }
        }
        chosen[bestRun] = true;
        picked++;
        or(covered, holds, bestRun, words);
      }
    }
    int[] out = new int[picked];
    for (int r = 0, i = 0; r < n; r++) {
      if (chosen[r]) {
        out[i++] = r;
      }
    }
    return out;
  }

  /**
   * The exact cover of the features still missing by the runs with a choice: the fewest runs, then
   * the fewest fields, then the smallest mask over the choices (the earliest runs). Branch and bound:
   * the lowest missing feature is held by one of the runs of any cover, so trying each of those
   * runs in turn (each later branch without the runs the earlier ones tried) reaches every
   * smallest cover once; a branch stops as soon as it cannot be as small as the best found.
   */
  private static final class Exact {
    private final long[] holds;
    private final int words;
    private final int[] lengths;
    private final int[] choices;
    private final int c;
    private final int k;
    private final long[][] stack;
    int bestMask;
    int bestSize = Integer.MAX_VALUE;
    int bestFields = Integer.MAX_VALUE;

    Exact(long[] holds, int words, int[] lengths, int[] choices, int c, int k) {
      this.holds = holds;
      this.words = words;
      this.lengths = lengths;
      this.choices = choices;
      this.c = c;
      this.k = k;
      this.stack = new long[c + 1][words];
    }

    /** {@code forbidden}: runs an earlier branch tried, so that no set of runs is tried twice. */
    void search(long[] covered, int mask, int forbidden, int size, int fields) {
      int f = firstMissing(covered, k);
      if (f < 0) {
        if (size < bestSize || (size == bestSize && (fields < bestFields || (fields == bestFields && mask < bestMask)))) {
          bestSize = size;
          bestFields = fields;
          bestMask = mask;
        }
        return;
      }
      if (size + 1 > bestSize) {
        return;
      }
      long bit = 1L << (f & 63);
      for (int b = 0; b < c; b++) {
        int r = choices[b];
        if (((mask | forbidden) & 1 << b) == 0 && (holds[r * words + (f >>> 6)] & bit) != 0) {
          long[] next = stack[size];
          System.arraycopy(covered, 0, next, 0, words);
          or(next, holds, r, words);
          search(next, mask | 1 << b, forbidden, size + 1, fields + lengths[r]);
          forbidden |= 1 << b;
        }
      }
    }
  }

  /** The lowest of the features 0..k-1 that {@code covered} lacks, or -1. */
  private static int firstMissing(long[] covered, int k) {
    for (int w = 0; w < covered.length; w++) {
      int inWord = Math.min(64, k - (w << 6));
      long full = inWord == 64 ? -1L : (1L << inWord) - 1;
      long lack = ~covered[w] & full;
      if (lack != 0) {
        return (w << 6) + Long.numberOfTrailingZeros(lack);
      }
    }
    return -1;
  }

  private static void or(long[] into, long[] holds, int run, int words) {
    for (int w = 0; w < words; w++) {
      into[w] |= holds[run * words + w];
    }
  }

  /** The features run {@code run} holds that {@code covered} does not. */
  private static int missing(long[] holds, int run, int words, long[] covered) {
    int n = 0;
    for (int w = 0; w < words; w++) {
      n += Long.bitCount(holds[run * words + w] & ~covered[w]);
    }
    return n;
  }

  /** Whether {@code covered} holds all of the features 0..k-1. */
  private static boolean all(long[] covered, int k) {
    for (int w = 0; w < covered.length; w++) {
      int inWord = Math.min(64, k - (w << 6));
      long full = inWord == 64 ? -1L : (1L << inWord) - 1;
      if ((covered[w] & full) != full) {
        return false;
      }
    }
    return true;
  }
}
