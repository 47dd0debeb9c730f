package io.strata.sdk.files;

/**
 * What a read request costs on a disk that seeks: the time of each request from where the
 * previous one on the same device ended.
 *
 * <p>The model, per request of {@code length} bytes starting {@code distance} bytes after the
 * end of the previous request (negative: before it):
 *
 * <ul>
 *   <li>a command overhead, every request;
 *   <li>positioning: none for a request that starts where the previous ended; for a forward skip,
 *       the sooner of letting the skipped bytes pass under the head (their length at the transfer
 *       rate: the drive reads on into its buffer, and skew hides track and head switches) and a
 *       seek plus the average rotational latency; backwards, a seek plus the average latency;
 *   <li>the seek of a distance: the single-track seek plus {@code (average - single track)} times
 *       the square root of the distance over a third of the drive (the average seek's distance),
 *       the shape of short seeks where the arm accelerates and settles;
 *   <li>transfer: the length at the sustained rate.
 * </ul>
 *
 * <p>Requests are taken back to back (a synchronous reader's CPU time adds to the replay's time;
 * the disk does not rotate ahead for free while the reader decodes). {@link #HDD}'s figures are a
 * 7,200 rpm drive's published ones (see there). Immutable; {@link Replay} is one thread's.
 */
public record DiskModel(String name, double averageSeekMs, double singleTrackSeekMs, double rpm,
    double bytesPerSecond, long capacityBytes, double commandOverheadMs) {

  /**
   * A 7,200 rpm 3.5-inch 4 TB drive: average read seek 7.4 ms and single-track read seek 0.23 ms
   * (typical, without command overhead, including settling) and 4.16 ms average latency, from
   * Western Digital's Ultrastar DC HC310 OEM specification (§4.5.1); a sustained transfer rate
   * of 200 MB/s (the middle of such drives' outer-to-inner zones, 250 to 120 MB/s) and a command
   * overhead of 0.2 ms are this model's assumptions.
   */
  public static final DiskModel HDD = new DiskModel("7,200 rpm HDD (WD Ultrastar DC HC310 seek and latency figures)",
      7.4, 0.23, 7200, 200e6, 4_000_000_000_000L, 0.2);

  public DiskModel {
    if (!(averageSeekMs > singleTrackSeekMs && singleTrackSeekMs >= 0 && rpm > 0 && bytesPerSecond > 0
        && capacityBytes > 0 && commandOverheadMs >= 0)) {
      throw new IllegalArgumentException("a disk model needs average seek > single-track seek >= 0 and positive rpm,"
          + " rate and capacity: " + name);
    }
  }

  /** Average rotational latency: half a revolution, in seconds. */
  public double latencySeconds() {
    return 30.0 / rpm;
  }

  /** The arm's seek over {@code distance} bytes of the drive, in seconds (0 for none). */
  public double seekSeconds(long distance) {
    long d = Math.abs(distance);
    if (d == 0) {
      return 0;
    }
    double third = capacityBytes / 3.0;
    return (singleTrackSeekMs + (averageSeekMs - singleTrackSeekMs) * Math.sqrt(Math.min(d, capacityBytes) / third)) / 1e3;
  }

  /** Positioning before a request that starts {@code distance} bytes after the previous one ended. */
  public double positionSeconds(long distance) {
    double seek = seekSeconds(distance) + latencySeconds();
    if (distance == 0) {
      return 0;
    }
    return distance > 0 ? Math.min(distance / bytesPerSecond, seek) : seek;
  }

  /** One request of {@code length} bytes, {@code distance} bytes after the previous one's end. */
  public double requestSeconds(long distance, long length) {
    return commandOverheadMs / 1e3 + positionSeconds(distance) + length / bytesPerSecond;
  }

  /** One request with no previous position known: an average seek and latency. */
  public double firstRequestSeconds(long length) {
    return (commandOverheadMs + averageSeekMs) / 1e3 + latencySeconds() + length / bytesPerSecond;
  }

  /**
   * The largest forward gap worth reading through rather than skipping with a request of its own:
   * reading it costs its length at the transfer rate; skipping it costs a command overhead plus
   * the sooner of the same transfer and a seek with latency. Read through while the transfer is
   * no dearer than the overhead plus a seek with latency.
   */
  public long breakEvenGapBytes() {
    long lo = 0;
    long hi = (long) (bytesPerSecond * ((commandOverheadMs + averageSeekMs * 2) / 1e3 + latencySeconds()));
    while (lo < hi) {
      long mid = (lo + hi + 1) >>> 1;
      if (mid / bytesPerSecond <= commandOverheadMs / 1e3 + seekSeconds(mid) + latencySeconds()) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }

  /** Random reads of {@code bytes} a second, each at a uniformly random place within {@code span} bytes of the drive. */
  public double randomReadsPerSecond(long bytes, long span) {
    // The mean distance between two uniform points of a span is a third of it.
    double t = commandOverheadMs / 1e3 + seekSeconds(Math.max(1, span / 3)) + latencySeconds() + bytes / bytesPerSecond;
    return 1 / t;
  }

  /** Bytes a second of one sequential stream of back-to-back requests of {@code requestBytes}. */
  public double sequentialBytesPerSecond(long requestBytes) {
    return requestBytes / requestSeconds(0, requestBytes);
  }

  /** A replay of one device's request stream: positions are device addresses (bytes). Not thread-safe. */
  public final class Replay {
    private long end = -1;
    private long requests;
    private long bytes;
    private double seconds;
    private long seeks;

    /** Takes one request; returns its time in seconds. */
    public double read(long address, long length) {
      if (address < 0 || length < 0) {
        throw new IllegalArgumentException("a request needs a non-negative address and length: " + address + ", " + length);
      }
      double t;
      if (end < 0) {
        t = firstRequestSeconds(length);
        seeks++;
      } else {
        long distance = address - end;
        t = requestSeconds(distance, length);
        if (distance < 0 || (distance > 0 && distance / bytesPerSecond > seekSeconds(distance) + latencySeconds())) {
          seeks++;
        }
      }
      end = address + length;
      requests++;
      bytes += length;
      seconds += t;
      return t;
    }

    public long requests() {
      return requests;
    }

    public long bytes() {
      return bytes;
    }

    /** Requests that moved the arm (backwards, or a forward skip dearer than a seek), the first included. */
    public long seeks() {
      return seeks;
    }

    public double seconds() {
      return seconds;
    }
  }

  /** A new replay on this model, with no previous position. */
  public Replay replay() {
    return new Replay();
  }
}
