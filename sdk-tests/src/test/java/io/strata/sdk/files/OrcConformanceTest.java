package io.strata.sdk.files;

import io.strata.tools.DatasetImporter;
import io.strata.sdk.ChunkInfo;
import io.strata.sdk.FeatureInfo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.strata.sdk.ArrowJs;
import io.strata.sdk.Column;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.FeatureType;
import io.strata.sdk.TestData;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.format.SegmentInfo;
import io.strata.sdk.format.SegmentWriter;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.temporal.ChronoField;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every ORC file in src/test/resources/orc-conformance (copies of Apache ORC's examples) is imported, its served columns are promoted to
 * segments, and every value is checked against the expected JSON rows from both tiers (and, for
 * the segments, through Arrow JS). The damaged files in corrupt/ must fail cleanly.
 */
class OrcConformanceTest {
  private static final ObjectMapper EXACT =
      new ObjectMapper().enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);
  private static final DateTimeFormatter TS =
      new DateTimeFormatterBuilder()
          .appendPattern("yyyy-MM-dd HH:mm:ss")
          .optionalStart()
          .appendFraction(ChronoField.NANO_OF_SECOND, 1, 9, true)
          .optionalEnd()
          .toFormatter();

  @TempDir Path tmp;

  static Path conformanceDir() {
    String p = System.getProperty("strata.conformance.dir");
    Path dir = p != null ? Path.of(p) : Path.of("src/test/resources/orc-conformance");
    assertTrue(Files.isDirectory(dir), "conformance files not found at " + dir.toAbsolutePath());
    return dir;
  }

  static List<Path> orcFiles(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.toString().endsWith(".orc")).sorted().toList();
    }
  }

  @TestFactory
  List<DynamicTest> wellFormedFilesReadRightFromBothTiers() throws IOException {
    List<DynamicTest> tests = new ArrayList<>();
    for (Path orc : orcFiles(conformanceDir())) {
      tests.add(DynamicTest.dynamicTest(orc.getFileName().toString(), () -> checkFile(orc)));
    }
    assertTrue(tests.size() >= 9, "found " + tests.size() + " conformance files");
    return tests;
  }

  @TestFactory
  List<DynamicTest> corruptFilesFailCleanly() throws IOException {
    List<DynamicTest> tests = new ArrayList<>();
    for (Path orc : orcFiles(conformanceDir().resolve("corrupt"))) {
      tests.add(
          DynamicTest.dynamicTest(
              orc.getFileName().toString(),
              () ->
                  assertTimeoutPreemptively(
                      Duration.ofSeconds(60),
                      () -> {
                        Path dsDir = tmp.resolve("corrupt-" + orc.getFileName());
                        CorruptFileException e =
                            assertThrows(
                                CorruptFileException.class,
                                () ->
                                    DatasetImporter.importFiles(
                                        new DatasetImporter.Options("bad", List.of(orc), dsDir, null, true, false),
                                        io.strata.sdk.Progress.NONE));
                        assertTrue(e.getMessage().contains(orc.getFileName().toString()), e.getMessage());
                        assertFalse(java.util.regex.Pattern.compile("Exception|java\\.|org\\.apache|out of bounds for length"
                            + "|ByteBuffer|Cannot read|\\.\\./").matcher(e.getMessage()).find(),
                            "in Strata's words, the path clean: " + e.getMessage());
                        assertFalse(Files.exists(dsDir.resolve(Manifest.FILE_NAME)), "no manifest for a rejected import");
                      })));
    }
    assertEquals(4, tests.size());
    return tests;
  }

  @org.junit.jupiter.api.Test
  void aMissingDictionaryBlobNeverDecodesToEmptyStrings() throws Exception {
    // orc-core itself returns empty strings here; the stripe statistics check must refuse them.
    Path orc = conformanceDir().resolve("corrupt/missing_blob_stream_in_string_dict.orc");
    Path dsDir = tmp.resolve("blob");
    DatasetImporter.importFiles(
        new DatasetImporter.Options("blob", List.of(orc), dsDir, null, false, false), io.strata.sdk.Progress.NONE);
    try (Dataset ds = Dataset.open(dsDir); Arena arena = Arena.ofConfined()) {
      CorruptFileException e =
          assertThrows(CorruptFileException.class, () -> ds.readChunk(0, List.of("string_col"), arena));
      assertTrue(e.getMessage().contains("missing_blob_stream_in_string_dict.orc"), e.getMessage());
      assertTrue(e.getMessage().contains("string_col is damaged"), e.getMessage());
    }
  }

  /**
   * TestOrcFile.testUnionAndTimestamp.orc was written before ORC-135 (timestamp statistics in
   * local time). Its timestamp stream overwritten, 8 bytes at a time at places across the stream,
   * before import: every import either refuses the file or serves timestamps within the
   * statistics' bounds (26 hours of slack for local time) and every other value right; never a
   * timestamp decades off (which it did when old writers' timestamps went unchecked). Damage that
   * stays within the bounds is beyond what statistics can tell; the stream checksums recorded at
   * import catch damage after it.
   */
  @org.junit.jupiter.api.Test
  void anOldWritersDamagedTimestampsAreRefusedNotServed() throws Exception {
    Path orc = conformanceDir().resolve("TestOrcFile.testUnionAndTimestamp.orc");
    List<JsonNode> expected = readExpected(conformanceDir().resolve("expected/TestOrcFile.testUnionAndTimestamp.jsn.gz"));
    long[] stream = null;
    try (org.apache.orc.Reader reader = OrcIo.open(orc)) {
      int timeColumn = reader.getSchema().getFieldNames().indexOf("time") + 1;
      StreamChecksums.File sums = StreamChecksums.compute(orc, reader);
      for (int i = 0; i < sums.streams() && stream == null; i++) {
        if (sums.column(i) == timeColumn && sums.kind(i) == org.apache.orc.OrcProto.Stream.Kind.DATA && sums.stream(i)[1] >= 16) {
          stream = sums.stream(i);
        }
      }
    }
    assertTrue(stream != null, "the file has a timestamp data stream");
    long[] timeRange = {Long.MAX_VALUE, Long.MIN_VALUE};
    for (JsonNode row : expected) {
      if (row.hasNonNull("time")) {
        long nanos = ((java.time.LocalDateTime) expectedValue(FeatureType.TIMESTAMP, row.get("time")))
            .toEpochSecond(java.time.ZoneOffset.UTC) * 1_000_000_000L;
        timeRange[0] = Math.min(timeRange[0], nanos);
        timeRange[1] = Math.max(timeRange[1], nanos);
      }
    }
    int refused = 0;
    int servedRight = 0;
    for (int k = 0; k < 12; k++) {
      // Past the stream's first run header: damage there sends orc-core through a long decode (36 s).
      long at = stream[0] + 8 + (stream[1] - 16) * k / 11;
      Path copy = tmp.resolve("damaged-" + k + ".orc");
      Files.copy(orc, copy);
      try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(copy, java.nio.file.StandardOpenOption.WRITE)) {
        ch.write(java.nio.ByteBuffer.wrap(new byte[] {0x7f, 0x3e, 0x55, 0x12, 0x7f, 0x01, 0x66, 0x2a}), at);
      }
      Path dsDir = tmp.resolve("damaged-ds-" + k);
      try {
        DatasetImporter.importFiles(new DatasetImporter.Options("dmg", List.of(copy), dsDir, null, true, false),
            io.strata.sdk.Progress.NONE);
      } catch (CorruptFileException e) {
        assertTrue(e.getMessage().contains(copy.toString()), e.getMessage());
        refused++;
        continue;
      }
      try (Dataset ds = Dataset.open(dsDir)) {
        for (ChunkInfo c : ds.chunks()) {
          try (Arena arena = Arena.ofConfined()) {
            SequencedMap<String, Column> cols = ds.readChunk(c.index(), ds.featureNames(), arena);
            Column time = cols.remove("time");
            compare(ds, cols, expected, c.firstRow(), "damaged at " + at);
            long slack = (StripeStatisticsCheck.LOCAL_TIME_SLACK_MILLIS + 1_000) * 1_000_000L;
            for (int r = 0; r < time.length(); r++) {
              if (!time.isNull(r)) {
                assertTrue(time.getLong(r) >= timeRange[0] - slack && time.getLong(r) <= timeRange[1] + slack,
                    "damaged at " + at + ": row " + (c.firstRow() + r) + " served " + time.getObject(r)
                        + ", outside the file's timestamps give or take 26 hours");
              }
            }
          }
        }
      }
      servedRight++;
    }
    assertTrue(refused > 0, "refused " + refused + ", served right " + servedRight);
    System.out.printf("FAULTS old-writer timestamps: 12 damaged copies, %d refused at import, %d imported with every timestamp within the statistics' bounds; 0 served outside the bounds%n",
        refused, servedRight);
  }

  private void checkFile(Path orc) throws Exception {
    String base = orc.getFileName().toString().replaceFirst("\\.orc$", "");
    Path expectedFile = conformanceDir().resolve("expected").resolve(base + ".jsn.gz");
    Path dsDir = tmp.resolve(base);
    Manifest m =
        DatasetImporter.importFiles(
            new DatasetImporter.Options("conf", List.of(orc), dsDir, null, true, false), io.strata.sdk.Progress.NONE);
    try (Dataset ds = Dataset.open(dsDir)) {
      assertEquals(m.version(), ds.version());
      List<String> served = ds.featureNames();
      for (FeatureInfo f : ds.columns()) {
        if (!f.supported()) {
          assertTrue(f.unsupportedReason().contains("not served"), f.unsupportedReason());
          String refusal = assertThrows(IllegalArgumentException.class, () -> ds.feature(f.name())).getMessage();
          assertEquals(1, refusal.split("not served", -1).length - 1, "said once: " + refusal);
        }
      }
      List<JsonNode> expected = Files.exists(expectedFile) ? readExpected(expectedFile) : null;
      if (expected != null) {
        assertEquals(expected.size(), ds.rows(), "row count");
      }
      Path segDir = dsDir.resolve("segments");
      List<Path> segments = new ArrayList<>();
      List<Map<String, List<Object>>> orcValues = new ArrayList<>();
      for (ChunkInfo c : ds.chunks()) {
        try (Arena arena = Arena.ofConfined()) {
          SequencedMap<String, Column> cols = ds.readChunk(c.index(), served, arena);
          if (expected != null) {
            compare(ds, cols, expected, c.firstRow(), "ORC " + base + " chunk " + c.index());
          }
          Map<String, List<Object>> values = new HashMap<>();
          if (ds.rows() <= 100_000) {
            for (Map.Entry<String, Column> e : cols.entrySet()) {
              List<Object> v = new ArrayList<>();
              for (int r = 0; r < e.getValue().length(); r++) {
                v.add(e.getValue().getObject(r));
              }
              values.put(e.getKey(), v);
            }
          }
          orcValues.add(values);
          Path seg = segDir.resolve("c" + c.index() + ".arrow");
          SegmentWriter.write(
              seg, new SegmentInfo(ds.name(), ds.version(), c.index(), c.firstRow(), c.endRow(), served), cols);
          segments.add(seg);
        }
      }
      for (int i = 0; i < segments.size(); i++) {
        ChunkInfo c = ds.chunks().get(i);
        try (SegmentFile f = SegmentFile.open(segments.get(i), SegmentFile.Verify.ALWAYS)) {
          assertEquals(c.rows(), f.rows());
          if (expected != null) {
            Map<String, Column> cols = new LinkedHashMap<>();
            for (String name : served) {
              cols.put(name, f.column(name));
            }
            compare(ds, cols, expected, c.firstRow(), "segment " + base + " chunk " + c.index());
          }
        }
      }
      if (expected != null && ds.rows() <= 100_000) {
        // Arrow JS reads the promoted segments and agrees exactly with what Strata decoded.
        List<JsonNode> js = ArrowJs.read(segments);
        for (int i = 0; i < segments.size(); i++) {
          for (String name : served) {
            FeatureType t = ds.feature(name).type();
            ArrowJs.assertValues(
                t, orcValues.get(i).get(name), js.get(i).get("columns").get(name).get("values"), "Arrow JS " + base + " " + name);
          }
        }
      }
      // Row-range reads across chunk boundaries agree as well.
      if (expected != null && ds.rows() > 2) {
        long first = Math.max(0, ds.chunks().getFirst().endRow() - 3);
        int count = (int) Math.min(ds.rows() - first, 1000);
        try (Arena arena = Arena.ofConfined()) {
          compare(ds, ds.table().readRows(first, count, served, arena), expected, first, "ORC rows " + base);
        }
      }
    }
  }

  private static List<JsonNode> readExpected(Path gz) throws IOException {
    List<JsonNode> rows = new ArrayList<>();
    try (BufferedReader r =
        new BufferedReader(new InputStreamReader(new GZIPInputStream(Files.newInputStream(gz)), StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null) {
        if (!line.isBlank()) {
          rows.add(EXACT.readTree(line));
        }
      }
    }
    return rows;
  }

  private static void compare(Dataset ds, Map<String, Column> cols, List<JsonNode> expected, long firstRow, String what) {
    Map<String, FeatureType> types = new HashMap<>();
    for (String name : cols.keySet()) {
      types.put(name, ds.feature(name).type());
    }
    for (Map.Entry<String, Column> e : cols.entrySet()) {
      Column c = e.getValue();
      for (int r = 0; r < c.length(); r++) {
        JsonNode row = expected.get((int) (firstRow + r));
        Object want = expectedValue(types.get(e.getKey()), row.get(e.getKey()));
        Object got = c.getObject(r);
        if (!same(want, got)) {
          throw new AssertionError(
              what + " column " + e.getKey() + " row " + (firstRow + r) + ": expected " + want + " but read " + got);
        }
      }
    }
  }

  private static boolean same(Object want, Object got) {
    if (want instanceof BigDecimal w && got instanceof BigDecimal g) {
      return w.compareTo(g) == 0;
    }
    if (want instanceof Float w && got instanceof Float g) {
      // The expected files print floats with 7 significant digits.
      return w.equals(g) || sevenDigits(w) == sevenDigits(g);
    }
    return TestData.same(want, got);
  }

  private static float sevenDigits(float f) {
    return new BigDecimal(f).round(new java.math.MathContext(7)).floatValue();
  }

  static Object expectedValue(FeatureType t, JsonNode v) {
    if (v == null || v.isNull()) {
      return null;
    }
    return switch (t.kind()) {
      case BOOL -> v.booleanValue();
      case INT8 -> (byte) v.longValue();
      case INT16 -> (short) v.longValue();
      case INT32 -> (int) v.longValue();
      case INT64 -> v.longValue();
      case FLOAT32 -> v.floatValue();
      case FLOAT64 -> v.doubleValue();
      case STRING -> v.asText();
      case BINARY -> {
        byte[] b = new byte[v.size()];
        for (int i = 0; i < b.length; i++) {
          b[i] = (byte) v.get(i).intValue();
        }
        yield b;
      }
      case DATE -> LocalDate.parse(v.asText());
      case TIMESTAMP -> LocalDateTime.parse(v.asText(), TS);
      case DECIMAL -> v.decimalValue().setScale(t.scale());
      case LIST -> {
        List<Object> items = new ArrayList<>();
        for (JsonNode item : v) {
          items.add(expectedValue(t.element(), item));
        }
        yield items;
      }
    };
  }
}
