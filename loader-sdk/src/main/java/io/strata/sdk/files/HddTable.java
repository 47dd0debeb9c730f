package io.strata.sdk.files;

import io.strata.sdk.Column;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.List;
import java.util.SequencedMap;

/**
 * The HDD tier of one dataset: its files, read with column projection and chunk or row-range
 * access, decoded into Arrow-layout {@link Column}s. A chunk is an ORC stripe ({@link OrcTable})
 * or a Parquet row group ({@link ParquetTable}); everything above this interface (promotion,
 * cold reads, derived features, ground truth, the commands) reads either the same way.
 *
 * <p>Implementations are thread-safe; a {@link Cursor} belongs to one thread.
 */
public sealed interface HddTable extends AutoCloseable permits OrcTable, ParquetTable {

  /** Opens the table the manifest's file format calls for; nothing is read until the first access. */
  static HddTable open(Path dir, Manifest manifest, io.strata.sdk.internal.Confinement confinement) {
    return switch (manifest.fileFormat()) {
      case ORC -> new OrcTable(dir, manifest, confinement);
      case PARQUET -> new ParquetTable(dir, manifest, confinement);
    };
  }

  /** The absolute path of the dataset's file {@code index}. */
  Path filePath(int index);

  /** Decodes the requested features of chunk {@code chunk} into memory of {@code arena}, checked against the writer's statistics. */
  SequencedMap<String, Column> readChunk(int chunk, List<String> features, Arena arena) throws IOException;

  /** Decodes rows {@code [firstRow, firstRow + count)} of the requested features. */
  SequencedMap<String, Column> readRows(long firstRow, int count, List<String> features, Arena arena) throws IOException;

  /** A single-threaded reader of row ranges that keeps what it opened between calls. */
  Cursor cursor(List<String> features);

  /**
   * The bytes of {@code feature} in chunk {@code chunk} as the slow tier stores them (its
   * compressed column chunk, or its ORC streams), which a read of that feature alone fetches; -1
   * where the table cannot say (ORC without recorded stream checksums). What the SSD tier saves
   * by holding the chunk: the cache node weighs admissions by it. Reads the file's footer on first
   * use (kept, as every read keeps it).
   */
  long storedBytes(int chunk, String feature) throws IOException;

  /**
   * Reads every byte of every file and checks it against what the manifest recorded (and what
   * the writer recorded inside the files); returns the bytes checked. A {@link
   * io.strata.sdk.CorruptFileException} names the first damage.
   */
  long verifyChecksums() throws IOException;

  /** Rows a cold read decodes at once in file {@code file}: ORC's row-index stride, 0 where the format has none. */
  int rowIndexStride(int file) throws IOException;

  /** Index of the chunk holding global row {@code row}. */
  int chunkOf(long row);

  /** The first row of each chunk, ascending (the table's own array: read it, never write it). */
  long[] chunkFirstRows();

  @Override
  void close() throws IOException;

  /** Reads row ranges of a fixed projection; not thread-safe. */
  interface Cursor extends AutoCloseable {
    /** Decodes rows {@code [firstRow, firstRow + count)}, which may span chunks. */
    SequencedMap<String, Column> readRows(long firstRow, int count, Arena arena) throws IOException;

    /**
     * Decodes every row of chunk {@code c} into {@code arena}: as {@link #readRows} over the
     * chunk, where a format can decode the chunk there directly rather than through a copy.
     */
    default SequencedMap<String, Column> readChunk(io.strata.sdk.ChunkInfo c, Arena arena) throws IOException {
      return readRows(c.firstRow(), Math.toIntExact(c.rows()), arena);
    }

    @Override
    void close() throws IOException;
  }
}
