package io.strata.sdk.derive;

import io.strata.sdk.Column;
import io.strata.sdk.format.ColumnBuilder;
import io.strata.sdk.format.Columns;
import io.strata.sdk.Dataset;
import io.strata.sdk.FeatureType;
import io.strata.sdk.ChunkInfo;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.dataset.SampleIndex;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.SegmentAllocator;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import java.util.zip.CRC32C;

/**
 * A derived feature bound to a dataset: type-checked, with its output type, computed one chunk at
 * a time from the chunk's source columns, aligned with the dataset's rows.
 *
 * <p>Semantics: nulls propagate (a null input gives a null output) except in sequence
 * aggregates, which skip nulls; {@code log1p} of a value at or below -1 is null; {@code zscore} of
 * a constant column is 0, as is {@code minmax}; statistics are over the non-null values of the
 * whole dataset (population standard deviation). {@code seq_mean} and {@code seq_count} look at
 * the rows of the same sample (the dataset's sample index) from its start up to the current row.
 */
public final class Derivation {
  /** Reads rows of source features into an arena (ORC, segments, or both). */
  @FunctionalInterface
  public interface SourceReader {
    SequencedMap<String, Column> read(List<String> features, long firstRow, int count, Arena arena) throws IOException;

    /** Reads the source columns from the dataset's ORC files (the HDD tier). */
    static SourceReader orc(Dataset ds) {
      return (features, first, count, arena) -> ds.orc().readRows(first, count, features, arena);
    }
  }

  /** Dataset-wide statistics by the canonical text of the expression they describe. */
  public record Statistics(Map<String, double[]> values) {
    public Statistics {
      values = Map.copyOf(values);
    }
  }

  private final Spec spec;
  private final Dataset dataset;
  private final FeatureType type;
  private final SampleIndex samples;

  private Derivation(Spec spec, Dataset dataset, FeatureType type, SampleIndex samples) {
    this.spec = spec;
    this.dataset = dataset;
    this.type = type;
    this.samples = samples;
  }

  /** Binds {@code spec} to {@code dataset}: type-checks it against the dataset's features. */
  public static Derivation of(Spec spec, Dataset dataset) {
    Map<String, FeatureType> types = new HashMap<>();
    for (FeatureInfo f : dataset.columns()) {
      if (f.supported()) {
        types.put(f.name(), f.type());
      }
    }
    FeatureType t = spec.typeCheck(types::get);
    SampleIndex idx = null;
    if (spec.usesSequences()) {
      idx = dataset.sampleIndex().orElseThrow(() -> new SpecException(spec.text(), 0,
          "seq_ functions need the dataset's sample index, and " + dataset.name() + " has none"));
    }
    return new Derivation(spec, dataset, t, idx);
  }

  public Spec spec() {
    return spec;
  }

  public Dataset dataset() {
    return dataset;
  }

  public FeatureType type() {
    return type;
  }

  // ------------------------------------------------------------------ fingerprint

