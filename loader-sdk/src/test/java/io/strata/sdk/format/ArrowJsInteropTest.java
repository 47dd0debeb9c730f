package io.strata.sdk.format;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.ArrowJs;
import io.strata.sdk.Column;
import io.strata.sdk.FeatureType;
import io.strata.sdk.TestData;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Segments written by Strata are read by an independent Arrow implementation (Arrow JS). */
class ArrowJsInteropTest {
  @TempDir Path dir;

  @Test
  void arrowJsReadsEveryValueOfEveryType() throws Exception {
    List<Path> files = new ArrayList<>();
    List<Map<String, TestData.Sample>> written = new ArrayList<>();
    try (Arena arena = Arena.ofConfined()) {
      int[] rowCounts = {0, 1, 777, 5000};
      for (int rows : rowCounts) {
        SequencedMap<String, Column> cols = new LinkedHashMap<>();
        Map<String, TestData.Sample> samples = new LinkedHashMap<>();
        long seed = rows * 31L;
        for (FeatureType t : TestData.ALL_TYPES) {
          String name = "c" + cols.size() + " " + t;
          TestData.Sample s = TestData.random(t, rows, rows == 5000 ? 0.0 : 0.15, seed++, arena);
          cols.put(name, s.column());
          samples.put(name, s);
        }
        Path file = dir.resolve("seg-" + rows + ".arrow");
        SegmentWriter.write(file, new SegmentInfo("interop", "v9", 2, 40, 40 + rows, List.copyOf(cols.keySet())), cols);
        files.add(file);
        written.add(samples);
      }
    }
    List<JsonNode> read = ArrowJs.read(files);
    assertEquals(files.size(), read.size());
    for (int f = 0; f < files.size(); f++) {
      JsonNode doc = read.get(f);
      assertEquals("strata-segment", doc.get("metadata").get("strata.format").asText());
      assertEquals("interop", doc.get("metadata").get("strata.dataset").asText());
      for (Map.Entry<String, TestData.Sample> e : written.get(f).entrySet()) {
        JsonNode col = doc.get("columns").get(e.getKey());
        FeatureType t = e.getValue().column().type();
        ArrowJs.assertValues(t, e.getValue().expected(), col.get("values"), files.get(f).getFileName() + " " + e.getKey());
        assertEquals(e.getValue().column().nullCount(), col.get("nulls").asInt(), e.getKey());
      }
    }
  }
}
