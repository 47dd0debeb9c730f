package io.strata.sdk.format;

import io.strata.sdk.Column;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.FeatureType;
import io.strata.sdk.internal.Confinement;
import io.strata.sdk.internal.Json;
import io.strata.sdk.internal.PageMappings;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A segment file mapped into memory, with zero-copy {@link Column} views of its feature columns.
 *
 * <p>{@link #open} maps the whole file with {@code FileChannel.map(..., Arena)}, finds the record
 * batch from the Arrow footer and checks the structure: magic bytes, metadata version, Strata's
 * format version, that every buffer lies inside the body. Buffer checksums are verified according
 * to {@link Verify}. {@link #close()} unmaps the file; a column view used after that fails with
 * {@link IllegalStateException}. The file must not be truncated while mapped (Strata never
 * truncates segments; it unlinks them).
 */
public final class SegmentFile implements AutoCloseable {
  /** When to verify buffer checksums at open. */
  public enum Verify {
    /** On every open. */
    ALWAYS,
    /** On the first open of a given file (path, inode, size, modification time) in this process. */
    FIRST_OPEN,
    /** Never; structure is still checked. */
    NEVER
  }

  private static final Set<String> VERIFIED = ConcurrentHashMap.newKeySet();

  /**
   * Told of each segment file this process maps (after its checks) and of each unmapping (before
   * it happens), under one lock: a GPU that gathers straight from mapped segments registers their
   * pages with its driver and must let go of them before they are unmapped. Calls may come from
   * any thread that opens or closes a segment.
   */
  public interface MappingObserver {
    void mapped(Path file, MemorySegment mapping);

    void unmapping(MemorySegment mapping);
  }

  /** Guards {@link #OBSERVERS} and {@link #MAPPED}: observers see each mapping once, in order. */
  private static final Object OBSERVED = new Object();
  private static final List<MappingObserver> OBSERVERS = new ArrayList<>();
  /** The segments mapped in this process and not yet unmapped. */
  private static final Set<SegmentFile> MAPPED = new HashSet<>();

  /** Adds {@code o}, told at once of every segment already mapped. */
  public static void observe(MappingObserver o) {
    synchronized (OBSERVED) {
      OBSERVERS.add(o);
      for (SegmentFile f : MAPPED) {
        tell(() -> o.mapped(f.path, f.mapping), f.path);
      }
    }
  }

  /** An observer that fails is logged; the mapping's life goes on (an observer must not throw). */
  private static void tell(Runnable call, Path file) {
    try {
      call.run();
    } catch (RuntimeException e) {
      System.getLogger(SegmentFile.class.getName()).log(System.Logger.Level.WARNING,
          "strata: a mapping observer failed on " + file + ": " + e);
    }
  }

  /** Removes {@code o}; it is told of nothing more. */
  public static void unobserve(MappingObserver o) {
    synchronized (OBSERVED) {
      OBSERVERS.remove(o);
    }
  }

  private final Path path;
  private final Arena arena;
  private final long fileSize;
  private final SegmentInfo info;
  private final Map<String, String> metadata;
  private final SequencedMap<String, Column> columns;
  private final long base;
  /** The whole mapping (set once at open). */
  private MemorySegment mapping = MemorySegment.NULL;
  private final AtomicBoolean closing = new AtomicBoolean();

  private SegmentFile(
      Path path,
      Arena arena,
      long base,
      long fileSize,
      SegmentInfo info,
      Map<String, String> metadata,
      SequencedMap<String, Column> columns) {
    this.path = path;
    this.arena = arena;
    this.base = base;
    this.fileSize = fileSize;
    this.info = info;
    this.metadata = metadata;
    this.columns = columns;
  }

  /** Maps and checks {@code path}; see {@link Verify}. */
  public static SegmentFile open(Path path, Verify verify) throws IOException {
    return open(path, verify, Confinement.NONE);
  }

  /** As above, the open confined by {@code confinement} (a store's own directory); Strata's own modules only. */
  @SuppressWarnings("exports")
  public static SegmentFile open(Path path, Verify verify, Confinement confinement) throws IOException {
    Arena arena = Arena.ofShared();
    boolean success = false;
    try {
      BasicFileAttributes attrs;
      MemorySegment map;
      try (FileChannel ch = confinement.openRead(path)) {
        attrs = Files.readAttributes(path, BasicFileAttributes.class);
        long size = ch.size();
        if (size < 8 + 8 + 4 + Arrow.MAGIC.length) {
          throw new CorruptFileException(path, "truncated: " + size + " bytes is too short for a segment");
        }
        try {
          map = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
        } catch (IOException | OutOfMemoryError e) {
          throw new IOException(
              "cannot map "
                  + path
                  + " ("
                  + size
                  + " bytes): "
                  + e.getMessage()
                  + "; check the address-space limit (ulimit -v) and the map count limit"
                  + " (sysctl vm.max_map_count)",
              e);
        }
      } catch (NoSuchFileException e) {
        throw new NoSuchFileException(path.toString(), null, "segment file does not exist");
      }
      // Read where batches need it: a page fault reads its page only (parsing the footer included), and
      // a cold batch's ranges are read ahead exactly (TieredReader.readAheadIfCold), never the device's
      // read-around window of mostly other rows.
      PageMappings.random(map);
      SegmentFile f = parse(path, arena, map);
      String key = path.toAbsolutePath() + "|" + attrs.fileKey() + "|" + attrs.size() + "|" + attrs.lastModifiedTime().toMillis();
      boolean check =
          switch (verify) {
            case ALWAYS -> true;
            case NEVER -> false;
            case FIRST_OPEN -> !VERIFIED.contains(key);
          };
      if (check) {
        PageMappings.sequential(map);
        f.verifyChecksums();
        VERIFIED.add(key);
        // The pass mapped every page of the file into this process; readers touch a few columns.
        PageMappings.release(map);
        PageMappings.random(map);
      }
      f.mapping = map;
      synchronized (OBSERVED) {
        MAPPED.add(f);
        for (MappingObserver o : OBSERVERS) {
          tell(() -> o.mapped(path, map), path);
        }
      }
      success = true;
      return f;
    } finally {
      if (!success) {
        arena.close();
      }
    }
  }

  private static SegmentFile parse(Path path, Arena arena, MemorySegment map) throws IOException {
    try {
      return parseUnchecked(path, arena, map);
    } catch (FbTable.FbException | IndexOutOfBoundsException | IllegalArgumentException e) {
      throw new CorruptFileException(path, "damaged segment metadata: " + e.getMessage(), e);
    }
  }

  private static SegmentFile parseUnchecked(Path path, Arena arena, MemorySegment map) throws IOException {
    long size = map.byteSize();
    byte[] head = map.asSlice(0, 6).toArray(ValueLayout.JAVA_BYTE);
    byte[] tail = map.asSlice(size - 6, 6).toArray(ValueLayout.JAVA_BYTE);
    if (!Arrays.equals(head, Arrow.MAGIC)) {
      throw new CorruptFileException(path, "not an Arrow IPC file (bad leading magic)");
    }
    if (!Arrays.equals(tail, Arrow.MAGIC)) {
      throw new CorruptFileException(path, "truncated or damaged: no Arrow magic at the end of the file");
    }
    long footerLen = Integer.toUnsignedLong(map.get(FbTable.INT, size - 10));
    if (footerLen == 0 || footerLen > size - 8 - 10) {
      throw new CorruptFileException(path, "damaged footer length " + footerLen + " in a " + size + "-byte file");
    }
    FbTable footer = FbTable.root(map.asSlice(size - 10 - footerLen, footerLen));
    int version = footer.getShort(Arrow.FOOTER_VERSION, 0);
    if (version != Arrow.METADATA_V5) {
      throw new CorruptFileException(path, "Arrow metadata version " + version + " is not supported (expected V5)");
    }
    FbTable schema = footer.getTable(Arrow.FOOTER_SCHEMA);
    if (schema == null) {
      throw new CorruptFileException(path, "footer has no schema");
    }
    if (schema.getShort(Arrow.SCHEMA_ENDIANNESS, 0) != 0) {
      throw new CorruptFileException(path, "big-endian segments are not supported");
    }
    Map<String, String> meta = new HashMap<>();
    for (int i = 0, n = schema.vectorLength(Arrow.SCHEMA_METADATA); i < n; i++) {
      FbTable kv = schema.tableAt(Arrow.SCHEMA_METADATA, i);
      meta.put(kv.getString(Arrow.KV_KEY), kv.getString(Arrow.KV_VALUE));
    }
    if (!Arrow.FORMAT_NAME.equals(meta.get(Arrow.KEY_FORMAT))) {
      throw new CorruptFileException(path, "not a Strata segment (no '" + Arrow.KEY_FORMAT + "' metadata)");
    }
    String formatVersion = meta.get(Arrow.KEY_VERSION);
    if (!Arrow.FORMAT_VERSION.equals(formatVersion)) {
      throw new CorruptFileException(
          path,
          "segment format version " + formatVersion + " is not supported (this build reads version "
              + Arrow.FORMAT_VERSION + ")");
    }
    List<String> names = new ArrayList<>();
    List<FeatureType> types = new ArrayList<>();
    for (int i = 0, n = schema.vectorLength(Arrow.SCHEMA_FIELDS); i < n; i++) {
      FbTable field = schema.tableAt(Arrow.SCHEMA_FIELDS, i);
      names.add(field.getString(Arrow.FIELD_NAME));
      types.add(SegmentFields.fieldType(path, field));
    }
    SegmentInfo info;
    try {
      info =
          new SegmentInfo(
              require(path, meta, Arrow.KEY_DATASET),
              require(path, meta, Arrow.KEY_DATASET_VERSION),
              Integer.parseInt(require(path, meta, Arrow.KEY_CHUNK)),
              Long.parseLong(require(path, meta, Arrow.KEY_ROW_START)),
              Long.parseLong(require(path, meta, Arrow.KEY_ROW_END)),
              Json.parseStringArray(require(path, meta, Arrow.KEY_COLUMNS)));
    } catch (NumberFormatException | IOException e) {
      throw new CorruptFileException(path, "damaged provenance metadata: " + e.getMessage());
    }
    if (!info.columns().equals(names)) {
      throw new CorruptFileException(path, "provenance lists columns " + info.columns() + " but the schema has " + names);
    }

    MemorySegment blocks = footer.structs(Arrow.FOOTER_RECORD_BATCHES, Arrow.BLOCK_SIZE);
    if (blocks.byteSize() != Arrow.BLOCK_SIZE) {
      throw new CorruptFileException(
          path, "has " + blocks.byteSize() / Arrow.BLOCK_SIZE + " record batches; a segment has exactly one");
    }
    long offset = blocks.get(FbTable.LONG, 0);
    long metaLen = Integer.toUnsignedLong(blocks.get(FbTable.INT, 8));
    long bodyLen = blocks.get(FbTable.LONG, 16);
    if (offset < 8 || metaLen < 8 || bodyLen < 0 || offset + metaLen + bodyLen > size - 10 - footerLen) {
      throw new CorruptFileException(path, "record batch block [" + offset + ", +" + metaLen + ", +" + bodyLen + "] lies outside the file");
    }
    if (map.get(FbTable.INT, offset) != Arrow.CONTINUATION
        || Integer.toUnsignedLong(map.get(FbTable.INT, offset + 4)) != metaLen - 8) {
      throw new CorruptFileException(path, "damaged record batch message header at offset " + offset);
    }
    FbTable message = FbTable.root(map.asSlice(offset + 8, metaLen - 8));
    if (message.getByte(Arrow.MESSAGE_HEADER_TYPE, 0) != Arrow.HEADER_RECORD_BATCH) {
      throw new CorruptFileException(path, "message at offset " + offset + " is not a record batch");
    }
    FbTable batch = message.getTable(Arrow.MESSAGE_HEADER);
    if (batch == null) {
      throw new CorruptFileException(path, "record batch message has no header");
    }
    if (batch.has(Arrow.BATCH_COMPRESSION)) {
      throw new CorruptFileException(path, "compressed record batches are not supported");
    }
    long rows = batch.getLong(Arrow.BATCH_LENGTH, -1);
    if (rows != info.rows()) {
      throw new CorruptFileException(path, "record batch has " + rows + " rows, provenance says " + info.rows());
    }
    MemorySegment body = map.asSlice(offset + metaLen, bodyLen);
    if ((offset + metaLen) % Arrow.BUFFER_ALIGNMENT != 0) {
      throw new CorruptFileException(path, "record batch body is not 64-byte aligned");
    }
    MemorySegment nodes = batch.structs(Arrow.BATCH_NODES, Arrow.FIELD_NODE_SIZE);
    MemorySegment buffers = batch.structs(Arrow.BATCH_BUFFERS, Arrow.BUFFER_SIZE);
    SegmentFields.Cursor cursor = new SegmentFields.Cursor(path, nodes, buffers, body);
    SequencedMap<String, Column> columns = new LinkedHashMap<>();
    for (int i = 0; i < names.size(); i++) {
      Column c = cursor.column(types.get(i));
      if (c.length() != rows) {
        throw new CorruptFileException(path, "column '" + names.get(i) + "' has " + c.length() + " rows, the batch " + rows);
      }
      if (columns.put(names.get(i), c) != null) {
        throw new CorruptFileException(path, "column '" + names.get(i) + "' appears twice");
      }
    }
    if (cursor.node != nodes.byteSize() / Arrow.FIELD_NODE_SIZE
        || cursor.buffer != buffers.byteSize() / Arrow.BUFFER_SIZE) {
      throw new CorruptFileException(path, "record batch has more nodes or buffers than its schema needs");
    }
    return new SegmentFile(path, arena, map.address(), size, info, Collections.unmodifiableMap(meta), columns);
  }

  private static String require(Path path, Map<String, String> meta, String key) throws CorruptFileException {
    String v = meta.get(key);
    if (v == null) {
      throw new CorruptFileException(path, "missing '" + key + "' in the segment metadata");
    }
    return v;
  }

  private void verifyChecksums() throws CorruptFileException {
    String listed = metadata.get(Arrow.KEY_CRC);
    if (listed == null) {
      throw new CorruptFileException(path, "missing '" + Arrow.KEY_CRC + "' in the segment metadata");
    }
    String[] expected = listed.isEmpty() ? new String[0] : listed.split(",");
    List<MemorySegment> buffers = new ArrayList<>();
    for (Column c : columns.values()) {
      addBuffers(c, buffers);
    }
    if (expected.length != buffers.size()) {
      throw new CorruptFileException(path, "lists " + expected.length + " checksums for " + buffers.size() + " buffers");
    }
    HexFormat hex = HexFormat.of();
    for (int i = 0; i < expected.length; i++) {
      String actual = hex.toHexDigits((int) SegmentWriter.crc32c(buffers.get(i)));
      if (!actual.equals(expected[i])) {
        throw new CorruptFileException(
            path, "checksum mismatch in buffer " + i + " (CRC32C " + actual + ", expected " + expected[i] + "): the data is damaged");
      }
    }
  }

  private static void addBuffers(Column c, List<MemorySegment> out) {
    out.add(c.validity());
    if (c.type().isFixedWidth()) {
      out.add(c.values());
    } else {
      out.add(c.offsets());
      if (c.type().isVariableWidth()) {
        out.add(c.values());
      } else {
        addBuffers(c.child(), out);
      }
    }
  }

  public Path path() {
    return path;
  }

  /**
   * The file offset of a buffer of one of this segment's columns, for readers that map the file
   * themselves (the benchmark's numpy peer reads the same buffers this way).
   */
  public long fileOffset(MemorySegment buffer) {
    long off = buffer.address() - base;
    if (buffer.byteSize() > 0 && (off < 0 || off + buffer.byteSize() > fileSize)) {
      throw new IllegalArgumentException("the buffer is not part of segment " + path);
    }
    return off;
  }

  /** Size of the file in bytes. */
  public long fileSize() {
    return fileSize;
  }

  public SegmentInfo info() {
    return info;
  }

  /** Rows in the segment. */
  public int rows() {
    return (int) info.rows();
  }

  /** The schema's custom metadata (Strata's keys and any others). */
  public Map<String, String> metadata() {
    return metadata;
  }

  /** Column names in file order. */
  public List<String> columnNames() {
    return List.copyOf(columns.keySet());
  }

  public boolean hasColumn(String name) {
    return columns.containsKey(name);
  }

  /** A zero-copy view of column {@code name}; valid until {@link #close()}. */
  public Column column(String name) {
    Column c = columns.get(name);
    if (c == null) {
      throw new IllegalArgumentException("segment " + path + " has no column '" + name + "' (it has " + columns.keySet() + ")");
    }
    if (!arena.scope().isAlive()) {
      throw new IllegalStateException("segment " + path + " is already closed");
    }
    return c;
  }

  /** Unmaps the file. Idempotent. */
  @Override
  public void close() {
    if (!closing.compareAndSet(false, true)) {
      return;
    }
    synchronized (OBSERVED) {
      if (MAPPED.remove(this)) {
        for (MappingObserver o : OBSERVERS) {
          tell(() -> o.unmapping(mapping), path);
        }
      }
    }
    if (arena.scope().isAlive()) {
      try {
        arena.close();
      } catch (IllegalStateException alreadyClosing) {
        // Another thread closed it concurrently.
      }
    }
  }

  public boolean isOpen() {
    return arena.scope().isAlive();
  }
}
