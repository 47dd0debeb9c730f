package io.strata.sdk.files;

import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.CorruptFileException;
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
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import java.util.Set;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.orc.ColumnStatistics;
import org.apache.orc.Reader;
import org.apache.orc.RecordReader;
import org.apache.orc.StripeStatistics;
import org.apache.orc.TypeDescription;

/**
 * The HDD tier of one dataset: its ORC files, read with column projection and stripe or
 * row-range access, decoded into Arrow-layout {@link Column}s.
 *
 * <p>Thread-safe: file readers are opened once and shared; every read uses its own record reader.
 * A {@link Cursor} keeps record readers open for repeated row-range reads by one thread.
 */
public final class OrcTable implements HddTable {
  private static final int BATCH_ROWS = 4096;

  private final Path dir;
  private final Manifest manifest;
  private final Reader[] readers;
  /** Per file, the stripe footers its sidecar gave (null: none, or not opened yet), and the file's key (footers and checksums are registered under it). */
  private final StripeFooters[] footers;
  private final String[] footerKeys;
  private final List<?>[] stripeStats;
  private final long[] fileFirstRow;
  /** Each chunk's first row, for {@link #chunkOf}. */
  private final long[] chunkFirstRows;
  private final Map<String, Integer> columnIndex;
  private volatile boolean closed;
  /**
   * The chunk {@link #readChunk} read last (read-ahead follows reads in order; a table's first
   * read, of chunk 0, counts as in order: an epoch starting, whose next chunk is read while the
   * first decodes).
   */
  private volatile int lastChunk = -1;
  /** Per file, the read-ahead thread's reader (guarded by the array's monitor). */
  private final Reader[] aheadReaders;
  private final Confinement confinement;
  /** The dataset's stream checksums (null: not loaded yet, or none recorded); guarded by this table's monitor. */
  private StreamChecksums sums;
  /** The version's carried tails (null: none or not usable), loaded with the first file opened; guarded by this table's monitor. */
  private FileTails tails;
  private boolean tailsLoaded;
  /** The file system ORC opens this table's files through: the shared one, or one that confines every open. */
  private final org.apache.hadoop.fs.FileSystem fs;

  public OrcTable(Path dir, Manifest manifest) {
    this(dir, manifest, Confinement.NONE);
  }

  /** The HDD tier of a dataset whose every file open (ORC files, their sidecars) is confined by {@code confinement}. */
  public OrcTable(Path dir, Manifest manifest, Confinement confinement) {
    this.dir = dir;
    this.manifest = manifest;
    this.confinement = confinement;
    this.fs = OrcIo.fileSystem(confinement);
    this.readers = new Reader[manifest.files().size()];
    this.aheadReaders = new Reader[manifest.files().size()];
    this.footers = new StripeFooters[manifest.files().size()];
    this.footerKeys = new String[manifest.files().size()];
    this.stripeStats = new List<?>[manifest.files().size()];
    this.fileFirstRow = new long[manifest.files().size()];
    long row = 0;
    for (int i = 0; i < manifest.files().size(); i++) {
      fileFirstRow[i] = row;
      row += manifest.files().get(i).rows();
    }
    this.columnIndex = HddTables.columnIndex(manifest);
    this.chunkFirstRows = manifest.chunks().stream().mapToLong(ChunkInfo::firstRow).toArray();
  }

  /** The absolute path of ORC file {@code index}. */
  @Override
  public Path filePath(int index) {
    return DatasetFiles.resolve(dir, manifest.files().get(index).path());
  }

