package io.strata.gpu;

import io.strata.sdk.Column;
import io.strata.sdk.format.DeviceCopies;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;

/**
 * How a batch's columns lie in memory for shipping: each column's buffers in device order
 * ({@link #parts}), the device-side description of them ({@link #buffers}), the size of a packed
 * copy ({@link #packedSize}), and the device gather's table of ranges ({@link #ranges},
 * {@link #writeRanges}), written in pieces ({@link #put}: source, destination and length as three
 * longs, 24 bytes a piece). Functions of their arguments; no state, no CUDA calls.
 */
final class BatchParts {
  private BatchParts() {}

  /** Ranges longer than this are split, so that one thread block does not copy a long range alone. */
  static final long PIECE = 64 << 10;

  /** Writes one range as pieces of at most {@link #PIECE} bytes at {@code at}; returns the next position. */
  static long put(MemorySegment table, long at, long src, long dst, long length) {
    for (long off = 0; off < length; off += PIECE) {
      table.set(ValueLayout.JAVA_LONG_UNALIGNED, at, src + off);
      table.set(ValueLayout.JAVA_LONG_UNALIGNED, at + 8, dst + off);
      table.set(ValueLayout.JAVA_LONG_UNALIGNED, at + 16, Math.min(PIECE, length - off));
      at += 24;
    }
    return at;
  }

  /** Bytes a batch's buffers take packed one after another, each 64-byte aligned. */
  static long packedSize(Map<String, MemorySegment[]> parts) {
    long at = 0;
    for (MemorySegment[] p : parts.values()) {
      for (MemorySegment s : p) {
        if (s != null && s.byteSize() > 0) {
          at = ((at + GpuShipper.ALIGN - 1) & -GpuShipper.ALIGN) + s.byteSize();
        }
      }
    }
    return at;
  }

  /** Buffers a column has at most: validity, offsets, values, element offsets, element validity. */
  static final int PARTS = 5;

  static DeviceBatch.Buffers buffers(Column c, long[] place) {
    Column child = c.child();
    return new DeviceBatch.Buffers(place[0], place[1], place[2], place[3], c.length(), c.nullCount(), place[4],
        child == null ? 0 : child.length(), child == null ? 0 : child.nullCount());
  }

  /**
   * The buffers of a column in device order: validity, offsets, values (a list's element
   * values), a list's element offsets, a list's element validity.
   */
  static MemorySegment[] parts(Column c) {
    if (c.offset() != 0 || (c.child() != null && c.child().offset() != 0)) {
      throw new IllegalArgumentException("only unsliced columns (as in batches) can be shipped");
    }
    int n = c.length();
    MemorySegment validity = c.hasNulls() ? c.validity().asSlice(0, (n + 7L) / 8) : null;
    if (c.type().isFixedWidth()) {
      return new MemorySegment[] {validity, null, fixedValues(c), null, null};
    }
    MemorySegment offsets = c.offsets().asSlice(0, 4L * (n + 1));
    if (c.type().isVariableWidth()) {
      return new MemorySegment[] {validity, offsets, usedBytes(c), null, null};
    }
    Column child = c.child();
    MemorySegment childValidity = child.hasNulls() ? child.validity().asSlice(0, (child.length() + 7L) / 8) : null;
    if (child.type().isVariableWidth()) {
      return new MemorySegment[] {validity, offsets, usedBytes(child), child.offsets().asSlice(0, 4L * (child.length() + 1)),
          childValidity};
    }
    return new MemorySegment[] {validity, offsets, fixedValues(child), null, childValidity};
  }

  /** The bytes a string or binary column's rows use (its buffer may be larger: a builder's capacity). */
  private static MemorySegment usedBytes(Column c) {
    return c.values().asSlice(0, c.length() == 0 ? 0 : c.end(c.length() - 1));
  }

  private static MemorySegment fixedValues(Column c) {
    int width = c.type().kind().width();
    return width == 0 ? c.values().asSlice(0, (c.length() + 7L) / 8) : c.values().asSlice(0, (long) c.length() * width);
  }
  /** Pieces in the device gather's table for a batch: its host-assembled buffers not left to the device, and the device's copies. */
  static long ranges(Map<String, MemorySegment[]> parts, DeviceCopies copies) {
    long ranges = 0;
    for (MemorySegment[] p : parts.values()) {
      for (MemorySegment s : p) {
        if (s != null && s.byteSize() > 0 && !copies.covers(s)) {
          ranges += (s.byteSize() + PIECE - 1) / PIECE;
        }
      }
    }
    for (int k = 0; k < copies.count(); k++) {
      ranges += (copies.length(k) + PIECE - 1) / PIECE;
    }
    return ranges;
  }

  /**
   * Writes the device gather's table: the host-assembled buffers read from the pinned slab (its
   * device address {@code slabDevice} less its host base), the recorded copies from the
   * registered segments ({@code pages}), each to its place in the slot ({@code slotDevice}, the
   * batch's layout relative to {@code lo} kept).
   */
  static void writeRanges(MemorySegment table, Map<String, MemorySegment[]> parts, DeviceCopies copies, long slabDevice,
      long slotDevice, long lo, MappedPages pages) {
    long at = 0;
    for (MemorySegment[] p : parts.values()) {
      for (MemorySegment s : p) {
        if (s != null && s.byteSize() > 0 && !copies.covers(s)) {
          at = put(table, at, s.address() + slabDevice, slotDevice + (s.address() - lo), s.byteSize());
        }
      }
    }
    for (int k = 0; k < copies.count(); k++) {
      at = put(table, at, pages.deviceAddress(copies.source(k)), slotDevice + (copies.target(k) - lo), copies.length(k));
    }
  }
}
