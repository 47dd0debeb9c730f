package io.strata.sdk.format;

import io.strata.sdk.Column;
import io.strata.sdk.FeatureType;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.Json;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import java.util.zip.CRC32C;

/**
 * Writes segments: one record batch of feature columns in the Arrow IPC file format,
 * uncompressed, little-endian, with every buffer 64-byte aligned, a CRC32C per buffer and the
 * provenance in the schema's custom metadata. See docs/FORMAT.md. Files are written atomically.
 */
public final class SegmentWriter {
  private SegmentWriter() {}

  private record Body(List<MemorySegment> buffers, List<long[]> nodes) {}

  /**
   * Writes {@code columns} (name to column, in order; all of {@code info.rows()} rows) to
   * {@code target} atomically and returns the file size.
   */
  public static long write(Path target, SegmentInfo info, SequencedMap<String, Column> columns)
      throws IOException {
    return write(target, info, columns, Map.of());
  }

  /**
   * As {@link #write(Path, SegmentInfo, SequencedMap)}, with extra schema metadata. Extra keys must
   * not be among the keys the format defines.
   */
  public static long write(
      Path target, SegmentInfo info, SequencedMap<String, Column> columns, Map<String, String> extraMetadata)
      throws IOException {
    for (String k : extraMetadata.keySet()) {
      if (Arrow.RESERVED_KEYS.contains(k)) {
        throw new IllegalArgumentException("metadata key '" + k + "' is reserved by the segment format");
      }
    }
    if (columns.isEmpty()) {
      throw new IllegalArgumentException("a segment needs at least one column");
    }
    if (!List.copyOf(columns.keySet()).equals(info.columns())) {
      throw new IllegalArgumentException(
          "segment info lists columns " + info.columns() + " but " + columns.keySet() + " were given");
    }
    for (Map.Entry<String, Column> e : columns.entrySet()) {
      if (e.getValue().length() != info.rows()) {
        throw new IllegalArgumentException(
            "column '" + e.getKey() + "' has " + e.getValue().length() + " rows, the segment " + info.rows());
      }
    }
    try (Arena scratch = Arena.ofConfined()) {
      SequencedMap<String, Column> normal = new LinkedHashMap<>();
      for (Map.Entry<String, Column> e : columns.entrySet()) {
        normal.put(e.getKey(), normalize(e.getValue(), scratch));
      }
      Body body = new Body(new ArrayList<>(), new ArrayList<>());
      for (Column c : normal.values()) {
        collect(c, body);
      }
      List<String> crcs = new ArrayList<>();
      HexFormat hex = HexFormat.of();
      for (MemorySegment b : body.buffers()) {
        crcs.add(hex.toHexDigits((int) crc32c(b)));
      }
      FbEncoder.Table schema = schema(info, normal, String.join(",", crcs), extraMetadata);
      byte[] schemaMessage = FbEncoder.encode(message(Arrow.HEADER_SCHEMA, schema, 0));

      long[] bufferOffsets = new long[body.buffers().size()];
      long bodyLength = 0;
      for (int i = 0; i < bufferOffsets.length; i++) {
        bufferOffsets[i] = bodyLength;
        bodyLength = align(bodyLength + body.buffers().get(i).byteSize(), Arrow.BUFFER_ALIGNMENT);
      }
      byte[] batchMessage =
          FbEncoder.encode(
              message(Arrow.HEADER_RECORD_BATCH, recordBatch(info.rows(), body, bufferOffsets), bodyLength));

      // The schema message is padded up to the record batch so that the messages stay
      // contiguous (a valid IPC stream) and the batch starts 64-byte aligned.
      long batchStart = align(16L + schemaMessage.length, Arrow.BUFFER_ALIGNMENT);
      long schemaMetaLen = batchStart - 16;
      long batchMetaLen = align(batchStart + 8 + batchMessage.length, Arrow.BUFFER_ALIGNMENT) - batchStart - 8;
      long bodyStart = batchStart + 8 + batchMetaLen;
      long eosStart = bodyStart + bodyLength;
      long footerStart = eosStart + 8;

      ByteBuffer block = ByteBuffer.allocate(Arrow.BLOCK_SIZE).order(ByteOrder.LITTLE_ENDIAN);
      block.putLong(batchStart).putInt((int) (8 + batchMetaLen)).putInt(0).putLong(bodyLength);
      FbEncoder.Table footer =
          new FbEncoder.Table()
              .addShort(Arrow.FOOTER_VERSION, Arrow.METADATA_V5)
              .addTable(Arrow.FOOTER_SCHEMA, schema)
              .addStructs(Arrow.FOOTER_DICTIONARIES, 0, new byte[0])
              .addStructs(Arrow.FOOTER_RECORD_BATCHES, 1, block.array());
      byte[] footerBytes = FbEncoder.encode(footer);
      long fileSize = footerStart + footerBytes.length + 4 + Arrow.MAGIC.length;

      AtomicFiles.write(
          target,
          fileSize,
          true,
          ch -> {
            ByteBuffer head = le(8 + 8 + (int) schemaMetaLen);
            head.put(Arrow.MAGIC).put((byte) 0).put((byte) 0);
            head.putInt(Arrow.CONTINUATION).putInt((int) schemaMetaLen).put(schemaMessage);
            writeAt(ch, head, 0);
            ByteBuffer batchHead = le(8 + (int) batchMetaLen);
            batchHead.putInt(Arrow.CONTINUATION).putInt((int) batchMetaLen).put(batchMessage);
            writeAt(ch, batchHead, batchStart);
            for (int i = 0; i < bufferOffsets.length; i++) {
              MemorySegment b = body.buffers().get(i);
              writeSegment(ch, b, bodyStart + bufferOffsets[i]);
            }
            ByteBuffer tail = le(8 + footerBytes.length + 4 + Arrow.MAGIC.length);
            tail.putInt(Arrow.CONTINUATION).putInt(0).put(footerBytes).putInt(footerBytes.length).put(Arrow.MAGIC);
            writeAt(ch, tail, eosStart);
            if (ch.size() != fileSize) {
              throw new IOException("segment writer produced " + ch.size() + " bytes, expected " + fileSize);
            }
          });
      return fileSize;
    }
  }

