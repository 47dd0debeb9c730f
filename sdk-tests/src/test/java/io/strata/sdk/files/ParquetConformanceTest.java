package io.strata.sdk.files;

import io.strata.tools.DatasetImporter;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.FeatureType;
import io.strata.sdk.Progress;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every Parquet file in src/test/resources/parquet-conformance (files pyarrow wrote with every
 * type in several writer settings, and files from apache/parquet-testing) is imported and every
 * value of every served column compared with pyarrow's reading of the same file (the expected
 * JSON make.py wrote; a pytest checks that pyarrow still reads each file so). Each column pyarrow
 * reads is served with the type make.py names, or refused with a reason where make.py says
 * Strata refuses it. Files pyarrow reads but whose page checksums do not match are refused here,
 * naming the file; encrypted files are refused by name.
 */
class ParquetConformanceTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
  /** Files whose pages do not match their checksums: pyarrow does not check them by default, Strata does. */
  private static final Set<String> DAMAGED =
      Set.of("datapage_v1-corrupt-checksum.parquet", "rle-dict-uncompressed-corrupt-checksum.parquet");
  /**
   * Files whose values Strata refuses where pyarrow gives something else, with what the refusal
   * must say: INT96 timestamps past year 2262 (pyarrow wraps them around to wrong instants), a
   * codec parquet-java does not bring (brotli), and the deprecated LZ4 codec in the raw framing
   * older Arrow writers used (pyarrow falls back to it; parquet-java reads Hadoop's framing alone).
   */
  private static final Map<String, String> REFUSED = Map.of(
      "int96_from_spark.parquet", "outside the nanosecond range",
      "brotli.parquet", "compressed with BROTLI",
      "non_hadoop_lz4_compressed.parquet", "deprecated LZ4 codec",
      // Its dictionary page claims more values than it holds: parquet-java stops there, pyarrow reads on.
      "nation.dict-malformed.parquet", "ends before its data does");
  /**
   * Columns pyarrow serves and Strata refuses by name, with what the reason must say: a MAP whose
   * key-value group has no value field (pyarrow reads the keys as a list; Strata serves no map).
   */
  private static final Map<String, String> REFUSED_COLUMNS = Map.of("map_no_value.parquet/my_map_no_v", "map columns");
  private static final Pattern LIBRARY_WORDS =
      Pattern.compile("Exception|java\\.|org\\.apache|out of bounds for length|ByteBuffer|Cannot read");

  @TempDir Path tmp;

  static Path dir() {
    Path d = OrcConformanceTest.conformanceDir().resolveSibling("parquet-conformance");
    assertTrue(Files.isDirectory(d), "Parquet conformance files not found at " + d.toAbsolutePath());
    return d;
  }

  @TestFactory
  List<DynamicTest> everyValueAsPyarrowReadsIt() throws IOException {
    Path dir = dir();
    JsonNode index = JSON.readTree(dir.resolve("files.json").toFile());
    List<DynamicTest> tests = new ArrayList<>();
    for (Map.Entry<String, JsonNode> e : index.properties()) {
      Path file = dir.resolve(e.getKey());
      JsonNode expected = expected(dir, e.getValue().asText());
      tests.add(DynamicTest.dynamicTest(e.getKey(), () -> check(file, expected)));
    }
    assertTrue(tests.size() >= 70, "conformance files: " + tests.size());
    return tests;
  }

  private static JsonNode expected(Path dir, String key) throws IOException {
    try (InputStream in = new GZIPInputStream(Files.newInputStream(dir.resolve("expected").resolve(key + ".json.gz")))) {
      return JSON.readTree(in);
    }
  }

  private void check(Path file, JsonNode expected) throws IOException {
    String name = file.getFileName().toString();
    Path ds = tmp.resolve(name.replaceAll("[^A-Za-z0-9_.-]", "_"));
    if (name.endsWith(".encrypted")) {
      // Whole-file or column encryption: refused at import, or its columns refused by name.
      try {
        DatasetImporter.importFiles(new DatasetImporter.Options("enc", List.of(file), ds, null, true, false), Progress.NONE);
      } catch (CorruptFileException refused) {
        assertTrue(refused.getMessage().contains(name) && refused.getMessage().contains("encrypt"), refused.getMessage());
        assertFalse(Files.exists(ds), "nothing left behind");
        return;
      }
      Manifest m = Manifest.read(ds);
      assertTrue(m.features().stream().anyMatch(f -> !f.supported() && f.unsupportedReason().contains("encrypt")),
          "an encrypted column is refused by name: " + m.features());
      return;
    }
    if (expected.has("error")) {
      // pyarrow cannot read it: Strata reads it, or refuses it in its own words, naming the file.
      try {
        DatasetImporter.importFiles(new DatasetImporter.Options("pq", List.of(file), ds, null, true, false), Progress.NONE);
      } catch (CorruptFileException refused) {
        assertTrue(refused.getMessage().contains(name), refused.getMessage());
        assertFalse(LIBRARY_WORDS.matcher(refused.getMessage()).find(), "in Strata's words: " + refused.getMessage());
      }
      return;
    }
    if (REFUSED.containsKey(name)) {
      // Refused at import, or at the first read of the value: either way in Strata's words, naming the file.
      CorruptFileException bad = assertThrows(CorruptFileException.class, () -> {
        DatasetImporter.importFiles(new DatasetImporter.Options("pq", List.of(file), ds, null, false, false), Progress.NONE);
        try (Dataset d = Dataset.open(ds)) {
          readAll(d, d.featureNames());
        }
      });
      assertTrue(bad.getMessage().contains(name) && bad.getMessage().contains(REFUSED.get(name)), bad.getMessage());
      assertFalse(LIBRARY_WORDS.matcher(bad.getMessage()).find(), "in Strata's words: " + bad.getMessage());
      return;
    }
    DatasetImporter.importFiles(new DatasetImporter.Options("pq", List.of(file), ds, null, false, false), Progress.NONE);
    try (Dataset d = Dataset.open(ds)) {
      assertEquals(Manifest.FileFormat.PARQUET, d.manifest().fileFormat());
      assertEquals(expected.get("rows").asLong(), d.rows(), "rows");
      List<String> served = new ArrayList<>();
      for (Map.Entry<String, JsonNode> c : expected.get("columns").properties()) {
        FeatureInfo f = d.columns().stream().filter(x -> x.name().equals(c.getKey())).findFirst().orElse(null);
        assertNotNull(f, "column " + c.getKey() + " in the manifest");
        JsonNode type = c.getValue().get("type");
        if (type.isNull()) {
          assertFalse(f.supported(), c.getKey() + " is refused, as make.py expects: " + f);
          assertNotNull(f.unsupportedReason(), c.getKey());
        } else if (REFUSED_COLUMNS.containsKey(name + "/" + c.getKey())) {
          assertFalse(f.supported(), c.getKey() + " is refused by name");
          assertTrue(f.unsupportedReason().contains(REFUSED_COLUMNS.get(name + "/" + c.getKey())), f.unsupportedReason());
        } else {
          assertTrue(f.supported(), c.getKey() + " is served: " + f.unsupportedReason());
          assertEquals(type.asText(), f.type().toString(), c.getKey() + "'s type");
          served.add(c.getKey());
        }
      }
      if (DAMAGED.contains(name)) {
        CorruptFileException bad = assertThrows(CorruptFileException.class, () -> readAll(d, served));
        assertTrue(bad.getMessage().contains(name) && bad.getMessage().contains("checksum"), bad.getMessage());
        assertFalse(LIBRARY_WORDS.matcher(bad.getMessage()).find(), "in Strata's words: " + bad.getMessage());
        return;
      }
      List<List<Column>> chunks = new ArrayList<>();
      try (Arena arena = Arena.ofConfined()) {
        for (ChunkInfo c : d.chunks()) {
          chunks.add(new ArrayList<>(d.readChunk(c.index(), served, arena).values()));
        }
        for (int i = 0; i < served.size(); i++) {
          ArrayNode got = NODES.arrayNode();
          for (List<Column> cols : chunks) {
            Column col = cols.get(i);
            for (int r = 0; r < col.length(); r++) {
              got.add(canon(col, r));
            }
          }
          JsonNode want = expected.get("columns").get(served.get(i)).get("values");
          assertEquals(want.size(), got.size(), served.get(i) + " rows");
          for (int r = 0; r < want.size(); r++) {
            assertEquals(want.get(r).toString(), got.get(r).toString(), served.get(i) + " row " + r + " of " + name);
          }
        }
        // Row ranges across row groups, through a cursor, give the same values.
        if (d.rows() > 2 && !served.isEmpty()) {
          long first = d.rows() / 3;
          int count = (int) Math.min(d.rows() - first, Math.max(2, d.rows() / 2));
          try (HddTable.Cursor cur = d.table().cursor(served)) {
            var part = cur.readRows(first, count, arena);
            for (int i = 0; i < served.size(); i++) {
              JsonNode want = expected.get("columns").get(served.get(i)).get("values");
              Column col = part.get(served.get(i));
              for (int r = 0; r < count; r++) {
                assertEquals(want.get((int) first + r).toString(), canon(col, r).toString(),
                    served.get(i) + " row " + (first + r) + " by range");
              }
            }
          }
        }
      }
    }
  }

  private static void readAll(Dataset d, List<String> served) throws IOException {
    try (Arena arena = Arena.ofConfined()) {
      for (ChunkInfo c : d.chunks()) {
        d.readChunk(c.index(), served, arena);
      }
    }
  }

  /** A value in make.py's canonical form. */
  static JsonNode canon(Column c, int row) {
    if (c.isNull(row)) {
      return NODES.nullNode();
    }
    FeatureType t = c.type();
    return switch (t.kind()) {
      case BOOL -> NODES.booleanNode(c.getBoolean(row));
      case INT8, INT16, INT32, INT64, DATE, TIMESTAMP -> NODES.numberNode(c.getLong(row));
      case FLOAT32, FLOAT64 -> {
        double v = t.kind() == FeatureType.Kind.FLOAT32 ? c.getFloat(row) : c.getDouble(row);
        yield Double.isNaN(v) ? NODES.textNode("NaN") : NODES.numberNode(Double.doubleToRawLongBits(v));
      }
      case STRING -> NODES.textNode(c.getString(row));
      case BINARY -> NODES.textNode(HexFormat.of().formatHex(c.getBytes(row)));
      case DECIMAL -> NODES.textNode(c.getUnscaled(row).toString());
      case LIST -> {
        ArrayNode a = NODES.arrayNode();
        for (int k = c.start(row); k < c.end(row); k++) {
          a.add(canon(c.child(), k));
        }
        yield a;
      }
    };
  }
}