  private synchronized Reader reader(int file) throws IOException {
    if (closed) {
      throw new IllegalStateException("dataset " + manifest.name() + " is already closed");
    }
    if (readers[file] == null) {
      Path path = filePath(file);
      if (manifest.streamChecksums() != null && sums == null) {
        sums = StreamChecksums.load(dir, manifest, confinement);
      }
      Manifest.OrcFileInfo info = manifest.files().get(file);
      DatasetFiles.checkVersion(path, info);
      if (!tailsLoaded) {
        // One request for every file's tail and stripe footers, instead of two trips to each file's end.
        tails = FileTails.load(dir, manifest, confinement);
        tailsLoaded = true;
      }
      FileTails.Entry carried = tails == null ? null : tails.of(info);
      Reader reader = OrcIo.open(path, fs, confinement, null, carried == null ? null : carried.orcTail());
      StripeFooters sf = carried != null && carried.sidecar() != null
          ? StripeFooters.parse(carried.sidecar(), info.crc32c(), info.bytes(), reader.getStripes()) : null;
      if (sf == null) {
        sf = StripeFooters.load(path, info.crc32c(), info.bytes(), reader.getStripes(), confinement);
      }
      footerKeys[file] = OrcReads.key(path);
      if (sf != null) {
        OrcReads.remember(footerKeys[file], sf);
        footers[file] = sf;
      }
      if (sums != null) {
        // Before the first stripe is read: every stream a reader of this file reads is checked.
        OrcReads.remember(footerKeys[file], sums.file(file));
      }
      readers[file] = reader;
    }
    return readers[file];
  }

