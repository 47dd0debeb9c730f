package io.strata.sdk.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Column;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.FeatureType;
import io.strata.sdk.TestData;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SegmentFileTest {
  @TempDir Path dir;

  private Map<String, List<Object>> writeAllTypes(Path file, int rows) throws IOException {
    Map<String, List<Object>> expected = new LinkedHashMap<>();
    try (Arena arena = Arena.ofConfined()) {
      SequencedMap<String, Column> cols = new LinkedHashMap<>();
      long seed = 1;
      for (FeatureType t : TestData.ALL_TYPES) {
        String name = "f" + cols.size() + "_" + t.kind().name().toLowerCase(java.util.Locale.ROOT);
        TestData.Sample s = TestData.random(t, rows, 0.1, seed++, arena);
        cols.put(name, s.column());
        expected.put(name, s.expected());
      }
      SegmentInfo info = new SegmentInfo("ds", "v1", 3, 1000, 1000 + rows, List.copyOf(cols.keySet()));
      SegmentWriter.write(file, info, cols);
    }
    return expected;
  }

  @Test
  void everyTypeRoundTripsThroughAFile() throws IOException {
    Path file = dir.resolve("a.arrow");
    Map<String, List<Object>> expected = writeAllTypes(file, 2000);
    try (SegmentFile f = SegmentFile.open(file, SegmentFile.Verify.ALWAYS)) {
      assertEquals(2000, f.rows());
      assertEquals(new SegmentInfo("ds", "v1", 3, 1000, 3000, List.copyOf(expected.keySet())), f.info());
      for (Map.Entry<String, List<Object>> e : expected.entrySet()) {
        TestData.assertColumn(e.getValue(), f.column(e.getKey()), e.getKey());
        assertEquals(0, f.column(e.getKey()).values().address() % 64, "64-byte aligned " + e.getKey());
      }
    }
    try (var files = Files.list(dir)) {
      assertEquals(List.of(file), files.toList(), "no temporary file left behind");
    }
  }

  @Test
  void slicedColumnsAreNormalizedOnWrite() throws IOException {
    Path file = dir.resolve("s.arrow");
    SequencedMap<String, Column> cols = new LinkedHashMap<>();
    Map<String, List<Object>> expected = new LinkedHashMap<>();
    try (Arena arena = Arena.ofConfined()) {
      long seed = 40;
      for (FeatureType t : TestData.ALL_TYPES) {
        TestData.Sample s = TestData.random(t, 300, 0.2, seed++, arena);
        cols.put(t.toString(), s.column().slice(17, 200));
        expected.put(t.toString(), s.expected().subList(17, 217));
      }
      SegmentWriter.write(file, new SegmentInfo("ds", "v1", 0, 0, 200, List.copyOf(cols.keySet())), cols);
    }
    try (SegmentFile f = SegmentFile.open(file, SegmentFile.Verify.ALWAYS)) {
      for (Map.Entry<String, List<Object>> e : expected.entrySet()) {
        TestData.assertColumn(e.getValue(), f.column(e.getKey()), e.getKey());
      }
    }
  }

  @Test
  void emptySegmentRoundTrips() throws IOException {
    Path file = dir.resolve("e.arrow");
    try (Arena arena = Arena.ofConfined()) {
      SequencedMap<String, Column> cols = new LinkedHashMap<>();
      cols.put("x", TestData.random(FeatureType.STRING, 0, 0, 1, arena).column());
      SegmentWriter.write(file, new SegmentInfo("ds", "v1", 0, 5, 5, List.of("x")), cols);
    }
    try (SegmentFile f = SegmentFile.open(file, SegmentFile.Verify.ALWAYS)) {
      assertEquals(0, f.column("x").length());
    }
  }

  @Test
  void everyTruncationIsRejected() throws IOException {
    Path file = dir.resolve("t.arrow");
    writeAllTypes(file, 50);
    byte[] bytes = Files.readAllBytes(file);
    Path cut = dir.resolve("cut.arrow");
    for (int len = 0; len < bytes.length; len += Math.max(1, bytes.length / 97)) {
      Files.write(cut, Arrays.copyOf(bytes, len));
      CorruptFileException e =
          assertThrows(CorruptFileException.class, () -> SegmentFile.open(cut, SegmentFile.Verify.NEVER).close());
      assertTrue(e.getMessage().startsWith(cut.toString()), e.getMessage());
    }
  }

  @Test
  void everyFlippedByteIsDetectedOrHarmless() throws IOException {
    Path file = dir.resolve("f.arrow");
    Map<String, List<Object>> expected = writeAllTypes(file, 64);
    byte[] bytes = Files.readAllBytes(file);
    Path bad = dir.resolve("bad.arrow");
    int rejected = 0;
    for (int at = 0; at < bytes.length; at += 3) {
      byte[] copy = bytes.clone();
      copy[at] ^= 0x5A;
      Files.write(bad, copy);
      try (SegmentFile f = SegmentFile.open(bad, SegmentFile.Verify.ALWAYS)) {
        // Accepted: the flip hit padding or metadata that does not change any value.
        for (Map.Entry<String, List<Object>> e : expected.entrySet()) {
          if (f.hasColumn(e.getKey())) {
            TestData.assertColumn(e.getValue(), f.column(e.getKey()), "flip at " + at + " " + e.getKey());
          }
        }
        assertEquals(List.copyOf(expected.keySet()), f.columnNames(), "flip at " + at);
      } catch (CorruptFileException e) {
        rejected++;
      }
    }
    assertTrue(rejected > bytes.length / 3 / 4, "most flips are detected: " + rejected);
  }

  @Test
  void checksumMismatchNamesTheFileAndTheProblem() throws IOException {
    Path file = dir.resolve("c.arrow");
    Map<String, List<Object>> expected = writeAllTypes(file, 100);
    byte[] bytes = Files.readAllBytes(file);
    // Damage one value of the int64 column: find its bytes in the file.
    String int64 = expected.keySet().stream().filter(k -> k.endsWith("int64")).findFirst().orElseThrow();
    long value = (Long) expected.get(int64).stream().filter(v -> v != null).findFirst().orElseThrow();
    byte[] pattern = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(value).array();
    int at = -1;
    for (int i = 0; i + 8 <= bytes.length && at < 0; i++) {
      if (Arrays.equals(bytes, i, i + 8, pattern, 0, 8)) {
        at = i;
      }
    }
    assertTrue(at > 0, "value found in the file");
    bytes[at + 3] ^= 1;
    Path bad = dir.resolve("damaged.arrow");
    Files.write(bad, bytes);
    CorruptFileException e =
        assertThrows(CorruptFileException.class, () -> SegmentFile.open(bad, SegmentFile.Verify.ALWAYS));
    assertTrue(e.getMessage().contains("damaged.arrow"), e.getMessage());
    assertTrue(e.getMessage().contains("checksum mismatch"), e.getMessage());
    // Without verification the structure is still fine: the open succeeds.
    SegmentFile.open(bad, SegmentFile.Verify.NEVER).close();
  }

  @Test
  void unknownFormatVersionIsRejected() throws IOException {
    Path file = dir.resolve("v.arrow");
    writeAllTypes(file, 10);
    byte[] bytes = Files.readAllBytes(file);
    byte[] key = "strata.format.version".getBytes(StandardCharsets.US_ASCII);
    int patched = 0;
    for (int i = 0; i + key.length < bytes.length; i++) {
      if (Arrays.equals(bytes, i, i + key.length, key, 0, key.length)) {
        for (int j = i + key.length; j < i + key.length + 16; j++) {
          if (bytes[j] == 1 && bytes[j + 1] == 0 && bytes[j + 2] == 0 && bytes[j + 3] == 0 && bytes[j + 4] == '1') {
            bytes[j + 4] = '7';
            patched++;
            break;
          }
        }
      }
    }
    assertEquals(2, patched, "the version appears in the stream schema and in the footer");
    Path bad = dir.resolve("v7.arrow");
    Files.write(bad, bytes);
    CorruptFileException e =
        assertThrows(CorruptFileException.class, () -> SegmentFile.open(bad, SegmentFile.Verify.NEVER));
    assertTrue(e.getMessage().contains("format version 7 is not supported"), e.getMessage());
  }

  @Test
  void columnsFailCleanlyAfterClose() throws IOException {
    Path file = dir.resolve("x.arrow");
    writeAllTypes(file, 10);
    SegmentFile f = SegmentFile.open(file, SegmentFile.Verify.FIRST_OPEN);
    Column c = f.column(f.columnNames().get(3));
    f.close();
    f.close();
    assertFalse(f.isOpen());
    assertThrows(IllegalStateException.class, () -> c.getLong(0));
    assertThrows(IllegalStateException.class, () -> f.column(f.columnNames().get(3)));
  }

  @Test
  void aFileThatIsNotArrowIsRejected() throws IOException {
    Path file = dir.resolve("junk.arrow");
    Files.writeString(file, "this is not a segment at all, just some text that is long enough");
    CorruptFileException e =
        assertThrows(CorruptFileException.class, () -> SegmentFile.open(file, SegmentFile.Verify.NEVER));
    assertTrue(e.getMessage().contains("not an Arrow IPC file"), e.getMessage());
    List<String> none = new ArrayList<>();
    assertTrue(none.isEmpty());
  }
}
