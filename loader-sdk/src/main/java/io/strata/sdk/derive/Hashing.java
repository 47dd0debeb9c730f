package io.strata.sdk.derive;

import java.nio.charset.StandardCharsets;

/**
 * The stable hashes of the language (docs/FORMAT.md §4): FNV-1a over bytes, the splitmix64
 * finalizer over integers, combined pairwise for crosses and n-grams. They never depend on the
 * JVM, the platform or the run.
 */
final class Hashing {
  private Hashing() {}

  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  static long bytes(byte[] b, int from, int to) {
    long h = 0xCBF29CE484222325L;
    for (int i = from; i < to; i++) {
      h ^= b[i] & 0xFF;
      h *= 0x100000001B3L;
    }
    return mix(h);
  }

  static long string(String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    return bytes(b, 0, b.length);
  }

  static long integer(long v) {
    return mix(v ^ 0x5851F42D4C957F2DL);
  }

  static long real(double v) {
    double d = v == 0.0 ? 0.0 : v;
    return integer(Double.isNaN(d) ? 0x7FF8000000000000L : Double.doubleToLongBits(d));
  }

  static long combine(long a, long b) {
    return mix(a * 0x9E3779B97F4A7C15L ^ b);
  }

  static long bucket(long h, long n) {
    return Long.remainderUnsigned(h, n);
  }

  /** The hash of a null inside a list. */
  static final long NULL = mix(0x6E756C6CL);
}
