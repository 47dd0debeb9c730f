package io.strata.sdk.files;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Column;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.FeatureType;
import io.strata.sdk.format.ColumnBuilder;
import java.lang.foreign.Arena;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.file.Path;
import java.sql.Timestamp;
import org.apache.hadoop.hive.common.type.HiveDecimal;
import org.apache.hadoop.hive.serde2.io.HiveDecimalWritable;
import org.apache.orc.TypeDescription;
import org.apache.orc.impl.ColumnStatisticsImpl;
import org.junit.jupiter.api.Test;

/** Decoded decimals, dates and timestamps that disagree with the writer's stripe statistics are refused. */
class StripeStatisticsCheckTest {
  private static final Path FILE = Path.of("part-00000.orc");

  private static Column decimals(Arena arena, FeatureType t, long... unscaled) {
    ColumnBuilder b = new ColumnBuilder(t, arena, unscaled.length);
    for (long u : unscaled) {
      b.appendDecimal(u, u < 0 ? -1 : 0);
    }
    return b.build();
  }

  private static Column longs(Arena arena, FeatureType t, long... values) {
    ColumnBuilder b = new ColumnBuilder(t, arena, values.length);
    for (long v : values) {
      b.appendLong(v);
    }
    return b.build();
  }

  private static Column dates(Arena arena, long... days) {
    return longs(arena, FeatureType.DATE, days);
  }

  @Test
  void decimalsOutsideTheRecordedRangeOrSumAreDamage() {
    long[] written = {-100050, 199920, 12345, 0};
    ColumnStatisticsImpl stats = ColumnStatisticsImpl.create(TypeDescription.createDecimal().withPrecision(20).withScale(2));
    for (long u : written) {
      stats.increment();
      stats.updateDecimal(new HiveDecimalWritable(HiveDecimal.create(BigInteger.valueOf(u), 2)));
    }
    FeatureType t = FeatureType.decimal(20, 2);
    try (Arena arena = Arena.ofConfined()) {
      assertDoesNotThrow(() -> StripeStatisticsCheck.check(FILE, 0, "balance", stats, decimals(arena, t, written)));
      // A changed value inside the range: the sum tells.
      CorruptFileException sum = assertThrows(CorruptFileException.class,
          () -> StripeStatisticsCheck.check(FILE, 0, "balance", stats, decimals(arena, t, -100050, 199920, 12346, 0)));
      assertTrue(sum.getMessage().contains("balance") && sum.getMessage().contains("sum"), sum.getMessage());
      // A value beyond the maximum (the bytes of a damaged varint).
      CorruptFileException range = assertThrows(CorruptFileException.class,
          () -> StripeStatisticsCheck.check(FILE, 0, "balance", stats, decimals(arena, t, -100050, 9_199_920, 12345, -9_212_345)));
      assertTrue(range.getMessage().contains("part-00000.orc") && range.getMessage().contains("stripe 0"), range.getMessage());
    }
  }

  @Test
  void decimalsWiderThanALongAreCheckedExactlyToo() {
    BigInteger big = BigInteger.ONE.shiftLeft(70).add(BigInteger.valueOf(5)); // 2^70 + 5: beyond a long
    BigInteger[] written = {big, big.negate(), BigInteger.valueOf(7)};
    ColumnStatisticsImpl stats = ColumnStatisticsImpl.create(TypeDescription.createDecimal().withPrecision(38).withScale(3));
    for (BigInteger u : written) {
      stats.increment();
      stats.updateDecimal(new HiveDecimalWritable(HiveDecimal.create(u, 3)));
    }
    FeatureType t = FeatureType.decimal(38, 3);
    try (Arena arena = Arena.ofConfined()) {
      ColumnBuilder b = new ColumnBuilder(t, arena, 3);
      b.appendDecimal(5, 64); // 64 * 2^64 + 5
      b.appendDecimal(-5, -65); // its negation in two's complement
      b.appendDecimal(7, 0);
      Column c = b.build();
      assertEquals(big, c.getUnscaled(0));
      assertEquals(big.negate(), c.getUnscaled(1));
      assertEquals(new BigDecimal(big, 3), c.getDecimal(0));
      assertDoesNotThrow(() -> StripeStatisticsCheck.check(FILE, 0, "wide", stats, c));
      ColumnBuilder d = new ColumnBuilder(t, arena, 3);
      d.appendDecimal(6, 64); // one more than written
      d.appendDecimal(-5, -65);
      d.appendDecimal(7, 0);
      CorruptFileException e = assertThrows(CorruptFileException.class,
          () -> StripeStatisticsCheck.check(FILE, 0, "wide", stats, d.build()));
      assertTrue(e.getMessage().contains("wide"), e.getMessage());
    }
  }

