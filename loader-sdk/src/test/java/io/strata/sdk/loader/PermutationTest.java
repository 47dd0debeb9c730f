package io.strata.sdk.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.BitSet;
import org.junit.jupiter.api.Test;

class PermutationTest {
  @Test
  void isABijectionForManySizes() {
    for (long n : new long[] {0, 1, 2, 3, 7, 64, 100, 1000, 4097, 65_537}) {
      Permutation p = new Permutation(n, 42);
      BitSet seen = new BitSet();
      for (long i = 0; i < n; i++) {
        long x = p.apply(i);
        assertTrue(x >= 0 && x < n);
        assertTrue(!seen.get((int) x), "duplicate " + x + " for n=" + n);
        seen.set((int) x);
      }
      assertEquals(n, seen.cardinality());
    }
  }

  @Test
  void dependsOnTheSeedOnlyAndLooksShuffled() {
    Permutation a = new Permutation(10_000, 1);
    Permutation b = new Permutation(10_000, 1);
    Permutation c = new Permutation(10_000, 2);
    int fixed = 0;
    int sameAsOther = 0;
    for (long i = 0; i < 10_000; i++) {
      assertEquals(a.apply(i), b.apply(i));
      fixed += a.apply(i) == i ? 1 : 0;
      sameAsOther += a.apply(i) == c.apply(i) ? 1 : 0;
    }
    assertTrue(fixed < 20, "few fixed points: " + fixed);
    assertTrue(sameAsOther < 20);
    assertNotEquals(a.apply(0), c.apply(0));
  }

  @Test
  void aBatchAtATimeGivesWhatOneAtATimeGives() {
    for (long n : new long[] {1, 5, 1000, 65_537, 8_000_000, 1L << 32, (1L << 40) + 3}) {
      Permutation p = new Permutation(n, 9);
      for (int stride : new int[] {1, 3}) {
        int count = (int) Math.min(5_000, n / stride);
        long first = n > 100_000 ? n / 2 : 0;
        if (first + (long) (count - 1) * stride >= n) {
          first = 0;
        }
        long[] out = new long[count];
        p.applyAll(first, stride, out, count);
        for (int k = 0; k < count; k++) {
          long x = p.apply(first + (long) k * stride);
          assertEquals(x, out[k], "n=" + n + " k=" + k);
          assertTrue(x >= 0 && x < n);
        }
      }
    }
  }

  @Test
  void consecutivePositionsLandFarApartAndEvenly() {
    // A batch is consecutive positions: its rows should spread over the whole range like a
    // uniform sample (each eighth of the rows about an eighth of them), and neighbours should not
    // stay neighbours.
    long n = 1_000_000;
    Permutation p = new Permutation(n, 3);
    long[] out = new long[16_384];
    p.applyAll(0, 1, out, out.length);
    int[] eighth = new int[8];
    int close = 0;
    for (int k = 0; k < out.length; k++) {
      eighth[(int) (out[k] * 8 / n)]++;
      if (k > 0 && Math.abs(out[k] - out[k - 1]) < 1000) {
        close++;
      }
    }
    for (int e : eighth) {
      assertTrue(Math.abs(e - out.length / 8) < out.length / 8 / 5, "an eighth of the rows got " + e + " of " + out.length);
    }
    // A uniform pair is within 1,000 of each other with probability about 0.002.
    assertTrue(close < 100, close + " neighbours stayed within 1,000 rows");
  }

  @Test
  void outOfRangeBatchesAreRefused() {
    Permutation p = new Permutation(100, 1);
    org.junit.jupiter.api.Assertions.assertThrows(IndexOutOfBoundsException.class, () -> p.applyAll(90, 1, new long[20], 20));
    org.junit.jupiter.api.Assertions.assertThrows(IndexOutOfBoundsException.class, () -> p.applyAll(-1, 1, new long[2], 2));
  }
}
