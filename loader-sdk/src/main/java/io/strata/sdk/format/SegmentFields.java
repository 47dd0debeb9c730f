package io.strata.sdk.format;

import io.strata.sdk.Column;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.FeatureType;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * Reading a segment's Arrow schema and record batch for {@link SegmentFile}: each field's feature
 * type, and a cursor over the batch's field nodes and buffers in schema pre-order. Stateless but
 * for a cursor, which one parse owns.
 */
final class SegmentFields {
  private SegmentFields() {}

  /** The feature type of an Arrow schema field, or a {@link CorruptFileException} naming what Strata does not write. */
  static FeatureType fieldType(Path path, FbTable field) throws CorruptFileException {
    int code = field.getByte(Arrow.FIELD_TYPE_TYPE, 0);
    FbTable t = field.getTable(Arrow.FIELD_TYPE);
    if (t == null) {
      throw new CorruptFileException(path, "field '" + field.getString(Arrow.FIELD_NAME) + "' has no type");
    }
    FeatureType type =
        switch (code) {
          case Arrow.TYPE_BOOL -> FeatureType.BOOL;
          case Arrow.TYPE_INT -> {
            if (!t.getBool(1, false)) {
              yield null;
            }
            yield switch (t.getInt(0, 0)) {
              case 8 -> FeatureType.INT8;
              case 16 -> FeatureType.INT16;
              case 32 -> FeatureType.INT32;
              case 64 -> FeatureType.INT64;
              default -> null;
            };
          }
          case Arrow.TYPE_FLOATING_POINT ->
              switch (t.getShort(0, 0)) {
                case Arrow.PRECISION_SINGLE -> FeatureType.FLOAT32;
                case Arrow.PRECISION_DOUBLE -> FeatureType.FLOAT64;
                default -> null;
              };
          case Arrow.TYPE_UTF8 -> FeatureType.STRING;
          case Arrow.TYPE_BINARY -> FeatureType.BINARY;
          case Arrow.TYPE_DATE -> t.getShort(0, 1) == Arrow.DATE_DAY ? FeatureType.DATE : null;
          case Arrow.TYPE_TIMESTAMP ->
              t.getShort(0, 0) == Arrow.TIME_NANOSECOND && !t.has(1) ? FeatureType.TIMESTAMP : null;
          case Arrow.TYPE_DECIMAL ->
              t.getInt(2, 128) == 128 ? FeatureType.decimal(t.getInt(0, 0), t.getInt(1, 0)) : null;
          case Arrow.TYPE_LIST -> {
            if (field.vectorLength(Arrow.FIELD_CHILDREN) != 1) {
              yield null;
            }
            FeatureType element = fieldType(path, field.tableAt(Arrow.FIELD_CHILDREN, 0));
            if (element.kind() == FeatureType.Kind.LIST) {
              yield null;
            }
            yield FeatureType.list(element);
          }
          default -> null;
        };
    if (type == null) {
      throw new CorruptFileException(
          path, "field '" + field.getString(Arrow.FIELD_NAME) + "' has an Arrow type (code " + code + ") that Strata segments do not use");
    }
    return type;
  }

  /** Walks field nodes and buffers in schema pre-order. */
  static final class Cursor {
    final Path path;
    final MemorySegment nodes;
    final MemorySegment buffers;
    final MemorySegment body;
    int node;
    int buffer;

    Cursor(Path path, MemorySegment nodes, MemorySegment buffers, MemorySegment body) {
      this.path = path;
      this.nodes = nodes;
      this.buffers = buffers;
      this.body = body;
    }

    MemorySegment nextBuffer(long minLength, String what) throws CorruptFileException {
      if ((buffer + 1L) * Arrow.BUFFER_SIZE > buffers.byteSize()) {
        throw new CorruptFileException(path, "record batch lists too few buffers");
      }
      long off = buffers.get(FbTable.LONG, (long) buffer * Arrow.BUFFER_SIZE);
      long len = buffers.get(FbTable.LONG, (long) buffer * Arrow.BUFFER_SIZE + 8);
      buffer++;
      if (off < 0 || len < 0 || off + len > body.byteSize()) {
        throw new CorruptFileException(path, "buffer " + (buffer - 1) + " [" + off + ", +" + len + "] lies outside the body");
      }
      if (len < minLength) {
        throw new CorruptFileException(path, what + " buffer " + (buffer - 1) + " holds " + len + " bytes, needs " + minLength);
      }
      return len == 0 ? MemorySegment.NULL : body.asSlice(off, len);
    }

    Column column(FeatureType type) throws CorruptFileException {
      if ((node + 1L) * Arrow.FIELD_NODE_SIZE > nodes.byteSize()) {
        throw new CorruptFileException(path, "record batch lists too few field nodes");
      }
      long length = nodes.get(FbTable.LONG, (long) node * Arrow.FIELD_NODE_SIZE);
      long nulls = nodes.get(FbTable.LONG, (long) node * Arrow.FIELD_NODE_SIZE + 8);
      node++;
      if (length < 0 || length > Integer.MAX_VALUE - 1 || nulls < 0 || nulls > length) {
        throw new CorruptFileException(path, "field node with length " + length + " and " + nulls + " nulls");
      }
      int n = (int) length;
      MemorySegment validity = nextBuffer(nulls > 0 ? (n + 7L) >>> 3 : 0, "validity");
      int width = type.kind().width();
      if (type.isFixedWidth()) {
        MemorySegment values = nextBuffer(width == 0 ? (n + 7L) >>> 3 : (long) n * width, "values");
        return new Column(type, n, 0, (int) nulls, validity, MemorySegment.NULL, values, null);
      }
      MemorySegment offsets = nextBuffer(4L * (n + 1), "offsets");
      int first = offsets.get(FbTable.INT, 0);
      int last = offsets.get(FbTable.INT, 4L * n);
      if (first != 0 || last < 0) {
        throw new CorruptFileException(path, "offsets of a " + type + " column run from " + first + " to " + last);
      }
      if (type.isVariableWidth()) {
        MemorySegment data = nextBuffer(last, "data");
        return new Column(type, n, 0, (int) nulls, validity, offsets, data, null);
      }
      Column child = column(type.element());
      if (child.length() < last) {
        throw new CorruptFileException(path, "list offsets reach " + last + " but the child has " + child.length() + " rows");
      }
      return new Column(type, n, 0, (int) nulls, validity, offsets, MemorySegment.NULL, child);
    }
  }
}
