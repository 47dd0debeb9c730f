package io.strata.sdk.files;

import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.format.ColumnBuilder;
import io.strata.sdk.internal.Chunks;
import io.strata.sdk.internal.Confinement;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import org.apache.parquet.column.ColumnReader;
import org.apache.parquet.column.impl.ColumnReadStoreImpl;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.column.statistics.Statistics;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.io.InputFile;
import org.apache.parquet.io.api.Converter;
import org.apache.parquet.io.api.GroupConverter;
import org.apache.parquet.io.api.PrimitiveConverter;
import org.apache.parquet.schema.GroupType;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.Type;

/**
 * The HDD tier of a dataset whose files are Parquet: a row group is a chunk, read with column
 * projection (only the requested fields' column chunks are read) and decoded into Arrow-layout
 * {@link Column}s; page checksums are verified where the writer wrote them, and each decoded
 * chunk is checked against the writer's column statistics (null counts; bounds of integer
 * columns).
 *
 * <p>Threads: thread-safe. A file's footer is read once, under this table's monitor, and shared;
 * every read opens a reader of its own over that footer (parquet-java's readers are not
 * thread-safe), so reads of any chunks run in parallel. A {@link Cursor} belongs to one thread
 * and keeps the row group it decoded last, for row ranges read in order.
 */
public final class ParquetTable implements HddTable {
  private final Path dir;
  private final Manifest manifest;
  private final Confinement confinement;
  /** Per file, its footer and input (null until first read); guarded by this table's monitor. */
  private final ParquetMetadata[] footers;
  private final InputFile[] inputs;
  private final long[] chunkFirstRows;
  private final Map<String, Integer> columnIndex;
  /** The checksums recorded at import (null until first needed, or where none are); guarded by this table's monitor. */
  private StreamChecksums sums;
  private volatile boolean closed;

  ParquetTable(Path dir, Manifest manifest, Confinement confinement) {
    this.dir = dir;
    this.manifest = manifest;
    this.confinement = confinement;
    this.footers = new ParquetMetadata[manifest.files().size()];
    this.inputs = new InputFile[manifest.files().size()];
    this.columnIndex = HddTables.columnIndex(manifest);
    this.chunkFirstRows = manifest.chunks().stream().mapToLong(ChunkInfo::firstRow).toArray();
  }

  @Override
  public Path filePath(int index) {
    return DatasetFiles.resolve(dir, manifest.files().get(index).path());
  }

  /** File {@code file}'s footer, read on first use and checked against the manifest's row groups. */
  private synchronized ParquetMetadata footer(int file) throws IOException {
    if (closed) {
      throw new IllegalStateException("dataset " + manifest.name() + " is already closed");
    }
    if (footers[file] == null) {
      Path path = filePath(file);
      DatasetFiles.checkVersion(path, manifest.files().get(file));
      if (manifest.streamChecksums() != null && sums == null) {
        sums = StreamChecksums.load(dir, manifest, confinement);
      }
      // One open for the footer and every read after, each read checked against the checksums recorded at import.
      InputFile in = ParquetIo.open(path, confinement, sums == null ? null : sums.file(file));
      ParquetMetadata f = ParquetIo.footer(path, in);
      List<BlockMetaData> groups = f.getBlocks();
      for (ChunkInfo c : manifest.chunks()) {
        if (c.file() == file && (c.stripe() >= groups.size() || groups.get(c.stripe()).getRowCount() != c.rows())) {
          throw new CorruptFileException(path, "changed since it was imported: row group " + c.stripe() + " is not the one"
              + " the manifest records (" + c.rows() + " rows); import the dataset again");
        }
      }
      inputs[file] = in;
      footers[file] = f;
    }
    return footers[file];
  }

  /** File {@code file}'s input (after {@link #footer} opened it); a read after {@link #close} is refused, as ORC's is. */
  private synchronized InputFile input(int file) {
    if (closed) {
      throw new IllegalStateException("dataset " + manifest.name() + " is already closed");
    }
    return inputs[file];
  }

  private List<Integer> resolve(List<String> features) {
    return HddTables.resolve(manifest, columnIndex, features);
  }

  @Override
  public SequencedMap<String, Column> readChunk(int chunk, List<String> features, Arena arena) throws IOException {
    ChunkInfo c = HddTables.chunk(manifest, chunk);
    resolve(features);
    return decode(c, features, arena);
  }

