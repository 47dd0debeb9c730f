package io.strata.sdk.files;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.FeatureType;
import io.strata.sdk.Progress;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.derive.Derivation;
import io.strata.sdk.derive.Spec;
import io.strata.sdk.derive.SpecException;
import io.strata.sdk.format.ColumnBuilder;
import io.strata.sdk.internal.Le;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.Loader;
import io.strata.tools.DatasetImporter;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Parquet files as other writers write them (issue 52): the edge files in
 * parquet-conformance/edge (written by pyarrow with the settings its make.py names), and
 * pyarrow's conformance files damaged after import. Each test fails on the code before the fix it
 * covers.
 */
class ParquetWritersTest {
  @TempDir Path tmp;

  private static Path edge(String name) {
    Path p = ParquetConformanceTest.dir().resolve("edge").resolve(name);
    assertTrue(Files.isRegularFile(p), "edge file " + p);
    return p;
  }

  private Dataset imported(Path file, String name) throws IOException {
    Path ds = tmp.resolve("ds-" + name);
    DatasetImporter.importFiles(new DatasetImporter.Options(name, List.of(file), ds, null, true, false), Progress.NONE);
    return Dataset.open(ds);
  }

  @Test
  void rowGroupsOfNoRowsAreSkipped() throws IOException {
    try (Dataset d = imported(edge("empty-row-groups.parquet"), "empties")) {
      assertEquals(6, d.rows());
      assertEquals(List.of(0, 2), d.chunks().stream().map(ChunkInfo::stripe).toList(), "the empty row group is no chunk");
      try (Arena a = Arena.ofConfined()) {
        Map<String, Column> all = d.table().readRows(0, 6, List.of("v", "s"), a);
        for (int r = 0; r < 6; r++) {
          assertEquals(r + 1, all.get("v").getLong(r));
        }
        assertEquals("d", all.get("s").getString(3));
        assertTrue(all.get("s").isNull(1) && all.get("s").isNull(5));
      }
      assertTrue(d.table().verifyChecksums() > 0);
    }
    try (Dataset d = imported(edge("empty-table.parquet"), "empty")) {
      assertEquals(0, d.rows());
      assertTrue(d.chunks().isEmpty());
    }
  }

  @Test
  void floatBitsAreKeptExactly() throws IOException {
    int[] f32 = {0x7F800001, 0x7FC00001, 0xFF800001, 0x7FBFFFFF, 0x3F800000, 0x7F800000};
    short[] f16 = {0x7C01, 0x7E00, (short) 0xFC01, 0x7DFF, 0x3C00, 0x7C00};
    long[] f64 = {0x7FF0000000000001L, 0x7FF8000000000001L, 0xFFF0000000000001L, 0x7FF7FFFFFFFFFFFFL, 0x3FF0000000000000L,
        0x7FF0000000000000L};
    try (Dataset d = imported(edge("nan-bits.parquet"), "nans"); Arena a = Arena.ofConfined()) {
      assertEquals(FeatureType.FLOAT32, d.feature("h").type(), "half floats are served widened to float32");
      Map<String, Column> c = d.readChunk(0, List.of("f", "h", "d"), a);
      for (int r = 0; r < f32.length; r++) {
        assertEquals(Integer.toHexString(f32[r]), Integer.toHexString(c.get("f").values().get(Le.INT, r * 4L)), "f row " + r);
        assertEquals(Integer.toHexString(ColumnBuilder.halfToFloatBits(f16[r])),
            Integer.toHexString(c.get("h").values().get(Le.INT, r * 4L)), "h row " + r);
        assertEquals(Long.toHexString(f64[r]), Long.toHexString(c.get("d").values().get(Le.LONG, r * 8L)), "d row " + r);
      }
      // The widening is exact: 0x7C01 (a signalling NaN of payload 1) is 0x7F802000, not quieted to 0x7FC02000.
      assertEquals(0x7F802000, ColumnBuilder.halfToFloatBits((short) 0x7C01));
      assertEquals(0xFF802000, ColumnBuilder.halfToFloatBits((short) 0xFC01));
      assertEquals(Float.floatToRawIntBits(1.0f), ColumnBuilder.halfToFloatBits((short) 0x3C00));
    }
  }