  /**
   * The identity of the derived feature: SHA-256 of the canonical spec, the dataset's name and
   * version, and each source column's content checksum ({@link #columnChecksum}).
   */
  public String fingerprint(Map<String, Long> sourceChecksums) {
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      StringBuilder sb = new StringBuilder("strata-derived-v1\n").append(spec.canonical()).append('\n')
          .append(dataset.name()).append('\n').append(dataset.version()).append('\n');
      for (String s : spec.sources()) {
        Long c = sourceChecksums.get(s);
        if (c == null) {
          throw new IllegalArgumentException("no checksum for source column " + s);
        }
        sb.append(s).append(':').append(Long.toHexString(c)).append('\n');
      }
      return HexFormat.of().formatHex(sha.digest(sb.toString().getBytes(StandardCharsets.UTF_8)), 0, 16);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The content checksum of one column: CRC32C over the logical checksums of its chunks. */
  public static long columnChecksum(Dataset dataset, String column, SourceReader reader) throws IOException {
    CRC32C crc = new CRC32C();
    for (ChunkInfo c : dataset.chunks()) {
      try (Arena arena = Arena.ofConfined()) {
        Column col = reader.read(List.of(column), c.firstRow(), (int) c.rows(), arena).get(column);
        long sum = Columns.checksum(col);
        for (int i = 0; i < 8; i++) {
          crc.update((int) (sum >>> (8 * i)) & 0xFF);
        }
      }
    }
    return crc.getValue();
  }

  // ------------------------------------------------------------------ statistics (first pass)

  /** The dataset-wide statistics the spec needs (empty when it needs none): one pass over the dataset. */
  public Statistics statistics(SourceReader reader) throws IOException {
    Map<String, Expr.Call> needed = new LinkedHashMap<>();
    collectStats(spec.root(), needed);
    if (needed.isEmpty()) {
      return new Statistics(Map.of());
    }
    Map<String, double[]> acc = new HashMap<>();
    // Statistics may nest (zscore(minmax(x))): inner ones first, one pass per nesting level.
    List<Expr.Call> order = new ArrayList<>(needed.values());
    Map<String, double[]> known = new HashMap<>();
    for (Expr.Call call : order) {
      double[] a = {0, 0, 0, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY}; // count, mean, m2, min, max
      for (ChunkInfo c : dataset.chunks()) {
        try (Arena arena = Arena.ofConfined()) {
          Eval e = evaluate(call.args().getFirst(), c, new Statistics(known), reader, arena);
          Num n = e.numeric();
          for (int i = e.from; i < e.from + e.count; i++) {
            if (n.nulls != null && n.nulls[i]) {
              continue;
            }
            double v = n.v[i];
            if (Double.isNaN(v)) {
              continue;
            }
            a[0]++;
            double d = v - a[1];
            a[1] += d / a[0];
            a[2] += d * (v - a[1]);
            a[3] = Math.min(a[3], v);
            a[4] = Math.max(a[4], v);
          }
        }
      }
      double[] stat = call.function().equals("zscore")
          ? new double[] {a[1], a[0] == 0 ? 0 : Math.sqrt(a[2] / a[0])}
          : new double[] {a[3], a[4]};
      known.put(call.canonical(), stat);
      acc.put(call.canonical(), stat);
    }
    return new Statistics(acc);
  }

  private static void collectStats(Expr e, Map<String, Expr.Call> out) {
    if (e instanceof Expr.Call c) {
      for (Expr a : c.args()) {
        collectStats(a, out);
      }
      if (c.function().equals("zscore") || c.function().equals("minmax")) {
        out.putIfAbsent(c.canonical(), c);
      }
    }
  }

  // ------------------------------------------------------------------ evaluation

  /** Computes chunk {@code chunk} of the derived feature into memory of {@code allocator}. */
  public Column computeChunk(int chunk, Statistics stats, SourceReader reader, SegmentAllocator allocator) throws IOException {
    ChunkInfo c = dataset.chunks().get(chunk);
    try (Arena arena = Arena.ofConfined()) {
      Eval e = evaluate(spec.root(), c, stats, reader, arena);
      return build(e, allocator);
    }
  }

  /** Values over rows {@code [from, from + count)} of the arrays (a prefix of lookback rows may precede them). */
  private record Eval(Object value, int from, int count, FeatureType type) {
    Num numeric() {
      return Derivation.numeric(value, from + count);
    }
  }

  private record Num(double[] v, boolean[] nulls) {}

  private record Ints(long[] v, boolean[] nulls) {}

  private record Lists(long[][] v) {}

  private Eval evaluate(Expr root, ChunkInfo chunk, Statistics stats, SourceReader reader, Arena arena) throws IOException {
    long first = chunk.firstRow();
    int count = (int) chunk.rows();
    long rangeStart = first;
    if (samples != null && count > 0) {
      long ordinal = samples.ordinalOfRow(first);
      if (ordinal >= 0) {
        rangeStart = samples.start(ordinal);
      }
    }
    int lookback = (int) (first - rangeStart);
    int n = lookback + count;
    SequencedMap<String, Column> sources = reader.read(spec.sources(), rangeStart, n, arena);
    boolean[] sampleStarts = samples == null ? null : sampleStarts(rangeStart, n);
    Object v = eval(root, sources, stats, sampleStarts, n);
    return new Eval(v, lookback, count, type);
  }

  private boolean[] sampleStarts(long rangeStart, int n) {
    boolean[] starts = new boolean[n];
    long ordinal = samples.ordinalOfRow(rangeStart);
    for (long o = Math.max(0, ordinal); o < samples.size(); o++) {
      long s = samples.start(o);
      if (s >= rangeStart + n) {
        break;
      }
      if (s >= rangeStart) {
        starts[(int) (s - rangeStart)] = true;
      }
    }
    if (n > 0) {
      starts[0] = true;
    }
    return starts;
  }

  private Object eval(Expr e, Map<String, Column> sources, Statistics stats, boolean[] sampleStarts, int n) {
    return switch (e) {
      case Expr.Feature f -> sources.get(f.name());
      case Expr.Call c -> call(c, sources, stats, sampleStarts, n);
      default -> throw new IllegalStateException("literal outside a parameter: " + e);
    };
  }

  private Object call(Expr.Call c, Map<String, Column> sources, Statistics stats, boolean[] starts, int n) {
    List<Expr> a = c.args();
    switch (c.function()) {
      case "log1p" -> {
        Num x = numeric(eval(a.get(0), sources, stats, starts, n), n);
        double[] out = new double[n];
        boolean[] nulls = copy(x.nulls, n);
        for (int i = 0; i < n; i++) {
          if (!nulls[i]) {
            if (x.v[i] <= -1) {
              nulls[i] = true;
            } else {
              out[i] = Math.log1p(x.v[i]);
            }
          }
        }
        return new Num(out, nulls);
      }
      case "clip" -> {
        Num x = numeric(eval(a.get(0), sources, stats, starts, n), n);
        double lo = ((Expr.Number) a.get(1)).asDouble();
        double hi = ((Expr.Number) a.get(2)).asDouble();
        double[] out = new double[n];
        for (int i = 0; i < n; i++) {
          out[i] = Math.min(hi, Math.max(lo, x.v[i]));
        }
        return new Num(out, x.nulls);
      }
      case "zscore", "minmax" -> {
        Num x = numeric(eval(a.get(0), sources, stats, starts, n), n);
        double[] s = stats.values().get(c.canonical());
        if (s == null) {
          throw new IllegalStateException("statistics of " + c.canonical() + " were not computed");
        }
        double[] out = new double[n];
        for (int i = 0; i < n; i++) {
          if (c.function().equals("zscore")) {
            out[i] = s[1] == 0 ? 0 : (x.v[i] - s[0]) / s[1];
          } else {
            out[i] = s[1] == s[0] ? 0 : (x.v[i] - s[0]) / (s[1] - s[0]);
          }
        }
        return new Num(out, x.nulls);
      }
      case "bucketize" -> {
        Num x = numeric(eval(a.get(0), sources, stats, starts, n), n);
        List<Expr.Number> edges = ((Expr.NumberList) a.get(1)).values();
        double[] e = new double[edges.size()];
        for (int i = 0; i < e.length; i++) {
          e[i] = edges.get(i).asDouble();
        }
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
          int lo = 0;
          int hi = e.length;
          while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (e[mid] <= x.v[i]) {
              lo = mid + 1;
            } else {
              hi = mid;
            }
          }
          out[i] = lo;
        }
        return new Ints(out, x.nulls);
      }
      case "hash_bucket" -> {
        Ints h = hashes(eval(a.get(0), sources, stats, starts, n), n);
        long buckets = ((Expr.Number) a.get(1)).value().longValueExact();
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
          out[i] = Hashing.bucket(h.v[i], buckets);
        }
        return new Ints(out, h.nulls);
      }
      case "cross" -> {
        Ints x = hashes(eval(a.get(0), sources, stats, starts, n), n);
        Ints y = hashes(eval(a.get(1), sources, stats, starts, n), n);
        long buckets = ((Expr.Number) a.get(2)).value().longValueExact();
        long[] out = new long[n];
        boolean[] nulls = new boolean[n];
        for (int i = 0; i < n; i++) {
          nulls[i] = (x.nulls != null && x.nulls[i]) || (y.nulls != null && y.nulls[i]);
          out[i] = nulls[i] ? 0 : Hashing.bucket(Hashing.combine(x.v[i], y.v[i]), buckets);
        }
        return new Ints(out, nulls);
      }
      case "ngram_hash" -> {
        Column tokens = (Column) eval(a.get(0), sources, stats, starts, n);
        int gram = (int) ((Expr.Number) a.get(1)).value().longValueExact();
        long buckets = ((Expr.Number) a.get(2)).value().longValueExact();
        long[][] out = new long[n][];
        Column child = tokens.child();
        for (int i = 0; i < n; i++) {
          if (tokens.isNull(i)) {
            continue;
          }
          int s = tokens.start(i);
          int len = tokens.end(i) - s;
          long[] h = new long[len];
          for (int k = 0; k < len; k++) {
            h[k] = child.isNull(s + k) ? Hashing.NULL : scalarHash(child, s + k);
          }
          int grams = Math.max(0, len - gram + 1);
          long[] g = new long[grams];
          for (int k = 0; k < grams; k++) {
            long acc = 0x2545F4914F6CDD1DL;
            for (int j = 0; j < gram; j++) {
              acc = Hashing.combine(acc, h[k + j]);
            }
            g[k] = Hashing.bucket(acc, buckets);
          }
          out[i] = g;
        }
        return new Lists(out);
      }
      case "seq_mean" -> {
        Num x = numeric(eval(a.get(0), sources, stats, starts, n), n);
        int last = (int) ((Expr.Number) a.get(1)).value().longValueExact();
        double[] out = new double[n];
        boolean[] nulls = new boolean[n];
        // The window: the last `last` rows of the same sample up to this row; nulls are skipped.
        int valid = 0;
        int windowStart = 0;
        for (int i = 0; i < n; i++) {
          if (starts[i]) {
            valid = 0;
            windowStart = i;
          }
          if (x.nulls == null || !x.nulls[i]) {
            valid++;
          }
          while (i - windowStart + 1 > last) {
            if (x.nulls == null || !x.nulls[windowStart]) {
              valid--;
            }
            windowStart++;
          }
          if (valid == 0) {
            nulls[i] = true;
          } else {
            out[i] = windowMean(x, windowStart, i, valid);
          }
        }
        return new Num(out, nulls);
      }
      case "seq_count" -> {
        Num x = numeric(eval(a.get(0), sources, stats, starts, n), n);
        long[] out = new long[n];
        long count = 0;
        for (int i = 0; i < n; i++) {
          if (starts[i]) {
            count = 0;
          }
          if (x.nulls == null || !x.nulls[i]) {
            count++;
          }
          out[i] = count;
        }
        return new Ints(out, null);
      }
      default -> throw new IllegalStateException("unknown function " + c.function());
    }
  }

  /**
   * The window mean, summed afresh in row order: a running sum would drift with floating-point
   * rounding, and the same rows must give the same bits whichever chunk they are computed in.
   */
  private static double windowMean(Num x, int from, int to, int valid) {
    double s = 0;
    for (int k = from; k <= to; k++) {
      if (x.nulls == null || !x.nulls[k]) {
        s += x.v[k];
      }
    }
    return s / valid;
  }

  private static boolean[] copy(boolean[] nulls, int n) {
    return nulls == null ? new boolean[n] : nulls.clone();
  }

  /** Any numeric value or column as doubles, with nulls. */
  private static Num numeric(Object v, int n) {
    return switch (v) {
      case Num x -> x;
      case Ints x -> {
        double[] d = new double[n];
        for (int i = 0; i < n; i++) {
          d[i] = x.v[i];
        }
        yield new Num(d, x.nulls);
      }
      case Column c -> {
        double[] d = new double[n];
        boolean[] nulls = c.hasNulls() ? new boolean[n] : null;
        for (int i = 0; i < n; i++) {
          if (nulls != null && c.isNull(i)) {
            nulls[i] = true;
            continue;
          }
          d[i] = switch (c.type().kind()) {
            case FLOAT32, FLOAT64, DECIMAL -> c.getDouble(i);
            case BOOL -> c.getBoolean(i) ? 1 : 0;
            default -> c.getLong(i);
          };
        }
        yield new Num(d, nulls);
      }
      default -> throw new IllegalStateException("not numeric: " + v);
    };
  }

  /** Stable 64-bit hashes of any scalar value or column, with nulls. */
  private static Ints hashes(Object v, int n) {
    return switch (v) {
      case Ints x -> {
        long[] h = new long[n];
        for (int i = 0; i < n; i++) {
          h[i] = Hashing.integer(x.v[i]);
        }
        yield new Ints(h, x.nulls);
      }
      case Num x -> {
        long[] h = new long[n];
        for (int i = 0; i < n; i++) {
          h[i] = Hashing.real(x.v[i]);
        }
        yield new Ints(h, x.nulls);
      }
      case Column c -> {
        long[] h = new long[n];
        boolean[] nulls = c.hasNulls() ? new boolean[n] : null;
        for (int i = 0; i < n; i++) {
          if (nulls != null && c.isNull(i)) {
            nulls[i] = true;
          } else {
            h[i] = scalarHash(c, i);
          }
        }
        yield new Ints(h, nulls);
      }
      default -> throw new IllegalStateException("not hashable: " + v);
    };
  }

  /** The hash of one non-null scalar value. */
  static long scalarHash(Column c, int row) {
    return switch (c.type().kind()) {
      case STRING, BINARY -> {
        byte[] b = c.getBytes(row);
        yield Hashing.bytes(b, 0, b.length);
      }
      case FLOAT32, FLOAT64 -> Hashing.real(c.getDouble(row));
      case DECIMAL -> {
        BigDecimal d = c.getDecimal(row).stripTrailingZeros();
        yield Hashing.string(d.signum() == 0 ? "0" : d.toPlainString());
      }
      case BOOL -> Hashing.integer(c.getBoolean(row) ? 1 : 0);
      default -> Hashing.integer(c.getLong(row));
    };
  }

  private Column build(Eval e, SegmentAllocator allocator) {
    int from = e.from();
    int n = e.count();
    ColumnBuilder b = new ColumnBuilder(type, allocator, n);
    switch (e.value()) {
      case Num x -> {
        for (int i = from; i < from + n; i++) {
          if ((x.nulls != null && x.nulls[i]) || Double.isNaN(x.v[i])) {
            b.appendNull();
          } else {
            b.appendDouble(x.v[i]);
          }
        }
      }
      case Ints x -> {
        for (int i = from; i < from + n; i++) {
          if (x.nulls != null && x.nulls[i]) {
            b.appendNull();
          } else {
            b.appendLong(x.v[i]);
          }
        }
      }
      case Lists x -> {
        for (int i = from; i < from + n; i++) {
          if (x.v[i] == null) {
            b.appendNull();
          } else {
            for (long h : x.v[i]) {
              b.child().appendLong(h);
            }
            b.endList();
          }
        }
      }
      case Column c -> b.appendRange(c, from, n);
      default -> throw new IllegalStateException();
    }
    return b.build();
  }
}
