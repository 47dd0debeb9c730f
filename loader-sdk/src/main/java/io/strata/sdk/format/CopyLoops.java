package io.strata.sdk.format;

import io.strata.sdk.internal.Bits;
import io.strata.sdk.internal.Le;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The copy loops of {@link ColumnBuilder}: gathers of single rows by width, validity bits, and
 * offsets rebased as they are copied. Each loop is a small static method of its own, so that the
 * JIT compiles it with its memory accesses inlined and constant-folded (in one larger method it
 * sometimes ran out of inlining budget and left every access on the generic path, an alignment
 * check per value). Stateless.
 */
final class CopyLoops {
  private static final boolean NATIVE_LE = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

  private CopyLoops() {}

  /**
   * The segment as a plain native segment of the same memory, bounds, lifetime and access, for the
   * loops here and {@link FusedGather}'s: a mapped segment (an SSD segment, a shared-memory slab)
   * and a native one are two classes, and a loop that has seen one and then meets the other is
   * compiled again without its accesses' checks hoisted. In the loader service the rows gather ran
   * at 0.93 ms a batch in a first session and 2.4-3.0 ms in every later one, until the service
   * restarted; with one class it runs at the first session's speed in every session. A slice of
   * the result is of the same class.
   */
  @SuppressWarnings("restricted")
  static MemorySegment sameClass(MemorySegment s) {
    return s.isNative() ? s.reinterpret(s.byteSize()) : s;
  }

  /** Clears the bits at {@code at + pos[j]} of {@code dst} whose source bit {@code base + row[j]} is clear; returns how many. */
  static int clearInvalid(MemorySegment src, long base, MemorySegment dst, long at, int[] row, int[] pos, int from, int to) {
    int cleared = 0;
    for (int j = from; j < to; j++) {
      if (!Bits.get(src, base + row[j])) {
        Bits.set(dst, at + pos[j], false);
        cleared++;
      }
    }
    return cleared;
  }

  static void gatherBits(MemorySegment s, long base, MemorySegment d, long at, int[] row, int[] pos, int from, int to) {
    for (int j = from; j < to; j++) {
      Bits.set(d, at + pos[j], Bits.get(s, base + row[j]));
    }
  }

  static void gather1(MemorySegment s, MemorySegment d, int[] row, int[] pos, int from, int to) {
    for (int j = from; j < to; j++) {
      d.set(ValueLayout.JAVA_BYTE, pos[j], s.get(ValueLayout.JAVA_BYTE, row[j]));
    }
  }

  static void gather2(MemorySegment s, MemorySegment d, int[] row, int[] pos, int from, int to) {
    for (int j = from; j < to; j++) {
      d.setAtIndex(Le.SHORT, pos[j], s.getAtIndex(Le.SHORT, row[j]));
    }
  }

  static void gather4(MemorySegment s, MemorySegment d, int[] row, int[] pos, int from, int to) {
    for (int j = from; j < to; j++) {
      d.setAtIndex(Le.INT, pos[j], s.getAtIndex(Le.INT, row[j]));
    }
  }

  static void gather8(MemorySegment s, MemorySegment d, int[] row, int[] pos, int from, int to) {
    for (int j = from; j < to; j++) {
      d.setAtIndex(Le.LONG, pos[j], s.getAtIndex(Le.LONG, row[j]));
    }
  }

  /** {@code dst[dstIndex + k] = src[srcIndex + k] + delta} for {@code k < count} (int32 offsets). */
  static void rebaseOffsets(
      MemorySegment src, long srcIndex, MemorySegment dst, long dstIndex, int count, int delta) {
    long s = srcIndex * 4;
    long d = dstIndex * 4;
    if (delta == 0) {
      MemorySegment.copy(src, s, dst, d, 4L * count);
      return;
    }
    if (NATIVE_LE && ((src.address() + s) & 3) == 0 && ((dst.address() + d) & 3) == 0) {
      // Aligned native-order accesses: a bulk copy, then an add in place (one segment, so the JIT
      // vectorizes it without having to prove that two segments do not overlap).
      MemorySegment to = sameClass(dst).asSlice(d, 4L * count);
      MemorySegment.copy(src, s, to, 0, 4L * count);
      addInPlace(to, count, delta);
      return;
    }
    rebaseLe(sameClass(src).asSlice(s), sameClass(dst).asSlice(d), count, delta);
  }

  // The loops of rebaseOffsets, each a small method of its own with a layout that checks no
  // alignment: inside the larger method the JIT sometimes left every access on its generic path
  // (an alignment check per value, seen in a profile of the slow starts of seed 000's batches).
  static void addInPlace(MemorySegment to, int count, int delta) {
    for (int k = 0; k < count; k++) {
      to.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, k, to.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, k) + delta);
    }
  }

  static void rebaseLe(MemorySegment src, MemorySegment dst, int count, int delta) {
    for (int k = 0; k < count; k++) {
      dst.setAtIndex(Le.INT, k, src.getAtIndex(Le.INT, k) + delta);
    }
  }
}