  @Test
  void storedColumnsNamedLikeDerivationsAreServedAsStored() throws IOException {
    try (Dataset d = imported(edge("derived-names.parquet"), "names")) {
      List<String> features = List.of("v", "log1p(v)", "zscore(v)", "log1p(w)");
      for (String f : features) {
        assertFalse(Spec.isDerived(d, f), f + " is a stored column");
        assertEquals(FeatureType.INT64, d.feature(f).type());
      }
      assertTrue(Spec.isDerived(d, "log1p( v )") && Spec.isDerived(d, "zscore(`log1p(v)`)"));
      // Every batch serves the stored values (v, 10v, 100v, 1000v), never log1p or zscore of v.
      long seen = 0;
      try (Loader l = Loader.builder(d).features(features).rowBatches(128, true).seed(5).build()) {
        Iterator<Batch> it = l.iterator();
        while (it.hasNext()) {
          try (Batch b = it.next()) {
            for (int r = 0; r < b.rows(); r++) {
              long v = b.column("v").getLong(r);
              assertEquals(10 * v, b.column("log1p(v)").getLong(r));
              assertEquals(100 * v, b.column("zscore(v)").getLong(r));
              assertEquals(1000 * v, b.column("log1p(w)").getLong(r));
              seen++;
            }
          }
        }
      }
      assertEquals(d.rows(), seen);
      // A derivation whose name would be the stored column's is refused, saying why; one of the stored column quotes it.
      SpecException clash = assertThrows(SpecException.class, () -> Derivation.of(Spec.parse("LOG1P( v )"), d));
      assertTrue(clash.getMessage().contains("stores a column named 'log1p(v)'"), clash.getMessage());
      Derivation of = Derivation.of(Spec.parse("zscore( `log1p(v)` )"), d);
      assertEquals("zscore(`log1p(v)`)", of.spec().canonical());
      assertEquals(List.of("log1p(v)"), of.spec().sources());
      assertEquals(FeatureType.FLOAT64, of.type());
      assertThrows(SpecException.class, () -> Derivation.of(Spec.parse("log1p(w)"), d).type(), "no column w to derive from");
    }
  }

