package io.strata.node.policy;

import java.util.Arrays;

/**
 * What each key's own reads say, for {@link StrataPolicy}'s guess when no plan and no stream
 * does: how often it was read (a count halved now and then, so that old popularity fades), when
 * it was read last, and the gap between its reads (smoothed, 0.8 of the old gap and 0.2 of the
 * new). Arrays indexed by key, grown on demand.
 *
 * <p>Not thread-safe: its policy's alone, under whatever serializes the policy.
 */
final class ReadHistory {
  private int[] freq = new int[256];
  private double[] lastRead = new double[256];
  private double[] gap = new double[256];

  /** Room for keys below {@code n}. */
  void ensure(int n) {
    if (n > freq.length) {
      freq = Arrays.copyOf(freq, n);
      lastRead = Arrays.copyOf(lastRead, n);
      gap = Arrays.copyOf(gap, n);
    }
  }

  /** Halves every count. */
  void decay() {
    for (int k = 0; k < freq.length; k++) {
      freq[k] >>= 1;
    }
  }

  /** {@code key} is read at {@code time}. */
  void read(int key, double time) {
    if (freq[key] > 0 && time > lastRead[key]) {
      double g = time - lastRead[key];
      gap[key] = gap[key] == 0 ? g : 0.8 * gap[key] + 0.2 * g;
    }
    freq[key] = Math.min(freq[key] + 1, 1 << 20);
    lastRead[key] = time;
  }

  /** How often {@code key} was read (the heap's tie-breaker: the less read goes first). */
  int freq(int key) {
    return freq[key];
  }

  /**
   * When {@code key}'s own reads expect it next: a gap after its last read, or, when that is past,
   * the longer of its gap and the time since then from now; {@code never} with fewer than two
   * reads or no gap.
   */
  double expected(int key, double now, double never) {
    if (freq[key] < 2 || gap[key] <= 0) {
      return never;
    }
    double expected = lastRead[key] + gap[key];
    return expected >= now ? expected : now + Math.max(gap[key], now - lastRead[key]);
  }
}