  private static Column timestamps(Arena arena, long... nanos) {
    return longs(arena, FeatureType.TIMESTAMP, nanos);
  }

  @Test
  void timestampsOutsideTheRecordedRangeAreDamageInUtcOrAnOldWritersLocalTime() {
    long[] millis = {1_700_000_000_123L, 1_700_000_500_456L, 1_700_000_250_789L};
    int[] nanosOfMilli = {456_789, 0, 999_999};
    ColumnStatisticsImpl stats = ColumnStatisticsImpl.create(TypeDescription.createTimestamp());
    long[] decoded = new long[millis.length];
    for (int i = 0; i < millis.length; i++) {
      stats.increment();
      Timestamp ts = new Timestamp(millis[i]);
      ts.setNanos((int) (millis[i] % 1000) * 1_000_000 + nanosOfMilli[i]);
      stats.updateTimestamp(ts);
      decoded[i] = millis[i] * 1_000_000 + nanosOfMilli[i];
    }
    try (Arena arena = Arena.ofConfined()) {
      assertDoesNotThrow(() -> StripeStatisticsCheck.check(FILE, 0, "event_time", stats, timestamps(arena, decoded), true));
      long[] damaged = decoded.clone();
      damaged[1] = decoded[1] + 86_400_000_000_000L * 365; // a year later: bytes of a damaged varint
      CorruptFileException e = assertThrows(CorruptFileException.class,
          () -> StripeStatisticsCheck.check(FILE, 0, "event_time", stats, timestamps(arena, damaged), true));
      assertTrue(e.getMessage().contains("event_time") && e.getMessage().contains("timestamps"), e.getMessage());
      // A writer before ORC-135 recorded local time: compared give or take the widest time-zone
      // difference, so a value a time zone away passes and one a year away is damage.
      long[] zoned = decoded.clone();
      for (int i = 0; i < zoned.length; i++) {
        zoned[i] -= 14L * 3600 * 1_000_000_000L; // the writer was at UTC+14
      }
      assertDoesNotThrow(() -> StripeStatisticsCheck.check(FILE, 0, "event_time", stats, timestamps(arena, zoned), false));
      CorruptFileException old = assertThrows(CorruptFileException.class,
          () -> StripeStatisticsCheck.check(FILE, 0, "event_time", stats, timestamps(arena, damaged), false));
      assertTrue(old.getMessage().contains("writer's local time"), old.getMessage());
    }
  }

  @Test
  void datesOutsideTheRecordedRangeAreDamage() {
    int[] written = {18000, 19000, 18500};
    ColumnStatisticsImpl stats = ColumnStatisticsImpl.create(TypeDescription.createDate());
    for (int d : written) {
      stats.increment();
      stats.updateDate(d);
    }
    try (Arena arena = Arena.ofConfined()) {
      assertDoesNotThrow(() -> StripeStatisticsCheck.check(FILE, 0, "event_date", stats, dates(arena, 18000, 19000, 18500)));
      assertThrows(CorruptFileException.class,
          () -> StripeStatisticsCheck.check(FILE, 0, "event_date", stats, dates(arena, 18000, 19000, 91000)));
    }
  }
}
