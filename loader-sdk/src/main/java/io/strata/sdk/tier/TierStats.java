package io.strata.sdk.tier;

import java.util.concurrent.atomic.LongAdder;

/**
 * Bytes and time spent reading per tier, as seen by one reader. Bytes count the decoded column
 * data handed out (values, offsets, validity), so the tiers compare on equal terms.
 */
public final class TierStats {
  /** Counts starting at zero. */
  public TierStats() {}

  /** A tier data is read from. */
  public enum Tier {
    /** Memory-mapped segments on the SSD tier (and the page cache above them). */
    SSD,
    /** ORC files on the HDD tier. */
    HDD
  }

  private final LongAdder[] bytes = {new LongAdder(), new LongAdder()};
  private final LongAdder[] nanos = {new LongAdder(), new LongAdder()};
  private final LongAdder[] reads = {new LongAdder(), new LongAdder()};

  public void record(Tier tier, long byteCount, long elapsedNanos) {
    bytes[tier.ordinal()].add(byteCount);
    nanos[tier.ordinal()].add(elapsedNanos);
    reads[tier.ordinal()].increment();
  }

  public long bytes(Tier tier) {
    return bytes[tier.ordinal()].sum();
  }

  public long nanos(Tier tier) {
    return nanos[tier.ordinal()].sum();
  }

  /** Number of reads (row ranges of one chunk) served by the tier. */
  public long reads(Tier tier) {
    return reads[tier.ordinal()].sum();
  }

  /** Fraction of bytes served by the SSD tier. */
  public double ssdByteFraction() {
    long s = bytes(Tier.SSD);
    long total = s + bytes(Tier.HDD);
    return total == 0 ? 0 : (double) s / total;
  }

  @Override
  public String toString() {
    return "TierStats[ssd " + bytes(Tier.SSD) + " B in " + nanos(Tier.SSD) / 1_000_000 + " ms, hdd "
        + bytes(Tier.HDD) + " B in " + nanos(Tier.HDD) / 1_000_000 + " ms]";
  }
}
