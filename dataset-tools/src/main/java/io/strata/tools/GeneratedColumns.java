package io.strata.tools;

import static io.strata.tools.DatasetGenerator.BATCH;
import static io.strata.tools.DatasetGenerator.mix;

import io.strata.sdk.FeatureType;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.hadoop.hive.ql.exec.vector.BytesColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.Decimal64ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DoubleColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ListColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.TimestampColumnVector;

/**
 * The columns {@link DatasetGenerator} writes: each a name, a feature type and how it fills a
 * batch's rows (seed 000's event table: amounts, merchants from a Zipf over categorical strings,
 * balances, timestamps, embeddings, lists), and the per-batch row context the fillers share. Not
 * thread-safe: a generator thread uses its own rows and random stream; the strings are read-only.
 */
final class GeneratedColumns {
  /** Distinct categorical strings (a Zipf over them), token ids of the tokens column, merchant ids. */
  private static final int CATEGORIES = 2_000;
  private static final int VOCABULARY = 50_000;
  private static final int MERCHANTS = 1_000_000;

  private GeneratedColumns() {}

  /** A generated column: name, type, and how to fill rows of a batch. */
  record Template(String name, FeatureType type, Filler filler) {}

  @FunctionalInterface
  interface Filler {
    void fill(ColumnVector v, Rows rows, SplittableRandom r);
  }

  /** Per-batch row context shared by the fillers. */
  static final class Rows {
    int n;
    final long[] sample = new long[BATCH];
    final long[] position = new long[BATCH];
    final long[] eventSeconds = new long[BATCH];
  }