  /** Decodes row group {@code c} of {@code features} whole, checked against its column statistics. */
  private SequencedMap<String, Column> decode(ChunkInfo c, List<String> features, Arena arena) throws IOException {
    return decode(c, features, 0, Math.toIntExact(c.rows()), arena, null);
  }

  @Override
  public long storedBytes(int chunk, String feature) throws IOException {
    ChunkInfo c = HddTables.chunk(manifest, chunk);
    resolve(List.of(feature));
    ParquetMetadata footer = footer(c.file());
    org.apache.parquet.hadoop.metadata.ColumnPath want = org.apache.parquet.hadoop.metadata.ColumnPath.get(
        ParquetTypes.leaf(footer.getFileMetaData().getSchema(), feature).descriptor().getPath());
    long total = 0;
    for (ColumnChunkMetaData m : footer.getBlocks().get(c.stripe()).getColumns()) {
      if (m.getPath().equals(want)) {
        total += m.getTotalSize();
      }
    }
    return total;
  }

  /**
   * Whether every column chunk of {@code features} in row group {@code c} has an offset index (a
   * page's first row and place), so that a range of its rows reads only the pages that hold them.
   * parquet-java writes one by default, pyarrow when asked ({@code write_page_index}).
   */
  private boolean pageIndexed(ChunkInfo c, List<String> features) throws IOException {
    ParquetMetadata footer = footer(c.file());
    MessageType schema = footer.getFileMetaData().getSchema();
    for (String f : features) {
      org.apache.parquet.hadoop.metadata.ColumnPath want =
          org.apache.parquet.hadoop.metadata.ColumnPath.get(ParquetTypes.leaf(schema, f).descriptor().getPath());
      boolean indexed = false;
      for (ColumnChunkMetaData m : footer.getBlocks().get(c.stripe()).getColumns()) {
        indexed |= m.getPath().equals(want) && m.getOffsetIndexReference() != null;
      }
      if (!indexed) {
        return false;
      }
    }
    return true;
  }

