package io.strata.sdk.files;

import io.strata.sdk.format.ColumnBuilder;
import io.strata.sdk.FeatureType;
import java.math.BigDecimal;
import java.math.BigInteger;
import org.apache.hadoop.hive.ql.exec.vector.BytesColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.Decimal64ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DecimalColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DoubleColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ListColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.TimestampColumnVector;

/** Appends rows of ORC column vectors to Arrow-layout column builders. */
final class OrcColumns {
  private OrcColumns() {}

  /** Thrown for a value that cannot be represented (for example a timestamp beyond year 2262). */
  static final class UnrepresentableValueException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UnrepresentableValueException(String message) {
      super(message);
    }
  }

  /** Appends rows {@code [from, from + count)} of {@code v} to {@code b}. */
  static void append(ColumnBuilder b, ColumnVector v, int from, int count) {
    FeatureType t = b.type();
    if (count == 0) {
      return;
    }
    if (v.isRepeating) {
      for (int k = 0; k < count; k++) {
        appendOne(b, t, v, 0);
      }
      return;
    }
    boolean[] nulls = v.noNulls ? null : v.isNull;
    switch (v) {
      case Decimal64ColumnVector d -> {
        for (int k = 0; k < count; k++) {
          appendOne(b, t, d, from + k);
        }
      }
      case LongColumnVector l -> b.appendLongs(l.vector, nulls, from, count);
      case DoubleColumnVector d -> b.appendDoubles(d.vector, nulls, from, count);
      default -> {
        for (int k = 0; k < count; k++) {
          appendOne(b, t, v, from + k);
        }
      }
    }
  }

  private static void appendOne(ColumnBuilder b, FeatureType t, ColumnVector v, int row) {
    if (!v.noNulls && v.isNull[row]) {
      b.appendNull();
      return;
    }
    switch (v) {
      case Decimal64ColumnVector d -> {
        long unscaled = rescale(d.vector[row], d.scale, t.scale());
        b.appendDecimal(unscaled, unscaled < 0 ? -1L : 0L);
      }
      case LongColumnVector l -> b.appendLong(l.vector[row]);
      case DoubleColumnVector d -> b.appendDouble(d.vector[row]);
      case BytesColumnVector s -> b.appendBytes(s.vector[row], s.start[row], s.length[row]);
      case TimestampColumnVector ts -> b.appendLong(epochNanos(ts.time[row], ts.nanos[row]));
      case DecimalColumnVector d -> {
        BigDecimal value = d.vector[row].getHiveDecimal().bigDecimalValue().setScale(t.scale());
        BigInteger unscaled = value.unscaledValue();
        if (unscaled.bitLength() > 127) {
          throw new UnrepresentableValueException("decimal " + value + " does not fit in 128 bits");
        }
        b.appendDecimal(unscaled.longValue(), unscaled.shiftRight(64).longValue());
      }
      case ListColumnVector list -> {
        int start = (int) list.offsets[row];
        int length = (int) list.lengths[row];
        append(b.child(), list.child, start, length);
        b.endList();
      }
      default ->
          throw new IllegalStateException("no conversion from " + v.getClass().getSimpleName() + " to " + t);
    }
  }

  private static long rescale(long unscaled, int fromScale, int toScale) {
    long v = unscaled;
    for (int s = fromScale; s < toScale; s++) {
      v = Math.multiplyExact(v, 10L);
    }
    return v;
  }

  /** Wall-clock nanoseconds since the epoch from ORC's milliseconds and nanos-of-second. */
  static long epochNanos(long millis, int nanosOfSecond) {
    try {
      return Math.addExact(Math.multiplyExact(Math.floorDiv(millis, 1000L), 1_000_000_000L), nanosOfSecond);
    } catch (ArithmeticException e) {
      throw new UnrepresentableValueException(
          "timestamp " + millis + " ms lies outside the nanosecond range (years 1677..2262)");
    }
  }
}
