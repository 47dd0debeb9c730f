package io.strata.node.sim;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Generates realistic multi-job read traces: several datasets of many feature columns whose
 * popularity follows a Zipf law; jobs arriving at staggered times, each reading a Zipf-weighted
 * 20–37 % of one dataset's features (datasets are Zipf-popular too) for 1–3 epochs, each epoch
 * visiting every chunk once in a shuffled order and reading all the job's features of that chunk
 * together (rows are read across features). Feature chunks differ in size as column types do.
 *
 * <p>Each job declares what a real job's loader declares: at its start, its plan (every epoch's
 * chunk order, one chunk per step, as its seed determines), a step record as it reaches each
 * step, and the end of its plan after its last read. {@link Trace#withoutPlans()} strips them for
 * the online-only case.
 */
public final class TraceGenerator {
  private TraceGenerator() {}

  /**
   * Parameters.
   *
   * @param datasets number of datasets
   * @param features feature columns per dataset
   * @param chunks chunks (row ranges) per dataset
   * @param jobs jobs in the trace
   * @param featureZipf Zipf exponent of feature popularity
   * @param meanArrivalSeconds mean time between job starts
   * @param seed random seed
   */
  public record Spec(int datasets, int features, int chunks, int jobs, double featureZipf, double meanArrivalSeconds, long seed) {
    public Spec {
      if (datasets < 1 || features < 2 || chunks < 1 || jobs < 1) {
        throw new IllegalArgumentException("datasets, chunks and jobs must be at least 1 and features at least 2");
      }
    }

    /** The defaults used in BENCHMARKS.md: a new job every minute on average, about three running at once. */
    public static Spec defaults(long seed) {
      return new Spec(4, 60, 48, 40, 1.1, 60, seed);
    }
  }

  /** A read, or with {@code feature} "@plan", "@step" or "@end" a control record. */
  private record Read(double time, String job, String dataset, String feature, int chunk, long bytes, int[][] plan) {
    Read(double time, String job, String dataset, String feature, int chunk, long bytes) {
      this(time, job, dataset, feature, chunk, bytes, null);
    }
  }

  /** Bytes of a feature chunk: 262,144 rows of one of several column widths. */
  private static final int[] WIDTHS = {1, 2, 4, 4, 8, 8, 8, 16, 32, 64};

  public static Trace generate(Spec s) {
    SplittableRandom r = new SplittableRandom(s.seed());
    long[][] bytes = new long[s.datasets()][s.features()];
    for (int d = 0; d < s.datasets(); d++) {
      for (int f = 0; f < s.features(); f++) {
        bytes[d][f] = 262_144L * WIDTHS[r.nextInt(WIDTHS.length)];
      }
    }
    double[] datasetWeight = zipfWeights(s.datasets(), 0.8);
    double[] featureWeight = zipfWeights(s.features(), s.featureZipf());
    List<Read> reads = new ArrayList<>();
    double start = 0;
    for (int j = 0; j < s.jobs(); j++) {
      start += -Math.log(1 - r.nextDouble()) * s.meanArrivalSeconds();
      int d = pick(datasetWeight, r);
      int want = (int) Math.round(s.features() * (0.20 + 0.17 * r.nextDouble()));
      int[] features = sampleWithoutReplacement(featureWeight, Math.max(1, want), r);
      Arrays.sort(features);
      int epochs = 1 + r.nextInt(3);
      double step = Math.exp(Math.log(2.0) + 0.5 * r.nextGaussian()); // seconds per chunk of all features
      double t = start;
      String job = "job" + j;
      int[][] plan = new int[epochs * s.chunks()][];
      for (int e = 0; e < epochs; e++) {
        int[] order = permutation(s.chunks(), r);
        for (int i = 0; i < order.length; i++) {
          int c = order[i];
          int g = e * s.chunks() + i;
          plan[g] = new int[] {c};
          reads.add(new Read(t, job, "ds" + d, "@step", g, 0));
          for (int k = 0; k < features.length; k++) {
            int f = features[k];
            reads.add(new Read(t + (k + 1) * 1e-4, job, "ds" + d, "f" + f, c, bytes[d][f]));
          }
          t += step * (0.5 + r.nextDouble());
        }
      }
      List<String> names = new ArrayList<>();
      for (int f : features) {
        names.add("f" + f);
      }
      reads.add(new Read(start - 1e-3, job, "ds" + d, "@plan:" + String.join(";", names), s.chunks(), 0, plan));
      reads.add(new Read(t, job, "ds" + d, "@end", 0, 0));
    }
    reads.sort(Comparator.comparingDouble(Read::time));
    Trace.Builder b = new Trace.Builder();
    for (Read x : reads) {
      if (x.feature().startsWith("@plan:")) {
        b.plan(x.time(), x.job(), x.dataset(), List.of(x.feature().substring(6).split(";")), 0, x.chunk(), false, x.plan());
      } else if (x.feature().equals("@step")) {
        b.step(x.time(), x.job(), x.dataset(), x.chunk());
      } else if (x.feature().equals("@end")) {
        b.end(x.time(), x.job(), x.dataset());
      } else {
        b.add(x.time(), x.job(), x.dataset(), x.feature(), x.chunk(), x.bytes());
      }
    }
    return b.build();
  }

  private static double[] zipfWeights(int n, double s) {
    double[] w = new double[n];
    for (int i = 0; i < n; i++) {
      w[i] = 1 / Math.pow(i + 1, s);
    }
    return w;
  }

  private static int pick(double[] w, SplittableRandom r) {
    double total = Arrays.stream(w).sum();
    double u = r.nextDouble() * total;
    for (int i = 0; i < w.length; i++) {
      u -= w[i];
      if (u <= 0) {
        return i;
      }
    }
    return w.length - 1;
  }

  private static int[] sampleWithoutReplacement(double[] weights, int k, SplittableRandom r) {
    double[] w = weights.clone();
    int[] out = new int[Math.min(k, w.length)];
    for (int i = 0; i < out.length; i++) {
      int x = pick(w, r);
      out[i] = x;
      w[x] = 0;
    }
    return out;
  }

  private static int[] permutation(int n, SplittableRandom r) {
    int[] p = new int[n];
    for (int i = 0; i < n; i++) {
      p[i] = i;
    }
    for (int i = n - 1; i > 0; i--) {
      int j = r.nextInt(i + 1);
      int tmp = p[i];
      p[i] = p[j];
      p[j] = tmp;
    }
    return p;
  }
}