  /** One dataset's files from two writers that store the same feature types differently: one dataset, every value right. */
  @Test
  void filesOfTheSameTypesStoredDifferentlyAreOneDataset() throws IOException {
    Path files = tmp.resolve("mixed");
    Files.createDirectories(files);
    Files.copy(edge("mixed-a.parquet"), files.resolve("a.parquet"));
    Files.copy(edge("mixed-b.parquet"), files.resolve("b.parquet"));
    try (Dataset d = imported(files, "mixed"); Arena a = Arena.ofConfined()) {
      assertEquals(5, d.rows());
      assertEquals("decimal(18,3)", d.feature("price").type().toString());
      Map<String, Column> all = d.table().readRows(0, 5, List.of("id", "price"), a);
      String[] prices = {"1.500", null, "-999999999999999.999", "0.001", "42.000"};
      for (int r = 0; r < 5; r++) {
        assertEquals(r + 1, all.get("id").getLong(r));
        assertEquals(prices[r], all.get("price").isNull(r) ? null : all.get("price").getDecimal(r).toPlainString(), "row " + r);
      }
    }
    // Types that do differ are refused, naming the column and both types.
    Path other = tmp.resolve("other");
    Files.createDirectories(other);
    Files.copy(edge("mixed-a.parquet"), other.resolve("a.parquet"));
    Files.copy(edge("nan-bits.parquet"), other.resolve("b.parquet"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> imported(other, "other"));
    assertTrue(e.getMessage().contains("schema mismatch") && e.getMessage().contains("[f, h, d]"), e.getMessage());
  }

  /**
   * Files written without page checksums (pyarrow's default) damaged after import: a byte changed
   * in the middle of any column chunk, in place, is refused on the first read of it, naming the
   * file and the place, and by verify; the undamaged row groups still read.
   */
  @Test
  void damageAfterImportIsRefusedOnEveryRead() throws IOException {
    Path original = ParquetConformanceTest.dir().resolve("pyarrow").resolve("dict-snappy.parquet");
    ParquetMetadata footer = ParquetIo.footer(original, io.strata.sdk.internal.Confinement.NONE);
    List<String> served;
    try (Dataset d = imported(original, "undamaged")) {
      served = d.featureNames();
    }
    List<long[]> places = new ArrayList<>(); // row group, byte offset, in the column chunks of served features
    for (int g = 0; g < footer.getBlocks().size(); g++) {
      BlockMetaData b = footer.getBlocks().get(g);
      for (int k = g; k < b.getColumns().size(); k += 4) {
        ColumnChunkMetaData m = b.getColumns().get(k);
        if (served.contains(m.getPath().toArray()[0])) {
          places.add(new long[] {g, m.getStartingPos() + m.getTotalSize() / 2});
        }
      }
    }
    assertTrue(places.size() >= 10, "places: " + places.size());
    int refusedOnRead = 0;
    for (int i = 0; i < places.size(); i++) {
      Path dir = tmp.resolve("damaged-" + i);
      Files.createDirectories(dir);
      Path copy = dir.resolve("part.parquet");
      Files.copy(original, copy);
      try (Dataset d = imported(copy, "damaged" + i)) {
        flip(copy, places.get(i)[1]);
        int group = (int) places.get(i)[0];
        CorruptFileException onVerify = assertThrows(CorruptFileException.class, () -> d.table().verifyChecksums());
        assertTrue(onVerify.getMessage().contains(copy.toString()) && onVerify.getMessage().contains("row group " + group),
            onVerify.getMessage());
        for (ChunkInfo c : d.chunks()) {
          try (Arena a = Arena.ofConfined()) {
            if (c.stripe() == group) {
              CorruptFileException bad = assertThrows(CorruptFileException.class, () -> d.readChunk(c.index(), d.featureNames(), a));
              assertTrue(bad.getMessage().contains(copy.toString()) && bad.getMessage().contains("damaged"), bad.getMessage());
              refusedOnRead++;
            } else {
              d.readChunk(c.index(), d.featureNames(), a);
            }
          }
        }
      }
    }
    assertEquals(places.size(), refusedOnRead);
  }

  /**
   * Files damaged before import (no checksum of Strata's can know their bytes): wherever the
   * damage lies in the column chunks, the import either takes the file or refuses it in Strata's
   * words, naming the file; never a library's message, never another kind of failure.
   */
  @Test
  void filesDamagedBeforeImportAreRefusedInStrataWords() throws IOException {
    java.util.regex.Pattern libraryWords = java.util.regex.Pattern.compile(
        "Exception|java\\.|org\\.apache|out of bounds for length|ByteBuffer|Cannot read|bitWidth|FAILED_TO|\\(\\d+\\)$");
    java.util.Random rnd = new java.util.Random(52);
    int refused = 0;
    int taken = 0;
    for (String source : List.of("dict-snappy.parquet", "v2-zstd.parquet", "plain-none.parquet", "encodings.parquet")) {
      Path original = ParquetConformanceTest.dir().resolve("pyarrow").resolve(source);
      ParquetMetadata footer = ParquetIo.footer(original, io.strata.sdk.internal.Confinement.NONE);
      long from = footer.getBlocks().getFirst().getStartingPos();
      long to = footer.getBlocks().getLast().getStartingPos() + footer.getBlocks().getLast().getCompressedSize();
      for (int k = 0; k < 12; k++) {
        Path dir = tmp.resolve("pre-" + source + "-" + k);
        Files.createDirectories(dir);
        Path copy = dir.resolve(source);
        Files.copy(original, copy);
        flip(copy, from + rnd.nextLong(to - from));
        try (Dataset d = imported(copy, "pre" + Math.abs(source.hashCode() % 1000) + "x" + k); Arena a = Arena.ofConfined()) {
          for (ChunkInfo c : d.chunks()) {
            d.readChunk(c.index(), d.featureNames(), a);
          }
          taken++;
        } catch (CorruptFileException e) {
          assertTrue(e.getMessage().contains(copy.toString()), e.getMessage());
          assertFalse(libraryWords.matcher(e.getMessage()).find(), "in Strata's words: " + e.getMessage());
          refused++;
        }
      }
    }
    assertTrue(refused >= 5, "refused " + refused + ", taken " + taken);
  }

  /** With page indexes, a read of a few rows reads a few pages: each is checked on its own. */
  @Test
  void pageReadsAreCheckedPageByPage() throws IOException {
    Path dir = tmp.resolve("paged");
    Files.createDirectories(dir);
    Path copy = dir.resolve("paged.parquet");
    Files.copy(edge("paged.parquet"), copy);
    try (Dataset d = imported(copy, "paged")) {
      ParquetMetadata footer = ParquetIo.footer(copy, io.strata.sdk.internal.Confinement.NONE);
      ColumnChunkMetaData m = footer.getBlocks().get(0).getColumns().get(0);
      assertTrue(m.getOffsetIndexReference() != null, "the file has an offset index");
      // Damage the last data page of row group 0's column "v": rows at its start still read; rows at its end do not.
      long at = m.getStartingPos() + m.getTotalSize() - 3;
      flip(copy, at);
      ChunkInfo c0 = d.chunks().get(0);
      try (HddTable.Cursor cur = d.table().cursor(List.of("v")); Arena a = Arena.ofConfined()) {
        Column head = cur.readRows(c0.firstRow(), 5, a).get("v");
        assertEquals(c0.firstRow(), head.getLong(0));
      }
      try (HddTable.Cursor cur = d.table().cursor(List.of("v")); Arena a = Arena.ofConfined()) {
        CorruptFileException bad = assertThrows(CorruptFileException.class, () -> cur.readRows(c0.endRow() - 5, 5, a));
        assertTrue(bad.getMessage().contains("row group 0 column chunk 0 data page is damaged"), bad.getMessage());
      }
    }
  }

  private static void flip(Path file, long at) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      ByteBuffer one = ByteBuffer.allocate(1);
      ch.read(one, at);
      one.put(0, (byte) (one.get(0) ^ 0x5a)).rewind();
      ch.write(one, at);
    }
  }
}