  private static ByteBuffer le(int size) {
    return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
  }

  private static void writeAt(FileChannel ch, ByteBuffer buf, long position) throws IOException {
    buf.position(0);
    long at = position;
    while (buf.hasRemaining()) {
      at += ch.write(buf, at);
    }
  }

  private static void writeSegment(FileChannel ch, MemorySegment seg, long position) throws IOException {
    long done = 0;
    while (done < seg.byteSize()) {
      long n = Math.min(seg.byteSize() - done, 1L << 30);
      ByteBuffer bb = seg.asSlice(done, n).asByteBuffer();
      while (bb.hasRemaining()) {
        done += ch.write(bb, position + done);
      }
    }
  }

  static long align(long value, long alignment) {
    return (value + alignment - 1) / alignment * alignment;
  }

  /** CRC32C of a buffer of any size. */
  static long crc32c(MemorySegment seg) {
    CRC32C crc = new CRC32C();
    long done = 0;
    while (done < seg.byteSize()) {
      long n = Math.min(seg.byteSize() - done, 1L << 30);
      crc.update(seg.asSlice(done, n).asByteBuffer());
      done += n;
    }
    return crc.getValue();
  }

  /** A column whose buffers start at row 0 and whose offsets start at 0, copying only if needed. */
  private static Column normalize(Column c, Arena scratch) {
    boolean needsCopy = c.offset() != 0;
    if (!needsCopy && !c.type().isFixedWidth() && c.length() > 0) {
      needsCopy = c.start(0) != 0;
    }
    if (!needsCopy && c.child() != null) {
      needsCopy = c.child().offset() != 0;
    }
    if (!needsCopy) {
      return c;
    }
    ColumnBuilder b = new ColumnBuilder(c.type(), scratch, c.length());
    b.appendRange(c, 0, c.length());
    return b.build();
  }

  private static void collect(Column c, Body body) {
    FeatureType t = c.type();
    int n = c.length();
    body.nodes().add(new long[] {n, c.nullCount()});
    body.buffers().add(c.nullCount() == 0 ? MemorySegment.NULL : c.validity().asSlice(0, (n + 7L) >>> 3));
    int width = t.kind().width();
    if (t.isFixedWidth()) {
      long bytes = width == 0 ? (n + 7L) >>> 3 : (long) n * width;
      body.buffers().add(c.values().asSlice(0, bytes));
    } else {
      body.buffers().add(c.offsets().asSlice(0, 4L * (n + 1)));
      if (t.isVariableWidth()) {
        long end = n == 0 ? 0 : c.end(n - 1);
        body.buffers().add(c.values().asSlice(0, end));
      } else {
        collect(c.child(), body);
      }
    }
  }

  private static FbEncoder.Table message(int headerType, FbEncoder.Table header, long bodyLength) {
    return new FbEncoder.Table()
        .addShort(Arrow.MESSAGE_VERSION, Arrow.METADATA_V5)
        .addByte(Arrow.MESSAGE_HEADER_TYPE, headerType)
        .addTable(Arrow.MESSAGE_HEADER, header)
        .addLong(Arrow.MESSAGE_BODY_LENGTH, bodyLength);
  }