  /**
   * Decodes rows {@code [from, from + count)} of row group {@code c} (local rows): the whole row
   * group checked against its column statistics, or a part of it through the offset index (only
   * the pages holding those rows are read; parquet-java's reader then yields those rows alone).
   * {@code kept}: a reader of the chunk's file the caller keeps open between reads (it keeps the
   * offset indexes it read), or null for one of this read's own.
   */
  private SequencedMap<String, Column> decode(ChunkInfo c, List<String> features, int from, int count, Arena arena,
      ParquetFileReader kept) throws IOException {
    Path path = filePath(c.file());
    ParquetMetadata footer = footer(c.file());
    MessageType schema = footer.getFileMetaData().getSchema();
    boolean whole = from == 0 && count == c.rows();
    int rows = count;
    try (ParquetFileReader own = kept == null ? ParquetIo.reader(input(c.file()), footer) : null) {
      ParquetFileReader reader = kept != null ? kept : own;
      List<ParquetTypes.Leaf> leaves = new ArrayList<>(features.size());
      List<Type> fields = new ArrayList<>(features.size());
      for (String f : features) {
        try {
          leaves.add(ParquetTypes.leaf(schema, f));
        } catch (IllegalArgumentException e) {
          throw new CorruptFileException(path, e.getMessage() + " although the manifest lists it as served");
        }
        if (!fields.contains(schema.getType(f))) {
          fields.add(schema.getType(f));
        }
      }
      MessageType projection = new MessageType(schema.getName(), fields);
      reader.setRequestedSchema(projection);
      PageReadStore pages = whole ? reader.readRowGroup(c.stripe())
          : reader.readFilteredRowGroup(c.stripe(),
              org.apache.parquet.filter2.columnindex.RowRanges.builder().addSelectedRange(from, from + count - 1L).build());
      if (pages == null || (whole && pages.getRowCount() != c.rows())) {
        throw new CorruptFileException(path, "row group " + c.stripe() + " holds " + (pages == null ? 0 : pages.getRowCount())
            + " rows, the manifest records " + c.rows());
      }
      ColumnReadStoreImpl store =
          new ColumnReadStoreImpl(pages, new Ignore(projection), projection, footer.getFileMetaData().getCreatedBy());
      BlockMetaData group = footer.getBlocks().get(c.stripe());
      SequencedMap<String, Column> out = new LinkedHashMap<>();
      for (int i = 0; i < features.size(); i++) {
        ParquetTypes.Leaf leaf = leaves.get(i);
        ColumnBuilder b = new ColumnBuilder(manifest.features().get(columnIndex.get(features.get(i))).type(), arena, rows);
        ParquetColumns.Seen seen;
        boolean byPage = whole && ParquetColumns.PAGE_BY_PAGE.containsAll(meta(group, leaf).getEncodings());
        if (byPage && !leaf.list()) {
          seen = ParquetColumns.appendPages(pages.getPageReader(leaf.descriptor()), leaf, rows, b);
        } else if (byPage && ParquetColumns.bulk(leaf.decode())) {
          seen = ParquetColumns.appendListPages(pages.getPageReader(leaf.descriptor()), leaf, rows, b);
        } else {
          ColumnReader cr = store.getColumnReader(leaf.descriptor());
          // A part of a row group: the reader stops after the last row asked for; its pages' count is not the rows'.
          seen = ParquetColumns.append(cr, whole ? pages.getPageReader(leaf.descriptor()).getTotalValueCount() : -1, leaf, rows, b);
        }
        if (whole) {
          check(path, c, features.get(i), leaf, seen, group);
        }
        out.put(features.get(i), b.build());
      }
      return out;
    } catch (NoSuchFileException | FileNotFoundException e) {
      throw new NoSuchFileException(path.toString(), null, "Parquet file of dataset " + manifest.name() + " vanished");
    } catch (CorruptFileException e) {
      throw e;
    } catch (IOException | RuntimeException e) {
      if (e instanceof OrcColumns.UnrepresentableValueException) {
        throw new CorruptFileException(path, "row group " + c.stripe() + " (columns " + features + "): " + e.getMessage(), e);
      }
      if (e instanceof IllegalArgumentException && e.getMessage() != null && e.getMessage().startsWith("dataset ")) {
        throw e;
      }
      FileSystemException unread = OrcIo.readFailure(path, "row group " + c.stripe(), e);
      if (unread != null) {
        throw unread;
      }
      throw new CorruptFileException(path, "cannot decode row group " + c.stripe() + " (columns " + features + "): "
          + (legacyLz4(footer, c, features) ? ParquetIo.LEGACY_LZ4 : ParquetIo.describe(e)), e);
    }
  }

  /**
   * Whether a column of {@code features} in row group {@code c} is compressed with Parquet's
   * deprecated LZ4 codec: parquet-java reads only Hadoop's framing of it, and older Arrow writers
   * wrote raw LZ4 blocks under the same codec name, which no reader can tell apart before
   * decompressing; a failure to decode such a chunk is said as that, not as damage.
   */
  private static boolean legacyLz4(ParquetMetadata footer, ChunkInfo c, List<String> features) {
    MessageType schema = footer.getFileMetaData().getSchema();
    BlockMetaData group = footer.getBlocks().get(c.stripe());
    for (String f : features) {
      try {
        if (meta(group, ParquetTypes.leaf(schema, f)).getCodec() == org.apache.parquet.hadoop.metadata.CompressionCodecName.LZ4) {
          return true;
        }
      } catch (RuntimeException e) {
        // Not a column of this file: the error said already.
      }
    }
    return false;
  }

  /** The metadata of {@code leaf}'s column chunk in {@code group}. */
  private static ColumnChunkMetaData meta(BlockMetaData group, ParquetTypes.Leaf leaf) {
    org.apache.parquet.hadoop.metadata.ColumnPath want = org.apache.parquet.hadoop.metadata.ColumnPath.get(leaf.descriptor().getPath());
    for (ColumnChunkMetaData m : group.getColumns()) {
      if (m.getPath().equals(want)) {
        return m;
      }
    }
    throw new IllegalStateException("the row group has no column chunk " + want.toDotString());
  }

