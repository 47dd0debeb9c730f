package io.strata.sdk.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Column;
import io.strata.sdk.FeatureType;
import java.lang.foreign.Arena;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class GatherOrderTest {
  /** Every entry names its row (chunk + row within) and its batch position once; runs hold one chunk. */
  private static void checkCovers(GatherOrder g, long[] rows, long[] chunkFirst) {
    int n = rows.length;
    boolean[] seen = new boolean[n];
    int entries = 0;
    for (int r = 0; r < g.runs(); r++) {
      int c = g.runChunk(r);
      for (int j = g.runStart(r); j < g.runStart(r) + g.runRows(r); j++) {
        int p = g.position(j);
        assertTrue(!seen[p], "position " + p + " twice");
        seen[p] = true;
        assertEquals(rows[p], chunkFirst[c] + g.localRow(j), "entry " + j);
        assertTrue(c + 1 == chunkFirst.length || rows[p] < chunkFirst[c + 1], "row " + rows[p] + " is not in chunk " + c);
        assertTrue(g.localRow(j) < g.runChunkRows(r), "entry " + j + " beyond its chunk");
        assertEquals(r, g.runOf(j), "the run of entry " + j);
        entries++;
      }
      long chunkEnd = c + 1 < chunkFirst.length ? chunkFirst[c + 1] : -1;
      if (chunkEnd >= 0) {
        assertEquals(chunkEnd - chunkFirst[c], g.runChunkRows(r), "the rows of chunk " + c);
      }
    }
    assertEquals(n, entries);
  }

  @Test
  void coversEveryRowOnceInRunsOfOneChunk() {
    SplittableRandom random = new SplittableRandom(5);
    // Chunks of uneven sizes, an empty one among them, boundaries off the regions' edges.
    long[] chunkFirst = {0, 1_000, 70_001, 70_001, 200_000, 1_048_577};
    long total = 2_000_000;
    GatherOrder g = new GatherOrder();
    for (int n : new int[] {0, 1, 7, 16_384, 40_000}) {
      long[] rows = new long[n];
      for (int k = 0; k < n; k++) {
        rows[k] = random.nextLong(total);
      }
      if (n > 3) {
        rows[0] = 70_001; // the first row of the chunk after the empty one
        rows[1] = 70_000;
        rows[2] = rows[3]; // a row twice
      }
      checkCovers(g.compute(rows, n, chunkFirst, total), rows, chunkFirst);
    }
  }

  @Test
  void rowsOutsideTheDatasetAreRefused() {
    GatherOrder g = new GatherOrder();
    assertThrows(IndexOutOfBoundsException.class, () -> g.compute(new long[] {5, 100}, 2, new long[] {0}, 100));
    assertThrows(IndexOutOfBoundsException.class, () -> g.compute(new long[] {-1}, 1, new long[] {0}, 100));
  }

  @Test
  void gatheredColumnsHoldTheRowsInBatchOrderWithTheirNulls() {
    try (Arena arena = Arena.ofConfined()) {
      long[] chunkFirst = {0, 3_000, 9_000};
      long total = 10_000;
      Column[] longs = new Column[3];
      Column[] shorts = new Column[3];
      for (int c = 0; c < 3; c++) {
        long end = c + 1 < 3 ? chunkFirst[c + 1] : total;
        ColumnBuilder l = new ColumnBuilder(FeatureType.INT64, arena, 16);
        ColumnBuilder s = new ColumnBuilder(FeatureType.INT16, arena, 16);
        for (long row = chunkFirst[c]; row < end; row++) {
          if (c == 1 && row % 7 == 0) {
            l.appendNull(); // nulls in one chunk only
          } else {
            l.appendLong(row * 1_000_003L);
          }
          s.appendLong((short) row);
        }
        longs[c] = l.build();
        shorts[c] = s.build();
      }
      SplittableRandom random = new SplittableRandom(11);
      long[] rows = new long[5_000];
      for (int k = 0; k < rows.length; k++) {
        rows[k] = random.nextLong(total);
      }
      GatherOrder g = new GatherOrder().compute(rows, rows.length, chunkFirst, total);
      ColumnBuilder out = new ColumnBuilder(FeatureType.INT64, arena, 4);
      out.appendLong(-1); // rows already there stay
      out.appendGathered(longs, g);
      ColumnBuilder outShort = new ColumnBuilder(FeatureType.INT16, arena, 4);
      outShort.appendGathered(shorts, g);
      Column col = out.build();
      Column colShort = outShort.build();
      assertEquals(rows.length + 1, col.length());
      assertEquals(-1, col.getLong(0));
      int nulls = 0;
      for (int k = 0; k < rows.length; k++) {
        long row = rows[k];
        boolean isNull = row >= 3_000 && row < 9_000 && row % 7 == 0;
        nulls += isNull ? 1 : 0;
        assertEquals(isNull, col.isNull(k + 1), "row " + row);
        if (!isNull) {
          assertEquals(row * 1_000_003L, col.getLong(k + 1));
        }
        assertEquals((short) row, colShort.getLong(k));
      }
      assertEquals(nulls, col.nullCount());
      assertTrue(nulls > 0);
    }
  }
}
