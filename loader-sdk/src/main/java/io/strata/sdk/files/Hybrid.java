package io.strata.sdk.files;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.apache.parquet.bytes.ByteBufferInputStream;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.Dictionary;
import org.apache.parquet.column.Encoding;
import org.apache.parquet.column.page.DataPageV1;
import org.apache.parquet.column.values.ValuesReader;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;

/**
 * A data page's levels and fixed-width values decoded in bulk: Parquet's run-length / bit-packed
 * hybrid (levels, dictionary ids) into int arrays, and plain or dictionary-encoded numbers into one
 * array of their bits, handed on as a {@link ValuesReader} over that array ({@link Decoded}). A
 * fleet node spent a sixth of its CPU in parquet-java's hybrid decoder, a call a value through its
 * dictionary reader (issue 58's profile); here a run is a fill and a bit-packed group a shift
 * loop. What this does not take (other encodings, other types, the deprecated bit-packed level
 * encoding) is left to parquet-java ({@link #v1} and {@link #values} answer null).
 *
 * <p>Stateless but for a {@link Decoded}'s arrays, which belong to one reader thread.
 */
final class Hybrid {
  private Hybrid() {}

  /**
   * Decodes {@code n} values of {@code bitWidth} bits from the hybrid runs in {@code b} at {@code
   * pos} (up to {@code limit}) into {@code out}; returns the position after the last run read.
   */
  static int decode(ByteBuffer b, int pos, int limit, int bitWidth, int[] out, int n) {
    if (bitWidth < 0 || bitWidth > 32) {
      throw new IllegalStateException("a run-length/bit-packed width of " + bitWidth + " bits (at most 32)");
    }
    int k = 0;
    long mask = bitWidth == 32 ? 0xFFFF_FFFFL : (1L << bitWidth) - 1;
    int valueBytes = (bitWidth + 7) >>> 3;
    while (k < n) {
      // The run's header: an unsigned LEB128 varint.
      int header = 0;
      int shift = 0;
      while (true) {
        if (pos >= limit) {
          throw new IllegalStateException("a page's run-length/bit-packed data ends after " + k + " of " + n + " values");
        }
        int by = b.get(pos++) & 0xFF;
        header |= (by & 0x7F) << shift;
        if ((by & 0x80) == 0) {
          break;
        }
        shift += 7;
        if (shift > 28) {
          throw new IllegalStateException("a run-length/bit-packed run header longer than 5 bytes");
        }
      }
      if ((header & 1) == 0) {
        // A run of one value repeated.
        int count = header >>> 1;
        if (pos + valueBytes > limit) {
          throw new IllegalStateException("a page's run-length data ends inside a run's value");
        }
        int v = 0;
        for (int i = 0; i < valueBytes; i++) {
          v |= (b.get(pos++) & 0xFF) << (8 * i);
        }
        int take = Math.min(count, n - k);
        java.util.Arrays.fill(out, k, k + take, v);
        k += take;
      } else {
        // Groups of eight values, bitWidth bytes a group, least significant bits first.
        long groups = (long) (header >>> 1);
        long bytes = groups * bitWidth;
        if (pos + bytes > limit) {
          throw new IllegalStateException("a page's bit-packed data ends inside a run of " + groups + " groups");
        }
        int values = (int) Math.min(groups * 8, n - k);
        long acc = 0;
        int bits = 0;
        int p = pos;
        for (int i = 0; i < values; i++) {
          while (bits < bitWidth) {
            acc |= (long) (b.get(p++) & 0xFF) << bits;
            bits += 8;
          }
          out[k++] = (int) (acc & mask);
          acc >>>= bitWidth;
          bits -= bitWidth;
        }
        pos += (int) bytes;
      }
    }
    return pos;
  }

  /** The bits of fixed-width values already decoded, read in order as a {@link ValuesReader}. */
  static final class Decoded extends ValuesReader {
    long[] bits = new long[0];
    int[] ids = new int[0];
    private int at;
    private int count;
    private Dictionary dictOf;
    private long[] dictBits;

    private void reset(int n) {
      if (bits.length < n) {
        bits = new long[n];
      }
      at = 0;
      count = n;
    }

    private long next() {
      if (at >= count) {
        throw new IllegalStateException("a page read past its " + count + " values");
      }
      return bits[at++];
    }

    @Override
    public void initFromPage(int valueCount, ByteBufferInputStream in) {
      throw new UnsupportedOperationException("decoded already");
    }

    @Override
    public void skip() {
      next();
    }

    @Override
    public int readInteger() {
      return (int) next();
    }

    @Override
    public long readLong() {
      return next();
    }

    @Override
    public float readFloat() {
      return Float.intBitsToFloat((int) next());
    }

    @Override
    public double readDouble() {
      return Double.longBitsToDouble(next());
    }

    /** The dictionary's values as bits (made once per dictionary). */
    private long[] dictionary(Dictionary dict, PrimitiveTypeName t) {
      if (dict != dictOf) {
        long[] v = new long[dict.getMaxId() + 1];
        for (int i = 0; i < v.length; i++) {
          v[i] = switch (t) {
            case INT32 -> dict.decodeToInt(i);
            case INT64 -> dict.decodeToLong(i);
            case FLOAT -> Float.floatToRawIntBits(dict.decodeToFloat(i));
            default -> Double.doubleToRawLongBits(dict.decodeToDouble(i));
          };
        }
        dictOf = dict;
        dictBits = v;
      }
      return dictBits;
    }
  }

