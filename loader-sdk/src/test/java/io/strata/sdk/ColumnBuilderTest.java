package io.strata.sdk;

import io.strata.sdk.format.ColumnBuilder;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ColumnBuilderTest {
  @Test
  void everyTypeRoundTripsThroughTheBuilder() {
    try (Arena arena = Arena.ofConfined()) {
      long seed = 1;
      for (FeatureType t : TestData.ALL_TYPES) {
        TestData.Sample s = TestData.random(t, 1000, 0.1, seed++, arena);
        TestData.assertColumn(s.expected(), s.column(), t.toString());
      }
    }
  }

  @Test
  void appendRangeCopiesArbitraryRangesIncludingUnalignedBits() {
    try (Arena arena = Arena.ofConfined()) {
      SplittableRandom r = new SplittableRandom(7);
      long seed = 100;
      for (FeatureType t : TestData.ALL_TYPES) {
        TestData.Sample s = TestData.random(t, 700, 0.2, seed++, arena);
        // Gather ranges from a sliced view too, so that non-zero offsets are exercised.
        Column source = s.column().slice(3, 690);
        List<Object> sourceExpected = s.expected().subList(3, 693);
        ColumnBuilder b = new ColumnBuilder(t, arena, 0);
        List<Object> expected = new ArrayList<>();
        for (int k = 0; k < 40; k++) {
          int from = r.nextInt(source.length());
          int count = r.nextInt(Math.min(80, source.length() - from) + 1);
          b.appendRange(source, from, count);
          expected.addAll(sourceExpected.subList(from, from + count));
          if (k % 7 == 0) {
            b.appendNull();
            expected.add(null);
          }
        }
        TestData.assertColumn(expected, b.build(), t.toString());
      }
    }
  }

  @Test
  void nullCountsAreExact() {
    try (Arena arena = Arena.ofConfined()) {
      TestData.Sample s = TestData.random(FeatureType.INT32, 5000, 0.3, 9, arena);
      long nulls = s.expected().stream().filter(v -> v == null).count();
      assertEquals(nulls, s.column().nullCount());
      Column slice = s.column().slice(123, 2000);
      assertEquals(s.expected().subList(123, 2123).stream().filter(v -> v == null).count(), slice.nullCount());
    }
  }

  @Test
  void misuseIsRejectedWithClearErrors() {
    try (Arena arena = Arena.ofConfined()) {
      ColumnBuilder b = new ColumnBuilder(FeatureType.INT32, arena, 1);
      assertThrows(IllegalStateException.class, () -> b.appendBytes(new byte[1], 0, 1));
      ColumnBuilder s = new ColumnBuilder(FeatureType.STRING, arena, 1);
      Column ints = b.build();
      assertThrows(IllegalArgumentException.class, () -> s.appendRange(ints, 0, 0));
      assertThrows(IndexOutOfBoundsException.class, () -> ints.getLong(0));
    }
    Column escaped;
    try (Arena arena = Arena.ofConfined()) {
      ColumnBuilder b = new ColumnBuilder(FeatureType.INT64, arena, 1);
      b.appendLong(5);
      escaped = b.build();
    }
    Column closed = escaped;
    assertThrows(IllegalStateException.class, () -> closed.getLong(0));
  }
}