  @SuppressWarnings("ByteBufferBackingArray") // le() allocates heap buffers, whose arrays start at offset 0
  private static FbEncoder.Table recordBatch(long rows, Body body, long[] offsets) {
    ByteBuffer nodes = le(Arrow.FIELD_NODE_SIZE * body.nodes().size());
    for (long[] node : body.nodes()) {
      nodes.putLong(node[0]).putLong(node[1]);
    }
    ByteBuffer buffers = le(Arrow.BUFFER_SIZE * offsets.length);
    for (int i = 0; i < offsets.length; i++) {
      buffers.putLong(offsets[i]).putLong(body.buffers().get(i).byteSize());
    }
    return new FbEncoder.Table()
        .addLong(Arrow.BATCH_LENGTH, rows)
        .addStructs(Arrow.BATCH_NODES, body.nodes().size(), nodes.array())
        .addStructs(Arrow.BATCH_BUFFERS, offsets.length, buffers.array());
  }

  private static FbEncoder.Table schema(
      SegmentInfo info, SequencedMap<String, Column> columns, String crcs, Map<String, String> extra) {
    List<FbEncoder.Table> fields = new ArrayList<>();
    for (Map.Entry<String, Column> e : columns.entrySet()) {
      fields.add(field(e.getKey(), e.getValue().type()));
    }
    SequencedMap<String, String> meta = new LinkedHashMap<>();
    meta.put(Arrow.KEY_FORMAT, Arrow.FORMAT_NAME);
    meta.put(Arrow.KEY_VERSION, Arrow.FORMAT_VERSION);
    meta.put(Arrow.KEY_DATASET, info.dataset());
    meta.put(Arrow.KEY_DATASET_VERSION, info.datasetVersion());
    meta.put(Arrow.KEY_CHUNK, Integer.toString(info.chunk()));
    meta.put(Arrow.KEY_ROW_START, Long.toString(info.rowStart()));
    meta.put(Arrow.KEY_ROW_END, Long.toString(info.rowEnd()));
    meta.put(Arrow.KEY_COLUMNS, Json.stringArray(info.columns()));
    meta.put(Arrow.KEY_CRC, crcs);
    meta.putAll(extra);
    List<FbEncoder.Table> kvs = new ArrayList<>();
    for (Map.Entry<String, String> kv : meta.entrySet()) {
      kvs.add(new FbEncoder.Table().addString(Arrow.KV_KEY, kv.getKey()).addString(Arrow.KV_VALUE, kv.getValue()));
    }
    return new FbEncoder.Table()
        .addShort(Arrow.SCHEMA_ENDIANNESS, 0)
        .addTables(Arrow.SCHEMA_FIELDS, fields)
        .addTables(Arrow.SCHEMA_METADATA, kvs);
  }

  private static FbEncoder.Table field(String name, FeatureType type) {
    FbEncoder.Table typeTable = new FbEncoder.Table();
    int typeCode;
    List<FbEncoder.Table> children = List.of();
    switch (type.kind()) {
      case BOOL -> typeCode = Arrow.TYPE_BOOL;
      case INT8, INT16, INT32, INT64 -> {
        typeCode = Arrow.TYPE_INT;
        typeTable.addInt(0, type.kind().width() * 8).addBool(1, true);
      }
      case FLOAT32 -> {
        typeCode = Arrow.TYPE_FLOATING_POINT;
        typeTable.addShort(0, Arrow.PRECISION_SINGLE);
      }
      case FLOAT64 -> {
        typeCode = Arrow.TYPE_FLOATING_POINT;
        typeTable.addShort(0, Arrow.PRECISION_DOUBLE);
      }
      case STRING -> typeCode = Arrow.TYPE_UTF8;
      case BINARY -> typeCode = Arrow.TYPE_BINARY;
      case DATE -> {
        typeCode = Arrow.TYPE_DATE;
        typeTable.addShort(0, Arrow.DATE_DAY);
      }
      case TIMESTAMP -> {
        typeCode = Arrow.TYPE_TIMESTAMP;
        typeTable.addShort(0, Arrow.TIME_NANOSECOND);
      }
      case DECIMAL -> {
        typeCode = Arrow.TYPE_DECIMAL;
        typeTable.addInt(0, type.precision()).addInt(1, type.scale()).addInt(2, 128);
      }
      case LIST -> {
        typeCode = Arrow.TYPE_LIST;
        children = List.of(field("item", type.element()));
      }
      default -> throw new IllegalStateException(type.toString());
    }
    return new FbEncoder.Table()
        .addString(Arrow.FIELD_NAME, name)
        .addBool(Arrow.FIELD_NULLABLE, true)
        .addByte(Arrow.FIELD_TYPE_TYPE, typeCode)
        .addTable(Arrow.FIELD_TYPE, typeTable)
        .addTables(Arrow.FIELD_CHILDREN, children);
  }
}