  /** A page's bytes as one buffer (a view where they lie in one, else a copy). */
  static ByteBuffer whole(org.apache.parquet.bytes.BytesInput bytes) throws java.io.IOException {
    ByteBufferInputStream in = bytes.toInputStream();
    return in.slice(in.available());
  }

  /** Whether values of this physical type decode here. */
  private static boolean fixed(PrimitiveTypeName t) {
    return t == PrimitiveTypeName.INT32 || t == PrimitiveTypeName.INT64 || t == PrimitiveTypeName.FLOAT
        || t == PrimitiveTypeName.DOUBLE;
  }

  /**
   * Decodes {@code count} values of {@code d} encoded as {@code e} from {@code b} at {@code pos} into
   * {@code into}; returns it, or null where the encoding or type is not one decoded here.
   */
  static Decoded values(Encoding e, ByteBuffer b, int pos, int limit, ColumnDescriptor d, Dictionary dict, int count,
      Decoded into) {
    PrimitiveTypeName t = d.getPrimitiveType().getPrimitiveTypeName();
    if (!fixed(t)) {
      return null;
    }
    if (e.usesDictionary()) {
      if (dict == null) {
        throw new IllegalStateException("a dictionary-encoded page without a dictionary page");
      }
      into.reset(count);
      if (count == 0) {
        return into;
      }
      if (pos >= limit) {
        throw new IllegalStateException("a dictionary-encoded page without its ids' bit width");
      }
      int width = b.get(pos++) & 0xFF;
      if (into.ids.length < count) {
        into.ids = new int[count];
      }
      decode(b, pos, limit, width, into.ids, count);
      long[] v = into.dictionary(dict, t);
      for (int i = 0; i < count; i++) {
        int id = into.ids[i];
        if (id < 0 || id >= v.length) {
          throw new IllegalStateException("a dictionary id " + (id & 0xFFFF_FFFFL) + " outside its dictionary of " + v.length);
        }
        into.bits[i] = v[id];
      }
      return into;
    }
    if (e != Encoding.PLAIN) {
      return null;
    }
    int width = t == PrimitiveTypeName.INT32 || t == PrimitiveTypeName.FLOAT ? 4 : 8;
    if ((long) count * width > limit - pos) {
      throw new IllegalStateException("a plain page holds " + (limit - pos) + " bytes for " + count + " values of " + width);
    }
    into.reset(count);
    ByteBuffer le = b.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    if (t == PrimitiveTypeName.INT32) {
      for (int i = 0; i < count; i++) {
        into.bits[i] = le.getInt(pos + 4 * i);
      }
    } else if (t == PrimitiveTypeName.FLOAT) {
      for (int i = 0; i < count; i++) {
        into.bits[i] = le.getInt(pos + 4 * i) & 0xFFFF_FFFFL;
      }
    } else {
      for (int i = 0; i < count; i++) {
        into.bits[i] = le.getLong(pos + 8 * i);
      }
    }
    return into;
  }

  /**
   * A version 1 page's {@code n} levels into {@code rep} and {@code def} and its values into {@code
   * into}, where its levels are run-length encoded (or absent) and its values are decoded here;
   * null (nothing consumed) otherwise.
   */
  static Decoded v1(DataPageV1 v1, ColumnDescriptor d, Dictionary dict, int n, int[] rep, int[] def, Decoded into)
      throws java.io.IOException {
    int maxRep = d.getMaxRepetitionLevel();
    int maxDef = d.getMaxDefinitionLevel();
    if ((maxRep > 0 && v1.getRlEncoding() != Encoding.RLE) || (maxDef > 0 && v1.getDlEncoding() != Encoding.RLE)
        || !fixed(d.getPrimitiveType().getPrimitiveTypeName())
        || !(v1.getValueEncoding() == Encoding.PLAIN || v1.getValueEncoding().usesDictionary())) {
      return null;
    }
    ByteBuffer b = whole(v1.getBytes());
    int pos = b.position();
    int limit = b.limit();
    pos = levelsV1(b, pos, limit, maxRep, n, rep);
    pos = levelsV1(b, pos, limit, maxDef, n, def);
    return values(v1.getValueEncoding(), b, pos, limit, d, dict, present(def, n, maxDef), into);
  }

  /** How many of a page's {@code n} entries hold a value: those at the leaf's maximum definition level. */
  static int present(int[] def, int n, int maxDef) {
    int count = 0;
    for (int i = 0; i < n; i++) {
      if (def[i] == maxDef) {
        count++;
      }
    }
    return count;
  }

  /** Levels of a version 1 page: a 4-byte length and hybrid runs, or nothing where the level's maximum is 0. */
  private static int levelsV1(ByteBuffer b, int pos, int limit, int max, int n, int[] out) {
    if (max == 0) {
      java.util.Arrays.fill(out, 0, n, 0);
      return pos;
    }
    if (pos + 4 > limit) {
      throw new IllegalStateException("a page ends before its levels' length");
    }
    int length = b.duplicate().order(ByteOrder.LITTLE_ENDIAN).getInt(pos);
    pos += 4;
    if (length < 0 || length > limit - pos) {
      throw new IllegalStateException("a page's levels of " + length + " bytes run past its " + (limit - pos));
    }
    decode(b, pos, pos + length, 32 - Integer.numberOfLeadingZeros(max), out, n);
    return pos + length;
  }

  /** {@code n} levels of at most {@code max} from a version 2 page's hybrid bytes (no length prefix). */
  static void levelsV2(ByteBuffer b, int max, int n, int[] out) {
    if (max == 0) {
      java.util.Arrays.fill(out, 0, n, 0);
      return;
    }
    decode(b, b.position(), b.limit(), 32 - Integer.numberOfLeadingZeros(max), out, n);
  }
}
