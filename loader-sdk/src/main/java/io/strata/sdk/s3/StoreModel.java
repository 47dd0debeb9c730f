package io.strata.sdk.s3;

import com.google.errorprone.annotations.concurrent.GuardedBy;

/**
 * What a request to one bucket costs, learned from this process's own range GETs: the time to a
 * response's first byte (request sent to headers received) and the rate one connection then
 * moves the body at, each a moving average. Until enough requests were seen, the settings'
 * figures ({@code firstByteMs}, {@code connectionMBps}) stand in. From them, the gap between two
 * wanted ranges that one request reads through rather than asking twice ({@link #gapBytes}): a
 * first byte's time at one connection's rate, what a second request would cost in bytes.
 *
 * <p>Threads: any thread records and asks; the averages are guarded by this object's monitor.
 */
final class StoreModel {
  /** Weight of each new sample in the moving averages. */
  private static final double ALPHA = 0.1;
  /** Requests whose first byte is timed before the measured figure replaces the setting. */
  static final int FIRST_BYTE_SAMPLES = 8;
  /** Bodies timed (each at least {@link #RATE_MIN_BYTES}) before the measured rate replaces the setting. */
  static final int RATE_SAMPLES = 4;
  /** The smallest body whose time says something of the rate (below, the first byte's time dominates). */
  static final long RATE_MIN_BYTES = 256 << 10;
  /** The largest gap read through, whatever the figures (a request's worth is never more than this). */
  static final long MAX_GAP = 64L << 20;

  @GuardedBy("this")
  private double firstByteSeconds;
  @GuardedBy("this")
  private int firstBytes;
  @GuardedBy("this")
  private double bytesPerSecond;
  @GuardedBy("this")
  private int bodies;

  /** A request's headers came {@code nanos} after it was sent. */
  synchronized void firstByte(long nanos) {
    double s = nanos / 1e9;
    firstByteSeconds = firstBytes == 0 ? s : firstByteSeconds + ALPHA * (s - firstByteSeconds);
    firstBytes++;
  }

  /** A body of {@code bytes} took {@code nanos} after its headers. */
  synchronized void body(long bytes, long nanos) {
    if (bytes < RATE_MIN_BYTES || nanos <= 0) {
      return;
    }
    double r = bytes / (nanos / 1e9);
    bytesPerSecond = bodies == 0 ? r : bytesPerSecond + ALPHA * (r - bytesPerSecond);
    bodies++;
  }

  /** The time to a first byte in force: measured, or the settings'. */
  synchronized double firstByteSeconds(S3Settings prior) {
    return firstBytes >= FIRST_BYTE_SAMPLES ? firstByteSeconds : prior.firstByteMs() / 1e3;
  }

  /** One connection's rate in force: measured, or the settings'. */
  synchronized double bytesPerSecond(S3Settings prior) {
    return bodies >= RATE_SAMPLES ? bytesPerSecond : prior.connectionMBps() * 1e6;
  }

  /** The gap one request reads through: a first byte's time at one connection's rate, at most {@link #MAX_GAP}. */
  long gapBytes(S3Settings prior) {
    return (long) Math.min(MAX_GAP, firstByteSeconds(prior) * bytesPerSecond(prior));
  }
}
