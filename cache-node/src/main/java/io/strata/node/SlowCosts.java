package io.strata.node;

import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.derive.Spec;
import java.io.IOException;
import java.util.concurrent.ArrayBlockingQueue;

/**
 * What a miss of each chunk of a feature reads from the slow tier: its stored (compressed) bytes,
 * from the files' footers ({@link io.strata.sdk.files.HddTable#storedBytes}), told to the policy
 * so that it weighs an admission by the slow-tier bytes it saves (see "Worth the write" in
 * {@link io.strata.node.policy.StrataPolicy}). Until a feature's figures arrive, or where a table
 * cannot tell them, the policy weighs its chunks by their SSD bytes.
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

  /** Learn the slow-tier bytes of every chunk of {@code feature}, whose keys start at {@code base}. */
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
      int chunks = r.dataset().chunks().size();
      long[] stored = new long[chunks];
      try {
        for (int c = 0; c < chunks; c++) {
          stored[c] = r.dataset().table().storedBytes(c, r.feature());
        }
      } catch (IOException | RuntimeException e) {
        // A closed or replaced version, a file gone: its chunks keep their SSD bytes as their weight.
        LOG.log(System.Logger.Level.DEBUG, "slow-tier bytes of " + r.feature() + " of dataset " + r.dataset().name() + " not known: " + e);
        continue;
      }
      state.slowBytes(r.dataset(), r.feature(), r.base(), stored);
    }
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
