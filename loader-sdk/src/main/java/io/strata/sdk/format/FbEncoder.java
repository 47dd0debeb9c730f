package io.strata.sdk.format;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A FlatBuffers encoder that writes front to back.
 *
 * <p>FlatBuffers only require that every {@code uoffset} points forward and that scalars are
 * aligned to their size; the reference builders write back to front, this one lays each table's
 * vtable first, then the table, then its children, and patches the forward offsets once a child's
 * position is known. Tables are described as a small tree ({@link Table}) and encoded in one pass
 * by {@link #encode(Table)}. The output is meant to start at an 8-byte-aligned position.
 */
final class FbEncoder {
  private byte[] buf = new byte[512];
  private int pos;

  /** A table under construction: slots hold scalars or references to children. */
  static final class Table {
    private final List<Slot> slots = new ArrayList<>();

    Table addByte(int slot, int value) {
      return scalar(slot, 1, value);
    }

    Table addBool(int slot, boolean value) {
      return scalar(slot, 1, value ? 1 : 0);
    }

    Table addShort(int slot, int value) {
      return scalar(slot, 2, value);
    }

    Table addInt(int slot, int value) {
      return scalar(slot, 4, value);
    }

    Table addLong(int slot, long value) {
      return scalar(slot, 8, value);
    }

    Table addTable(int slot, Table child) {
      return ref(slot, child);
    }

    Table addString(int slot, String value) {
      return ref(slot, new Str(value.getBytes(StandardCharsets.UTF_8)));
    }

    Table addTables(int slot, List<Table> tables) {
      return ref(slot, new TableVector(List.copyOf(tables)));
    }

    /** A vector of structs of {@code structSize} bytes, each 8-byte aligned. */
    Table addStructs(int slot, int count, byte[] packed) {
      return ref(slot, new StructVector(count, packed));
    }

    private Table scalar(int slot, int size, long value) {
      slots.add(new Slot(slot, size, value, null));
      return this;
    }

    private Table ref(int slot, Object child) {
      slots.add(new Slot(slot, 4, 0, child));
      return this;
    }
  }

  private record Slot(int index, int size, long value, Object child) {}

  private record Str(byte[] utf8) {}

  private record TableVector(List<Table> tables) {}

  private record StructVector(int count, byte[] packed) {}

  private record Pending(int at, Object child) {}

  /** Encodes {@code root} as a complete FlatBuffer (root offset first). */
  static byte[] encode(Table root) {
    FbEncoder e = new FbEncoder();
    e.putInt(0);
    e.writeChild(0, root);
    return Arrays.copyOf(e.buf, e.pos);
  }

  private void writeChild(int at, Object child) {
    int target =
        switch (child) {
          case Table t -> writeTable(t);
          case Str s -> writeString(s.utf8());
          case TableVector v -> writeTableVector(v.tables());
          case StructVector v -> writeStructVector(v.count(), v.packed());
          default -> throw new IllegalStateException("unknown flatbuffer node " + child);
        };
    patchInt(at, target - at);
  }

  private int writeTable(Table t) {
    int maxSlot = -1;
    for (Slot s : t.slots) {
      maxSlot = Math.max(maxSlot, s.index());
    }
    // Lay fields out by decreasing size so that each is naturally aligned after the 4-byte
    // vtable offset, with the table itself starting 8-byte aligned.
    List<Slot> ordered = new ArrayList<>(t.slots);
    ordered.sort((a, b) -> Integer.compare(b.size(), a.size()));
    int[] fieldOffset = new int[maxSlot + 1];
    int cursor = 4;
    for (Slot s : ordered) {
      cursor = alignUp(cursor, s.size());
      fieldOffset[s.index()] = cursor;
      cursor += s.size();
    }
    int tableSize = alignUp(cursor, 4);

    int vtableSize = 4 + 2 * (maxSlot + 1);
    align(2);
    int vtable = pos;
    putShort(vtableSize);
    putShort(tableSize);
    for (int off : fieldOffset) {
      putShort(off);
    }
    align(8);
    int table = pos;
    ensure(tableSize);
    pos += tableSize;
    setInt(table, table - vtable);
    List<Pending> pending = new ArrayList<>();
    for (Slot s : ordered) {
      int at = table + fieldOffset[s.index()];
      if (s.child() != null) {
        pending.add(new Pending(at, s.child()));
      } else {
        switch (s.size()) {
          case 1 -> buf[at] = (byte) s.value();
          case 2 -> setShort(at, (int) s.value());
          case 4 -> setInt(at, (int) s.value());
          default -> setLong(at, s.value());
        }
      }
    }
    for (Pending p : pending) {
      writeChild(p.at(), p.child());
    }
    return table;
  }

  private int writeString(byte[] utf8) {
    align(4);
    int start = pos;
    putInt(utf8.length);
    ensure(utf8.length + 1);
    System.arraycopy(utf8, 0, buf, pos, utf8.length);
    pos += utf8.length;
    buf[pos++] = 0;
    return start;
  }

  private int writeTableVector(List<Table> tables) {
    align(4);
    int start = pos;
    putInt(tables.size());
    int first = pos;
    ensure(4 * tables.size());
    pos += 4 * tables.size();
    for (int i = 0; i < tables.size(); i++) {
      writeChild(first + 4 * i, tables.get(i));
    }
    return start;
  }

  private int writeStructVector(int count, byte[] packed) {
    // The length prefix sits just before 8-byte-aligned elements.
    while ((pos + 4) % 8 != 0) {
      putByte(0);
    }
    int start = pos;
    putInt(count);
    ensure(packed.length);
    System.arraycopy(packed, 0, buf, pos, packed.length);
    pos += packed.length;
    return start;
  }

  private static int alignUp(int value, int alignment) {
    return (value + alignment - 1) & -alignment;
  }

  private void align(int alignment) {
    while (pos % alignment != 0) {
      putByte(0);
    }
  }

  private void ensure(int more) {
    if (pos + more > buf.length) {
      buf = Arrays.copyOf(buf, Math.max(buf.length * 2, pos + more));
    }
  }

  private void putByte(int v) {
    ensure(1);
    buf[pos++] = (byte) v;
  }

  private void putShort(int v) {
    ensure(2);
    setShort(pos, v);
    pos += 2;
  }

  private void putInt(int v) {
    ensure(4);
    setInt(pos, v);
    pos += 4;
  }

  private void setShort(int at, int v) {
    buf[at] = (byte) v;
    buf[at + 1] = (byte) (v >>> 8);
  }

  private void setInt(int at, int v) {
    for (int i = 0; i < 4; i++) {
      buf[at + i] = (byte) (v >>> (8 * i));
    }
  }

  private void patchInt(int at, int v) {
    setInt(at, v);
  }

  private void setLong(int at, long v) {
    for (int i = 0; i < 8; i++) {
      buf[at + i] = (byte) (v >>> (8 * i));
    }
  }
}
