package io.strata.sdk.loader;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongUnaryOperator;
import java.util.function.Supplier;

/**
 * Produces batches {@code first, first+1, ..., end-1} on named background threads and hands them
 * out in order. At most {@code depth} batches are produced ahead of the consumer: a worker waits
 * before producing a batch beyond that window, so memory is bounded (back-pressure, no unbounded
 * queue). An error while producing a batch is rethrown to the consumer when it reaches that batch.
 *
 * <p>Batches are claimed in order, each by the first worker free. With {@code reserveNext}, a
 * worker claims its next batch together with the current one and tells its producer which it is
 * ({@link Producer#produce}'s {@code next}), so that the producer can prepare it while it makes
 * the current one ({@code PlanAhead}); a reserved batch is produced only once it is within the
 * window, like any other. The consumer's next batch is always one a worker is producing, has
 * made, or holds reserved while free to produce it, so reserving never stalls the consumer.
 *
 * <p>Threads and locks: the workers and the consumer share one lock ({@code lock}) guarding the
 * claim counter, the consumed counter and the batches ready; producing runs outside it.
 */
final class Prefetcher implements AutoCloseable {
  /** Produces batch {@code g}; one instance per worker thread. */
  interface Producer extends AutoCloseable {
    /**
     * Makes global step {@code g}; {@code next} is the step this producer makes after it where
     * the prefetcher reserves it ({@code reserveNext}), else -1.
     */
    Batch produce(long g, long next) throws Exception;

    @Override
    void close() throws IOException;
  }

  private record Result(Batch batch, Throwable error) {}

  private final Object lock = new Object();
  @GuardedBy("lock")
  private final Map<Long, Result> ready = new HashMap<>();
  private final List<Thread> workers = new ArrayList<>();
  private final int depth;
  private final long end;
  private final boolean reserveNext;
  @GuardedBy("lock")
  private long nextToClaim;
  @GuardedBy("lock")
  private long consumed;
  @GuardedBy("lock")
  private boolean closed;

  /** Which global step the {@code n}-th batch delivered is: chosen as it is claimed, in order, under this object's lock. */
  private final LongUnaryOperator order;

  Prefetcher(String name, int threads, int depth, long first, long end, Supplier<Producer> producers) {
    this(name, threads, depth, first, end, producers, n -> n, false);
  }

  /**
   * As above, the {@code n}-th batch being global step {@code order(n)} ({@code order} is called
   * once per batch, in order of {@code n}, under the prefetcher's lock, when the batch is claimed
   * or reserved); with {@code reserveNext}, each worker reserves its next batch as it claims one.
   */
  Prefetcher(String name, int threads, int depth, long first, long end, Supplier<Producer> producers,
      LongUnaryOperator order, boolean reserveNext) {
    this.order = order;
    this.reserveNext = reserveNext;
    if (threads < 1 || depth < 1) {
      throw new IllegalArgumentException("prefetch needs at least one thread and a depth of at least one");
    }
    this.depth = depth;
    this.end = end;
    this.nextToClaim = first;
    this.consumed = first;
    for (int i = 0; i < threads; i++) {
      Thread t = Thread.ofPlatform().name(name + "-" + i).daemon(true).unstarted(() -> work(producers));
      workers.add(t);
    }
    workers.forEach(Thread::start);
  }

  private void work(Supplier<Producer> producers) {
    // This worker's reserved batch (its number and step), or -1.
    long reservedN = -1;
    long reservedG = -1;
    try (Producer producer = producers.get()) {
      while (true) {
        long g;
        long n;
        long next = -1;
        synchronized (lock) {
          while (!closed && (reservedN >= 0 ? reservedN >= consumed + depth
              : nextToClaim >= end || nextToClaim >= consumed + depth)) {
            lock.wait();
          }
          if (closed) {
            return;
          }
          if (reservedN >= 0) {
            n = reservedN;
            g = reservedG;
            reservedN = -1;
          } else {
            n = nextToClaim++;
            g = order.applyAsLong(n);
          }
          if (reserveNext && nextToClaim < end) {
            reservedN = nextToClaim++;
            reservedG = order.applyAsLong(reservedN);
            next = reservedG;
          }
        }
        Result r;
        try {
          r = new Result(producer.produce(g, next), null);
        } catch (Throwable e) {
          r = new Result(null, e);
        }
        synchronized (lock) {
          if (closed) {
            if (r.batch() != null) {
              r.batch().close();
            }
            return;
          }
          ready.put(n, r);
          lock.notifyAll();
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      failReserved(reservedN, new IOException("prefetch thread " + Thread.currentThread().getName() + " was interrupted", e));
    } catch (Exception e) {
      synchronized (lock) {
        // A producer that fails to start or close fails every batch it would have made.
        ready.putIfAbsent(nextToClaim, new Result(null, e));
        lock.notifyAll();
      }
      failReserved(reservedN, e);
    }
  }

  /** A worker leaving with batch {@code n} reserved: nobody else makes it, so the consumer gets {@code e} there. */
  private void failReserved(long n, Exception e) {
    if (n >= 0) {
      synchronized (lock) {
        ready.putIfAbsent(n, new Result(null, e));
        lock.notifyAll();
      }
    }
  }

  /** The next batch in order, or null after the last. */
  Batch take() throws IOException {
    Result r;
    synchronized (lock) {
      if (consumed >= end) {
        return null;
      }
      try {
        while (!closed && !ready.containsKey(consumed)) {
          lock.wait();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while waiting for batch " + consumed, e);
      }
      if (closed) {
        throw new IllegalStateException("the loader is closed");
      }
      r = ready.remove(consumed);
      consumed++;
      lock.notifyAll();
    }
    if (r.error() != null) {
      Throwable e = r.error();
      if (e instanceof IOException io) {
        throw io;
      }
      if (e instanceof UncheckedIOException u) {
        throw u.getCause();
      }
      if (e instanceof RuntimeException re) {
        throw re;
      }
      throw new IOException("producing a batch failed: " + e, e);
    }
    return r.batch();
  }

  /** Batches produced and not yet taken. */
  int readyCount() {
    synchronized (lock) {
      return ready.size();
    }
  }

  @Override
  public void close() {
    synchronized (lock) {
      closed = true;
      lock.notifyAll();
      for (Result r : ready.values()) {
        if (r.batch() != null) {
          r.batch().close();
        }
      }
      ready.clear();
    }
    for (Thread t : workers) {
      try {
        t.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }
}