  /** The column layout for {@code features} columns. */
  static List<Template> templates(int features, int embeddingDim, Strings strings) {
    List<Template> base = new ArrayList<>();
    base.add(new Template("amount", FeatureType.FLOAT64, (v, rows, r) -> {
      double[] out = ((DoubleColumnVector) v).vector;
      for (int i = 0; i < rows.n; i++) {
        out[i] = Math.round(Math.exp(3 + 1.2 * r.nextGaussian()) * 100) / 100.0;
      }
    }));
    base.add(new Template("merchant_category", FeatureType.STRING, (v, rows, r) -> {
      BytesColumnVector b = (BytesColumnVector) v;
      for (int i = 0; i < rows.n; i++) {
        byte[] s = strings.categories[strings.categoryZipf.sample(r)];
        b.setRef(i, s, 0, s.length);
      }
    }));
    base.add(new Template("is_online", FeatureType.BOOL, (v, rows, r) -> {
      long[] out = ((LongColumnVector) v).vector;
      for (int i = 0; i < rows.n; i++) {
        // Each sample has its own propensity to shop online.
        double p = (mix(rows.sample[i] * 31 + 7) >>> 11) * 0x1.0p-53;
        out[i] = r.nextDouble() < p ? 1 : 0;
      }
    }));
    base.add(new Template("merchant_id", FeatureType.INT32, (v, rows, r) -> {
      long[] out = ((LongColumnVector) v).vector;
      for (int i = 0; i < rows.n; i++) {
        out[i] = Zipf.continuous(r, MERCHANTS, 1.1);
      }
    }));
    base.add(new Template("quantity", FeatureType.INT16, (v, rows, r) -> {
      long[] out = ((LongColumnVector) v).vector;
      for (int i = 0; i < rows.n; i++) {
        out[i] = 1 + (long) Math.min(999, -Math.log(1 - r.nextDouble()) * 3);
      }
    }));
    base.add(new Template("embedding", FeatureType.list(FeatureType.FLOAT32), (v, rows, r) -> {
      ListColumnVector l = (ListColumnVector) v;
      DoubleColumnVector child = (DoubleColumnVector) l.child;
      child.ensureSize(rows.n * embeddingDim, false);
      l.childCount = rows.n * embeddingDim;
      for (int i = 0; i < rows.n; i++) {
        l.offsets[i] = (long) i * embeddingDim;
        l.lengths[i] = embeddingDim;
        for (int k = 0; k < embeddingDim; k++) {
          child.vector[i * embeddingDim + k] = (float) r.nextGaussian();
        }
      }
    }));
    base.add(new Template("balance", FeatureType.decimal(18, 2), (v, rows, r) -> {
      long[] out = ((Decimal64ColumnVector) v).vector;
      for (int i = 0; i < rows.n; i++) {
        long anchor = (mix(rows.sample[i]) >>> 40) * 10; // per-sample balance in cents
        out[i] = anchor + rows.position[i] * 1_37 + r.nextLong(-50_000, 50_000);
      }
    }));
    base.add(new Template("score", FeatureType.FLOAT32, (v, rows, r) -> {
      DoubleColumnVector d = (DoubleColumnVector) v;
      for (int i = 0; i < rows.n; i++) {
        if (r.nextInt(100) < 3) {
          d.noNulls = false;
          d.isNull[i] = true;
          d.vector[i] = Double.NaN;
        } else {
          d.vector[i] = (float) (1 / (1 + Math.exp(-r.nextGaussian())));
        }
      }
    }));
    base.add(new Template("channel", FeatureType.INT8, (v, rows, r) -> {
      long[] out = ((LongColumnVector) v).vector;
      for (int i = 0; i < rows.n; i++) {
        out[i] = Zipf.continuous(r, 12, 1.5) - 1;
      }
    }));
    base.add(new Template("event_date", FeatureType.DATE, (v, rows, r) -> {
      long[] out = ((LongColumnVector) v).vector;
      for (int i = 0; i < rows.n; i++) {
        out[i] = Math.floorDiv(rows.eventSeconds[i], 86_400L);
      }
    }));
    base.add(new Template("device_hash", FeatureType.BINARY, (v, rows, r) -> {
      BytesColumnVector b = (BytesColumnVector) v;
      byte[] buf = new byte[16 * rows.n];
      for (int i = 0; i < rows.n; i++) {
        long h = mix(rows.sample[i] * 1_000_003 + r.nextInt(3));
        for (int k = 0; k < 8; k++) {
          buf[16 * i + k] = (byte) (h >>> (8 * k));
          buf[16 * i + 8 + k] = (byte) (h >>> (8 * k + 3));
        }
        b.setRef(i, buf, 16 * i, 8 + (int) ((h >>> 60) & 7));
      }
    }));
    base.add(new Template("tokens", FeatureType.list(FeatureType.INT32), (v, rows, r) -> {
      ListColumnVector l = (ListColumnVector) v;
      LongColumnVector child = (LongColumnVector) l.child;
      int total = 0;
      for (int i = 0; i < rows.n; i++) {
        int len = (int) Math.min(24, -Math.log(1 - r.nextDouble()) * 4);
        child.ensureSize(total + len, true);
        l.offsets[i] = total;
        l.lengths[i] = len;
        for (int k = 0; k < len; k++) {
          child.vector[total + k] = Zipf.continuous(r, VOCABULARY, 1.05);
        }
        total += len;
      }
      l.childCount = total;
    }));
    base.add(new Template("position", FeatureType.INT64, (v, rows, r) -> {
      long[] out = ((LongColumnVector) v).vector;
      System.arraycopy(rows.position, 0, out, 0, rows.n);
    }));

    List<Template> out = new ArrayList<>();
    out.add(new Template("sample_id", FeatureType.INT64, (v, rows, r) ->
        System.arraycopy(rows.sample, 0, ((LongColumnVector) v).vector, 0, rows.n)));
    out.add(new Template("event_time", FeatureType.TIMESTAMP, (v, rows, r) -> {
      TimestampColumnVector t = (TimestampColumnVector) v;
      for (int i = 0; i < rows.n; i++) {
        int micros = r.nextInt(1_000_000);
        t.time[i] = rows.eventSeconds[i] * 1000 + micros / 1000;
        t.nanos[i] = micros * 1000;
      }
    }));
    for (int i = 0; out.size() < features; i++) {
      Template t = base.get(i % base.size());
      int round = i / base.size();
      out.add(round == 0 ? t : new Template(t.name() + "_" + (round + 1), t.type(), t.filler()));
    }
    return out;
  }

  /** Pre-generated categorical strings and their Zipf sampler. */
  static final class Strings {
    final byte[][] categories = new byte[CATEGORIES][];
    final Zipf categoryZipf;

    Strings(long seed) {
      SplittableRandom r = new SplittableRandom(seed ^ 0x5DEECE66DL);
      String[] words = {
        "grocery", "fuel", "travel", "dining", "pharmacy", "online", "electronics", "apparel", "utilities",
        "insurance", "transfer", "atm", "subscription", "hardware", "books", "gaming", "transit", "hotel"
      };
      for (int i = 0; i < CATEGORIES; i++) {
        StringBuilder sb = new StringBuilder(words[r.nextInt(words.length)]);
        int parts = r.nextInt(3);
        for (int k = 0; k < parts; k++) {
          sb.append('/').append(words[r.nextInt(words.length)]);
        }
        sb.append('-').append(i);
        categories[i] = sb.toString().getBytes(StandardCharsets.UTF_8);
      }
      categoryZipf = Zipf.table(CATEGORIES, 1.07);
    }
  }
}
