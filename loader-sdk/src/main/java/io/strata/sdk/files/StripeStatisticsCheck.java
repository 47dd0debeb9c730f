package io.strata.sdk.files;

import io.strata.sdk.Column;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.FeatureType;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigDecimal;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Instant;
import org.apache.orc.BinaryColumnStatistics;
import org.apache.orc.BooleanColumnStatistics;
import org.apache.orc.ColumnStatistics;
import org.apache.orc.DateColumnStatistics;
import org.apache.orc.DecimalColumnStatistics;
import org.apache.orc.DoubleColumnStatistics;
import org.apache.orc.IntegerColumnStatistics;
import org.apache.orc.StringColumnStatistics;
import org.apache.orc.TimestampColumnStatistics;

/**
 * Cross-checks a fully decoded stripe against the statistics its writer recorded for that stripe.
 *
 * <p>orc-core does not notice every kind of damage: a string dictionary whose blob stream is
 * missing decodes to empty strings without an error. The writer's stripe statistics (non-null
 * value counts, total string bytes, integer, decimal, date and timestamp minimum and maximum,
 * integer and decimal sums, boolean true counts) are an
 * independent record of what the stripe holds, so a disagreement means the decoded values are
 * wrong. A statistic that is zero is treated as absent (old writers omit some), so that no valid
 * file is rejected for missing statistics. A minimum and a maximum are bounds, not the values
 * themselves: a writer may record wider ones (decimal64_v2.orc's writer records a minimum of 0
 * for values from 2), so values outside them are damage and values inside are not. Counts, sums
 * and totals are exact.
 *
 * <p>Timestamps: writers from ORC-135 on record them in UTC (compared to the millisecond);
 * older writers recorded the writer's local time, so their bounds are widened by the largest
 * difference between two time zones ({@link #LOCAL_TIME_SLACK_MILLIS}) instead of skipped: a
 * damaged value decades away is still caught.
 */
final class StripeStatisticsCheck {
  /** UTC+14 to UTC-12: the most a local time recorded by an old writer may differ from the same instant read here. */
  static final long LOCAL_TIME_SLACK_MILLIS = 26L * 3600 * 1000;

  private StripeStatisticsCheck() {}

  /** As below, for a file whose writer recorded timestamp statistics in local time (compared give or take 26 hours). */
  static void check(Path file, int stripe, String name, ColumnStatistics stats, Column c) throws CorruptFileException {
    check(file, stripe, name, stats, c, false);
  }

