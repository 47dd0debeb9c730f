package io.strata.node;

import java.util.Locale;

/** Byte sizes written as {@code 3000}, {@code 512k}, {@code 512m}, {@code 10g}, {@code 1.5t}. */
public final class Sizes {
  private Sizes() {}

  public static long parse(String s) {
    String t = s.strip().toLowerCase(Locale.ROOT);
    if (t.endsWith("ib")) {
      t = t.substring(0, t.length() - 2);
    } else if (t.endsWith("b")) {
      t = t.substring(0, t.length() - 1);
    }
    long mult = 1;
    if (!t.isEmpty()) {
      switch (t.charAt(t.length() - 1)) {
        case 'k' -> mult = 1L << 10;
        case 'm' -> mult = 1L << 20;
        case 'g' -> mult = 1L << 30;
        case 't' -> mult = 1L << 40;
        default -> mult = 1;
      }
    }
    if (mult > 1) {
      t = t.substring(0, t.length() - 1);
    }
    try {
      double v = Double.parseDouble(t);
      if (v < 0 || Double.isNaN(v) || Double.isInfinite(v)) {
        throw new NumberFormatException();
      }
      return (long) (v * mult);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("bad byte size '" + s + "' (examples: 3000, 512m, 10g)");
    }
  }
}
