package io.strata.node.policy;

import java.util.Arrays;
import java.util.function.IntPredicate;

/**
 * The policy's eviction order: a max-heap of (expected next use, key), ties to the less
 * frequently read. Entries go stale when a key's future changes: each key carries a stamp, bumped
 * when the key is pushed again or leaves the tier ({@link #invalidate}), and only an entry with
 * the key's current stamp counts; stale entries are dropped when they reach the top.
 *
 * <p>Not thread-safe: {@link StrataPolicy}'s, under its caller's serialization.
 */
final class NextUseHeap {
  private double[] eta = new double[256];
  private int[] key = new int[256];
  private int[] keyStamp = new int[256];
  private int[] keyFreq = new int[256];
  private int n;
  private int[] stamp = new int[256];

  void clear() {
    n = 0;
  }

  private void ensureKey(int k) {
    if (k >= stamp.length) {
      stamp = Arrays.copyOf(stamp, Math.max(stamp.length * 2, k + 1));
    }
  }

  /** Makes every entry of {@code k} stale (it left the tier). */
  void invalidate(int k) {
    ensureKey(k);
    stamp[k]++;
  }

  /** Pushes the current next use of {@code k}, read {@code freq} times (earlier entries of it go stale). */
  void push(int k, double e, int freq) {
    ensureKey(k);
    if (n == eta.length) {
      eta = Arrays.copyOf(eta, n * 2);
      key = Arrays.copyOf(key, n * 2);
      keyStamp = Arrays.copyOf(keyStamp, n * 2);
      keyFreq = Arrays.copyOf(keyFreq, n * 2);
    }
    int s = ++stamp[k];
    int i = n++;
    eta[i] = e;
    key[i] = k;
    keyStamp[i] = s;
    keyFreq[i] = freq;
    up(i);
  }

  private boolean above(int a, int b) {
    return eta[a] > eta[b] || (eta[a] == eta[b] && keyFreq[a] < keyFreq[b]);
  }

  private void up(int i) {
    while (i > 0) {
      int p = (i - 1) >>> 1;
      if (!above(i, p)) {
        break;
      }
      swap(i, p);
      i = p;
    }
  }

  private void down(int i) {
    while (true) {
      int l = 2 * i + 1;
      if (l >= n) {
        return;
      }
      int c = l + 1 < n && above(l + 1, l) ? l + 1 : l;
      if (!above(c, i)) {
        return;
      }
      swap(i, c);
      i = c;
    }
  }

  private void swap(int a, int b) {
    double e = eta[a];
    eta[a] = eta[b];
    eta[b] = e;
    int t = key[a];
    key[a] = key[b];
    key[b] = t;
    t = keyStamp[a];
    keyStamp[a] = keyStamp[b];
    keyStamp[b] = t;
    t = keyFreq[a];
    keyFreq[a] = keyFreq[b];
    keyFreq[b] = t;
  }

  /** Drops stale entries, and those of keys not {@code evictable}, from the top; the top key, or -1 when empty. */
  int top(IntPredicate evictable) {
    while (n > 0) {
      int k = key[0];
      if (keyStamp[0] == stamp[k] && evictable.test(k)) {
        return k;
      }
      pop();
    }
    return -1;
  }

  double topEta() {
    return eta[0];
  }

  void pop() {
    n--;
    if (n > 0) {
      eta[0] = eta[n];
      key[0] = key[n];
      keyStamp[0] = keyStamp[n];
      keyFreq[0] = keyFreq[n];
      down(0);
    }
  }
}
