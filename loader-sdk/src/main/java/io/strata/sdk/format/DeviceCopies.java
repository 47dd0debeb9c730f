package io.strata.sdk.format;

import io.strata.sdk.SegmentLease;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * The copies of a batch left to a device: ranges of mapped segments that a GPU reads straight
 * from host memory (pages registered with its driver), recorded by the batch's {@link
 * ColumnBuilder}s instead of being copied on the host. The host assembles the rest (offsets,
 * validity, anything not from a readable segment); the device's gather fills the recorded ranges
 * of the batch's buffers. A builder's values either come wholly from recorded copies ({@link
 * #covers}: nothing of that buffer is written on the host) or wholly from the host: the first
 * host write into a builder that recorded copies makes them on the host first.
 *
 * <p>The segments stay mapped until the batch is closed: the copies hold a lease on each segment
 * they read ({@link #hold}), released by {@link #close()} (after the device's copy completed).
 * {@link #completeOnHost()} makes every recorded copy on the host, for a consumer that needs the
 * whole batch in host memory.
 *
 * <p>Not thread-safe: one per assembly thread of a batch, merged on the batch's thread ({@link
 * #addAll}) once its parts are done.
 */
public final class DeviceCopies implements AutoCloseable {
  /** Whether the device reads all of a buffer of a mapped segment itself; thread-safe. */
  private final Predicate<MemorySegment> reach;
  private MemorySegment[] src = new MemorySegment[64];
  private long[] srcAt = new long[64];
  private MemorySegment[] dst = new MemorySegment[64];
  private long[] dstAt = new long[64];
  private long[] len = new long[64];
  private int n;
  private long bytes;
  private long[] covered = new long[8];
  private int coveredN;
  private final IdentityHashMap<SegmentLease, SegmentLease> holds = new IdentityHashMap<>();
  /** The last buffer {@link #reach} said the device reads (a batch reads each many times). */
  private MemorySegment lastReadable;
  private boolean closed;

  public DeviceCopies(Predicate<MemorySegment> reach) {
    this.reach = reach;
  }

  /**
   * Keeps the segment of {@code lease} mapped until this is closed; returns false when its source
   * cannot share leases (its ranges are then copied on the host).
   */
  public boolean hold(SegmentLease lease) {
    if (lease == null) {
      return false;
    }
    if (holds.containsKey(lease)) {
      return true;
    }
    SegmentLease shared = lease.share();
    if (shared == null) {
      return false;
    }
    holds.put(lease, shared);
    return true;
  }

  /** Records a copy of {@code length} bytes when the device reads {@code from}; else returns false. */
  boolean take(MemorySegment from, long fromAt, MemorySegment to, long toAt, long length) {
    if (from != lastReadable) {
      if (!reach.test(from)) {
        return false;
      }
      lastReadable = from;
    }
    append(from, fromAt, to, toAt, length);
    return true;
  }

  private void append(MemorySegment from, long fromAt, MemorySegment to, long toAt, long length) {
    if (n == len.length) {
      int cap = n * 2;
      src = Arrays.copyOf(src, cap);
      srcAt = Arrays.copyOf(srcAt, cap);
      dst = Arrays.copyOf(dst, cap);
      dstAt = Arrays.copyOf(dstAt, cap);
      len = Arrays.copyOf(len, cap);
    }
    src[n] = from;
    srcAt[n] = fromAt;
    dst[n] = to;
    dstAt[n] = toAt;
    len[n] = length;
    n++;
    bytes += length;
  }

  /** Makes on the host the recorded copies into {@code buffer}, and forgets them. */
  void flush(MemorySegment buffer) {
    int w = 0;
    for (int k = 0; k < n; k++) {
      if (dst[k] == buffer) {
        MemorySegment.copy(src[k], srcAt[k], dst[k], dstAt[k], len[k]);
        bytes -= len[k];
      } else {
        move(k, w++);
      }
    }
    clearFrom(w);
  }

  /** Forgets what the recorded copies into {@code buffer} would write from byte {@code end} on. */
  void forget(MemorySegment buffer, long end) {
    int w = 0;
    for (int k = 0; k < n; k++) {
      if (dst[k] == buffer && dstAt[k] + len[k] > end) {
        long keep = Math.max(0, end - dstAt[k]);
        bytes -= len[k] - keep;
        len[k] = keep;
        if (keep == 0) {
          continue;
        }
      }
      move(k, w++);
    }
    clearFrom(w);
  }

  private void move(int from, int to) {
    if (from != to) {
      src[to] = src[from];
      srcAt[to] = srcAt[from];
      dst[to] = dst[from];
      dstAt[to] = dstAt[from];
      len[to] = len[from];
    }
  }

  private void clearFrom(int w) {
    Arrays.fill(src, w, n, null);
    Arrays.fill(dst, w, n, null);
    n = w;
  }

  /** Notes that every byte of {@code buffer} (a built column's buffer) comes from recorded copies. */
  void cover(MemorySegment buffer) {
    if (coveredN == covered.length) {
      covered = Arrays.copyOf(covered, coveredN * 2);
    }
    covered[coveredN++] = buffer.address();
  }

  /**
   * Whether the bytes of {@code buffer} (a buffer of one of the batch's columns) all come from
   * recorded copies, so that the host need not send it.
   */
  public boolean covers(MemorySegment buffer) {
    long a = buffer.address();
    for (int k = 0; k < coveredN; k++) {
      if (covered[k] == a) {
        return true;
      }
    }
    return false;
  }

  /** Marks every builder of {@code builders} (and their lists' elements) whose values came wholly from recorded copies. */
  public void coverBuilt(List<ColumnBuilder> builders) {
    List<ColumnBuilder> all = new ArrayList<>(builders);
    for (int i = 0; i < all.size(); i++) {
      ColumnBuilder b = all.get(i);
      if (b.type().kind() == io.strata.sdk.FeatureType.Kind.LIST) {
        all.add(b.child());
      }
      MemorySegment v = b.deviceValues(this);
      if (v != null) {
        cover(v);
      }
    }
  }

  /** Takes over {@code other}'s copies, covered buffers and leases (the parts of one batch); {@code other} is left empty. */
  public void addAll(DeviceCopies other) {
    for (int k = 0; k < other.n; k++) {
      append(other.src[k], other.srcAt[k], other.dst[k], other.dstAt[k], other.len[k]);
    }
    for (int k = 0; k < other.coveredN; k++) {
      if (coveredN == covered.length) {
        covered = Arrays.copyOf(covered, coveredN * 2);
      }
      covered[coveredN++] = other.covered[k];
    }
    for (Map.Entry<SegmentLease, SegmentLease> e : other.holds.entrySet()) {
      SegmentLease had = holds.putIfAbsent(e.getKey(), e.getValue());
      if (had != null) {
        e.getValue().close();
      }
    }
    other.holds.clear();
    other.clearFrom(0);
    other.bytes = 0;
    other.coveredN = 0;
  }

  /** Copies recorded. */
  public int count() {
    return n;
  }

  /** Bytes the recorded copies move. */
  public long bytes() {
    return bytes;
  }

  /** Where copy {@code k} reads (a host address the device reads). */
  public long source(int k) {
    return src[k].address() + srcAt[k];
  }

  /** Where copy {@code k} writes (a host address within one of the batch's buffers). */
  public long target(int k) {
    return dst[k].address() + dstAt[k];
  }

  public long length(int k) {
    return len[k];
  }

  /** Makes every recorded copy on the host (the batch is then whole in host memory) and forgets them. */
  public void completeOnHost() {
    for (int k = 0; k < n; k++) {
      MemorySegment.copy(src[k], srcAt[k], dst[k], dstAt[k], len[k]);
    }
    clearFrom(0);
    bytes = 0;
    coveredN = 0;
  }

  /** Releases the leases held (the device no longer reads the segments). Idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (SegmentLease l : holds.values()) {
      l.close();
    }
    holds.clear();
    clearFrom(0);
  }
}
