package io.strata.tools;

import io.strata.sdk.files.Manifest;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.FeatureType;
import io.strata.sdk.Progress;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DatasetGeneratorTest {
  @TempDir Path tmp;

  private static DatasetGenerator.Options small(long seed) {
    return DatasetGenerator.Options.of("events", 50_000, seed).withFeatures(16).withChunking(7_000, 3).withMeanSampleLength(40).withThreads(2);
  }

  private static byte[] bytesOf(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      var out = new ByteArrayOutputStream();
      for (Path p : s.sorted().toList()) {
        out.write(p.getFileName().toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        out.write(Files.readAllBytes(p));
      }
      return out.toByteArray();
    }
  }

  @Test
  void aSeedGivesIdenticalBytes() throws IOException {
    DatasetGenerator.generate(tmp.resolve("a"), small(42), Progress.NONE);
    DatasetGenerator.generate(tmp.resolve("b"), small(42).withThreads(1), Progress.NONE);
    DatasetGenerator.generate(tmp.resolve("c"), small(43), Progress.NONE);
    assertArrayEquals(bytesOf(tmp.resolve("a")), bytesOf(tmp.resolve("b")));
    assertFalse(Arrays.equals(bytesOf(tmp.resolve("a")), bytesOf(tmp.resolve("c"))));
    assertNotEquals(Manifest.read(tmp.resolve("a")).version(), Manifest.read(tmp.resolve("c")).version());
  }

  @Test
  void layoutSampleIndexAndValuesAreConsistent() throws IOException {
    Path dir = tmp.resolve("d");
    DatasetGenerator.Report report = DatasetGenerator.generate(dir, small(7), Progress.NONE);
    assertEquals(50_000, report.manifest().rows());
    assertTrue(report.bytes() > 0 && report.rowsPerSecond() > 0);
    try (Dataset ds = Dataset.open(dir)) {
      assertEquals(16, ds.featureNames().size());
      assertEquals(FeatureType.INT64, ds.feature("sample_id").type());
      assertEquals(FeatureType.list(FeatureType.FLOAT32), ds.feature("embedding").type());
      // 50,000 rows in chunks of 7,000 rows, 3 chunks per file.
      assertEquals(8, ds.chunks().size());
      for (int i = 0; i < 7; i++) {
        assertEquals(7_000, ds.chunks().get(i).rows());
      }
      assertEquals(1_000, ds.chunks().get(7).rows());
      assertEquals(3, ds.manifest().files().size());
      var index = ds.sampleIndex().orElseThrow();
      long samples = index.size();
      assertTrue(samples > 50_000 / 200 && samples < 50_000 / 10, "about 1250 samples: " + samples);
      long ordinal = 0;
      long previousTime = Long.MIN_VALUE;
      long maxLength = 0;
      for (int chunk = 0; chunk < ds.chunks().size(); chunk++) {
        try (Arena arena = Arena.ofConfined()) {
          Map<String, Column> cols = ds.readChunk(chunk, List.of("sample_id", "event_time", "position", "score", "embedding"), arena);
          Column ids = cols.get("sample_id");
          Column times = cols.get("event_time");
          for (int r = 0; r < ids.length(); r++) {
            long row = ds.chunks().get(chunk).firstRow() + r;
            while (index.end(ordinal) <= row) {
              maxLength = Math.max(maxLength, index.end(ordinal) - index.start(ordinal));
              ordinal++;
              previousTime = Long.MIN_VALUE;
            }
            assertEquals(index.sampleId(ordinal), ids.getLong(r), "row " + row);
            assertEquals(row - index.start(ordinal), cols.get("position").getLong(r));
            assertTrue(times.getLong(r) > previousTime, "event_time increases within a sample");
            previousTime = times.getLong(r);
            assertEquals(8, ((List<?>) cols.get("embedding").getObject(r)).size());
          }
          assertTrue(cols.get("score").nullCount() > 0, "score has nulls");
        }
      }
      assertEquals(samples - 1, ordinal);
      assertTrue(maxLength > 3 * 40, "heavy-tailed sample lengths: longest " + maxLength);
      assertEquals(index.sampleId(10), DatasetGenerator.sampleId(10));
      assertEquals(10, index.find(DatasetGenerator.sampleId(10)));
      assertEquals(-1, index.find(DatasetGenerator.sampleId(10) + 1));
    }
  }

  @Test
  void refusesToOverwriteWithoutReplaceAndRejectsBadOptions() throws IOException {
    Path dir = tmp.resolve("e");
    DatasetGenerator.generate(dir, small(1).withChunking(50_000, 1), Progress.NONE);
    assertThrows(FileAlreadyExistsException.class, () -> DatasetGenerator.generate(dir, small(1), Progress.NONE));
    DatasetGenerator.generate(dir, small(2).withReplace(true), Progress.NONE);
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> DatasetGenerator.Options.of("x", 0, 1));
    assertTrue(e.getMessage().contains("rows must be at least 1"));
    assertThrows(IllegalArgumentException.class, () -> DatasetGenerator.Options.of("../evil", 10, 1));
  }
}
