package io.strata.tools;

import java.util.SplittableRandom;

/** Zipf and power-law samplers for the dataset generator. */
final class Zipf {
  private final double[] cdf;

  private Zipf(double[] cdf) {
    this.cdf = cdf;
  }

  /** An exact sampler of ranks {@code 0..n-1} with weight {@code 1 / (rank + 1)^s}, by table. */
  static Zipf table(int n, double s) {
    double[] cdf = new double[n];
    double sum = 0;
    for (int i = 0; i < n; i++) {
      sum += 1 / Math.pow(i + 1, s);
      cdf[i] = sum;
    }
    for (int i = 0; i < n; i++) {
      cdf[i] /= sum;
    }
    return new Zipf(cdf);
  }

  int sample(SplittableRandom r) {
    double u = r.nextDouble();
    int lo = 0;
    int hi = cdf.length - 1;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (cdf[mid] < u) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /** A rank in {@code 1..n} from the continuous power law with exponent {@code s > 1}, by inversion. */
  static long continuous(SplittableRandom r, long n, double s) {
    return Math.min(n, (long) bounded(r, 1, n + 1, s));
  }

  /** A value in {@code [min, max)} with density proportional to {@code x^-s} ({@code s != 1}). */
  static double bounded(SplittableRandom r, double min, double max, double s) {
    double a = Math.pow(min, 1 - s);
    double b = Math.pow(max, 1 - s);
    double u = r.nextDouble();
    return Math.pow(a + u * (b - a), 1 / (1 - s));
  }

  /** Mean of {@link #bounded} for the same parameters. */
  static double boundedMean(double min, double max, double s) {
    double norm = (Math.pow(max, 1 - s) - Math.pow(min, 1 - s)) / (1 - s);
    double first = (Math.pow(max, 2 - s) - Math.pow(min, 2 - s)) / (2 - s);
    return first / norm;
  }
}