  /** Checks a decoded column chunk against the writer's statistics of it, where it wrote them. */
  private static void check(Path path, ChunkInfo c, String feature, ParquetTypes.Leaf leaf, ParquetColumns.Seen seen,
      BlockMetaData group) throws CorruptFileException {
    ColumnChunkMetaData meta = meta(group, leaf);
    Statistics<?> stats = meta.getStatistics();
    if (stats == null || stats.isEmpty()) {
      return;
    }
    // A list's null count differs between writers (null lists, empty ones, null elements): checked for scalars alone.
    if (!leaf.list() && stats.isNumNullsSet() && stats.getNumNulls() != seen.nulls) {
      throw new CorruptFileException(path, "row group " + c.stripe() + ", column '" + feature + "': " + seen.nulls
          + " nulls decoded, the writer's statistics record " + stats.getNumNulls() + " (the file is damaged)");
    }
    if (seen.any && stats.hasNonNullValue() && stats.genericGetMin() instanceof Number lo
        && stats.genericGetMax() instanceof Number hi) {
      if (seen.min < lo.longValue() || seen.max > hi.longValue()) {
        throw new CorruptFileException(path, "row group " + c.stripe() + ", column '" + feature + "': values " + seen.min
            + ".." + seen.max + " decoded, outside the writer's statistics " + lo + ".." + hi + " (the file is damaged)");
      }
    }
  }

  @Override
  public SequencedMap<String, Column> readRows(long firstRow, int count, List<String> features, Arena arena) throws IOException {
    try (Cursor cursor = cursor(features)) {
      return cursor.readRows(firstRow, count, arena);
    }
  }

  @Override
  public Cursor cursor(List<String> features) {
    resolve(features);
    return new Cursor(features);
  }

  @Override
  public long verifyChecksums() throws IOException {
    StreamChecksums s = manifest.streamChecksums() == null ? null : StreamChecksums.load(dir, manifest, confinement);
    long bytes = 0;
    for (int i = 0; i < manifest.files().size(); i++) {
      Path path = filePath(i);
      Manifest.OrcFileInfo info = manifest.files().get(i);
      int file = i;
      HddTables.Read read = HddTables.readWhole(path, info, confinement, ch -> {
        if (s != null) {
          s.file(file).checkAll(path, ch); // names the row group, column chunk and page that differ
        }
      });
      if (!read.crc32c().equals(info.crc32c())) {
        // Say where: decoding every row group verifies the page checksums the writer wrote.
        List<String> served = manifest.features().stream().filter(FeatureInfo::supported).map(FeatureInfo::name).toList();
        for (ChunkInfo c : manifest.chunks()) {
          if (c.file() == i) {
            try (Arena a = Arena.ofConfined()) {
              decode(c, served, a);
            }
          }
        }
        throw new CorruptFileException(path, "is damaged: its CRC32C is " + read.crc32c() + ", the manifest records " + info.crc32c()
            + " (every row group still decodes and matches its page checksums and statistics: the damage is elsewhere,"
            + " or in a page without a checksum)");
      }
      bytes += read.bytes();
    }
    return bytes;
  }

  /** Parquet has no row index of the kind ORC's stride is: a cold read decodes the row group (see {@link Cursor}). */
  @Override
  public int rowIndexStride(int file) {
    return 0;
  }

  @Override
  public int chunkOf(long row) {
    return Chunks.of(chunkFirstRows, row);
  }

  @Override
  public long[] chunkFirstRows() {
    return chunkFirstRows;
  }

  @Override
  public synchronized void close() {
    closed = true;
    java.util.Arrays.fill(footers, null);
    java.util.Arrays.fill(inputs, null);
  }

  /**
   * Reads row ranges of a fixed projection. A range that is a small part of a row group is read
   * through the offset index where the file has one (only its pages); otherwise the row group is
   * decoded whole and kept (in memory of the cursor's own, freed when it moves on or closes), so
   * that ranges read in order decode each row group once. Not thread-safe.
   */
  public final class Cursor implements HddTable.Cursor {
    private final List<String> names;
    private int chunk = -1;
    private final Map<Integer, ParquetFileReader> readers = new HashMap<>();
    /** Per chunk, whether every column of this projection has an offset index there (looked up once, not a range). */
    private final Map<Integer, Boolean> indexed = new HashMap<>();
    private Arena arena;
    private SequencedMap<String, Column> decoded;

    private Cursor(List<String> names) {
      this.names = List.copyOf(names);
    }

