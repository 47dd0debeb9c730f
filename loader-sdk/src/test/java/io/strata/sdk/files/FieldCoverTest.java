package io.strata.sdk.files;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class FieldCoverTest {
  private static boolean[] wanted(int features, int... f) {
    boolean[] w = new boolean[features];
    for (int x : f) {
      w[x] = true;
    }
    return w;
  }

  @Test
  void withoutCopiesEveryRunOfWantedFieldsIsRead() {
    int[] fields = {0, 1, 2, 3};
    assertArrayEquals(new boolean[] {true, false, true, false}, FieldCover.choose(fields, wanted(4, 0, 2)));
    assertEquals(2, FieldCover.count(fields, wanted(4, 0, 2)));
    assertEquals(1, FieldCover.count(fields, wanted(4, 1, 2, 3)));
    assertEquals(0, FieldCover.count(fields, wanted(4)));
  }

  @Test
  void aSecondCopyNextToAnotherWantedFeatureSavesARun() {
    // Feature 0 stored at 0 and at 3, beside feature 2: {0, 2} is one run, read from the copy.
    int[] fields = {0, 1, 2, 0};
    assertArrayEquals(new boolean[] {false, false, true, true}, FieldCover.choose(fields, wanted(3, 0, 2)));
    assertEquals(1, FieldCover.count(fields, wanted(3, 0, 2)));
    // {0, 1}: the first place, one run; {0, 1, 2}: the whole file, one run (the copy read with it).
    assertArrayEquals(new boolean[] {true, true, false, false}, FieldCover.choose(fields, wanted(3, 0, 1)));
    assertEquals(1, FieldCover.count(fields, wanted(3, 0, 1, 2)));
  }

  @Test
  void amongEqualCoversTheOneWithFewerFieldsThenTheEarliest() {
    int[] fields = {0, 1, 0};
    assertArrayEquals(new boolean[] {true, false, false}, FieldCover.choose(fields, wanted(2, 0)));
    // {0, 1} in runs [0 1], [0], [1]: the first run alone.
    int[] f2 = {0, 1, 2, 0, 3, 1};
    assertArrayEquals(new boolean[] {true, true, false, false, false, false}, FieldCover.choose(f2, wanted(4, 0, 1)));
    // Fields that hold no feature of this dataset (-1) are never read.
    assertEquals(2, FieldCover.count(new int[] {0, -1, 1}, wanted(2, 0, 1)));
  }

  @Test
  void theCoverIsTheFewestRunsOnRandomLayoutsWithManyFeatures() {
    // Up to 150 features (more than one word of bits), each stored once or twice in a random order;
    // every answer covers what is wanted, and where there are few enough runs it is compared with
    // the choice found by trying every set of them.
    Random r = new Random(11);
    int checked = 0;
    for (int trial = 0; trial < 300; trial++) {
      int features = 1 + r.nextInt(trial < 150 ? 20 : 150);
      int[] fields = layout(r, features);
      boolean[] wanted = new boolean[features];
      for (int f = 0; f < features; f++) {
        wanted[f] = trial % 10 == 9 ? r.nextInt(5) > 0 : r.nextInt(3) == 0; // every tenth: most of them
      }
      boolean[] take = FieldCover.choose(fields, wanted);
      int runs = 0;
      for (int i = 0; i < fields.length; i++) {
        if (take[i]) {
          assertEquals(true, wanted[fields[i]], "only wanted fields are read");
          runs += i == 0 || !take[i - 1] ? 1 : 0;
        }
      }
      boolean[] got = new boolean[features];
      for (int i = 0; i < fields.length; i++) {
        got[fields[i]] |= take[i];
      }
      assertArrayEquals(wanted, got, "every wanted feature read, trial " + trial);
      assertEquals(runs, FieldCover.count(fields, wanted), "count is the runs choose reads");
      boolean[] expected = fewest(fields, wanted);
      if (expected != null) {
        assertArrayEquals(expected, take, "the fewest runs, then fields, then the earliest: trial " + trial);
        checked++;
      }
    }
    assertTrue(checked > 200, "most layouts checked by brute force: " + checked);
  }

  private static int[] layout(Random r, int features) {
    List<Integer> l = new ArrayList<>();
    for (int f = 0; f < features; f++) {
      l.add(f);
      if (r.nextInt(4) == 0) {
        l.add(f);
      }
    }
    Collections.shuffle(l, r);
    return l.stream().mapToInt(Integer::intValue).toArray();
  }

  /**
   * By trying every set of the maximal runs of wanted fields: of those holding every wanted feature,
   * the fewest runs, then the fewest fields, then the smallest mask (the earliest runs); null if
   * there are too many runs to try.
   */
  private static boolean[] fewest(int[] fields, boolean[] wanted) {
    List<int[]> runs = new ArrayList<>();
    for (int i = 0; i < fields.length; ) {
      if (!wanted[fields[i]]) {
        i++;
        continue;
      }
      int s = i;
      while (i < fields.length && wanted[fields[i]]) {
        i++;
      }
      runs.add(new int[] {s, i});
    }
    if (runs.size() > 16) {
      return null;
    }
    int best = -1;
    int bestSize = Integer.MAX_VALUE;
    int bestFields = Integer.MAX_VALUE;
    for (int mask = 0; mask < 1 << runs.size(); mask++) {
      boolean[] cov = new boolean[wanted.length];
      int n = 0;
      for (int b = 0; b < runs.size(); b++) {
        if ((mask & 1 << b) != 0) {
          for (int i = runs.get(b)[0]; i < runs.get(b)[1]; i++) {
            cov[fields[i]] = true;
            n++;
          }
        }
      }
      boolean all = true;
      for (int f = 0; f < wanted.length; f++) {
        all &= !wanted[f] || cov[f];
      }
      int size = Integer.bitCount(mask);
      if (all && (size < bestSize || (size == bestSize && n < bestFields))) {
        best = mask;
        bestSize = size;
        bestFields = n;
      }
    }
    boolean[] take = new boolean[fields.length];
    for (int b = 0; b < runs.size(); b++) {
      if ((best & 1 << b) != 0) {
        for (int i = runs.get(b)[0]; i < runs.get(b)[1]; i++) {
          take[i] = true;
        }
      }
    }
    return take;
  }
}
