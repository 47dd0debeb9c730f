package io.strata.node;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Locale;

/**
 * Byte sizes written as {@code 3000}, {@code 512k}, {@code 512m}, {@code 10g}, {@code 1.5t}: a
 * plain decimal number (no sign, no exponent), whole when it has no unit, from 0 to 2^63 − 1
 * bytes, the same range the node's API takes.
 */
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
    if (!t.matches("[0-9]{1,30}(\\.[0-9]{1,30})?")) {
      throw new IllegalArgumentException("bad byte size '" + s + "' (examples: 3000, 512m, 10g, 1.5t)");
    }
    BigDecimal v = new BigDecimal(t).multiply(BigDecimal.valueOf(mult));
    if (v.stripTrailingZeros().scale() > 0 && mult == 1) {
      throw new IllegalArgumentException("bad byte size '" + s + "': a number of bytes is whole");
    }
    BigInteger bytes = v.toBigInteger();
    if (bytes.bitLength() > 63) {
      throw new IllegalArgumentException("byte size '" + s + "' is more than " + Long.MAX_VALUE + " bytes");
    }
    return bytes.longValueExact();
  }
}
