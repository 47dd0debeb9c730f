package io.strata.sdk;

import io.strata.sdk.format.ColumnBuilder;
import java.lang.foreign.Arena;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Random;
import java.util.SplittableRandom;

/** Random columns of every feature type, with their expected values as plain Java objects. */
public final class TestData {
  private TestData() {}

  public static final List<FeatureType> ALL_TYPES =
      List.of(
          FeatureType.BOOL,
          FeatureType.INT8,
          FeatureType.INT16,
          FeatureType.INT32,
          FeatureType.INT64,
          FeatureType.FLOAT32,
          FeatureType.FLOAT64,
          FeatureType.STRING,
          FeatureType.BINARY,
          FeatureType.DATE,
          FeatureType.TIMESTAMP,
          FeatureType.decimal(18, 4),
          FeatureType.decimal(38, 10),
          FeatureType.list(FeatureType.FLOAT32),
          FeatureType.list(FeatureType.STRING),
          FeatureType.list(FeatureType.INT64));

  /** A column and the values it must hold. */
  public record Sample(Column column, List<Object> expected) {}

  /** Builds {@code rows} random values of {@code type}; about {@code nullRate} of them null. */
  public static Sample random(FeatureType type, int rows, double nullRate, long seed, Arena arena) {
    SplittableRandom r = new SplittableRandom(seed);
    ColumnBuilder b = new ColumnBuilder(type, arena, 4);
    List<Object> expected = new ArrayList<>(rows);
    for (int i = 0; i < rows; i++) {
      if (r.nextDouble() < nullRate) {
        b.appendNull();
        expected.add(null);
      } else {
        expected.add(append(b, type, r));
      }
    }
    return new Sample(b.build(), expected);
  }

  static Object append(ColumnBuilder b, FeatureType type, SplittableRandom r) {
    switch (type.kind()) {
      case BOOL -> {
        boolean v = r.nextBoolean();
        b.appendBoolean(v);
        return v;
      }
      case INT8 -> {
        byte v = (byte) r.nextInt();
        b.appendLong(v);
        return v;
      }
      case INT16 -> {
        short v = (short) r.nextInt();
        b.appendLong(v);
        return v;
      }
      case INT32 -> {
        int v = r.nextInt();
        b.appendLong(v);
        return v;
      }
      case INT64 -> {
        long v = r.nextLong();
        b.appendLong(v);
        return v;
      }
      case FLOAT32 -> {
        float v = (float) r.nextGaussian();
        b.appendDouble(v);
        return v;
      }
      case FLOAT64 -> {
        double v = r.nextGaussian() * 1e6;
        b.appendDouble(v);
        return v;
      }
      case STRING -> {
        String v = "s" + Long.toString(r.nextLong(), 36).repeat(r.nextInt(3)) + "é";
        byte[] u = v.getBytes(StandardCharsets.UTF_8);
        b.appendBytes(u, 0, u.length);
        return v;
      }
      case BINARY -> {
        byte[] v = new byte[r.nextInt(20)];
        r.nextBytes(v);
        b.appendBytes(v, 0, v.length);
        return v;
      }
      case DATE -> {
        long v = r.nextInt(-30000, 30000);
        b.appendLong(v);
        return LocalDate.ofEpochDay(v);
      }
      case TIMESTAMP -> {
        long v = r.nextLong(-2_000_000_000_000_000_000L, 2_000_000_000_000_000_000L);
        b.appendLong(v);
        return LocalDateTime.ofEpochSecond(
            Math.floorDiv(v, 1_000_000_000L), (int) Math.floorMod(v, 1_000_000_000L), ZoneOffset.UTC);
      }
      case DECIMAL -> {
        BigInteger unscaled = new BigInteger(type.precision() * 3, new Random(r.nextLong()));
        if (r.nextBoolean()) {
          unscaled = unscaled.negate();
        }
        b.appendDecimal(unscaled.longValue(), unscaled.shiftRight(64).longValue());
        return new BigDecimal(unscaled, type.scale());
      }
      case LIST -> {
        int n = r.nextInt(6);
        List<Object> items = new ArrayList<>();
        for (int k = 0; k < n; k++) {
          if (r.nextInt(10) == 0) {
            b.child().appendNull();
            items.add(null);
          } else {
            items.add(append(b.child(), type.element(), r));
          }
        }
        b.endList();
        return items;
      }
    }
    throw new IllegalStateException(type.toString());
  }

  /** Compares values the way a test should (arrays by content). */
  public static boolean same(Object expected, Object actual) {
    if (expected instanceof byte[] e && actual instanceof byte[] a) {
      return Arrays.equals(e, a);
    }
    if (expected instanceof List<?> e && actual instanceof List<?> a) {
      if (e.size() != a.size()) {
        return false;
      }
      for (int i = 0; i < e.size(); i++) {
        if (!same(e.get(i), a.get(i))) {
          return false;
        }
      }
      return true;
    }
    return Objects.equals(expected, actual);
  }

  /** Asserts every row of {@code column} equals {@code expected}. */
  public static void assertColumn(List<Object> expected, Column column, String what) {
    if (expected.size() != column.length()) {
      throw new AssertionError(what + ": " + column.length() + " rows, expected " + expected.size());
    }
    for (int i = 0; i < expected.size(); i++) {
      Object a = column.getObject(i);
      if (!same(expected.get(i), a)) {
        throw new AssertionError(
            what + " row " + i + ": expected " + show(expected.get(i)) + " but was " + show(a));
      }
    }
  }

  static String show(Object o) {
    return o instanceof byte[] b ? Arrays.toString(b) : String.valueOf(o);
  }
}
