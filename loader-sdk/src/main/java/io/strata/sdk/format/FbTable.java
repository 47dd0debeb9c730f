package io.strata.sdk.format;

import io.strata.sdk.internal.Le;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;

/**
 * A read-only view of one FlatBuffers table inside a {@link MemorySegment}.
 *
 * <p>Every offset is checked against the segment before it is followed, so a damaged buffer
 * raises {@link FbException} rather than reading outside its bounds.
 */
final class FbTable {
  static final ValueLayout.OfShort SHORT = Le.SHORT;
  static final ValueLayout.OfInt INT = Le.INT;
  static final ValueLayout.OfLong LONG = Le.LONG;

  /** Raised for a structurally invalid FlatBuffer. */
  static final class FbException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    FbException(String message) {
      super(message);
    }
  }

  private final MemorySegment buf;
  private final long table;
  private final long vtable;
  private final int vtableSize;

  private FbTable(MemorySegment buf, long table) {
    this.buf = buf;
    this.table = table;
    check(table, 4);
    long vt = table - buf.get(INT, table);
    check(vt, 4);
    this.vtable = vt;
    this.vtableSize = Short.toUnsignedInt(buf.get(SHORT, vt));
    if (vtableSize < 4 || (vtableSize & 1) != 0) {
      throw new FbException("bad vtable size " + vtableSize + " at " + vt);
    }
    check(vt, vtableSize);
  }

  /** The root table of a buffer that starts at offset 0 of {@code buf}. */
  static FbTable root(MemorySegment buf) {
    if (buf.byteSize() < 8) {
      throw new FbException("flatbuffer of " + buf.byteSize() + " bytes is too short");
    }
    return new FbTable(buf, Integer.toUnsignedLong(buf.get(INT, 0)));
  }

  private void check(long at, long length) {
    if (at < 0 || length < 0 || at + length > buf.byteSize()) {
      throw new FbException(
          "offset " + at + "+" + length + " lies outside the " + buf.byteSize() + "-byte buffer");
    }
  }

  private long field(int slot) {
    int entry = 4 + 2 * slot;
    if (entry + 2 > vtableSize) {
      return 0;
    }
    int off = Short.toUnsignedInt(buf.get(SHORT, vtable + entry));
    return off == 0 ? 0 : table + off;
  }

  boolean has(int slot) {
    return field(slot) != 0;
  }

  int getByte(int slot, int dflt) {
    long at = field(slot);
    if (at == 0) {
      return dflt;
    }
    check(at, 1);
    return Byte.toUnsignedInt(buf.get(ValueLayout.JAVA_BYTE, at));
  }

  boolean getBool(int slot, boolean dflt) {
    return getByte(slot, dflt ? 1 : 0) != 0;
  }

  int getShort(int slot, int dflt) {
    long at = field(slot);
    if (at == 0) {
      return dflt;
    }
    check(at, 2);
    return buf.get(SHORT, at);
  }

  int getInt(int slot, int dflt) {
    long at = field(slot);
    if (at == 0) {
      return dflt;
    }
    check(at, 4);
    return buf.get(INT, at);
  }

  long getLong(int slot, long dflt) {
    long at = field(slot);
    if (at == 0) {
      return dflt;
    }
    check(at, 8);
    return buf.get(LONG, at);
  }

  private long deref(long at) {
    check(at, 4);
    long target = at + Integer.toUnsignedLong(buf.get(INT, at));
    check(target, 4);
    return target;
  }

  /** The child table in {@code slot}, or null when absent. */
  FbTable getTable(int slot) {
    long at = field(slot);
    return at == 0 ? null : new FbTable(buf, deref(at));
  }

  /** The string in {@code slot}, or null when absent. */
  String getString(int slot) {
    long at = field(slot);
    return at == 0 ? null : readString(deref(at));
  }

  private String readString(long start) {
    long len = Integer.toUnsignedLong(buf.get(INT, start));
    check(start + 4, len);
    return new String(
        buf.asSlice(start + 4, len).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
  }

  /** Number of elements of the vector in {@code slot}; 0 when absent. */
  int vectorLength(int slot) {
    long at = field(slot);
    if (at == 0) {
      return 0;
    }
    long vec = deref(at);
    long len = Integer.toUnsignedLong(buf.get(INT, vec));
    if (len > Integer.MAX_VALUE) {
      throw new FbException("vector length " + len + " is too large");
    }
    return (int) len;
  }

  /** Element {@code i} of a vector of tables. */
  FbTable tableAt(int slot, int i) {
    long vec = deref(field(slot));
    long elem = vec + 4 + 4L * i;
    return new FbTable(buf, deref(elem));
  }

  /** Element {@code i} of a vector of strings. */
  String stringAt(int slot, int i) {
    long vec = deref(field(slot));
    return readString(deref(vec + 4 + 4L * i));
  }

  /** The bytes of a vector of structs of {@code structSize} bytes each. */
  MemorySegment structs(int slot, int structSize) {
    long at = field(slot);
    if (at == 0) {
      return MemorySegment.NULL;
    }
    long vec = deref(at);
    long len = Integer.toUnsignedLong(buf.get(INT, vec));
    check(vec + 4, len * structSize);
    return buf.asSlice(vec + 4, len * structSize);
  }
}
