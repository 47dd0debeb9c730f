package io.strata.node.policy;

import java.util.Arrays;
import java.util.function.IntToDoubleFunction;

/**
 * The part of {@link StrataPolicy} that weighs chunks by what they cost the slow tier: each key's
 * cost as the node tells it ({@link CachePolicy#slowBytes}: stored bytes and one read's
 * positioning, in bytes), and the two
 * decisions made with them under a flash write budget (see "Worth the write" in the policy's
 * note): victims by worth where next use refuses a swap ({@link #victims}), and free space kept
 * for what fills the budget ({@link #belowFill}, against {@link #updateFill}). A key not told
 * weighs its SSD size.
 *
 * <p>Not thread-safe: the policy's, under its caller's lock.
 */
final class SlowTierWorth {
  /** How many times fewer slow-tier bytes per SSD byte a victim chosen by worth must save than the chunk it makes room for. */
  static final double MARGIN = 2.0;
  /** Residents {@link #victims} looks at, and keys {@link #updateFill} samples, at most per call. */
  static final int SCAN = 4096;

  /** What a miss of each key reads from the slow tier (0: not told). */
  private long[] slow = new long[256];
  /** The highest key told (-1: none). */
  private int maxKey = -1;
  /** See {@link #updateFill}. */
  private double fillWorth;
  /** Where {@link #victims}' next bounded scan of the residents starts. */
  private long cursor;
  /** Keys told, admissions whose victims were chosen by worth, and writes into free space refused. */
  long told;
  long swaps;
  long belowFill;

  void ensure(int n) {
    if (n > slow.length) {
      slow = Arrays.copyOf(slow, n);
    }
  }

  /** Records what a miss of {@code key} reads from the slow tier. */
  void set(int key, long slowBytes) {
    ensure(key + 1);
    if (slow[key] == 0 && slowBytes > 0) {
      told++;
    }
    slow[key] = Math.max(0, slowBytes);
    maxKey = Math.max(maxKey, key);
  }

  /** Whether the node told this key's slow-tier bytes. */
  boolean known(int key) {
    return key < slow.length && slow[key] > 0;
  }

  /** The slow-tier bytes a read of {@code key} from the SSD saves: as told, else its SSD {@code size}. */
  long saves(int key, long size) {
    return known(key) ? slow[key] : size;
  }

  /**
   * The worth (declared passes times slow-tier bytes, per SSD byte) at which the declared chunks
   * whose slow-tier bytes are known, best first, fill {@code budget}; 0 where they do not fill it.
   * Estimated from at most {@link #SCAN} of the keys (a sample spread over them), each standing for
   * its share of the rest. The policy recomputes it with its next-use heap.
   */
  void updateFill(long budget, long[] size, DeclaredPlans plans) {
    fillWorth = 0;
    if (maxKey < 0) {
      return;
    }
    int keys = maxKey + 1;
    int stride = Math.max(1, keys / SCAN);
    double[] worth = new double[Math.min(keys, SCAN + 1)];
    long[] bytes = new long[worth.length];
    int n = 0;
    for (int k = 0; k < keys && n < worth.length; k += stride) {
      if (slow[k] > 0 && k < size.length && size[k] > 0) {
        int passes = plans.futurePasses(k);
        if (passes > 0) {
          worth[n] = (double) passes * slow[k] / size[k];
          bytes[n++] = size[k];
        }
      }
    }
    Integer[] order = new Integer[n];
    for (int i = 0; i < n; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> Double.compare(worth[b], worth[a]));
    double filled = 0;
    for (Integer i : order) {
      filled += (double) bytes[i] * stride;
      if (filled >= budget) {
        fillWorth = worth[i];
        return;
      }
    }
  }

  /**
   * Whether a write into free space for {@code key} ({@code passes} declared, {@code bytes} on the
   * SSD) is worth less than half what the budget's last byte is worth: that write would be spent
   * again for the chunk that displaces it.
   */
  boolean belowFill(int key, int passes, long bytes) {
    if (fillWorth > 0 && known(key) && (double) passes * slow[key] / bytes * MARGIN < fillWorth) {
      belowFill++;
      return true;
    }
    return false;
  }

  /**
   * For a chunk whose slow-tier bytes are known, with {@code reads} declared passes: victims that
   * would save the slow tier at least {@link #MARGIN} times fewer bytes per SSD byte over the
   * declared plans, least first, whenever they are needed, and together less than the chunk would;
   * null when too few such residents free {@code need} bytes beyond {@code free}. Scans at most
   * {@link #SCAN} residents, from a point that moves on with every call.
   */
  int[] victims(int key, long need, long free, int reads, long[] size, boolean[] pinned, ResidentKeys residents,
      IntToDoubleFunction nextUse, DeclaredPlans plans) {
    double want = (double) reads * saves(key, size[key]) / size[key];
    int n = residents.count();
    int scan = Math.min(n, SCAN);
    int[] cand = new int[scan];
    double[] worth = new double[scan];
    int nc = 0;
    for (int i = 0; i < scan; i++) {
      int k = residents.key((int) ((cursor + i) % n));
      if (pinned[k] || k == key) {
        continue;
      }
      int left = nextUse.applyAsDouble(k) == StrataTuning.NEVER ? 0 : plans.futurePasses(k);
      double w = (double) left * saves(k, size[k]) / size[k];
      if (w * MARGIN < want) {
        cand[nc] = k;
        worth[nc++] = w;
      }
    }
    cursor = n == 0 ? 0 : (cursor + scan) % n;
    Integer[] order = new Integer[nc];
    for (int i = 0; i < nc; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> Double.compare(worth[a], worth[b]));
    double lost = 0;
    int[] out = new int[nc];
    int nv = 0;
    for (int i = 0; i < nc && free < need; i++) {
      int k = cand[order[i]];
      out[nv++] = k;
      free += size[k];
      lost += worth[order[i]] * size[k];
    }
    if (free < need || lost * MARGIN >= (double) reads * saves(key, size[key])) {
      return null;
    }
    swaps++;
    return Arrays.copyOf(out, nv);
  }
}
