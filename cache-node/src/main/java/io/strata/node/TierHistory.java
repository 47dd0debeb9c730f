package io.strata.node;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The last hour of the node's counters, sampled every second: what the rates (flash bytes per
 * hour and per second), the churn warning and the dashboard's charts are computed from.
 *
 * <p>Threads and locks: its own monitor guards the samples; {@link #sample} is called by the
 * node's timer, the readers by API workers. It never calls out while holding its monitor.
 */
final class TierHistory {
  /** Samples kept: an hour at one per second. */
  static final int SAMPLES = 3600;
  /** Promotions in the last minute below which churn is no warning. */
  static final int CHURN_MIN = 20;

  /** Columns of a sample, in order. */
  static final int TIME = 0;
  static final int SSD_READ = 1;
  static final int HDD_READ = 2;
  static final int FLASH = 3;
  static final int SSD_HELD = 4;
  static final int PROMOTIONS = 5;
  static final int EVICTIONS = 6;

  /** Promotions and evictions over the last minute, and whether the tier thrashes; {@code warning} is null unless it does. */
  record Churn(double seconds, long promotions, long evictions, boolean thrashing, String warning) {}

  private final ArrayDeque<double[]> samples = new ArrayDeque<>();

  synchronized void sample(double now, TierCounters.Snapshot c, long ssdBytesHeld) {
    samples.addLast(new double[] {now, c.ssdBytes(), c.hddBytes(), c.flashBytes(), ssdBytesHeld, c.promotions(), c.evictions()});
    while (samples.size() > SAMPLES) {
      samples.removeFirst();
    }
  }

  /** The last {@code n} samples: time, SSD bytes read, HDD bytes read, flash written, SSD bytes held, promotions, evictions. */
  synchronized List<double[]> last(int n) {
    List<double[]> all = new ArrayList<>(samples);
    return all.subList(Math.max(0, all.size() - n), all.size());
  }

  /** Flash bytes written since the oldest sample (up to an hour ago), scaled to an hour. */
  synchronized double flashBytesPerHour(double now, long flashBytes) {
    double[] first = samples.peekFirst();
    if (first == null) {
      return 0;
    }
    double dt = now - first[TIME];
    return dt <= 0 ? 0 : (flashBytes - first[FLASH]) * 3600 / dt;
  }

  /** Flash bytes written per second over the last {@code seconds} of samples. */
  synchronized double flashBytesPerSecond(int seconds) {
    double[][] w = window(seconds);
    double dt = w == null ? 0 : w[1][TIME] - w[0][TIME];
    return dt <= 0 ? 0 : (w[1][FLASH] - w[0][FLASH]) / dt;
  }

  /**
   * Promotions and evictions over the last minute: the tier thrashes when it evicts nearly as
   * much as it promotes, so that what it writes leaves again before it is reused (the budget is
   * too small for the working set, or the jobs' reuse too far apart).
   */
  synchronized Churn churn() {
    double[][] w = window(60);
    long promoted = w == null ? 0 : (long) (w[1][PROMOTIONS] - w[0][PROMOTIONS]);
    long evicted = w == null ? 0 : (long) (w[1][EVICTIONS] - w[0][EVICTIONS]);
    double seconds = w == null ? 0 : w[1][TIME] - w[0][TIME];
    boolean thrashing = promoted >= CHURN_MIN && evicted >= 0.8 * promoted;
    String warning = !thrashing ? null
        : "the SSD tier is thrashing: " + evicted + " evictions for " + promoted + " promotions in the last "
            + Math.round(seconds) + " s; what it writes leaves before it is reused (raise the budget, or pin what matters)";
    return new Churn(seconds, promoted, evicted, thrashing, warning);
  }

  /**
   * The oldest sample no more than {@code seconds} before the last one, and the last one (counters
   * differ by what happened in between); null before the first sample.
   */
  private double[][] window(int seconds) {
    double[] last = samples.peekLast();
    if (last == null) {
      return null;
    }
    double[] from = last;
    for (var it = samples.descendingIterator(); it.hasNext(); ) {
      double[] x = it.next();
      if (last[TIME] - x[TIME] > seconds) {
        break;
      }
      from = x;
    }
    return new double[][] {from, last};
  }

  /** MemTotal and Cached of /proc/meminfo in bytes (zeros where it cannot be read): the page cache is the DRAM tier. */
  static long[] hostMemory() {
    long[] out = new long[2];
    try {
      for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
        String[] p = line.trim().split("\\s+");
        if (p.length >= 2 && p[0].equals("MemTotal:")) {
          out[0] = Long.parseLong(p[1]) * 1024;
        } else if (p.length >= 2 && p[0].equals("Cached:")) {
          out[1] = Long.parseLong(p[1]) * 1024;
        }
      }
    } catch (IOException | RuntimeException e) {
      // Not Linux: the DRAM tier is reported as unknown.
    }
    return out;
  }
}
