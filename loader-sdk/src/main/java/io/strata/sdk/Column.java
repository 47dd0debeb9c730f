package io.strata.sdk;

import io.strata.sdk.internal.Bits;
import io.strata.sdk.internal.Le;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One feature column in the Arrow columnar layout, as views over off-heap memory.
 *
 * <p>A column never holds an object per row: it is a validity bitmap ({@link #validity()}, absent
 * when there are no nulls), an offsets buffer of 32-bit little-endian integers for strings,
 * binaries and lists ({@link #offsets()}), a values buffer ({@link #values()}) and, for lists, a
 * child column of elements ({@link #child()}). Row {@code i} of the column is buffer position
 * {@code offset() + i}, as in Arrow. The memory belongs to whatever produced the column (a mapped
 * segment, a batch); a column must not be used after its owner is closed, and an access after
 * that raises {@link IllegalStateException} rather than reading freed memory. A batch's columns
 * are {@linkplain #guardedBy guarded} by their batch: an accessor raises as soon as the batch is
 * closed, while a buffer taken from one before stays readable, with the batch's own data, until
 * the loader frees the memory a few batches later (then it raises too).
 */
public final class Column {
  static final ValueLayout.OfShort SHORT = Le.SHORT;
  static final ValueLayout.OfInt INT = Le.INT;
  static final ValueLayout.OfLong LONG = Le.LONG;
  static final ValueLayout.OfFloat FLOAT = Le.FLOAT;
  static final ValueLayout.OfDouble DOUBLE = Le.DOUBLE;

  private final FeatureType type;
  private final int length;
  private final int offset;
  private final int nullCount;
  private final MemorySegment validity;
  private final MemorySegment offsets;
  private final MemorySegment values;
  private final Column child;
  /** Throws {@link IllegalStateException} once the column's owner is closed; null when the buffers' scopes decide alone. */
  private final Runnable guard;

  /**
   * Wraps existing buffers. {@code validity} and {@code offsets} may be {@link MemorySegment#NULL}
   * when absent; {@code child} is required exactly for lists.
   */
  public Column(
      FeatureType type,
      int length,
      int offset,
      int nullCount,
      MemorySegment validity,
      MemorySegment offsets,
      MemorySegment values,
      Column child) {
    this.type = Objects.requireNonNull(type, "type");
    if (length < 0 || offset < 0) {
      throw new IllegalArgumentException("negative length " + length + " or offset " + offset);
    }
    if ((type.kind() == FeatureType.Kind.LIST) != (child != null)) {
      throw new IllegalArgumentException("a child column is required for lists and only for lists");
    }
    this.length = length;
    this.offset = offset;
    this.validity = validity == null ? MemorySegment.NULL : validity;
    this.offsets = offsets == null ? MemorySegment.NULL : offsets;
    this.values = values == null ? MemorySegment.NULL : values;
    this.child = child;
    this.nullCount =
        nullCount >= 0 ? nullCount : Bits.countZeros(this.validity, offset, length);
    this.guard = null;
  }

  private Column(Column c, int length, int offset, int nullCount, Runnable guard) {
    this.type = c.type;
    this.length = length;
    this.offset = offset;
    this.validity = c.validity;
    this.offsets = c.offsets;
    this.values = c.values;
    this.nullCount = nullCount >= 0 ? nullCount : Bits.countZeros(c.validity, offset, length);
    this.child = c.child == null ? null : new Column(c.child, c.child.length, c.child.offset, c.child.nullCount, guard);
    this.guard = guard;
  }

  /**
   * This column, its elements included, as a view whose accessors first run {@code guard}, which
   * throws {@link IllegalStateException} once the column's owner is closed: how a batch's columns
   * refuse use after their batch is closed although its memory is freed a few batches later.
   */
  public Column guardedBy(Runnable guard) {
    return new Column(this, length, offset, nullCount, Objects.requireNonNull(guard, "guard"));
  }

  private void checkOpen() {
    if (guard != null) {
      guard.run();
    }
  }

  public FeatureType type() {
    return type;
  }

  /** Number of rows. */
  public int length() {
    return length;
  }

  /** Position of row 0 within the buffers (Arrow's array offset). */
  public int offset() {
    return offset;
  }

  public int nullCount() {
    return nullCount;
  }

  /** The validity bitmap (LSB first, 1 = valid), or {@link MemorySegment#NULL} when no row is null. */
  public MemorySegment validity() {
    checkOpen();
    return validity;
  }

  /** Offsets (int32, little-endian, {@code offset() + length() + 1} entries) for strings, binaries, lists. */
  public MemorySegment offsets() {
    checkOpen();
    return offsets;
  }

  /** The values buffer: fixed-width values, packed bits for bool, or the bytes of strings and binaries. */
  public MemorySegment values() {
    checkOpen();
    return values;
  }

  /** The elements of a list column; null for scalars. */
  public Column child() {
    checkOpen();
    return child;
  }

  public boolean hasNulls() {
    return nullCount > 0;
  }

  public boolean isNull(int row) {
    checkRow(row);
    return validity != MemorySegment.NULL && !Bits.get(validity, offset + row);
  }

  private void checkRow(int row) {
    checkOpen();
    if (row < 0 || row >= length) {
      throw new IndexOutOfBoundsException("row " + row + " outside column of " + length + " rows");
    }
  }

  public boolean getBoolean(int row) {
    checkRow(row);
    return Bits.get(values, offset + row);
  }

  /** The value of an integer, date or timestamp row, widened to long. */
  public long getLong(int row) {
    checkRow(row);
    long i = offset + (long) row;
    return switch (type.kind()) {
      case INT8 -> values.get(ValueLayout.JAVA_BYTE, i);
      case INT16 -> values.get(SHORT, i * 2);
      case INT32, DATE -> values.get(INT, i * 4);
      case INT64, TIMESTAMP -> values.get(LONG, i * 8);
      case BOOL -> Bits.get(values, i) ? 1 : 0;
      default -> throw new IllegalStateException("getLong on a " + type + " column");
    };
  }

  /** The value of a numeric row as double. */
  public double getDouble(int row) {
    checkRow(row);
    long i = offset + (long) row;
    return switch (type.kind()) {
      case FLOAT32 -> values.get(FLOAT, i * 4);
      case FLOAT64 -> values.get(DOUBLE, i * 8);
      case DECIMAL -> getDecimal(row).doubleValue();
      default -> getLong(row);
    };
  }

  public float getFloat(int row) {
    checkRow(row);
    if (type.kind() != FeatureType.Kind.FLOAT32) {
      throw new IllegalStateException("getFloat on a " + type + " column");
    }
    return values.get(FLOAT, (offset + (long) row) * 4);
  }

  /**
   * Start (inclusive) of row {@code row}: a byte position in {@link #values()} for strings and
   * binaries, a row of {@link #child()} for lists.
   */
  public int start(int row) {
    checkRow(row);
    return offsets.get(INT, (offset + (long) row) * 4);
  }

  /** End (exclusive) of row {@code row} in {@link #values()} or the child, for variable-width kinds. */
  public int end(int row) {
    checkRow(row);
    return offsets.get(INT, (offset + (long) row + 1) * 4);
  }

  public byte[] getBytes(int row) {
    int s = start(row);
    int e = end(row);
    return values.asSlice(s, e - s).toArray(ValueLayout.JAVA_BYTE);
  }

  public String getString(int row) {
    return new String(getBytes(row), StandardCharsets.UTF_8);
  }

  /** The unscaled 128-bit value of a decimal row. */
  public BigInteger getUnscaled(int row) {
    checkRow(row);
    long at = (offset + (long) row) * 16;
    long lo = values.get(LONG, at);
    long hi = values.get(LONG, at + 8);
    if (hi == lo >> 63) {
      return BigInteger.valueOf(lo); // fits in a long: most decimals
    }
    byte[] twosComplement = new byte[16];
    for (int i = 0; i < 8; i++) {
      twosComplement[i] = (byte) (hi >>> (56 - 8 * i));
      twosComplement[8 + i] = (byte) (lo >>> (56 - 8 * i));
    }
    return new BigInteger(twosComplement);
  }

  public BigDecimal getDecimal(int row) {
    return new BigDecimal(getUnscaled(row), type.scale());
  }

  /** A row as a plain Java value (null for a null row); lists become {@link List}s. */
  public Object getObject(int row) {
    if (isNull(row)) {
      return null;
    }
    return switch (type.kind()) {
      case BOOL -> getBoolean(row);
      case INT8 -> (byte) getLong(row);
      case INT16 -> (short) getLong(row);
      case INT32 -> (int) getLong(row);
      case INT64 -> getLong(row);
      case FLOAT32 -> getFloat(row);
      case FLOAT64 -> getDouble(row);
      case STRING -> getString(row);
      case BINARY -> getBytes(row);
      case DATE -> LocalDate.ofEpochDay(getLong(row));
      case TIMESTAMP -> timestamp(getLong(row));
      case DECIMAL -> getDecimal(row);
      case LIST -> {
        int s = start(row);
        int e = end(row);
        List<Object> out = new ArrayList<>(e - s);
        for (int k = s; k < e; k++) {
          out.add(child.getObject(k));
        }
        yield out;
      }
    };
  }

  private static LocalDateTime timestamp(long epochNanos) {
    return LocalDateTime.ofEpochSecond(
        Math.floorDiv(epochNanos, 1_000_000_000L),
        (int) Math.floorMod(epochNanos, 1_000_000_000L),
        ZoneOffset.UTC);
  }

  /** A zero-copy view of rows {@code [from, from + count)}. */
  public Column slice(int from, int count) {
    if (from < 0 || count < 0 || from + count > length) {
      throw new IndexOutOfBoundsException(
          "slice [" + from + ", " + (from + count) + ") of a column of " + length + " rows");
    }
    checkOpen();
    return guard == null ? new Column(type, count, offset + from, -1, validity, offsets, values, child)
        : new Column(this, count, offset + from, -1, guard);
  }

  @Override
  public String toString() {
    return "Column[" + type + ", " + length + " rows, " + nullCount + " nulls]";
  }
}
