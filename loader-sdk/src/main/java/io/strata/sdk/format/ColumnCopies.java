package io.strata.sdk.format;

import io.strata.sdk.Column;
import io.strata.sdk.FeatureType;
import io.strata.sdk.internal.Bits;
import io.strata.sdk.internal.Le;
import java.lang.foreign.MemorySegment;

/**
 * Appends other columns' rows to a {@link ColumnBuilder}: a range of one column ({@link
 * ColumnBuilder#appendRange}: bulk copies of values, validity and string bytes, offsets rebased,
 * copies from device-readable segments recorded when the builder defers them) and single rows in a
 * {@link GatherOrder} ({@link ColumnBuilder#appendGathered}, and the begin, target and end steps
 * {@link FusedGather} drives for several builders in one pass).
 *
 * <p>Stateless: every method works on the builder it is given, through the builder's
 * package-private state, on the builder's (single) thread.
 */
final class ColumnCopies {
  private ColumnCopies() {}

  /** Appends rows {@code [from, from + count)} of {@code src} to {@code b}; see {@link ColumnBuilder#appendRange}. */
  static void appendRange(ColumnBuilder b, Column src, int from, int count) {
    if (!src.type().equals(b.type)) {
      throw new IllegalArgumentException("cannot append a " + src.type() + " column to a " + b.type + " builder");
    }
    if (from < 0 || count < 0 || from + count > src.length()) {
      throw new IndexOutOfBoundsException(
          "range [" + from + ", " + (from + count) + ") of a column of " + src.length() + " rows");
    }
    if (count == 0) {
      return;
    }
    b.ensureRows(count);
    long srcRow = (long) src.offset() + from;
    if (src.validity() != MemorySegment.NULL) {
      int srcNulls = Bits.countZeros(src.validity(), srcRow, count);
      if (srcNulls > 0) {
        b.materializeValidity(count);
      }
      if (b.validity != MemorySegment.NULL) {
        Bits.copy(src.validity(), srcRow, b.validity, b.rows, count);
      }
      b.nulls += srcNulls;
    } else if (b.validity != MemorySegment.NULL) {
      Bits.fill(b.validity, b.rows, count);
    }
    if (b.fixed) {
      if (b.width == 0) {
        b.hostWrite();
        Bits.copy(src.values(), srcRow, b.values, b.rows, count);
      } else if (!b.deferring || b.hostValues
          || !b.copies.take(src.values(), srcRow * b.width, b.values, (long) b.rows * b.width, (long) count * b.width)) {
        b.hostWrite();
        MemorySegment.copy(src.values(), srcRow * b.width, b.values, (long) b.rows * b.width, (long) count * b.width);
      }
    } else {
      MemorySegment srcOffsets = src.offsets();
      int first = srcOffsets.get(Le.INT, srcRow * 4);
      int last = srcOffsets.get(Le.INT, (srcRow + count) * 4);
      long limit = b.type.kind() == FeatureType.Kind.LIST ? src.child().length() : src.values().byteSize();
      if (first < 0 || last < first || last > limit) {
        // Checked before anything is sized by them: a damaged source must not make us allocate.
        throw new IndexOutOfBoundsException("offsets [" + first + ", " + last + "] of rows [" + from + ", " + (from + count)
            + ") are outside the column's " + limit + (b.type.kind() == FeatureType.Kind.LIST ? " elements" : " bytes"));
      }
      long base = b.type.kind() == FeatureType.Kind.LIST ? b.child.rows : b.dataBytes;
      long delta = base - first;
      if (base + (last - first) > Integer.MAX_VALUE) {
        throw new IllegalStateException(
            "a " + b.type + " column holds at most 2 GiB of data per column; split it into chunks");
      }
      CopyLoops.rebaseOffsets(srcOffsets, srcRow + 1, b.offsets, b.rows + 1L, count, (int) delta);
      if (b.type.kind() == FeatureType.Kind.LIST) {
        b.child.appendRange(src.child(), first, last - first);
      } else {
        b.ensureBytes(last - first);
        if (last > first && (!b.deferring || b.hostValues || !b.copies.take(src.values(), first, b.values, b.dataBytes, last - first))) {
          b.hostWrite();
          MemorySegment.copy(src.values(), first, b.values, b.dataBytes, last - first);
        }
        b.dataBytes += last - first;
      }
    }
    b.rows += count;
  }