  /**
   * Checks the decoded column {@code c} against its stripe statistics; {@code utcTimestamps}: the
   * writer recorded timestamp statistics in UTC (writer version ORC-135 and later), so that they
   * can be compared.
   */
  static void check(Path file, int stripe, String name, ColumnStatistics stats, Column c, boolean utcTimestamps)
      throws CorruptFileException {
    long nonNull = (long) c.length() - c.nullCount();
    long recorded = stats.getNumberOfValues();
    if (recorded > 0 && recorded != nonNull) {
      fail(file, stripe, name, "decoded " + nonNull + " non-null values, the stripe statistics record " + recorded);
    }
    if (nonNull == 0 || recorded == 0) {
      return;
    }
    FeatureType t = c.type();
    switch (stats) {
      case StringColumnStatistics s when t.isVariableWidth() -> {
        long bytes = byteSum(c);
        if (s.getSum() > 0 && s.getSum() != bytes) {
          fail(file, stripe, name, "decoded " + bytes + " bytes of strings, the stripe statistics record " + s.getSum());
        }
      }
      case BinaryColumnStatistics b when t.isVariableWidth() -> {
        long bytes = byteSum(c);
        if (b.getSum() > 0 && b.getSum() != bytes) {
          fail(file, stripe, name, "decoded " + bytes + " bytes of binaries, the stripe statistics record " + b.getSum());
        }
      }
      case BooleanColumnStatistics b when t.kind() == FeatureType.Kind.BOOL -> {
        long trues = 0;
        for (int i = 0; i < c.length(); i++) {
          if (!c.isNull(i) && c.getBoolean(i)) {
            trues++;
          }
        }
        if (b.getTrueCount() + b.getFalseCount() == nonNull && b.getTrueCount() != trues) {
          fail(file, stripe, name, "decoded " + trues + " true values, the stripe statistics record " + b.getTrueCount());
        }
      }
      case IntegerColumnStatistics s
          when t.kind() == FeatureType.Kind.INT8 || t.kind() == FeatureType.Kind.INT16
              || t.kind() == FeatureType.Kind.INT32 || t.kind() == FeatureType.Kind.INT64 -> {
        long min = Long.MAX_VALUE;
        long max = Long.MIN_VALUE;
        long sum = 0;
        boolean sumDefined = true;
        for (int i = 0; i < c.length(); i++) {
          if (c.isNull(i)) {
            continue;
          }
          long v = c.getLong(i);
          min = Math.min(min, v);
          max = Math.max(max, v);
          if (sumDefined) {
            try {
              sum = Math.addExact(sum, v);
            } catch (ArithmeticException overflow) {
              sumDefined = false;
            }
          }
        }
        if (min < s.getMinimum() || max > s.getMaximum()) {
          fail(file, stripe, name, "decoded values in [" + min + ", " + max + "], outside the bounds the stripe statistics record ["
              + s.getMinimum() + ", " + s.getMaximum() + "]");
        }
        if (sumDefined && s.isSumDefined() && s.getSum() != sum) {
          fail(file, stripe, name, "decoded values sum to " + sum + ", the stripe statistics record " + s.getSum());
        }
      }
      case DoubleColumnStatistics s
          when t.kind() == FeatureType.Kind.FLOAT32 || t.kind() == FeatureType.Kind.FLOAT64 -> {
        double min = Double.POSITIVE_INFINITY;
        double max = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < c.length(); i++) {
          if (c.isNull(i)) {
            continue;
          }
          double v = c.getDouble(i);
          if (Double.isNaN(v)) {
            return;
          }
          min = Math.min(min, v);
          max = Math.max(max, v);
        }
        if (min < s.getMinimum() || max > s.getMaximum()) {
          fail(file, stripe, name, "decoded values in [" + min + ", " + max + "], outside the bounds the stripe statistics record ["
              + s.getMinimum() + ", " + s.getMaximum() + "]");
        }
      }
      case DecimalColumnStatistics s when t.kind() == FeatureType.Kind.DECIMAL -> {
        BigDecimal[] range = decimalRange(c);
        BigDecimal min = range[0];
        BigDecimal max = range[1];
        BigDecimal sum = range[2];
        if (s.getMinimum() != null && s.getMaximum() != null
            && (min.compareTo(s.getMinimum().bigDecimalValue()) < 0 || max.compareTo(s.getMaximum().bigDecimalValue()) > 0)) {
          fail(file, stripe, name, "decoded values in [" + min.toPlainString() + ", " + max.toPlainString()
              + "], outside the bounds the stripe statistics record [" + s.getMinimum() + ", " + s.getMaximum() + "]");
        }
        // The writer drops the sum when it overflows 38 digits: then it is null.
        if (s.getSum() != null && s.getSum().bigDecimalValue().compareTo(sum) != 0) {
          fail(file, stripe, name, "decoded values sum to " + sum.toPlainString() + ", the stripe statistics record " + s.getSum());
        }
      }
      case DateColumnStatistics s when t.kind() == FeatureType.Kind.DATE -> {
        long[] range = longRange(c);
        long min = range[0];
        long max = range[1];
        if (min < s.getMinimumDayOfEpoch() || max > s.getMaximumDayOfEpoch()) {
          fail(file, stripe, name, "decoded days in [" + min + ", " + max + "], outside the bounds the stripe statistics record ["
              + s.getMinimumDayOfEpoch() + ", " + s.getMaximumDayOfEpoch() + "]");
        }
      }
      case TimestampColumnStatistics s when t.kind() == FeatureType.Kind.TIMESTAMP
          && (utcTimestamps ? s.getMinimumUTC() != null && s.getMaximumUTC() != null
              : s.getMinimum() != null && s.getMaximum() != null) -> {
        long[] range = longRange(c);
        // Decoded values are nanoseconds; the statistics keep milliseconds (and writers have
        // rounded the maximum up), so a millisecond either way is no disagreement; an old
        // writer's local time may be off by any time zone's offset.
        long minMillis = Math.floorDiv(range[0], 1_000_000L);
        long maxMillis = Math.floorDiv(range[1], 1_000_000L);
        long recordedMin = utcTimestamps ? s.getMinimumUTC().getTime() : s.getMinimum().getTime();
        long recordedMax = utcTimestamps ? s.getMaximumUTC().getTime() : s.getMaximum().getTime();
        long slack = utcTimestamps ? 1 : LOCAL_TIME_SLACK_MILLIS;
        if (minMillis < recordedMin - slack || maxMillis > recordedMax + slack) {
          fail(file, stripe, name, "decoded timestamps in [" + Instant.ofEpochMilli(minMillis) + ", "
              + Instant.ofEpochMilli(maxMillis) + "], outside the bounds the stripe statistics record ["
              + Instant.ofEpochMilli(recordedMin) + ", " + Instant.ofEpochMilli(recordedMax) + "]"
              + (utcTimestamps ? "" : " (in the writer's local time, give or take 26 hours)"));
        }
      }
      default -> {
        // Counts only for other types.
      }
    }
  }

  /**
   * The minimum, maximum (null without values) and sum of a decimal column's non-null values. All
   * share the column's scale, so their unscaled values compare and add as they are: in longs while
   * every value fits in one and the sum does not overflow (the common case, no allocation), else
   * again in {@link java.math.BigDecimal}.
   */
  private static BigDecimal[] decimalRange(Column c) {
    int scale = c.type().scale();
    long min = Long.MAX_VALUE;
    long max = Long.MIN_VALUE;
    long sum = 0;
    boolean any = false;
    boolean fits = true;
    MemorySegment v = c.values();
    for (int i = 0; i < c.length() && fits; i++) {
      if (c.isNull(i)) {
        continue;
      }
      long at = (c.offset() + (long) i) * 16;
      long lo = v.get(LE_LONG, at);
      long hi = v.get(LE_LONG, at + 8);
      if (hi != lo >> 63) {
        fits = false;
        break;
      }
      try {
        sum = Math.addExact(sum, lo);
      } catch (ArithmeticException e) {
        fits = false;
        break;
      }
      min = Math.min(min, lo);
      max = Math.max(max, lo);
      any = true;
    }
    if (fits) {
      return new BigDecimal[] {any ? BigDecimal.valueOf(min, scale) : null,
          any ? BigDecimal.valueOf(max, scale) : null, BigDecimal.valueOf(sum, scale)};
    }
    BigDecimal bmin = null;
    BigDecimal bmax = null;
    BigDecimal bsum = BigDecimal.ZERO.setScale(scale);
    for (int i = 0; i < c.length(); i++) {
      if (c.isNull(i)) {
        continue;
      }
      BigDecimal d = c.getDecimal(i);
      bmin = bmin == null || d.compareTo(bmin) < 0 ? d : bmin;
      bmax = bmax == null || d.compareTo(bmax) > 0 ? d : bmax;
      bsum = bsum.add(d);
    }
    return new BigDecimal[] {bmin, bmax, bsum};
  }

  private static final ValueLayout.OfLong LE_LONG =
      ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  /** The smallest and the largest non-null value of a column of 64-bit values. */
  private static long[] longRange(Column c) {
    long min = Long.MAX_VALUE;
    long max = Long.MIN_VALUE;
    for (int i = 0; i < c.length(); i++) {
      if (!c.isNull(i)) {
        min = Math.min(min, c.getLong(i));
        max = Math.max(max, c.getLong(i));
      }
    }
    return new long[] {min, max};
  }

  private static long byteSum(Column c) {
    long bytes = 0;
    for (int i = 0; i < c.length(); i++) {
      if (!c.isNull(i)) {
        bytes += c.end(i) - c.start(i);
      }
    }
    return bytes;
  }

  private static void fail(Path file, int stripe, String column, String problem) throws CorruptFileException {
    throw new CorruptFileException(file, "stripe " + stripe + " column " + column + " is damaged: " + problem);
  }
}
