package io.strata.sdk.format;

import io.strata.sdk.Column;
import io.strata.sdk.FeatureType;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.zip.CRC32C;

/** Comparisons and measures of columns. */
public final class Columns {
  private Columns() {}

  /**
   * The first row at which two columns differ in nullness or value, or -1 if they hold the same
   * values. Null rows compare equal whatever their buffer contents; floating-point values compare
   * by bits.
   */
  public static int firstDifference(Column a, Column b) {
    if (!a.type().equals(b.type())) {
      return 0;
    }
    int n = Math.min(a.length(), b.length());
    FeatureType t = a.type();
    int width = t.kind().width();
    boolean nulls = a.hasNulls() || b.hasNulls();
    if (!nulls && width > 0) {
      long m =
          MemorySegment.mismatch(
              a.values(), (long) a.offset() * width, (long) (a.offset() + n) * width,
              b.values(), (long) b.offset() * width, (long) (b.offset() + n) * width);
      if (m >= 0) {
        return (int) (m / width);
      }
      return a.length() == b.length() ? -1 : n;
    }
    for (int i = 0; i < n; i++) {
      boolean an = a.isNull(i);
      if (an != b.isNull(i)) {
        return i;
      }
      if (!an && !sameValue(a, b, i, t, width)) {
        return i;
      }
    }
    return a.length() == b.length() ? -1 : n;
  }

  private static boolean sameValue(Column a, Column b, int i, FeatureType t, int width) {
    if (width == 0) {
      return a.getBoolean(i) == b.getBoolean(i);
    }
    if (width > 0) {
      long ao = (long) (a.offset() + i) * width;
      long bo = (long) (b.offset() + i) * width;
      return MemorySegment.mismatch(a.values(), ao, ao + width, b.values(), bo, bo + width) < 0;
    }
    if (t.isVariableWidth()) {
      int as = a.start(i);
      int ae = a.end(i);
      int bs = b.start(i);
      int be = b.end(i);
      return ae - as == be - bs && MemorySegment.mismatch(a.values(), as, ae, b.values(), bs, be) < 0;
    }
    int as = a.start(i);
    int ae = a.end(i);
    int bs = b.start(i);
    int be = b.end(i);
    if (ae - as != be - bs) {
      return false;
    }
    return firstDifference(a.child().slice(as, ae - as), b.child().slice(bs, be - bs)) < 0;
  }

  /**
   * A checksum of a column's logical content (nullness and values), independent of its buffer
   * layout: two columns with the same values have the same checksum whatever their offsets,
   * slicing or the bytes under null rows.
   */
  public static long checksum(Column c) {
    CRC32C crc = new CRC32C();
    update(crc, c);
    return crc.getValue();
  }

  private static void update(CRC32C crc, Column c) {
    FeatureType t = c.type();
    int n = c.length();
    int width = t.kind().width();
    crc.update(n);
    if (!c.hasNulls() && width > 0) {
      crc.update(c.values().asSlice((long) c.offset() * width, (long) n * width).asByteBuffer());
      return;
    }
    byte[] scratch = new byte[16];
    for (int i = 0; i < n; i++) {
      if (c.isNull(i)) {
        crc.update(0);
        continue;
      }
      crc.update(1);
      if (width == 0) {
        crc.update(c.getBoolean(i) ? 1 : 0);
      } else if (width > 0) {
        MemorySegment.copy(c.values(), ValueLayout.JAVA_BYTE, (long) (c.offset() + i) * width, scratch, 0, width);
        crc.update(scratch, 0, width);
      } else if (t.isVariableWidth()) {
        int s = c.start(i);
        int e = c.end(i);
        crc.update(e - s);
        crc.update(c.values().asSlice(s, e - s).asByteBuffer());
      } else {
        int s = c.start(i);
        int e = c.end(i);
        crc.update(e - s);
        update(crc, c.child().slice(s, e - s));
      }
    }
  }

  /** Bytes of buffer data that rows {@code [0, length)} of a column occupy (values, offsets, validity). */
  public static long dataBytes(Column c) {
    int n = c.length();
    long bytes = c.hasNulls() ? (n + 7L) / 8 : 0;
    FeatureType t = c.type();
    if (t.isFixedWidth()) {
      return bytes + (t.kind().width() == 0 ? (n + 7L) / 8 : (long) n * t.kind().width());
    }
    bytes += 4L * (n + 1);
    if (n == 0) {
      return bytes;
    }
    int s = c.start(0);
    int e = c.end(n - 1);
    if (t.isVariableWidth()) {
      return bytes + (e - s);
    }
    return bytes + dataBytes(c.child().slice(s, e - s));
  }
}
