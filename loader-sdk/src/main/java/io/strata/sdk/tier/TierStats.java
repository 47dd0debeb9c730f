package io.strata.sdk.tier;

import java.util.concurrent.atomic.LongAdder;

/**
 * Bytes and time spent reading per tier, as seen by one reader. Bytes count the column data
 * handed out to batches (values, offsets, validity) from each tier, so the tiers compare on equal
 * terms, and the node's figures (the sum of what jobs report) are the jobs' figures summed: this is
 * the one definition of "bytes read" from a tier everywhere. What decoding ORC cost (whole row
 * groups, some rows of which a batch may not use, reused by later batches) is counted apart, as
 * {@link #orcDecodedBytes()}. Figures are per {@link Tier}.
 */
public final class TierStats {
  /** Counts starting at zero. */
  public TierStats() {}

  private final LongAdder[] bytes = adders();
  private final LongAdder[] nanos = adders();
  private final LongAdder[] reads = adders();

  private static LongAdder[] adders() {
    LongAdder[] a = new LongAdder[Tier.values().length];
    for (int i = 0; i < a.length; i++) {
      a[i] = new LongAdder();
    }
    return a;
  }
  private final LongAdder orcDecoded = new LongAdder();

  /** Bytes of column data decoded from ORC (row groups, kept for nearby reads). */
  public void recordOrcDecoded(long byteCount) {
    orcDecoded.add(byteCount);
  }

  /** Bytes of column data decoded from ORC to serve the HDD tier's reads. */
  public long orcDecodedBytes() {
    return orcDecoded.sum();
  }

  private final LongAdder readAhead = new LongAdder();

  /** A resident chunk's column read ahead whole, its block about to be read (a chunk-block shuffle). */
  public void recordReadAhead() {
    readAhead.increment();
  }

  /** Resident chunk columns read ahead whole before their block was read. */
  public long chunkColumnsReadAhead() {
    return readAhead.sum();
  }

  private final LongAdder released = new LongAdder();

  /** A resident chunk's column whose block had been read released from this process's mappings. */
  public void recordReleased() {
    released.increment();
  }

  /** Resident chunk columns released from this process's mappings once their block had been read. */
  public long chunkColumnsReleased() {
    return released.sum();
  }

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
