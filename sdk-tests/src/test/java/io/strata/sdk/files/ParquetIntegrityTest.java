package io.strata.sdk.files;

import io.strata.tools.DatasetImporter;
import io.strata.tools.Relayout;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.ChunkInfo;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.sdk.internal.Confinement;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Parquet files that are not what they claim: refused at import or at the read that meets the
 * damage, with a message that names the file and the problem, and nothing left behind.
 */
class ParquetIntegrityTest {
  @TempDir Path tmp;

  private static Path pyarrowFile(String name) {
    return ParquetConformanceTest.dir().resolve("pyarrow").resolve(name);
  }

  private CorruptFileException refusedAtImport(Path file) {
    Path ds = tmp.resolve("ds-" + file.getFileName());
    CorruptFileException e = assertThrows(CorruptFileException.class, () -> DatasetImporter.importFiles(
        new DatasetImporter.Options("bad", List.of(file), ds, null, true, false), Progress.NONE));
    assertTrue(e.getMessage().contains(file.getFileName().toString()), e.getMessage());
    assertFalse(Files.exists(ds), "a refused import leaves nothing behind");
    return e;
  }

  @Test
  void emptyNotParquetAndTruncatedFilesAreRefusedByName() throws IOException {
    Path empty = Files.createFile(tmp.resolve("empty.parquet"));
    assertTrue(refusedAtImport(empty).getMessage().contains("empty"));
    Path text = Files.writeString(tmp.resolve("text.parquet"), "id,amount\n1,2.5\n");
    assertTrue(refusedAtImport(text).getMessage().contains("not a Parquet file"));
    byte[] whole = Files.readAllBytes(pyarrowFile("dict-snappy.parquet"));
    Path cut = Files.write(tmp.resolve("cut.parquet"), Arrays.copyOf(whole, whole.length * 3 / 5));
    assertTrue(refusedAtImport(cut).getMessage().contains("truncated"));
  }

  /** The byte range of column {@code column}'s chunk in row group {@code group}. */
  private static long[] chunkRange(Path file, int group, String column) throws IOException {
    ParquetMetadata footer = ParquetIo.footer(file, Confinement.NONE);
    for (ColumnChunkMetaData c : footer.getBlocks().get(group).getColumns()) {
      if (c.getPath().toDotString().equals(column)) {
        return new long[] {c.getStartingPos(), c.getTotalSize()};
      }
    }
    throw new AssertionError("no column " + column);
  }

  private Dataset damaged(String source, String column, int xor) throws IOException {
    return damaged(source, column, xor, true);
  }

  /**
   * A copy of {@code source} imported, then 4 bytes in the middle of row group 1's chunk of {@code
   * column} changed; {@code sidecar}: whether the dataset keeps its stream checksums (false: as a
   * dataset imported before Strata recorded them, which only the file's own checks protect).
   */
  private Dataset damaged(String source, String column, int xor, boolean sidecar) throws IOException {
    Path copy = tmp.resolve(source);
    Files.copy(pyarrowFile(source), copy);
    Path ds = tmp.resolve("ds-" + source);
    DatasetImporter.importFiles(new DatasetImporter.Options("dmg", List.of(copy), ds, null, true, false), Progress.NONE);
    if (!sidecar) {
      Manifest.read(ds).withStreamChecksums(null).write(ds);
      Files.delete(ds.resolve(StreamChecksums.FILE_NAME));
    }
    long[] range = chunkRange(copy, 1, column);
    byte[] bytes = Files.readAllBytes(copy);
    int mid = (int) (range[0] + range[1] / 2);
    for (int i = 0; i < 4; i++) {
      bytes[mid + i] ^= (byte) xor;
    }
    Files.write(copy, bytes);
    return Dataset.open(ds);
  }

  @Test
  void aPageThatDoesNotMatchTheChecksumsRecordedAtImportIsRefused() throws IOException {
    try (Dataset d = damaged("plain-none.parquet", "d", 0x40); Arena arena = Arena.ofConfined()) {
      d.readChunk(0, List.of("d"), arena); // an undamaged row group reads
      CorruptFileException e = assertThrows(CorruptFileException.class, () -> d.readChunk(1, List.of("d"), arena));
      assertTrue(e.getMessage().contains("plain-none.parquet") && e.getMessage().contains("row group 1 column chunk")
          && e.getMessage().contains("is damaged") && e.getMessage().contains("when the file was imported"), e.getMessage());
      CorruptFileException v = assertThrows(CorruptFileException.class, () -> d.table().verifyChecksums());
      assertTrue(v.getMessage().contains("row group 1 column chunk") && v.getMessage().contains("is damaged"), v.getMessage());
    }
  }

