package io.strata.node.policy;

import java.util.Arrays;
import java.util.function.IntToDoubleFunction;

/**
 * The part of {@link StrataPolicy} that weighs chunks by what they cost the slow tier: each key's
 * cost as the node tells it ({@link CachePolicy#slowBytes}: stored bytes and one read's
 * positioning, in bytes), and the two decisions made with them under a flash write budget (below):
 * victims by worth where next use refuses a swap ({@link #victims}), and free space kept for what
 * fills the budget ({@link #belowFill}, against {@link #updateFill}). A key not told weighs its SSD
 * size.
 *
 * <h2>Worth the write</h2>
 *
 * Next use alone swaps without end where jobs read every chunk once an epoch in shuffled orders
 * (issue 58's fleet: four jobs, a quarter of the data fitting): every chunk's next use is
 * somewhere in the next epoch, the chunk just missed often sooner than some resident, and each
 * swap costs a segment write and a second read of the slow tier for, at best, one read saved
 * before the victim is missed in turn (the node wrote 7–9 times its budget in three epochs). So
 * where writes cost (a flash write budget is set) and the chunk to admit has declared passes still
 * to come (runs of consecutive steps count once: a block's steps read a chunk from one decode),
 * a victim that will be read again must save the slow tier less per SSD byte (its passes left
 * times what a pass of it costs the slow tier, over its size), and the victims' passes times
 * their slow-tier costs must stay below the chunk's: over the declared plans, the swap must save
 * more of the slow tier's time than it gives up. What a pass costs the slow tier is, where the
 * node can tell it ({@link StrataPolicy#slowBytes}), the chunk's stored, compressed size (the
 * Parquet column chunk, the ORC streams) plus one read's positioning, as the bytes the tier transfers meanwhile
 * (an HDD's 11.8 ms at 200 MB/s: 2.35 MB), else its SSD size. Bytes alone made an SSD byte of the
 * fleet's 8-float embedding worth three of its ids and twenty of its 52 KB date chunks, and kept
 * the small columns off the SSD, though each of their misses cost the disk a whole request: the
 * slow tier served its 85 requests a second, and those bounded the later epochs. With the
 * positioning counted (2026-11-29) the small, shared columns fill the budget first: the slow
 * tier's requests fell by a seventh, its bytes rose by a twelfth.
 *
 * <p>Next use alone cannot act on that: Belady's order is the best one when every miss costs the
 * same, and in the fleet the cheap columns of the fast jobs are always needed soonest, so they
 * were never victims and the slow job's incompressible embedding never got in (16 % of its reads
 * from the SSD). So, for a chunk whose slow-tier cost is known, two rules more, under a write
 * budget only: where next use refuses a swap, victims that save the slow tier at least twice less
 * per SSD byte over the declared plans are taken instead, least first, whenever they are
 * needed (a bounded scan of the residents); and free space is not written for a chunk worth less
 * than half what the budget's last byte is worth when the declared chunks, best first, fill it
 * (recomputed with the heap's rebuilds), since that write would be spent again for the chunk that
 * displaces it. In the fleet (2026-11-29) the two took the slow
 * tier's bytes from 4.8 to 4.1 GB and the SSD's writes from 2.9 to 2.1 budgets (weighed by bytes
 * then). Where no slow-tier costs are told (the simulator's generated traces) neither applies.
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