    @Override
    public SequencedMap<String, Column> readRows(long firstRow, int count, Arena out) throws IOException {
      HddTables.checkRows(manifest, firstRow, count);
      List<ColumnBuilder> builders = new ArrayList<>(names.size());
      for (String n : names) {
        builders.add(new ColumnBuilder(manifest.features().get(columnIndex.get(n)).type(), out, count));
      }
      long row = firstRow;
      long end = firstRow + count;
      while (row < end) {
        ChunkInfo c = manifest.chunks().get(chunkOf(row));
        int n = (int) (Math.min(end, c.endRow()) - row);
        int local = (int) (row - c.firstRow());
        if (chunk != c.index() && 2L * n < c.rows() && indexed.computeIfAbsent(c.index(), k -> pageIndexedOrFalse(c))) {
          // A small part of a row group not at hand: its pages alone, not kept.
          try (Arena part = Arena.ofConfined()) {
            SequencedMap<String, Column> rows;
            try {
              rows = decode(c, names, local, n, part, reader(c.file()));
            } catch (IOException | RuntimeException e) {
              forget(c.file()); // its state after a failure is not to be trusted
              throw e;
            }
            for (int i = 0; i < names.size(); i++) {
              builders.get(i).appendRange(rows.get(names.get(i)), 0, n);
            }
          }
          row += n;
          continue;
        }
        SequencedMap<String, Column> group = group(c);
        for (int i = 0; i < names.size(); i++) {
          builders.get(i).appendRange(group.get(names.get(i)), local, n);
        }
        row += n;
      }
      SequencedMap<String, Column> result = new LinkedHashMap<>();
      for (int i = 0; i < names.size(); i++) {
        result.put(names.get(i), builders.get(i).build());
      }
      return result;
    }

    /**
     * A whole row group not at hand is decoded straight into {@code out} (and not kept here: the
     * caller keeps it), one at hand copied from it.
     */
    @Override
    public SequencedMap<String, Column> readChunk(ChunkInfo c, Arena out) throws IOException {
      HddTables.checkRows(manifest, c.firstRow(), Math.toIntExact(c.rows()));
      if (chunk == c.index()) {
        return readRows(c.firstRow(), Math.toIntExact(c.rows()), out);
      }
      return decode(c, names, out);
    }

    private boolean pageIndexedOrFalse(ChunkInfo c) {
      try {
        return pageIndexed(c, names);
      } catch (IOException e) {
        return false; // the whole row group is read then, and its read says what is wrong
      }
    }

    /** This cursor's reader of file {@code file} for short ranges (it keeps the offset indexes it read). */
    private ParquetFileReader reader(int file) throws IOException {
      ParquetFileReader r = readers.get(file);
      if (r == null) {
        r = ParquetIo.reader(input(file), footer(file));
        readers.put(file, r);
      }
      return r;
    }

    private void forget(int file) {
      ParquetFileReader r = readers.remove(file);
      if (r != null) {
        try {
          r.close();
        } catch (IOException ignored) {
          // Already failing; the original error is reported.
        }
      }
    }

    private SequencedMap<String, Column> group(ChunkInfo c) throws IOException {
      if (chunk != c.index()) {
        release();
        Arena a = Arena.ofShared();
        boolean ok = false;
        try {
          decoded = decode(c, names, a);
          ok = true;
        } finally {
          if (!ok) {
            a.close();
          }
        }
        arena = a;
        chunk = c.index();
      }
      return decoded;
    }

    private void release() {
      if (arena != null) {
        arena.close();
        arena = null;
        decoded = null;
        chunk = -1;
      }
    }

    @Override
    public void close() throws IOException {
      release();
      IOException first = null;
      for (ParquetFileReader r : readers.values()) {
        try {
          r.close();
        } catch (IOException e) {
          first = first == null ? e : first;
        }
      }
      readers.clear();
      if (first != null) {
        throw first;
      }
    }
  }

  /** The converter parquet-java's column readers ask for: values are taken from the readers directly, never pushed to it. */
  private static final class Ignore extends GroupConverter {
    private final Converter[] children;

    Ignore(GroupType type) {
      children = new Converter[type.getFieldCount()];
      for (int i = 0; i < children.length; i++) {
        Type t = type.getType(i);
        children[i] = t.isPrimitive() ? new PrimitiveConverter() {} : new Ignore(t.asGroupType());
      }
    }

    @Override
    public Converter getConverter(int fieldIndex) {
      return children[fieldIndex];
    }

    @Override
    public void start() {}

    @Override
    public void end() {}
  }
}