  @Test
  void aPageThatDoesNotMatchItsChecksumIsRefused() throws IOException {
    try (Dataset d = damaged("gzip-checksums.parquet", "i64", 0x40, false); Arena arena = Arena.ofConfined()) {
      d.readChunk(0, List.of("i64"), arena); // an undamaged row group reads
      CorruptFileException e = assertThrows(CorruptFileException.class, () -> d.readChunk(1, List.of("i64"), arena));
      assertTrue(e.getMessage().contains("gzip-checksums.parquet") && e.getMessage().contains("row group 1")
          && e.getMessage().contains("does not match its checksum"), e.getMessage());
      CorruptFileException v = assertThrows(CorruptFileException.class, () -> d.table().verifyChecksums());
      assertTrue(v.getMessage().contains("does not match its checksum"), v.getMessage());
    }
  }

  @Test
  void valuesOutsideTheWritersStatisticsAreRefused() throws IOException {
    // No checksums and no compression, and no stream checksums recorded (a dataset imported before
    // Strata recorded them): the damaged values decode, and only the statistics can tell.
    try (Dataset d = damaged("plain-none.parquet", "d", 0x40, false); Arena arena = Arena.ofConfined()) {
      CorruptFileException e = assertThrows(CorruptFileException.class, () -> d.readChunk(1, List.of("d"), arena));
      assertTrue(e.getMessage().contains("plain-none.parquet") && e.getMessage().contains("column 'd'")
          && e.getMessage().contains("statistics"), e.getMessage());
      CorruptFileException v = assertThrows(CorruptFileException.class, () -> d.table().verifyChecksums());
      assertTrue(v.getMessage().contains("statistics"), v.getMessage());
    }
  }

  @Test
  void aFileReplacedAfterImportIsRefused() throws IOException {
    Path file = tmp.resolve("swap.parquet");
    Files.copy(pyarrowFile("v2-zstd.parquet"), file);
    Path ds = tmp.resolve("ds-swap");
    DatasetImporter.importFiles(new DatasetImporter.Options("swap", List.of(file), ds, null, false, false), Progress.NONE);
    // Another file in its place, of other row groups: one Parquet file of one row group.
    Files.copy(ParquetConformanceTest.dir().resolve("parquet-testing/alltypes_plain.parquet"), file,
        java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    try (Dataset d = Dataset.open(ds); Arena arena = Arena.ofConfined()) {
      CorruptFileException e = assertThrows(CorruptFileException.class, () -> d.readChunk(1, List.of("i64"), arena));
      assertTrue(e.getMessage().contains("changed since it was imported"), e.getMessage());
    }
  }

  @Test
  void theManifestSaysParquetAndAnOlderVersionNumberIsRefused() throws IOException {
    Path ds = tmp.resolve("m");
    DatasetImporter.importFiles(new DatasetImporter.Options("m", List.of(pyarrowFile("dict-snappy.parquet")), ds, null, false,
        false), Progress.NONE);
    String text = Files.readString(ds.resolve(Manifest.FILE_NAME));
    assertTrue(text.contains("\"fileFormat\" : \"parquet\"") && text.contains("\"formatVersion\" : 3"), text);
    Manifest m = Manifest.read(ds);
    assertEquals(Manifest.FileFormat.PARQUET, m.fileFormat());
    assertEquals(3, m.chunks().size());
    long rows = 0;
    for (ChunkInfo c : m.chunks()) {
      assertEquals(rows, c.firstRow());
      assertTrue(c.length() > 0 && c.offset() >= 4, c.toString());
      rows += c.rows();
    }
    Files.writeString(ds.resolve(Manifest.FILE_NAME), text.replace("\"formatVersion\" : 3", "\"formatVersion\" : 1"),
        StandardCharsets.UTF_8);
    CorruptFileException e = assertThrows(CorruptFileException.class, () -> Manifest.read(ds));
    assertTrue(e.getMessage().contains("does not match the file format 'parquet'"), e.getMessage());
  }

  @Test
  void aRelayoutOfAParquetDatasetIsRefusedByName() throws IOException {
    Path ds = tmp.resolve("r");
    DatasetImporter.importFiles(new DatasetImporter.Options("r", List.of(pyarrowFile("dict-snappy.parquet")), ds, null, false,
        false), Progress.NONE);
    List<String> order = Manifest.read(ds).features().stream().map(io.strata.sdk.FeatureInfo::name).toList();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Relayout.rewrite(ds, order, Progress.NONE));
    assertTrue(e.getMessage().contains("is parquet") && e.getMessage().contains("ORC files only"), e.getMessage());
  }