  /** Appends the single rows of {@code order} to {@code b}; see {@link ColumnBuilder#appendGathered}. */
  static void appendGathered(ColumnBuilder b, Column[] cols, GatherOrder order) {
    boolean anyNulls = begin(b, cols, order);
    if (order.size() == 0) {
      return;
    }
    long at = b.rows;
    int[] local = order.local();
    int[] pos = order.positions();
    for (int r = 0; r < order.runs(); r++) {
      Column c = cols[order.runChunk(r)];
      gather(b, c.values(), c.offset(), local, pos, order.runStart(r), order.runStart(r + 1), at);
    }
    end(b, cols, order, anyNulls);
  }

  /**
   * The checks of {@link #appendGathered} and room for its rows; returns whether a column of a run
   * has nulls. Then the values go to {@link #target} ({@link FusedGather}: several builders'
   * in one pass), then {@link #end}.
   */
  static boolean begin(ColumnBuilder b, Column[] cols, GatherOrder order) {
    if (!b.fixed) {
      throw new IllegalStateException("gathering single rows needs a fixed-width type, not " + b.type);
    }
    boolean anyNulls = false;
    for (int r = 0; r < order.runs(); r++) {
      Column c = cols[order.runChunk(r)];
      if (!c.type().equals(b.type)) {
        throw new IllegalArgumentException("cannot append a " + c.type() + " column to a " + b.type + " builder");
      }
      // Every row of the run lies within its chunk: a column as long as its chunk holds them all.
      if (order.runChunkRows(r) > c.length()) {
        throw new IndexOutOfBoundsException("a chunk of " + order.runChunkRows(r) + " rows but a column of " + c.length() + " rows");
      }
      anyNulls |= c.validity() != MemorySegment.NULL && c.nullCount() > 0; // a b.validity buffer without b.nulls says nothing
    }
    if (order.size() > 0) {
      b.ensureRows(order.size());
    }
    b.hostWrite();
    return anyNulls;
  }

  /** Where the next row's value goes (room made by {@link #begin}): values from the current end on. */
  static MemorySegment target(ColumnBuilder b) {
    return b.values.asSlice((long) b.rows * b.width);
  }

  /** Ends {@link #begin}: the rows' validity, and the rows counted. */
  static void end(ColumnBuilder b, Column[] cols, GatherOrder order, boolean anyNulls) {
    int n = order.size();
    if (n == 0) {
      return;
    }
    long at = b.rows;
    int[] local = order.local();
    int[] pos = order.positions();
    if (anyNulls) {
      if (b.validity == MemorySegment.NULL) {
        b.materializeValidity(n);
      }
      Bits.fill(b.validity, at, n);
      for (int r = 0; r < order.runs(); r++) {
        Column c = cols[order.runChunk(r)];
        MemorySegment v = c.validity();
        if (v == MemorySegment.NULL || c.nullCount() == 0) {
          continue;
        }
        b.nulls += CopyLoops.clearInvalid(v, c.offset(), b.validity, at, local, pos, order.runStart(r), order.runStart(r + 1));
      }
    } else if (b.validity != MemorySegment.NULL) {
      Bits.fill(b.validity, at, n);
    }
    b.rows += n;
  }

  /**
   * Copies rows {@code row[j]} of {@code src} (values from element {@code base} on) to positions
   * {@code at + pos[j]} of this builder's values, for {@code j} in {@code [from, to)}.
   */
  private static void gather(ColumnBuilder b, MemorySegment src, long base, int[] row, int[] pos, int from, int to, long at) {
    // One small method per width: each is compiled on its own with its memory accesses inlined
    // and constant-folded. In one method with a case per width the JIT sometimes ran out of
    // inlining budget and left every access on the generic path (alignment checked per access,
    // 2.5x slower), by chance, from one process start to the next.
    // (A slice keeps its segment's class: one conversion covers every slice below.)
    MemorySegment s = CopyLoops.sameClass(src);
    MemorySegment d = CopyLoops.sameClass(b.values);
    switch (b.width) {
      case 0 -> CopyLoops.gatherBits(s, base, d, at, row, pos, from, to);
      case 1 -> CopyLoops.gather1(s.asSlice(base), d.asSlice(at), row, pos, from, to);
      case 2 -> CopyLoops.gather2(s.asSlice(base * 2), d.asSlice(at * 2), row, pos, from, to);
      case 4 -> CopyLoops.gather4(s.asSlice(base * 4), d.asSlice(at * 4), row, pos, from, to);
      case 8 -> CopyLoops.gather8(s.asSlice(base * 8), d.asSlice(at * 8), row, pos, from, to);
      default -> {
        for (int j = from; j < to; j++) {
          MemorySegment.copy(s, (base + row[j]) * b.width, d, (at + pos[j]) * b.width, b.width);
        }
      }
    }
  }

}
