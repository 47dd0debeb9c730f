package io.strata.sdk.derive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Column;
import io.strata.sdk.format.Columns;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.sdk.Reference;
import io.strata.sdk.ChunkInfo;
import io.strata.tools.DatasetGenerator;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every transformation against an independent row-by-row reference computation. */
class DerivationTest {
  @TempDir static Path tmp;
  static Dataset ds;
  static Reference ref;
  static List<Long> sampleStart;

  @BeforeAll
  static void setUp() throws IOException {
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(dir,
        DatasetGenerator.Options.of("events", 30_000, 5).withFeatures(14).withChunking(7_000, 2).withMeanSampleLength(25),
        Progress.NONE);
    ds = Dataset.open(dir);
    ref = new Reference(dir);
    // Sample starts from the reference's sample_id column (not from the index).
    sampleStart = new ArrayList<>();
    List<Object> ids = ref.column("sample_id");
    long start = 0;
    for (int r = 0; r < ids.size(); r++) {
      if (r > 0 && !ids.get(r).equals(ids.get(r - 1))) {
        start = r;
      }
      sampleStart.add(start);
    }
  }

  @AfterAll
  static void tearDown() throws IOException {
    ds.close();
  }

  static final Derivation.SourceReader ORC = (features, first, count, arena) -> ds.table().readRows(first, count, features, arena);

  // ---------------- an independent implementation of the documented hashes (docs/FORMAT.md §4)
  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  static long fnv(byte[] b) {
    long h = 0xCBF29CE484222325L;
    for (byte x : b) {
      h = (h ^ (x & 0xFF)) * 0x100000001B3L;
    }
    return mix(h);
  }

  static long hashOf(Object v) {
    return switch (v) {
      case String s -> fnv(s.getBytes(StandardCharsets.UTF_8));
      case byte[] b -> fnv(b);
      case Double d -> mix(Double.doubleToLongBits(d == 0.0 ? 0.0 : d) ^ 0x5851F42D4C957F2DL);
      case Float f -> mix(Double.doubleToLongBits(f == 0.0f ? 0.0 : (double) f) ^ 0x5851F42D4C957F2DL);
      case Boolean b -> mix((b ? 1 : 0) ^ 0x5851F42D4C957F2DL);
      case BigDecimal d -> fnv((d.signum() == 0 ? "0" : d.stripTrailingZeros().toPlainString()).getBytes(StandardCharsets.UTF_8));
      case Number n -> mix(n.longValue() ^ 0x5851F42D4C957F2DL);
      default -> throw new IllegalArgumentException(v.getClass().toString());
    };
  }

  static double num(Object v) {
    return switch (v) {
      case Boolean b -> b ? 1 : 0;
      case Number n -> n.doubleValue();
      default -> throw new IllegalArgumentException(v.toString());
    };
  }

  /** Population mean and standard deviation of the non-null values, computed in two passes. */
  static double[] meanStd(List<Double> values) {
    double sum = 0;
    int n = 0;
    for (Double v : values) {
      if (v != null) {
        sum += v;
        n++;
      }
    }
    double mean = sum / n;
    double sq = 0;
    for (Double v : values) {
      if (v != null) {
        sq += (v - mean) * (v - mean);
      }
    }
    return new double[] {mean, Math.sqrt(sq / n)};
  }

  private void check(String spec, BiFunction<Long, Reference, Object> reference, double tolerance) throws IOException {
    Derivation d = Derivation.of(Spec.parse(spec), ds);
    Derivation.Statistics stats = d.statistics(ORC);
    int nulls = 0;
    for (ChunkInfo c : ds.chunks()) {
      try (Arena arena = Arena.ofConfined()) {
        Column col = d.computeChunk(c.index(), stats, ORC, arena);
        assertEquals(c.rows(), col.length());
        for (int r = 0; r < col.length(); r++) {
          long row = c.firstRow() + r;
          Object want = reference.apply(row, ref);
          Object got = col.getObject(r);
          if (want == null || got == null) {
            assertEquals(want, got, spec + " row " + row);
            nulls++;
          } else if (want instanceof Double w && tolerance > 0) {
            assertEquals(w, (Double) got, tolerance * Math.max(1, Math.abs(w)), spec + " row " + row);
          } else {
            assertEquals(want, got, spec + " row " + row);
          }
        }
      }
    }
    if (spec.matches(".*\\bscore\\b.*") && !spec.startsWith("seq_count")) {
      assertTrue(nulls > 0, spec + ": the null edge cases were exercised");
    }
  }

