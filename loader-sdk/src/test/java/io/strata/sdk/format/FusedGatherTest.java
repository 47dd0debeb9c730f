package io.strata.sdk.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Column;
import io.strata.sdk.FeatureType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class FusedGatherTest {
  private static final long[] CHUNK_FIRST = {0, 3_000, 9_000};
  private static final long TOTAL = 10_000;

  /** Chunks of {@code type}, row r's value {@code r * 1_000_003 + salt} (narrowed), null where {@code nulls} and r % 7 == 0 in chunk 1. */
  private static Column[] chunks(FeatureType type, long salt, boolean nulls, Arena arena) {
    Column[] out = new Column[CHUNK_FIRST.length];
    for (int c = 0; c < out.length; c++) {
      long end = c + 1 < out.length ? CHUNK_FIRST[c + 1] : TOTAL;
      ColumnBuilder b = new ColumnBuilder(type, arena, 16);
      append(b, 0); // the chunk's column starts one value into its buffer: offsets are honoured
      for (long row = CHUNK_FIRST[c]; row < end; row++) {
        if (nulls && c == 1 && row % 7 == 0) {
          b.appendNull();
        } else if (type.equals(FeatureType.FLOAT64) || type.equals(FeatureType.FLOAT32)) {
          b.appendDouble(row * 0.5 + salt);
        } else {
          b.appendLong(row * 1_000_003L + salt);
        }
      }
      Column whole = b.build();
      out[c] = whole.slice(1, whole.length() - 1);
    }
    return out;
  }

  private static void append(ColumnBuilder b, long v) {
    if (b.type().equals(FeatureType.FLOAT64) || b.type().equals(FeatureType.FLOAT32)) {
      b.appendDouble(v);
    } else {
      b.appendLong(v);
    }
  }

  private static byte[] bytes(Column c) {
    return c.values().asSlice(0, (long) c.length() * c.type().kind().width()).toArray(ValueLayout.JAVA_BYTE);
  }

  @Test
  void oneLoopOverEveryFeatureGivesWhatAPassAFeatureGives() {
    List<FeatureType> types = List.of(FeatureType.INT64, FeatureType.INT8, FeatureType.INT16, FeatureType.FLOAT32,
        FeatureType.FLOAT64, FeatureType.INT32);
    try (Arena arena = Arena.ofConfined()) {
      Column[][] cols = new Column[types.size()][];
      for (int i = 0; i < types.size(); i++) {
        cols[i] = chunks(types.get(i), i, i == 0 || i == 3, arena);
      }
      SplittableRandom random = new SplittableRandom(5);
      long[] rows = new long[6_000];
      for (int k = 0; k < rows.length; k++) {
        rows[k] = random.nextLong(TOTAL);
      }
      GatherOrder g = new GatherOrder().compute(rows, rows.length, CHUNK_FIRST, TOTAL);
      assertTrue(g.runs() >= 3, "rows of every chunk");
      List<ColumnBuilder> fused = new ArrayList<>();
      List<ColumnBuilder> apart = new ArrayList<>();
      for (FeatureType t : types) {
        ColumnBuilder f = new ColumnBuilder(t, arena, 4);
        ColumnBuilder a = new ColumnBuilder(t, arena, 4);
        append(f, -1); // rows already there stay
        append(a, -1);
        fused.add(f);
        apart.add(a);
      }
      assertTrue(FusedGather.fits(fused));
      FusedGather.append(fused, cols, g);
      for (int i = 0; i < types.size(); i++) {
        apart.get(i).appendGathered(cols[i], g);
      }
      for (int i = 0; i < types.size(); i++) {
        Column f = fused.get(i).build();
        Column a = apart.get(i).build();
        assertEquals(rows.length + 1, f.length(), types.get(i).toString());
        assertArrayEquals(bytes(a), bytes(f), "values of " + types.get(i));
        assertEquals(a.nullCount(), f.nullCount(), "nulls of " + types.get(i));
        for (int k = 0; k < f.length(); k++) {
          assertEquals(a.isNull(k), f.isNull(k), types.get(i) + " row " + k);
        }
      }
      assertTrue(fused.get(0).build().nullCount() > 0, "the nulls were gathered");
      // Spot check against the rows themselves, not only against the other path.
      Column first = fused.get(4).build();
      for (int k = 0; k < rows.length; k += 97) {
        assertEquals(rows[k] * 0.5 + 4, first.values().getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, k + 1));
      }
    }
  }

  @Test
  void whatItTakesAndTheLoopsItKeeps() {
    try (Arena arena = Arena.ofConfined()) {
      ColumnBuilder l = new ColumnBuilder(FeatureType.INT64, arena, 4);
      ColumnBuilder i = new ColumnBuilder(FeatureType.INT32, arena, 4);
      ColumnBuilder b = new ColumnBuilder(FeatureType.BOOL, arena, 4);
      ColumnBuilder s = new ColumnBuilder(FeatureType.STRING, arena, 4);
      assertTrue(FusedGather.fits(List.of(l, i)));
      assertFalse(FusedGather.fits(List.of(l)), "one feature: a pass of its own");
      assertFalse(FusedGather.fits(List.of(l, b)), "bit-packed bools are not bytes");
      assertFalse(FusedGather.fits(List.of(l, s)), "not fixed-width");
      assertFalse(FusedGather.fits(Collections.nCopies(FusedGather.MAX + 1, l)), "more than one loop takes");
      assertThrows(IllegalArgumentException.class, () -> FusedGather.append(List.of(l, b), new Column[2][], new GatherOrder()));
      // One loop a set of widths, made once.
      assertSame(FusedGather.loop(new int[] {8, 4}), FusedGather.loop(new int[] {8, 4}));
      assertNotSame(FusedGather.loop(new int[] {8, 4}), FusedGather.loop(new int[] {4, 8}));
    }
  }

  @Test
  void aColumnShorterThanItsChunkIsRefusedBeforeAnythingIsCopied() {
    try (Arena arena = Arena.ofConfined()) {
      Column[][] cols = {chunks(FeatureType.INT64, 0, false, arena), chunks(FeatureType.INT32, 1, false, arena)};
      cols[1][2] = cols[1][2].slice(0, 10); // chunk 2 holds 1,000 rows
      long[] rows = {9_500, 1, 4_000};
      GatherOrder g = new GatherOrder().compute(rows, rows.length, CHUNK_FIRST, TOTAL);
      List<ColumnBuilder> out = List.of(new ColumnBuilder(FeatureType.INT64, arena, 4), new ColumnBuilder(FeatureType.INT32, arena, 4));
      assertThrows(IndexOutOfBoundsException.class, () -> FusedGather.append(out, cols, g));
      assertEquals(0, out.get(0).rows());
      assertEquals(0, out.get(1).rows());
      // A segment shorter than its column says (a truncated mapping, say): the copy itself fails.
      Column[][] cut = {chunks(FeatureType.INT64, 0, false, arena), chunks(FeatureType.INT32, 1, false, arena)};
      Column c2 = cut[0][2];
      MemorySegment shortValues = c2.values().asSlice(0, 8L * (c2.offset() + 10));
      cut[0][2] = new Column(c2.type(), c2.length(), c2.offset(), c2.nullCount(), c2.validity(), c2.offsets(), shortValues, null);
      assertThrows(IndexOutOfBoundsException.class, () -> FusedGather.append(out, cut, g));
    }
  }
}
