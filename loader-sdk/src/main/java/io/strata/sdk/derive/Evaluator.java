package io.strata.sdk.derive;

import io.strata.sdk.Column;
import java.math.BigDecimal;
import java.util.List;
import java.util.Map;

/**
 * Evaluates a derived feature's expression over the rows of a chunk: each function of the
 * language (docs/API.md) over arrays of doubles, 64-bit integers or hash lists, nulls carried
 * beside them; sequence functions restart at every sample's first row. Stateless.
 */
final class Evaluator {
  private Evaluator() {}

  /** Doubles with their nulls (null: none). */
  record Num(double[] v, boolean[] nulls) {}

  /** 64-bit integers with their nulls (null: none). */
  record Ints(long[] v, boolean[] nulls) {}

  /** Lists of hashes; a null list is a null value. */
  record Lists(long[][] v) {}

  static Object eval(Expr e, Map<String, Column> sources, Derivation.Statistics stats, boolean[] sampleStarts, int n) {
    return switch (e) {
      case Expr.Feature f -> sources.get(f.name());
      case Expr.Call c -> call(c, sources, stats, sampleStarts, n);
      default -> throw new IllegalStateException("literal outside a parameter: " + e);
    };
  }

  private static Object call(Expr.Call c, Map<String, Column> sources, Derivation.Statistics stats, boolean[] starts, int n) {
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
  static Num numeric(Object v, int n) {
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
}
