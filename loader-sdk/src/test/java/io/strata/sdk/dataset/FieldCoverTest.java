package io.strata.sdk.dataset;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

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
}
