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
}
