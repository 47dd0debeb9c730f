package io.strata.ops;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.Column;
import io.strata.sdk.format.Columns;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.files.SampleIndex;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.Json;
import io.strata.sdk.loader.Batch;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;

/**
 * Checksums of every sample of every feature, computed from the ORC files with orc-core directly
 * (no segment, no node, no loader), so that batches read through the cache can be checked against
 * an independent reading of the same rows.
 *
 * <p>File: a little-endian int32 header length, a JSON header (dataset, version, features,
 * samples), then {@code samples × features} int64 checksums ({@link Columns#checksum}), sample
 * ordinal major.
 */
public final class GroundTruth {
  final String dataset;
  final String version;
  final List<String> features;
  final long[] sums;
  final int samples;

  private GroundTruth(String dataset, String version, List<String> features, long[] sums) {
    this.dataset = dataset;
    this.version = version;
    this.features = features;
    this.sums = sums;
    this.samples = sums.length / Math.max(1, features.size());
  }

  public static GroundTruth compute(Dataset ds) throws IOException {
    SampleIndex index = ds.sampleIndex().orElseThrow(() -> new IllegalArgumentException(
        "dataset " + ds.directory() + " has no sample index (samples.idx); ground truth is per sample"));
    List<String> features = ds.featureNames();
    int f = features.size();
    long n = index.size();
    if (n * f > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("too many samples for a ground-truth file: " + n);
    }
    long[] sums = new long[(int) (n * f)];
    int chunk = -1;
    Arena arena = null;
    SequencedMap<String, Column> cols = null;
    long chunkFirst = 0;
    long chunkEnd = 0;
    try {
      for (long s = 0; s < n; s++) {
        long start = index.start(s);
        long end = index.end(s);
        SequencedMap<String, Column> from;
        int offset;
        Arena own = null;
        if (start >= chunkFirst && end <= chunkEnd && cols != null) {
          from = cols;
          offset = (int) (start - chunkFirst);
        } else if (ds.chunkOf(start) == ds.chunkOf(end - 1)) {
          if (arena != null) {
            arena.close();
          }
          arena = Arena.ofConfined();
          chunk = ds.chunkOf(start);
          cols = ds.table().readChunk(chunk, features, arena);
          chunkFirst = ds.chunks().get(chunk).firstRow();
          chunkEnd = ds.chunks().get(chunk).endRow();
          from = cols;
          offset = (int) (start - chunkFirst);
        } else {
          own = Arena.ofConfined();
          from = ds.table().readRows(start, (int) (end - start), features, own);
          offset = 0;
        }
        for (int k = 0; k < f; k++) {
          sums[(int) (s * f + k)] = Columns.checksum(from.get(features.get(k)).slice(offset, (int) (end - start)));
        }
        if (own != null) {
          own.close();
        }
      }
    } finally {
      if (arena != null) {
        arena.close();
      }
    }
    return new GroundTruth(ds.name(), ds.version(), features, sums);
  }

  public void write(Path file) throws IOException {
    byte[] header = Json.compact(Json.object().put("dataset", dataset).put("version", version).put("samples", samples)
        .set("features", Json.MAPPER.valueToTree(features))).getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(4 + header.length + 8 * sums.length).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(header.length).put(header);
    b.asLongBuffer().put(sums);
    AtomicFiles.write(file, b.array());
  }

  static GroundTruth read(Path file) throws IOException {
    byte[] all = Files.readAllBytes(file);
    ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
    int h = all.length >= 4 ? b.getInt() : -1;
    if (h < 2 || 4L + h > all.length) {
      throw new IOException("ground-truth file " + file + " is damaged: bad header length " + h);
    }
    JsonNode header = Json.parse(new String(all, 4, h, StandardCharsets.UTF_8));
    List<String> features = new ArrayList<>();
    header.path("features").forEach(n -> features.add(n.asText()));
    long samples = header.path("samples").asLong(-1);
    if (features.isEmpty() || samples < 0 || 4L + h + 8L * samples * features.size() != all.length) {
      throw new IOException("ground-truth file " + file + " is damaged: size does not match its header");
    }
    long[] sums = new long[(int) (samples * features.size())];
    b.position(4 + h);
    b.slice().order(ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(sums);
    return new GroundTruth(header.path("dataset").asText(), header.path("version").asText(), features, sums);
  }

  /** Checks batches of samples against the ground truth, unit by unit and feature by feature. */
  static final class Checker {
    private final GroundTruth truth;
    private final SampleIndex index;
    private final Map<String, Integer> featureIndex = new HashMap<>();
    long batches;
    long units;
    long values;
    long mismatches;
    final List<String> firstMismatches = new ArrayList<>();

    Checker(GroundTruth truth, Dataset ds) {
      if (!truth.dataset.equals(ds.name()) || !truth.version.equals(ds.version())) {
        throw new IllegalArgumentException("the ground truth is of " + truth.dataset + " version " + truth.version
            + ", not of " + ds.name() + " version " + ds.version());
      }
      this.truth = truth;
      this.index = ds.sampleIndex().orElseThrow();
      for (int i = 0; i < truth.features.size(); i++) {
        featureIndex.put(truth.features.get(i), i);
      }
    }

    void check(Batch b) {
      int f = truth.features.size();
      for (Map.Entry<String, Column> e : b.columns().entrySet()) {
        Integer fi = featureIndex.get(e.getKey());
        if (fi == null) {
          throw new IllegalArgumentException("feature " + e.getKey() + " is not in the ground truth");
        }
        for (int k = 0; k < b.units(); k++) {
          long ordinal = index.find(b.unitId(k));
          int from = b.unitStart(k);
          long got = Columns.checksum(e.getValue().slice(from, b.unitStart(k + 1) - from));
          values++;
          if (got != truth.sums[(int) (ordinal * f + fi)]) {
            mismatches++;
            if (firstMismatches.size() < 10) {
              firstMismatches.add("epoch " + b.epoch() + " step " + b.step() + " sample " + b.unitId(k) + " feature " + e.getKey());
            }
          }
        }
      }
      units += b.units();
      batches++;
    }
  }
}
