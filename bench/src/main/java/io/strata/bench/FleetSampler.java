package io.strata.bench;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Reads a fleet side's processes' PSS and the slow tier's read bytes every quarter second, on a
 * thread of its own ({@code strata-fleet-sampler}); the peak and the timeline are read after it
 * stops (the timeline under its own monitor).
 */
final class FleetSampler implements Runnable {
  private final SideGroup group;
  private final SlowTier slow;
  private final long bytes0;
  private final AtomicLong peakPss = new AtomicLong();
  private volatile boolean stopped;
  /** (wall-clock seconds, slow-tier bytes since the start) samples; written by the sampler only, read after it ends. */
  private final List<double[]> timeline = new ArrayList<>();

  FleetSampler(SideGroup group, SlowTier slow) throws IOException {
    this.group = group;
    this.slow = slow;
    this.bytes0 = slow.readBytes();
  }

  @Override
  public void run() {
    while (!stopped) {
      sample();
      try {
        Thread.sleep(250);
      } catch (InterruptedException e) {
        return;
      }
    }
    sample();
  }

  private void sample() {
    long pss = 0;
    for (long pid : group.pids()) {
      try {
        pss += BenchCommand.smapsRollup(pid).getOrDefault("Pss", 0L) * 1024;
      } catch (IOException gone) {
        // exited between the listing and the read
      }
    }
    peakPss.accumulateAndGet(pss, Math::max);
    try {
      synchronized (timeline) {
        timeline.add(new double[] {System.currentTimeMillis() / 1e3, slow.readBytes() - bytes0});
      }
    } catch (IOException ignored) {
      // the device's counters could not be read this time
    }
  }

  void stop() {
    stopped = true;
  }

  long peakPss() {
    return peakPss.get();
  }

  long slowBytes() {
    synchronized (timeline) {
      return timeline.isEmpty() ? 0 : (long) timeline.getLast()[1];
    }
  }

  /** The slow-tier bytes read by wall-clock time {@code t} (the first sample at or after it). */
  long slowBytesAt(double t) {
    synchronized (timeline) {
      for (double[] s : timeline) {
        if (s[0] >= t) {
          return (long) s[1];
        }
      }
      return timeline.isEmpty() ? 0 : (long) timeline.getLast()[1];
    }
  }
}