  @Test
  void aDirectoryOfBothFormatsIsRefused() throws IOException {
    Path in = Files.createDirectories(tmp.resolve("mixed"));
    Files.copy(pyarrowFile("dict-snappy.parquet"), in.resolve("a.parquet"));
    Files.copy(OrcConformanceTest.conformanceDir().resolve("TestOrcFile.test1.orc"), in.resolve("b.orc"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DatasetImporter.importFiles(
        new DatasetImporter.Options("mixed", List.of(in), tmp.resolve("dsm"), null, false, false), Progress.NONE));
    assertTrue(e.getMessage().contains("both .orc and .parquet"), e.getMessage());
    assertFalse(Files.exists(tmp.resolve("dsm")));
  }

  @Test
  void aParquetFileThatLeadsOutsideTheRootsIsNeverOpened() throws IOException {
    // The dataset lies inside the root; its file is a link to a file outside: every open is refused.
    Path root = Files.createDirectories(tmp.resolve("root"));
    Path outside = Files.copy(pyarrowFile("dict-snappy.parquet"), tmp.resolve("outside.parquet"));
    Path ds = root.resolve("ds");
    DatasetImporter.importFiles(new DatasetImporter.Options("c", List.of(outside), ds, null, false, false), Progress.NONE);
    Files.createSymbolicLink(ds.resolve("part.parquet"), outside);
    String manifest = Files.readString(ds.resolve(Manifest.FILE_NAME));
    Files.writeString(ds.resolve(Manifest.FILE_NAME), manifest.replace("\"../../outside.parquet\"", "\"part.parquet\""));
    assertTrue(Files.readString(ds.resolve(Manifest.FILE_NAME)).contains("\"part.parquet\""), "the manifest names the link");
    Confinement roots = Confinement.within(List.of(root), "the test root");
    try (Dataset d = Dataset.open(ds, roots); Arena arena = Arena.ofConfined()) {
      java.nio.file.AccessDeniedException e = assertThrows(java.nio.file.AccessDeniedException.class,
          () -> d.readChunk(0, List.of("i64"), arena));
      assertTrue(e.getMessage().contains("part.parquet"), e.getMessage());
      assertThrows(java.nio.file.AccessDeniedException.class, () -> d.table().verifyChecksums());
    }
    try (Dataset d = Dataset.open(ds); Arena arena = Arena.ofConfined()) {
      assertEquals(600, d.readChunk(0, List.of("i64"), arena).get("i64").length(), "unconfined, the same dataset reads");
    }
  }

  @Test
  void aReadAfterCloseIsRefusedNamingTheDataset() throws IOException {
    Path ds = tmp.resolve("closed");
    DatasetImporter.importFiles(new DatasetImporter.Options("closed", List.of(pyarrowFile("v2-zstd.parquet")), ds, null, false,
        false), Progress.NONE);
    Dataset d = Dataset.open(ds);
    try (Arena arena = Arena.ofConfined()) {
      d.readChunk(0, List.of("i64"), arena);
      d.close();
      IllegalStateException e = assertThrows(IllegalStateException.class, () -> d.readChunk(1, List.of("i64"), arena));
      assertTrue(e.getMessage().contains("closed") && e.getMessage().contains("already closed"), e.getMessage());
    }
  }

  @Test
  void chunksDecodedByManyThreadsAtOnceHoldTheSameValues() throws Exception {
    // Readers decompress in parallel: each with its own codec state (a shared one corrupts pages).
    Path ds = tmp.resolve("threads");
    DatasetImporter.importFiles(new DatasetImporter.Options("threads", List.of(pyarrowFile("dict-snappy.parquet")), ds, null,
        false, false), Progress.NONE);
    try (Dataset d = Dataset.open(ds)) {
      List<String> features = List.of("i64", "s", "f64", "l_s", "dec38");
      long[] expected = new long[d.chunks().size()];
      for (int c = 0; c < expected.length; c++) {
        try (Arena arena = Arena.ofConfined()) {
          expected[c] = checksum(d.readChunk(c, features, arena));
        }
      }
      try (var pool = java.util.concurrent.Executors.newFixedThreadPool(4)) {
        List<java.util.concurrent.Future<?>> runs = new java.util.ArrayList<>();
        for (int t = 0; t < 4; t++) {
          runs.add(pool.submit(() -> {
            for (int i = 0; i < 30; i++) {
              int c = i % expected.length;
              try (Arena arena = Arena.ofConfined()) {
                assertEquals(expected[c], checksum(d.readChunk(c, features, arena)), "chunk " + c);
              }
            }
            return null;
          }));
        }
        for (var r : runs) {
          r.get();
        }
      }
    }
  }

  private static long checksum(java.util.Map<String, io.strata.sdk.Column> cols) {
    long h = 0;
    for (io.strata.sdk.Column c : cols.values()) {
      h = h * 31 + io.strata.sdk.format.Columns.checksum(c);
    }
    return h;
  }
}