  /**
   * Reads every byte of every ORC file of the dataset and checks it against what was recorded
   * when the files were written: each file's CRC32C as the manifest records it and, where the
   * dataset has them, its stream checksums (which name the stripe, column and stream that
   * differ). Returns the bytes checked; a {@link CorruptFileException} names the first damage.
   */
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
          s.file(file).checkAll(path, ch);
        }
      });
      if (!read.crc32c().equals(info.crc32c())) {
        throw new CorruptFileException(path, "is damaged: its CRC32C is " + read.crc32c() + ", the manifest records " + info.crc32c()
            + (s == null ? " (the dataset has no stream checksums to say where)" : " (outside every stream: a footer or the file's tail)"));
      }
      bytes += read.bytes();
    }
    return bytes;
  }

  /**
   * A record reader of {@code reader}, made under this table's monitor: orc-core hands the
   * reader's open file to the first record reader it makes ({@code ReaderImpl.takeFile}, not
   * synchronized), so two threads making their first one at once could share one stream, and the
   * first to close it would pull it from under the other ("this.in is null").
   */
  private synchronized RecordReader rows(Reader reader, Reader.Options options) throws IOException {
    return reader.rows(options);
  }

  /** The writer's statistics of every stripe of a file (empty if it recorded none). */
  private synchronized List<?> stripeStatistics(int file) throws IOException {
    if (stripeStats[file] == null) {
      stripeStats[file] = reader(file).getStripeStatistics();
    }
    return stripeStats[file];
  }

  private List<Integer> resolve(List<String> features) {
    return HddTables.resolve(manifest, columnIndex, features);
  }

  @Override
  public long storedBytes(int chunk, String feature) throws IOException {
    ChunkInfo c = chunkInfo(chunk);
    List<Integer> cols = resolve(List.of(feature));
    Reader r = reader(c.file());
    StreamChecksums s;
    synchronized (this) {
      s = sums;
    }
    if (s == null) {
      return -1;
    }
    // The streams of the columns a read of this feature includes (its field and the field's children).
    boolean[] include = projection(c.file(), r, cols).include();
    StreamChecksums.File f = s.file(c.file());
    long total = 0;
    for (int i = 0; i < f.streams(); i++) {
      long[] st = f.stream(i);
      int col = f.column(i);
      if (st[2] == c.stripe() && col > 0 && col < include.length && include[col]) {
        total += st[1];
      }
    }
    return total;
  }

  /** What a projection of {@code columns} reads from {@code file} (see {@link OrcProjection}). */
  private OrcProjection projection(int file, Reader reader, List<Integer> columns) throws CorruptFileException {
    return OrcProjection.of(manifest, columnIndex, filePath(file), reader.getSchema(), columns);
  }

  /** Decodes the requested features of chunk {@code chunk} into memory of {@code arena}. */
  @Override
  public SequencedMap<String, Column> readChunk(int chunk, List<String> features, Arena arena)
      throws IOException {
    ChunkInfo c = chunkInfo(chunk);
    List<Integer> cols = resolve(features);
    int before = lastChunk;
    lastChunk = chunk;
    try (Cursor cursor = new Cursor(features, cols)) {
      if (before == chunk - 1 && chunk + 1 < manifest.chunks().size()) {
        // The next chunk is read ahead once this one's data is in (its first batch decoded), not
        // before: queued earlier, the read-ahead's requests would reach the disk ahead of this
        // chunk's own (a job's first chunk has nothing read ahead), and this chunk's decoding
        // would wait for both.
        ChunkInfo next = manifest.chunks().get(chunk + 1);
        cursor.afterFirstBatch = () -> {
          try {
            readAhead(next, cols);
          } catch (IOException e) {
            // The next chunk's file cannot be opened (damaged, refused): that chunk's own read says
            // so, under its own name; this chunk is read as if nothing were ahead.
          }
        };
      }
      return cursor.read(c, c.firstRow(), (int) c.rows(), arena);
    }
  }

  /**
   * Reads chunk {@code next} of the projection {@code cols} ahead, on the read-ahead thread, while
   * this one decodes (chunks read whole in order, on a disk that seeks: {@link OrcReads#gapBytes}
   * not 0; stripes up to {@link OrcReads#AHEAD_STRIPE_MAX}). The read-ahead opens the stripe with a reader of its own ({@link #aheadReader}), so
   * that it never waits on this table's monitor, and orc-core issues the very reads a reader of
   * that chunk will.
   */
  private void readAhead(ChunkInfo next, List<Integer> cols) throws IOException {
    Path path = filePath(next.file());
    if (closed || next.length() > OrcReads.AHEAD_STRIPE_MAX || OrcReads.gapBytes(path) == 0) {
      return;
    }
    Reader table = reader(next.file()); // its footers and checksums registered, its key known
    String key;
    synchronized (this) {
      key = footerKeys[next.file()];
    }
    OrcReads.readAhead(key, next.offset(), next.offset() + next.length(), () -> {
      Reader r = aheadReader(next.file(), table);
      OrcProjection p = projection(next.file(), r, cols);
      // Opening the stripe reads its data: kept for the reader to come.
      r.rows(r.options().include(p.include()).range(next.offset(), next.length())).close();
    });
  }

  /**
   * The read-ahead thread's reader of file {@code file} (that thread's alone; opened on first use),
   * opened with the tail {@code table}, the table's reader of that file, already read: on a disk
   * that seeks, reading the tail again would cost a seek to the file's end and one back, a file.
   */
  private Reader aheadReader(int file, Reader table) throws IOException {
    synchronized (aheadReaders) {
      if (closed) {
        throw new IllegalStateException("dataset " + manifest.name() + " is already closed");
      }
      if (aheadReaders[file] == null) {
        aheadReaders[file] = OrcIo.open(filePath(file), fs, confinement, table);
      }
      return aheadReaders[file];
    }
  }

  /** Decodes rows {@code [firstRow, firstRow + count)} of the requested features. */
  @Override
  public SequencedMap<String, Column> readRows(long firstRow, int count, List<String> features, Arena arena)
      throws IOException {
    try (Cursor cursor = cursor(features)) {
      return cursor.readRows(firstRow, count, arena);
    }
  }

  /** A single-threaded reader of row ranges that keeps stripe readers open between calls. */
  @Override
  public Cursor cursor(List<String> features) {
    return new Cursor(features, resolve(features));
  }

  private ChunkInfo chunkInfo(int chunk) {
    return HddTables.chunk(manifest, chunk);
  }

  /** Rows between ORC row-index entries in file {@code file} (0 when the file has no row index). */
  @Override
  public int rowIndexStride(int file) throws IOException {
    return reader(file).getRowIndexStride();
  }

  /** Index of the chunk holding global row {@code row} (a binary search of the chunks' first rows; a shuffled batch asks once a row). */
  @Override
  public int chunkOf(long row) {
    return Chunks.of(chunkFirstRows, row);
  }

  /** The first row of each chunk, ascending (the table's own array: read it, never write it). */
  @Override
  public long[] chunkFirstRows() {
    return chunkFirstRows;
  }

  /** Reads row ranges of a fixed projection; not thread-safe. */
  public final class Cursor implements HddTable.Cursor {
    private final List<String> names;
    private final List<Integer> columns;
    private final Map<Integer, RecordReader> open = new HashMap<>();
    private final Map<Integer, Long> position = new HashMap<>();
    /** Chunks whose open reader was opened to seek (see {@link OrcIo#enableSeeking}). */
    private final Set<Integer> seeking = new HashSet<>();
    /** Per file, what this projection reads from it. */
    private final Map<Integer, OrcProjection> projections = new HashMap<>();
    private VectorizedRowBatch batch;
    /** Run once, after the first batch this cursor decodes (its stripe's data read by then); null for nothing. */
    private Runnable afterFirstBatch;

    private Cursor(List<String> names, List<Integer> columns) {
      this.names = List.copyOf(names);
      this.columns = columns;
    }

    /** Decodes rows {@code [firstRow, firstRow + count)}, which may span chunks. */
    @Override
    public SequencedMap<String, Column> readRows(long firstRow, int count, Arena arena) throws IOException {
      HddTables.checkRows(manifest, firstRow, count);
      List<ColumnBuilder> builders = builders(count, arena);
      long row = firstRow;
      long end = firstRow + count;
      while (row < end) {
        ChunkInfo c = manifest.chunks().get(chunkOf(row));
        int n = (int) (Math.min(end, c.endRow()) - row);
        decode(c, row, n, builders);
        row += n;
      }
      return build(builders);
    }

    /** Decodes a whole chunk and checks it against the stripe's statistics. */
    SequencedMap<String, Column> read(ChunkInfo c, long firstRow, int count, Arena arena) throws IOException {
      List<ColumnBuilder> builders = builders(count, arena);
      decode(c, firstRow, count, builders);
      SequencedMap<String, Column> out = build(builders);
      List<?> stats = stripeStatistics(c.file());
      if (c.stripe() < stats.size()) {
        ColumnStatistics[] perColumn = ((StripeStatistics) stats.get(c.stripe())).getColumnStatistics();
        boolean utcTimestamps = reader(c.file()).getWriterVersion().includes(org.apache.orc.OrcFile.WriterVersion.ORC_135);
        OrcProjection p = projection(c.file(), reader(c.file()));
        for (int i = 0; i < names.size(); i++) {
          int orcColumn = reader(c.file()).getSchema().getChildren().get(p.fieldOf()[i]).getId();
          if (orcColumn < perColumn.length) {
            StripeStatisticsCheck.check(filePath(c.file()), c.stripe(), names.get(i), perColumn[orcColumn], out.get(names.get(i)),
                utcTimestamps);
          }
        }
      }
      return out;
    }

    private OrcProjection projection(int file, Reader reader) throws IOException {
      OrcProjection p = projections.get(file);
      if (p == null) {
        p = OrcTable.this.projection(file, reader, columns);
        projections.put(file, p);
      }
      return p;
    }

    private List<ColumnBuilder> builders(int rows, Arena arena) {
      List<ColumnBuilder> builders = new ArrayList<>();
      for (int c : columns) {
        builders.add(new ColumnBuilder(manifest.features().get(c).type(), arena, rows));
      }
      return builders;
    }

    private SequencedMap<String, Column> build(List<ColumnBuilder> builders) {
      SequencedMap<String, Column> out = new LinkedHashMap<>();
      for (int i = 0; i < names.size(); i++) {
        out.put(names.get(i), builders.get(i).build());
      }
      return out;
    }

    private void decode(ChunkInfo c, long firstRow, int count, List<ColumnBuilder> builders) throws IOException {
      Path file = filePath(c.file());
      try {
        RecordReader rr = open.get(c.index());
        boolean seek = rr == null ? firstRow != c.firstRow() : position.get(c.index()) != firstRow;
        if (rr != null && seek && !seeking.contains(c.index())) {
          // Opened for reading from its start; a seek needs the reader that can seek.
          forget(c.index());
          rr = null;
        }
        if (rr == null) {
          Reader reader = reader(c.file());
          Reader.Options options =
              reader.options().include(projection(c.file(), reader).include()).range(c.offset(), c.length());
          if (seek) {
            // Only a reader that seeks gets the search argument: with it, orc-core reads the
            // stripe's row index (one more request) whenever its column is projected.
            OrcIo.enableSeeking(options, reader.getSchema());
            seeking.add(c.index());
          }
          rr = rows(reader, options);
          open.put(c.index(), rr);
          position.put(c.index(), c.firstRow());
          if (batch == null) {
            batch = reader.getSchema().createRowBatch(TypeDescription.RowBatchVersion.USE_DECIMAL64, BATCH_ROWS);
          }
        }
        if (seek) {
          rr.seekToRow(firstRow - fileFirstRow[c.file()]);
        }
        int[] fieldOf = projection(c.file(), reader(c.file())).fieldOf();
        int done = 0;
        while (done < count) {
          batch.reset();
          int want = Math.min(BATCH_ROWS, count - done);
          batch.ensureSize(want);
          if (!rr.nextBatch(batch) || batch.size == 0) {
            throw new CorruptFileException(
                file, "stripe " + c.stripe() + " ended after " + (firstRow - c.firstRow() + done) + " of " + c.rows() + " rows");
          }
          if (afterFirstBatch != null) {
            Runnable r = afterFirstBatch;
            afterFirstBatch = null;
            r.run();
          }
          int take = Math.min(batch.size, count - done);
          for (int i = 0; i < columns.size(); i++) {
            OrcColumns.append(builders.get(i), batch.cols[fieldOf[i]], 0, take);
          }
          done += take;
          if (take < batch.size) {
            // Read past the range: the next call must seek.
            position.put(c.index(), -1L);
            return;
          }
        }
        position.put(c.index(), firstRow + count);
      } catch (NoSuchFileException | FileNotFoundException e) {
        forget(c.index());
        throw new NoSuchFileException(file.toString(), null, "ORC file of dataset " + manifest.name() + " vanished");
      } catch (CorruptFileException e) {
        forget(c.index());
        throw e;
      } catch (IOException | RuntimeException e) {
        forget(c.index());
        CorruptFileException ours = OrcIo.strataCause(e);
        if (ours != null) {
          throw ours; // found by Strata under orc-core (a stream checksum), which wrapped it
        }
        FileSystemException unread = OrcIo.readFailure(file, "stripe " + c.stripe(), e);
        if (unread != null) {
          throw unread;
        }
        throw new CorruptFileException(
            file, "cannot decode stripe " + c.stripe() + " (columns " + names + "): " + OrcIo.describeChain(e), e);
      }
    }

    private void forget(int chunk) {
      RecordReader rr = open.remove(chunk);
      position.remove(chunk);
      seeking.remove(chunk);
      if (rr != null) {
        try {
          rr.close();
        } catch (IOException | RuntimeException ignored) {
          // Already failing; the original error is reported.
        }
      }
    }

    @Override
    public void close() throws IOException {
      IOException first = null;
      for (RecordReader rr : open.values()) {
        try {
          rr.close();
        } catch (IOException e) {
          if (first == null) {
            first = e;
          }
        }
      }
      open.clear();
      position.clear();
      seeking.clear();
      if (first != null) {
        throw first;
      }
    }
  }

  @Override
  public synchronized void close() throws IOException {
    closed = true;
    for (int i = 0; i < readers.length; i++) {
      if (footers[i] != null) {
        OrcReads.forget(footerKeys[i], footers[i]);
        footers[i] = null;
      }
      if (sums != null && footerKeys[i] != null) {
        OrcReads.forget(footerKeys[i], sums.file(i));
      }
      if (footerKeys[i] != null) {
        OrcReads.dropAhead(footerKeys[i]);
      }
      footerKeys[i] = null;
      if (readers[i] != null) {
        readers[i].close();
        readers[i] = null;
      }
    }
    synchronized (aheadReaders) {
      for (int i = 0; i < aheadReaders.length; i++) {
        if (aheadReaders[i] != null) {
          aheadReaders[i].close();
          aheadReaders[i] = null;
        }
      }
    }
  }
}
