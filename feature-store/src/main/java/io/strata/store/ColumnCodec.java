package io.strata.store;

import io.strata.sdk.Column;
import io.strata.sdk.FeatureType;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/**
 * The value format of a stored derived chunk (docs/FORMAT.md §4): a column's type, length, null
 * count and Arrow buffers, little-endian, followed by a CRC32C of everything before it.
 */
final class ColumnCodec {
  private static final int MAGIC = 0x4C4F4353; // "SCOL"
  private static final int VERSION = 1;

  private ColumnCodec() {}

  /** Thrown for a value that fails its checks. */
  static final class CorruptValueException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    CorruptValueException(String message) {
      super(message);
    }
  }

  static byte[] encode(Column c) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteBuffer head = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putInt(MAGIC).putInt(VERSION);
    out.writeBytes(head.array());
    write(out, c);
    CRC32C crc = new CRC32C();
    byte[] body = out.toByteArray();
    crc.update(body);
    out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt((int) crc.getValue()).array());
    return out.toByteArray();
  }

  private static void write(ByteArrayOutputStream out, Column c) {
    byte[] type = c.type().toString().getBytes(StandardCharsets.UTF_8);
    int n = c.length();
    ByteBuffer h = ByteBuffer.allocate(2 + type.length + 9).order(ByteOrder.LITTLE_ENDIAN);
    h.putShort((short) type.length).put(type).putInt(n).putInt(c.nullCount()).put((byte) (c.hasNulls() ? 1 : 0));
    out.writeBytes(h.array());
    if (c.hasNulls()) {
      byte[] bits = new byte[(n + 7) / 8];
      for (int i = 0; i < n; i++) {
        if (!c.isNull(i)) {
          bits[i >>> 3] |= (byte) (1 << (i & 7));
        }
      }
      out.writeBytes(bits);
    }
    FeatureType t = c.type();
    int width = t.kind().width();
    if (width == 0) {
      byte[] bits = new byte[(n + 7) / 8];
      for (int i = 0; i < n; i++) {
        if (!c.isNull(i) && c.getBoolean(i)) {
          bits[i >>> 3] |= (byte) (1 << (i & 7));
        }
      }
      out.writeBytes(bits);
    } else if (width > 0) {
      out.writeBytes(c.values().asSlice((long) c.offset() * width, (long) n * width).toArray(ValueLayout.JAVA_BYTE));
    } else {
      int base = n == 0 ? 0 : c.start(0);
      ByteBuffer offs = ByteBuffer.allocate(4 * (n + 1)).order(ByteOrder.LITTLE_ENDIAN);
      offs.putInt(0);
      for (int i = 0; i < n; i++) {
        offs.putInt(c.end(i) - base);
      }
      out.writeBytes(offs.array());
      int end = n == 0 ? 0 : c.end(n - 1);
      if (t.isVariableWidth()) {
        out.writeBytes(c.values().asSlice(base, end - base).toArray(ValueLayout.JAVA_BYTE));
      } else {
        write(out, c.child().slice(base, end - base));
      }
    }
  }

  /** Decodes a value into memory of {@code allocator}; fails on a damaged value. */
  static Column decode(byte[] value, SegmentAllocator allocator) {
    if (value.length < 12) {
      throw new CorruptValueException("stored chunk of " + value.length + " bytes is truncated");
    }
    CRC32C crc = new CRC32C();
    crc.update(value, 0, value.length - 4);
    ByteBuffer b = ByteBuffer.wrap(value).order(ByteOrder.LITTLE_ENDIAN);
    if (b.getInt(value.length - 4) != (int) crc.getValue()) {
      throw new CorruptValueException("stored chunk fails its checksum: the value is damaged");
    }
    if (b.getInt() != MAGIC || b.getInt() != VERSION) {
      throw new CorruptValueException("stored chunk has an unknown format");
    }
    MemorySegment all = allocator.allocate(value.length, 64);
    MemorySegment.copy(value, 0, all, ValueLayout.JAVA_BYTE, 0, value.length);
    try {
      return read(b, all);
    } catch (RuntimeException e) {
      throw new CorruptValueException("stored chunk is malformed: " + e.getMessage());
    }
  }

  private static Column read(ByteBuffer b, MemorySegment all) {
    byte[] type = new byte[b.getShort()];
    b.get(type);
    FeatureType t = FeatureType.parse(new String(type, StandardCharsets.UTF_8));
    int n = b.getInt();
    int nulls = b.getInt();
    boolean hasValidity = b.get() == 1;
    MemorySegment validity = MemorySegment.NULL;
    if (hasValidity) {
      validity = all.asSlice(b.position(), (n + 7) / 8);
      b.position(b.position() + (n + 7) / 8);
    }
    int width = t.kind().width();
    if (t.isFixedWidth()) {
      long bytes = width == 0 ? (n + 7) / 8 : (long) n * width;
      MemorySegment values = all.asSlice(b.position(), bytes);
      b.position(b.position() + (int) bytes);
      return new Column(t, n, 0, nulls, validity, MemorySegment.NULL, values, null);
    }
    MemorySegment offsets = all.asSlice(b.position(), 4L * (n + 1));
    int last = b.getInt(b.position() + 4 * n);
    b.position(b.position() + 4 * (n + 1));
    if (t.isVariableWidth()) {
      MemorySegment data = all.asSlice(b.position(), last);
      b.position(b.position() + last);
      return new Column(t, n, 0, nulls, validity, offsets, data, null);
    }
    Column child = read(b, all);
    return new Column(t, n, 0, nulls, validity, offsets, MemorySegment.NULL, child);
  }
}