  @Test
  void log1pAndClip() throws IOException {
    check("log1p(amount)", (r, x) -> Math.log1p((Double) x.get("amount", r)), 0);
    check("log1p(score)", (r, x) -> x.get("score", r) == null ? null : Math.log1p((Float) x.get("score", r)), 0);
    check("clip(amount, 5, 50)", (r, x) -> Math.min(50, Math.max(5, (Double) x.get("amount", r))), 0);
    // log1p at or below -1 is null: z-scores of score go below -1.
    double[] ms = meanStd(doubles("score"));
    int[] belowMinusOne = {0};
    check("log1p(zscore(score))", (r, x) -> {
      if (x.get("score", r) == null) {
        return null;
      }
      double z = ((Float) x.get("score", r) - ms[0]) / ms[1];
      if (z <= -1) {
        belowMinusOne[0]++;
        return null;
      }
      return Math.log1p(z);
    }, 1e-9);
    assertTrue(belowMinusOne[0] > 0, "values at or below -1 were covered");
  }

  static List<Double> doubles(String f) {
    List<Double> out = new ArrayList<>();
    for (Object o : ref.column(f)) {
      out.add(o == null ? null : num(o));
    }
    return out;
  }

  @Test
  void zscoreAndMinmaxUseWholeDatasetStatistics() throws IOException {
    double[] ms = meanStd(doubles("score"));
    check("zscore(score)", (r, x) -> x.get("score", r) == null ? null : ((Float) x.get("score", r) - ms[0]) / ms[1], 1e-9);
    List<Double> q = doubles("quantity");
    double min = q.stream().mapToDouble(Double::doubleValue).min().orElseThrow();
    double max = q.stream().mapToDouble(Double::doubleValue).max().orElseThrow();
    check("minmax(quantity)", (r, x) -> ((Short) x.get("quantity", r) - min) / (max - min), 1e-12);
    List<Double> logs = new ArrayList<>();
    for (Double a : doubles("amount")) {
      logs.add(Math.log1p(a));
    }
    double[] lm = meanStd(logs);
    check("zscore(log1p(amount))", (r, x) -> (Math.log1p((Double) x.get("amount", r)) - lm[0]) / lm[1], 1e-9);
  }

  @Test
  void bucketsHashesAndCrosses() throws IOException {
    double[] edges = {10, 20, 50, 100};
    check("bucketize(amount, [10, 20, 50, 100])", (r, x) -> {
      double v = (Double) x.get("amount", r);
      int b = 0;
      for (double e : edges) {
        b += v >= e ? 1 : 0;
      }
      return b;
    }, 0);
    check("hash_bucket(merchant_category, 1000)",
        (r, x) -> Long.remainderUnsigned(hashOf(x.get("merchant_category", r)), 1000), 0);
    check("hash_bucket(merchant_id, 97)", (r, x) -> Long.remainderUnsigned(hashOf(x.get("merchant_id", r)), 97), 0);
    check("hash_bucket(score, 10)", (r, x) -> x.get("score", r) == null ? null : Long.remainderUnsigned(hashOf(x.get("score", r)), 10), 0);
    check("hash_bucket(balance, 50)", (r, x) -> Long.remainderUnsigned(hashOf(x.get("balance", r)), 50), 0);
    check("hash_bucket(device_hash, 64)", (r, x) -> Long.remainderUnsigned(hashOf(x.get("device_hash", r)), 64), 0);
    check("cross(channel, merchant_category, 5000)", (r, x) -> {
      long a = hashOf(x.get("channel", r));
      long b = hashOf(x.get("merchant_category", r));
      return Long.remainderUnsigned(mix(a * 0x9E3779B97F4A7C15L ^ b), 5000);
    }, 0);
    check("cross(is_online, score, 7)", (r, x) -> {
      if (x.get("score", r) == null) {
        return null;
      }
      return Long.remainderUnsigned(mix(hashOf(x.get("is_online", r)) * 0x9E3779B97F4A7C15L ^ hashOf(x.get("score", r))), 7);
    }, 0);
    check("hash_bucket(bucketize(amount, [10, 100]), 7)", (r, x) -> {
      double v = (Double) x.get("amount", r);
      long b = (v >= 10 ? 1L : 0L) + (v >= 100 ? 1L : 0L);
      return Long.remainderUnsigned(hashOf(b), 7);
    }, 0);
  }

  @Test
  void ngramHashesOverTokenListsIncludingEmptyAndShortOnes() throws IOException {
    int[] emptyOrShort = {0};
    check("ngram_hash(tokens, 2, 1000)", (r, x) -> {
      @SuppressWarnings("unchecked")
      List<Integer> tokens = (List<Integer>) x.get("tokens", r);
      List<Long> out = new ArrayList<>();
      if (tokens.size() < 2) {
        emptyOrShort[0]++;
      }
      for (int k = 0; k + 2 <= tokens.size(); k++) {
        long acc = 0x2545F4914F6CDD1DL;
        for (int j = 0; j < 2; j++) {
          acc = mix(acc * 0x9E3779B97F4A7C15L ^ hashOf(tokens.get(k + j)));
        }
        out.add(Long.remainderUnsigned(acc, 1000));
      }
      return out;
    }, 0);
    assertTrue(emptyOrShort[0] > 0, "empty and one-token lists were covered");
  }

