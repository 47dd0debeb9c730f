package io.strata.node;

import java.util.concurrent.atomic.LongAdder;

/**
 * The node's running totals: reads per tier, flash bytes written, promotions, evictions and
 * failures, with the last failure and the last damaged segment in words.
 *
 * <p>Threads and locks: none. Every counter is a {@link LongAdder} and every note a volatile
 * string, so the reads path, the promotion threads and the status and metrics readers never
 * wait for each other here; a {@link #snapshot()} is not one instant across counters (each value
 * is exact, their sum may straddle a read being counted).
 */
final class TierCounters {
  final LongAdder reads = new LongAdder();
  final LongAdder ssdReads = new LongAdder();
  final LongAdder ssdBytes = new LongAdder();
  final LongAdder hddBytes = new LongAdder();
  /**
   * Of {@link #hddBytes}: bytes read from ORC while the chunk's segment was being written (placed,
   * not landed), and after it had landed but before the reader re-resolved: what a placement's
   * latency costs the jobs.
   */
  final LongAdder hddBytesInFlight = new LongAdder();
  final LongAdder hddBytesLanded = new LongAdder();
  /** Placements that landed, and the time from placement to landing summed over them. */
  final LongAdder landings = new LongAdder();
  final LongAdder landingNanos = new LongAdder();
  final LongAdder flashBytes = new LongAdder();
  final LongAdder promotions = new LongAdder();
  final LongAdder promotionFailures = new LongAdder();
  final LongAdder evictions = new LongAdder();
  final LongAdder rejectedPromotions = new LongAdder();
  final LongAdder damagedSegments = new LongAdder();
  /** Resident segments whose file was found gone (deleted or replaced under the node). */
  final LongAdder vanishedSegments = new LongAdder();
  /** Segments placed again after being found gone or damaged. */
  final LongAdder repairedSegments = new LongAdder();
  /** Bytes of segments whose checksums the background scrub verified, and its completed passes. */
  final LongAdder scrubbedBytes = new LongAdder();
  final LongAdder scrubPasses = new LongAdder();
  /** Bytes the node's promotions decoded from ORC (the HDD tier), on its own threads. */
  final LongAdder promotionOrcBytes = new LongAdder();
  /** Promotions that wrote the chunk a job's reader in this JVM had just decoded, reading nothing (DecodedChunks). */
  final LongAdder promotionsFromReaders = new LongAdder();
  /** Segment bytes written from ORC decodes, and the time the decodes and writes took. */
  final LongAdder orcSegmentBytes = new LongAdder();
  final LongAdder orcNanos = new LongAdder();
  /** Chunks copied from peers, their bytes and the time it took; failed peer reads. */
  final LongAdder peerReads = new LongAdder();
  final LongAdder peerBytes = new LongAdder();
  final LongAdder peerNanos = new LongAdder();
  final LongAdder peerFailures = new LongAdder();
  /** Segments this node served to peers, and their bytes. */
  final LongAdder peerServed = new LongAdder();
  final LongAdder peerServedBytes = new LongAdder();
  /** Plans of distributed jobs' ranks that other nodes shared and this node installed. */
  final LongAdder sharedPlansInstalled = new LongAdder();
  /** What the last failed peer read was and why, or null. */
  volatile String lastPeerFailure;
  /** What the last failed promotion was and why, or null. */
  volatile String lastPromotionFailure;
  /** What the last damaged segment's check found, or null. */
  volatile String lastDamagedSegment;

  /** The counters' values, read one after another. */
  record Snapshot(long reads, long ssdReads, long ssdBytes, long hddBytes, long flashBytes, long promotions,
      long promotionFailures, long evictions, long rejectedPromotions, long damagedSegments) {
    /** SSD bytes over all bytes read (0 before any read). */
    double byteHitRatio() {
      long total = ssdBytes + hddBytes;
      return total == 0 ? 0 : (double) ssdBytes / total;
    }
  }

  Snapshot snapshot() {
    return new Snapshot(reads.sum(), ssdReads.sum(), ssdBytes.sum(), hddBytes.sum(), flashBytes.sum(), promotions.sum(),
        promotionFailures.sum(), evictions.sum(), rejectedPromotions.sum(), damagedSegments.sum());
  }
}
