package io.strata.sdk.derive;

import io.strata.sdk.Column;
import io.strata.sdk.format.ColumnBuilder;
import io.strata.sdk.format.Columns;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.FeatureType;
import io.strata.sdk.ChunkInfo;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.files.SampleIndex;
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
      return (features, first, count, arena) -> ds.table().readRows(first, count, features, arena);
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
    if (dataset.hasColumn(spec.canonical())) {
      // The derivation's name would be the column's: the stored column is what that name serves.
      throw new SpecException(spec.text(), 0, "dataset " + dataset.name() + " stores a column named '" + spec.canonical()
          + "', and that name serves the stored column; a derivation of the same text cannot be named apart from it");
    }
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
          Evaluator.Num n = e.numeric();
          for (int i = e.from; i < e.from + e.count; i++) {
            if (n.nulls() != null && n.nulls()[i]) {
              continue;
            }
            double v = n.v()[i];
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
    Evaluator.Num numeric() {
      return Evaluator.numeric(value, from + count);
    }
  }

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
    Object v = Evaluator.eval(root, sources, stats, sampleStarts, n);
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

  private Column build(Eval e, SegmentAllocator allocator) {
    int from = e.from();
    int n = e.count();
    ColumnBuilder b = new ColumnBuilder(type, allocator, n);
    switch (e.value()) {
      case Evaluator.Num x -> {
        for (int i = from; i < from + n; i++) {
          if ((x.nulls() != null && x.nulls()[i]) || Double.isNaN(x.v()[i])) {
            b.appendNull();
          } else {
            b.appendDouble(x.v()[i]);
          }
        }
      }
      case Evaluator.Ints x -> {
        for (int i = from; i < from + n; i++) {
          if (x.nulls() != null && x.nulls()[i]) {
            b.appendNull();
          } else {
            b.appendLong(x.v()[i]);
          }
        }
      }
      case Evaluator.Lists x -> {
        for (int i = from; i < from + n; i++) {
          if (x.v()[i] == null) {
            b.appendNull();
          } else {
            for (long h : x.v()[i]) {
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
