package io.strata.sdk.loader;

/**
 * A pseudo-random bijection of {@code [0, n)} that needs no memory: a four-round Feistel network
 * over the smallest even power of two covering {@code n}, with cycle walking back into range.
 * The same {@code (n, seed)} always gives the same permutation, so a shuffled epoch can be
 * replayed from any position after a restart without storing the order.
 */
final class Permutation {
  private static final int ROUNDS = 4;
  private final long n;
  private final int halfBits;
  private final long mask;
  private final long[] keys = new long[ROUNDS];

  Permutation(long n, long seed) {
    if (n < 0) {
      throw new IllegalArgumentException("permutation size must not be negative: " + n);
    }
    this.n = n;
    int bits = n <= 1 ? 2 : 64 - Long.numberOfLeadingZeros(n - 1);
    this.halfBits = Math.max(1, (bits + 1) / 2);
    this.mask = (1L << halfBits) - 1;
    long k = seed;
    for (int r = 0; r < ROUNDS; r++) {
      k = mix(k + 0x9E3779B97F4A7C15L);
      keys[r] = k;
    }
  }

  long size() {
    return n;
  }

  /** The image of {@code i}, which must lie in {@code [0, n)}. */
  long apply(long i) {
    if (i < 0 || i >= n) {
      throw new IndexOutOfBoundsException("index " + i + " outside [0, " + n + ")");
    }
    long x = i;
    do {
      x = encrypt(x);
    } while (x >= n);
    return x;
  }

  private long encrypt(long x) {
    long left = x >>> halfBits;
    long right = x & mask;
    for (int r = 0; r < ROUNDS; r++) {
      long next = left ^ (mix(right ^ keys[r]) & mask);
      left = right;
      right = next;
    }
    return (left << halfBits) | right;
  }

  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
