package io.strata.sdk.format;

import io.strata.sdk.Column;
import io.strata.sdk.FeatureType;
import io.strata.sdk.internal.Bits;
import io.strata.sdk.internal.Le;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * Builds a {@link Column} in off-heap memory from a caller-owned allocator (an {@code Arena}, or
 * a slicing allocator over a reused slab).
 *
 * <p>Buffers grow by doubling inside the allocator (the outgrown buffer is released with it);
 * callers that know the final size call {@link #reserve(int, long)} first so that nothing is
 * copied twice. Appending a range of another column ({@link #appendRange}) is a bulk copy for
 * fixed-width values and for string bytes, with offsets rebased. Null rows hold zero bytes of
 * data. A builder is not thread-safe.
 *
 * <p>For a consumer whose device reads mapped segments itself (a GPU), {@link #deferTo} makes
 * {@link #appendRange} record its bulk copies from such segments in a {@link DeviceCopies} instead
 * of making them; the builder's values are then either all recorded or all written on the host
 * (its first host write makes the recorded copies), and a truncation forgets the dropped rows'.
 *
 * <p>The builder holds the buffers and the appends of single values and arrays; {@link
 * ColumnCopies} appends other columns' rows (ranges and gathered single rows) through the
 * package-private state below.
 */
public final class ColumnBuilder {
  private static final long ALIGN = 64;

  final FeatureType type;
  private final SegmentAllocator arena;
  final int width;
  final ColumnBuilder child;
  final boolean fixed;
  MemorySegment values = MemorySegment.NULL;
  MemorySegment offsets = MemorySegment.NULL;
  MemorySegment validity = MemorySegment.NULL;
  long dataBytes;
  int rows;
  int nulls;
  /** Where copies from device-readable segments are recorded instead of made (null: never). */
  DeviceCopies copies;
  /** Whether {@link #appendRange} records its copies now ({@link #deferTo}). */
  boolean deferring;
  /** Whether anything was written into the values on the host since copies were first recorded. */
  boolean hostValues;

  /**
   * A builder for {@code type} that expects about {@code expectedRows} rows; call {@link
   * #reserve} to size variable-width data exactly.
   */
  public ColumnBuilder(FeatureType type, SegmentAllocator arena, int expectedRows) {
    this.type = Objects.requireNonNull(type, "type");
    this.arena = Objects.requireNonNull(arena, "arena");
    this.width = type.kind().width();
    this.fixed = type.isFixedWidth();
    this.child =
        type.kind() == FeatureType.Kind.LIST
            ? new ColumnBuilder(type.element(), arena, expectedRows)
            : null;
    if (!type.isFixedWidth()) {
      offsets = allocate(4L * (Math.max(expectedRows, 16) + 1));
      offsets.set(Le.INT, 0, 0);
    }
    reserve(Math.max(expectedRows, 0), 0);
  }

  public FeatureType type() {
    return type;
  }

  /** Rows appended so far. */
  public int rows() {
    return rows;
  }

  /** The element builder of a list builder; elements of the current list go here. */
  public ColumnBuilder child() {
    if (child == null) {
      throw new IllegalStateException("child() on a " + type + " builder");
    }
    return child;
  }

  /**
   * From now on, {@link #appendRange} records in {@code to} the copies of values and string bytes
   * that the device reads itself, instead of making them (null: makes them again). The first write
   * of values on the host makes the recorded copies of this builder first; see {@link DeviceCopies}.
   */
  public void deferTo(DeviceCopies to) {
    if (to != null) {
      if (copies != null && copies != to) {
        throw new IllegalStateException("a builder records its copies in one place");
      }
      copies = to;
    }
    deferring = to != null;
    if (child != null) {
      child.deferTo(to);
    }
  }

  /** Values are about to be written on the host: the recorded copies into them are made first. */
  void hostWrite() {
    if (copies != null && !hostValues) {
      copies.flush(values);
      hostValues = true;
    }
  }

  /** The built values of this builder when all of them come from copies recorded in {@code c}, else null. */
  MemorySegment deviceValues(DeviceCopies c) {
    if (copies != c || hostValues || rows == 0 || type.kind() == FeatureType.Kind.LIST || (fixed && width == 0)) {
      return null;
    }
    return values;
  }

  private MemorySegment allocate(long bytes) {
    return arena.allocate(Math.max(bytes, 8), ALIGN);
  }

  private static MemorySegment grow(
      SegmentAllocator arena, MemorySegment old, long usedBytes, long neededBytes) {
    long cap = Math.max(Math.max(neededBytes, old.byteSize() * 2), 64);
    MemorySegment next = arena.allocate(cap, ALIGN);
    if (usedBytes > 0) {
      MemorySegment.copy(old, 0, next, 0, usedBytes);
    }
    return next;
  }

  /** Makes room for {@code moreRows} rows and, for strings and binaries, {@code moreBytes} bytes. */
  public void reserve(int moreRows, long moreBytes) {
    long total = (long) rows + moreRows;
    if (total > Integer.MAX_VALUE - 1) {
      throw new IllegalArgumentException("a column holds at most 2^31-2 rows, asked for " + total);
    }
    if (type.isFixedWidth()) {
      long need = width == 0 ? (total + 7) >>> 3 : total * width;
      if (need > values.byteSize()) {
        hostWrite();
        values = grow(arena, values, width == 0 ? (rows + 7L) >>> 3 : (long) rows * width, need);
      }
    } else {
      long need = 4 * (total + 1);
      if (need > offsets.byteSize()) {
        offsets = grow(arena, offsets, 4L * (rows + 1), need);
      }
      if (type.isVariableWidth() && dataBytes + moreBytes > values.byteSize()) {
        hostWrite();
        values = grow(arena, values, dataBytes, dataBytes + moreBytes);
      }
    }
    if (validity != MemorySegment.NULL && (total + 7) >>> 3 > validity.byteSize()) {
      validity = grow(arena, validity, (rows + 7L) >>> 3, (total + 7) >>> 3);
    }
  }

  void ensureRows(int more) {
    long total = (long) rows + more;
    long need = fixed ? (width == 0 ? (total + 7) >>> 3 : total * width) : 4 * (total + 1);
    MemorySegment buf = fixed ? values : offsets;
    if (need > buf.byteSize()
        || (validity != MemorySegment.NULL && (total + 7) >>> 3 > validity.byteSize())) {
      reserve(Math.max(more, rows), 0);
    }
  }

  void ensureBytes(long more) {
    if (dataBytes + more > values.byteSize()) {
      hostWrite();
      values = grow(arena, values, dataBytes, Math.max(dataBytes + more, values.byteSize() * 2));
    }
  }

  /** Creates the validity bitmap on the first null, with every earlier row valid. */
  void materializeValidity(int extraRows) {
    if (validity == MemorySegment.NULL) {
      long cap = Math.max((long) rows + extraRows, 64);
      if (type.isFixedWidth()) {
        cap = Math.max(cap, width == 0 ? values.byteSize() * 8 : values.byteSize() / width);
      } else {
        cap = Math.max(cap, offsets.byteSize() / 4);
      }
      validity = allocate((cap + 7) >>> 3);
      validity.fill((byte) 0);
      Bits.fill(validity, 0, rows);
    }
  }

  private void markValid(boolean valid) {
    if (!valid) {
      materializeValidity(1);
      Bits.set(validity, rows, false);
      nulls++;
    } else if (validity != MemorySegment.NULL) {
      Bits.set(validity, rows, true);
    }
  }

  private void finishVariableRow() {
    long end = type.kind() == FeatureType.Kind.LIST ? child.rows : dataBytes;
    if (end > Integer.MAX_VALUE) {
      throw new IllegalStateException(
          "a " + type + " column holds at most 2 GiB of data per column; split it into chunks");
    }
    offsets.set(Le.INT, 4L * (rows + 1), (int) end);
  }

  /** Appends a null row. */
  public void appendNull() {
    ensureRows(1);
    markValid(false);
    if (type.isFixedWidth()) {
      hostWrite();
      if (width == 0) {
        Bits.set(values, rows, false);
      } else {
        values.asSlice((long) rows * width, width).fill((byte) 0);
      }
    } else {
      finishVariableRow();
    }
    rows++;
  }

  public void appendBoolean(boolean value) {
    requireKind(FeatureType.Kind.BOOL);
    ensureRows(1);
    markValid(true);
    hostWrite();
    Bits.set(values, rows, value);
    rows++;
  }

  /** Appends an integer, date (days) or timestamp (nanoseconds) value, narrowed to the column width. */
  public void appendLong(long value) {
    ensureRows(1);
    markValid(true);
    putLong(rows, value);
    rows++;
  }

  private void putLong(int row, long value) {
    hostWrite();
    long at = (long) row * width;
    switch (type.kind()) {
      case INT8 -> values.set(ValueLayout.JAVA_BYTE, at, (byte) value);
      case INT16 -> values.set(Le.SHORT, at, (short) value);
      case INT32, DATE -> values.set(Le.INT, at, (int) value);
      case INT64, TIMESTAMP -> values.set(Le.LONG, at, value);
      case BOOL -> Bits.set(values, row, value != 0);
      default -> throw new IllegalStateException("appendLong on a " + type + " builder");
    }
  }

  public void appendDouble(double value) {
    ensureRows(1);
    markValid(true);
    putDouble(rows, value);
    rows++;
  }

  private void putDouble(int row, double value) {
    hostWrite();
    switch (type.kind()) {
      case FLOAT32 -> values.set(Le.FLOAT, row * 4L, (float) value);
      case FLOAT64 -> values.set(Le.DOUBLE, row * 8L, value);
      default -> throw new IllegalStateException("appendDouble on a " + type + " builder");
    }
  }

  /**
   * Appends a float32 value by its IEEE bits, every bit kept: a signalling NaN passed through a
   * {@code float} or {@code double} conversion comes out quieted (the quiet bit set, as the CPU's
   * conversions do), so readers of float columns hand the raw bits here. A float64 column takes
   * the value widened exactly (a NaN's payload shifted into place, not quieted).
   */
  public void appendFloatBits(int bits) {
    ensureRows(1);
    markValid(true);
    hostWrite();
    switch (type.kind()) {
      case FLOAT32 -> values.set(Le.INT, rows * 4L, bits);
      case FLOAT64 -> values.set(Le.LONG, rows * 8L, widenFloatBits(bits));
      default -> throw new IllegalStateException("appendFloatBits on a " + type + " builder");
    }
    rows++;
  }

  /** The float64 bits of float32 {@code bits}, exact: NaNs keep their sign, payload and quiet bit. */
  static long widenFloatBits(int bits) {
    if ((bits & 0x7f80_0000) == 0x7f80_0000 && (bits & 0x007f_ffff) != 0) {
      return ((long) (bits & 0x8000_0000) << 32) | 0x7ff0_0000_0000_0000L | ((long) (bits & 0x007f_ffff) << 29);
    }
    return Double.doubleToRawLongBits(Float.intBitsToFloat(bits));
  }

  /** The float32 bits of IEEE half-precision {@code bits}, exact: NaNs keep their sign, payload and quiet bit. */
  public static int halfToFloatBits(short bits) {
    if ((bits & 0x7c00) == 0x7c00) {
      return ((bits & 0x8000) << 16) | 0x7f80_0000 | ((bits & 0x03ff) << 13);
    }
    return Float.floatToRawIntBits(Float.float16ToFloat(bits));
  }

  /** Appends a decimal by its unscaled 128-bit value, as low and high 64-bit words. */
  public void appendDecimal(long low, long high) {
    requireKind(FeatureType.Kind.DECIMAL);
    ensureRows(1);
    markValid(true);
    hostWrite();
    values.set(Le.LONG, rows * 16L, low);
    values.set(Le.LONG, rows * 16L + 8, high);
    rows++;
  }

  /** Appends a string or binary value. */
  public void appendBytes(byte[] src, int from, int length) {
    appendBytes(MemorySegment.ofArray(src), from, length);
  }

  /** Appends a string or binary value copied from {@code src}. */
  public void appendBytes(MemorySegment src, long from, long length) {
    if (!type.isVariableWidth()) {
      throw new IllegalStateException("appendBytes on a " + type + " builder");
    }
    ensureRows(1);
    ensureBytes(length);
    markValid(true);
    hostWrite();
    MemorySegment.copy(src, from, values, dataBytes, length);
    dataBytes += length;
    finishVariableRow();
    rows++;
  }

  /** Ends a list row whose elements were appended to {@link #child()} since the previous row. */
  public void endList() {
    requireKind(FeatureType.Kind.LIST);
    ensureRows(1);
    markValid(true);
    finishVariableRow();
    rows++;
  }

  /**
   * Appends {@code count} integer values (narrowed to the column width) from {@code src[from..]};
   * rows whose {@code isNull} entry is true become null ({@code isNull} may be null).
   */
  public void appendLongs(long[] src, boolean[] isNull, int from, int count) {
    ensureRows(count);
    appendNullMask(isNull, from, count);
    hostWrite();
    if (width == 8) {
      MemorySegment.copy(src, from, values, Le.LONG, (long) rows * 8, count);
    } else {
      for (int k = 0; k < count; k++) {
        putLong(rows + k, src[from + k]);
      }
    }
    rows += count;
  }

  /** Appends {@code count} floating-point values; see {@link #appendLongs}. */
  public void appendDoubles(double[] src, boolean[] isNull, int from, int count) {
    ensureRows(count);
    appendNullMask(isNull, from, count);
    hostWrite();
    if (type.kind() == FeatureType.Kind.FLOAT64) {
      MemorySegment.copy(src, from, values, Le.DOUBLE, (long) rows * 8, count);
    } else {
      for (int k = 0; k < count; k++) {
        putDouble(rows + k, src[from + k]);
      }
    }
    rows += count;
  }

  /**
   * Appends {@code count} float32 values by their IEEE bits from {@code bits[from..]}, every bit
   * kept as {@link #appendFloatBits(int)} keeps them; see {@link #appendLongs} for {@code isNull}.
   */
  public void appendFloatBits(int[] bits, boolean[] isNull, int from, int count) {
    ensureRows(count);
    appendNullMask(isNull, from, count);
    hostWrite();
    switch (type.kind()) {
      case FLOAT32 -> MemorySegment.copy(bits, from, values, Le.INT, (long) rows * 4, count);
      case FLOAT64 -> {
        for (int k = 0; k < count; k++) {
          values.set(Le.LONG, (rows + k) * 8L, widenFloatBits(bits[from + k]));
        }
      }
      default -> throw new IllegalStateException("appendFloatBits on a " + type + " builder");
    }
    rows += count;
  }

  private void appendNullMask(boolean[] isNull, int from, int count) {
    if (isNull == null) {
      if (validity != MemorySegment.NULL) {
        Bits.fill(validity, rows, count);
      }
      return;
    }
    for (int k = 0; k < count; k++) {
      if (isNull[from + k]) {
        materializeValidity(count);
        break;
      }
    }
    if (validity == MemorySegment.NULL) {
      return;
    }
    for (int k = 0; k < count; k++) {
      boolean valid = !isNull[from + k];
      Bits.set(validity, rows + k, valid);
      if (!valid) {
        nulls++;
      }
    }
  }

  /** Appends rows {@code [from, from + count)} of {@code src}, which must have this builder's type. */
  public void appendRange(Column src, int from, int count) {
    ColumnCopies.appendRange(this, src, from, count);
  }

  /**
   * Appends the single rows of {@code order} (a batch of a fixed-width type): the row at batch
   * position {@code k} is the row {@code order} names of column {@code cols[chunk]}, as
   * {@link #appendRange}{@code (cols[chunk], row, 1)} in batch order would append it. The rows are
   * read in the order's order, one chunk's column at a time (its bounds and liveness checked once a
   * run), and written to their batch positions.
   */
  public void appendGathered(Column[] cols, GatherOrder order) {
    ColumnCopies.appendGathered(this, cols, order);
  }

  private void requireKind(FeatureType.Kind kind) {
    if (type.kind() != kind) {
      throw new IllegalStateException("a " + kind + " append on a " + type + " builder");
    }
  }

  /**
   * Drops the rows appended after the first {@code keep} (and, for lists, their elements), as if
   * they had never been appended: a reader whose source failed in the middle of an append puts the
   * builder back and appends the same rows from elsewhere.
   */
  public void truncate(int keep) {
    if (keep < 0 || keep > rows) {
      throw new IndexOutOfBoundsException("cannot keep " + keep + " of " + rows + " rows");
    }
    rows = keep;
    if (!fixed) {
      int end = offsets.get(Le.INT, 4L * keep);
      if (type.kind() == FeatureType.Kind.LIST) {
        child.truncate(end);
      } else {
        dataBytes = end;
        if (copies != null) {
          copies.forget(values, end);
        }
      }
    } else if (copies != null && width > 0) {
      copies.forget(values, (long) keep * width);
    }
    nulls = validity == MemorySegment.NULL ? 0 : Bits.countZeros(validity, 0, keep);
  }

  /** The column built so far; its buffers stay valid while the arena is open. */
  public Column build() {
    Column builtChild = child == null ? null : child.build();
    MemorySegment v;
    if (type.isFixedWidth()) {
      v = values.asSlice(0, width == 0 ? (rows + 7L) >>> 3 : (long) rows * width);
    } else if (type.isVariableWidth()) {
      v = values.asSlice(0, dataBytes);
    } else {
      v = MemorySegment.NULL;
    }
    MemorySegment o = type.isFixedWidth() ? MemorySegment.NULL : offsets.asSlice(0, 4L * (rows + 1));
    MemorySegment val =
        nulls == 0 ? MemorySegment.NULL : validity.asSlice(0, (rows + 7L) >>> 3);
    return new Column(type, rows, 0, nulls, val, o, v, builtChild);
  }
}