  @Test
  void sequenceAggregatesStayInsideTheirSample() throws IOException {
    int last = 5;
    check("seq_mean(score, last=5)", (r, x) -> {
      long start = Math.max(sampleStart.get((int) (long) r), r - last + 1);
      double sum = 0;
      int n = 0;
      for (long k = start; k <= r; k++) {
        Object v = x.get("score", k);
        if (v != null) {
          sum += (Float) v;
          n++;
        }
      }
      return n == 0 ? null : sum / n;
    }, 0);
    check("seq_count(score)", (r, x) -> {
      long n = 0;
      for (long k = sampleStart.get((int) (long) r); k <= r; k++) {
        n += x.get("score", k) == null ? 0 : 1;
      }
      return n;
    }, 0);
    check("seq_mean(log1p(amount), last=3)", (r, x) -> {
      long start = Math.max(sampleStart.get((int) (long) r), r - 2);
      double sum = 0;
      for (long k = start; k <= r; k++) {
        sum += Math.log1p((Double) x.get("amount", k));
      }
      return sum / (r - start + 1);
    }, 0);
  }

  @Test
  void fingerprintsFollowSpecVersionAndSourceContent() throws IOException {
    Derivation a = Derivation.of(Spec.parse("zscore(log1p(amount))"), ds);
    Derivation b = Derivation.of(Spec.parse("ZSCORE( log1p( amount ) )"), ds);
    long sum = Derivation.columnChecksum(ds, "amount", ORC);
    Map<String, Long> sums = Map.of("amount", sum);
    assertEquals(a.fingerprint(sums), b.fingerprint(sums), "equivalent spellings share a fingerprint");
    assertTrue(!a.fingerprint(sums).equals(a.fingerprint(Map.of("amount", sum + 1))), "changed content, new fingerprint");
    Derivation c = Derivation.of(Spec.parse("zscore(amount)"), ds);
    assertTrue(!a.fingerprint(sums).equals(c.fingerprint(sums)));
    // The checksum is the column's content: recomputing gives the same value.
    assertEquals(sum, Derivation.columnChecksum(ds, "amount", ORC));
  }

  @Test
  void chunksComputeTheSameBitsWhateverTheOrder() throws IOException {
    Derivation d = Derivation.of(Spec.parse("seq_mean(zscore(amount), last=7)"), ds);
    Derivation.Statistics s = d.statistics(ORC);
    List<Long> forward = new ArrayList<>();
    for (ChunkInfo c : ds.chunks()) {
      try (Arena arena = Arena.ofConfined()) {
        forward.add(Columns.checksum(d.computeChunk(c.index(), s, ORC, arena)));
      }
    }
    for (int i = ds.chunks().size() - 1; i >= 0; i--) {
      try (Arena arena = Arena.ofConfined()) {
        assertEquals(forward.get(i), Columns.checksum(d.computeChunk(i, d.statistics(ORC), ORC, arena)));
      }
    }
  }

  @Test
  void theSameRowsAsParquetDeriveTheSameBits() throws IOException {
    Path pqDir = tmp.resolve("events-parquet");
    io.strata.tools.ParquetExport.export(ds.directory(), ds.manifest(), ds.table(), pqDir, "events", Progress.NONE);
    try (Dataset pq = Dataset.open(pqDir)) {
      Derivation.SourceReader fromParquet = (features, first, count, arena) -> pq.table().readRows(first, count, features, arena);
      for (String spec : List.of("seq_mean(zscore(amount), last=7)", "log1p(amount)", "hash_bucket(merchant_category, 1000)")) {
        Derivation a = Derivation.of(Spec.parse(spec), ds);
        Derivation b = Derivation.of(Spec.parse(spec), pq);
        Derivation.Statistics sa = a.statistics(ORC);
        Derivation.Statistics sb = b.statistics(fromParquet);
        for (ChunkInfo c : ds.chunks()) {
          try (Arena arena = Arena.ofConfined()) {
            assertEquals(Columns.checksum(a.computeChunk(c.index(), sa, ORC, arena)),
                Columns.checksum(b.computeChunk(c.index(), sb, fromParquet, arena)), spec + " chunk " + c.index());
          }
        }
      }
    }
  }
}
