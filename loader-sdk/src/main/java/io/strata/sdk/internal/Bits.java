package io.strata.sdk.internal;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Operations on Arrow bitmaps (least significant bit first). */
public final class Bits {
  private Bits() {}

  public static boolean get(MemorySegment bits, long index) {
    return (bits.get(ValueLayout.JAVA_BYTE, index >>> 3) & (1 << (index & 7))) != 0;
  }

  public static void set(MemorySegment bits, long index, boolean value) {
    long at = index >>> 3;
    byte b = bits.get(ValueLayout.JAVA_BYTE, at);
    int mask = 1 << (index & 7);
    bits.set(ValueLayout.JAVA_BYTE, at, (byte) (value ? (b | mask) : (b & ~mask)));
  }

  /** Number of zero bits in {@code [from, from + count)}; 0 when {@code bits} is absent. */
  public static int countZeros(MemorySegment bits, long from, long count) {
    if (bits.address() == 0 || count == 0) {
      return 0;
    }
    long ones = 0;
    long i = from;
    long end = from + count;
    while (i < end && (i & 7) != 0) {
      ones += get(bits, i) ? 1 : 0;
      i++;
    }
    while (i + 64 <= end) {
      ones += Long.bitCount(bits.get(Le.LONG, i >>> 3));
      i += 64;
    }
    while (i < end) {
      ones += get(bits, i) ? 1 : 0;
      i++;
    }
    return (int) (count - ones);
  }

  /** Sets bits {@code [from, from + count)} of {@code dst} to one. */
  public static void fill(MemorySegment dst, long from, long count) {
    long i = from;
    long end = from + count;
    while (i < end && (i & 7) != 0) {
      set(dst, i++, true);
    }
    long bytes = (end - i) >>> 3;
    if (bytes > 0) {
      dst.asSlice(i >>> 3, bytes).fill((byte) -1);
      i += bytes << 3;
    }
    while (i < end) {
      set(dst, i++, true);
    }
  }

  /**
   * Copies {@code count} bits from {@code src} at bit {@code srcBit} to {@code dst} at bit
   * {@code dstBit}. Byte-aligned copies are bulk copies; others move up to 56 bits per step.
   */
  public static void copy(MemorySegment src, long srcBit, MemorySegment dst, long dstBit, long count) {
    if (count == 0) {
      return;
    }
    if ((srcBit & 7) == 0 && (dstBit & 7) == 0) {
      long bytes = count >>> 3;
      MemorySegment.copy(src, srcBit >>> 3, dst, dstBit >>> 3, bytes);
      for (long k = bytes << 3; k < count; k++) {
        set(dst, dstBit + k, get(src, srcBit + k));
      }
      return;
    }
    long done = 0;
    long srcSize = src.byteSize();
    long dstSize = dst.byteSize();
    while (done < count) {
      long s = srcBit + done;
      long d = dstBit + done;
      long sByte = s >>> 3;
      long dByte = d >>> 3;
      int n = (int) Math.min(56, count - done);
      if (sByte + 8 <= srcSize && dByte + 8 <= dstSize) {
        long word = src.get(Le.LONG, sByte) >>> (s & 7);
        long mask = n == 64 ? -1L : (1L << n) - 1;
        int shift = (int) (d & 7);
        long old = dst.get(Le.LONG, dByte);
        long keep = ~(mask << shift);
        dst.set(Le.LONG, dByte, (old & keep) | ((word & mask) << shift));
        done += n;
      } else {
        set(dst, d, get(src, s));
        done++;
      }
    }
  }
}
