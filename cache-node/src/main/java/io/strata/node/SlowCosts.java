package io.strata.node;

import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.derive.Spec;
import io.strata.sdk.files.DiskModel;
import io.strata.sdk.s3.S3FileSystems;
import java.io.IOException;
import java.util.concurrent.ArrayBlockingQueue;

/**
 * What a miss of each chunk of a feature costs the slow tier, told to the policy so that it weighs
 * an admission by the slow tier's time it saves (see "Worth the write" in {@link
 * io.strata.node.policy.StrataPolicy}): the chunk's stored (compressed) bytes, from the files'
 * footers ({@link io.strata.sdk.files.HddTable#storedBytes}), plus what the read's positioning
 * costs, as the bytes the tier would transfer meanwhile ({@link #requestBytes}). An HDD spends
 * 11.8 ms placing its head for any read, 2.35 MB at its 200 MB/s: a 52 KB column chunk costs it
 * about as much time as a 2.4 MB one, and weighing chunks by bytes alone kept the fleet's small
 * columns off the SSD while each of their reads cost a whole request (issue 58: the slow tier
 * served its 85 requests a second, and those, not its bytes, bounded the later epochs). Until a
 * feature's figures arrive, or where a table cannot tell them, the policy weighs its chunks by
 * their SSD bytes.
 *
 * <p>Threads and locks: {@link TierState} never reads a file under its monitor, so it hands each
 * newly keyed feature here ({@link #request}, which never blocks: a full queue drops the request).
 * One daemon thread, {@code strata-slow-costs}, started on the first request, reads the tables
 * (which keep the footers they read for every later read) with no lock held and reports through
 * {@link TierState#slowBytes}, under the state's monitor. This object's monitor guards only the
 * thread's start and {@link #close}; the state calls in holding its own monitor, the thread calls
 * the state holding none of this one's, so the order is always state, then this.
 */
final class SlowCosts implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger("io.strata.node");
  /** Features waiting; bounded (a node keys a few hundred features at most between two reads of this queue). */
  private static final int QUEUE = 4096;

  private record Request(Dataset dataset, String feature, int base) {}

  private final TierState state;
  private final ArrayBlockingQueue<Request> queue = new ArrayBlockingQueue<>(QUEUE);
  private Thread thread;
  private boolean closed;

  SlowCosts(TierState state) {
    this.state = state;
  }

  /** Learn the slow-tier cost of every chunk of {@code feature}, whose keys start at {@code base}. */
  void request(Dataset ds, String feature, int base) {
    if (Spec.isDerived(ds, feature)) {
      return; // computed, not read from the slow tier
    }
    synchronized (this) {
      if (closed) {
        return;
      }
      if (thread == null) {
        thread = Thread.ofPlatform().name("strata-slow-costs").daemon().unstarted(this::run);
        thread.start();
      }
    }
    queue.offer(new Request(ds, feature, base));
  }

  private void run() {
    while (true) {
      Request r;
      try {
        r = queue.take();
      } catch (InterruptedException e) {
        return;
      }
      long[] stored;
      try {
        stored = costs(r.dataset(), r.feature());
      } catch (IOException | RuntimeException e) {
        // A closed or replaced version, a file gone: its chunks keep their SSD bytes as their weight.
        LOG.log(System.Logger.Level.DEBUG, "slow-tier cost of " + r.feature() + " of dataset " + r.dataset().name() + " not known: " + e);
        continue;
      }
      state.slowBytes(r.dataset(), r.feature(), r.base(), stored);
    }
  }

  /**
   * What a miss of each chunk of {@code feature} of {@code ds} costs the slow tier, in bytes: its
   * stored bytes and one read's {@link #requestBytes} (0 where the table cannot tell).
   */
  static long[] costs(Dataset ds, String feature) throws IOException {
    long perRead = requestBytes(ds);
    long[] out = new long[ds.chunks().size()];
    for (int c = 0; c < out.length; c++) {
      long b = ds.table().storedBytes(c, feature);
      out[c] = b > 0 ? b + perRead : 0;
    }
    return out;
  }

  /**
   * What one read costs the slow tier of {@code ds} beyond its bytes, as the bytes the tier would
   * transfer in that time: for an S3 store, its first byte at its per-connection rate (the store's
   * model as this process measured it); else (a local directory or HDFS, both on HDDs) {@link
   * DiskModel#HDD}'s command overhead, average seek and half a turn at its transfer rate.
   */
  static long requestBytes(Dataset ds) {
    if (S3FileSystems.isS3(ds.directory())) {
      double[] m = S3FileSystems.model(ds.directory());
      return Math.round(m[0] * m[1]);
    }
    return Math.round(DiskModel.HDD.firstRequestSeconds(0) * DiskModel.HDD.bytesPerSecond());
  }

  @Override
  public void close() {
    Thread t;
    synchronized (this) {
      closed = true;
      t = thread;
    }
    if (t != null) {
      t.interrupt();
    }
  }
}
