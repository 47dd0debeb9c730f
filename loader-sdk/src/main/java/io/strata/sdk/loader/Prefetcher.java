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
 * before making a batch beyond that window, so memory is bounded (back-pressure, no unbounded
 * queue). An error while producing a batch is rethrown to the consumer when it reaches that batch.
 *
 * <p>Which worker makes which batch: by default each batch is claimed, in order, by the first
 * worker free. {@link #inTurns} instead gives worker {@code i} of {@code T} the batches
 * {@code first+i, first+i+T, ...} (as a PyTorch {@code DataLoader} hands index batches to its
 * workers), so that each knows its next batch while it makes one and tells its producer
 * ({@link Producer#produce}'s {@code next}), which can prepare it meanwhile ({@code PlanAhead}).
 * Every batch then has its worker from the start, so no worker holds a batch another could make
 * sooner: with a window of {@code depth} batches, {@code min(depth, T)} are made at once either way.
 *
 * <p>Threads and locks: the workers and the consumer share one lock ({@code lock}) guarding the
 * claim counter, the consumed counter, the batches ready and the workers that died; producing
 * runs outside it.
 */
final class Prefetcher implements AutoCloseable {
  /** Produces batch {@code g}; one instance per worker thread. */
  interface Producer extends AutoCloseable {
    /**
     * Makes global step {@code g}; {@code next} is the step this producer makes after it where that
     * is known ({@link #inTurns}), else -1.
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
  @GuardedBy("lock")
  private long nextToClaim;
  @GuardedBy("lock")
  private long consumed;
  @GuardedBy("lock")
  private boolean closed;
  /** In turns: the workers, by index, that left before making all their batches (why), else null. */
  @GuardedBy("lock")
  private final Exception[] died;
  private final long first;
  private final int threads;
  private final boolean inTurns;

  /** Which global step the {@code n}-th batch delivered is: chosen as it is claimed, in order, under this object's lock. */
  private final LongUnaryOperator order;

  Prefetcher(String name, int threads, int depth, long first, long end, Supplier<Producer> producers) {
    this(name, threads, depth, first, end, producers, n -> n);
  }

  /**
   * As above, the {@code n}-th batch being global step {@code order(n)} ({@code order} is called
   * once per batch, in order of {@code n}, under the prefetcher's lock).
   */
  Prefetcher(String name, int threads, int depth, long first, long end, Supplier<Producer> producers,
      LongUnaryOperator order) {
    this(name, threads, depth, first, end, producers, order, false);
  }

  /**
   * Batches {@code first, ..., end-1} made in turns: worker {@code i} of {@code threads} makes
   * {@code first+i, first+i+threads, ...}, each told the next it makes (see the class note).
   */
  static Prefetcher inTurns(String name, int threads, int depth, long first, long end, Supplier<Producer> producers) {
    return new Prefetcher(name, threads, depth, first, end, producers, n -> n, true);
  }

  private Prefetcher(String name, int threads, int depth, long first, long end, Supplier<Producer> producers,
      LongUnaryOperator order, boolean inTurns) {
    this.order = order;
    if (threads < 1 || depth < 1) {
      throw new IllegalArgumentException("prefetch needs at least one thread and a depth of at least one");
    }
    this.depth = depth;
    this.end = end;
    this.nextToClaim = first;
    this.consumed = first;
    this.first = first;
    this.threads = threads;
    this.inTurns = inTurns;
    this.died = new Exception[threads];
    for (int i = 0; i < threads; i++) {
      int index = i;
      Thread t = Thread.ofPlatform().name(name + "-" + i).daemon(true)
          .unstarted(inTurns ? () -> workInTurns(index, producers) : () -> work(producers));
      workers.add(t);
    }
    int started = 0;
    try {
      for (Thread t : workers) {
        t.start();
        started++;
      }
    } catch (RuntimeException | Error e) { // OutOfMemoryError: the host has no more threads to give
      workers.subList(started, workers.size()).clear();
      close(); // the threads that did start end instead of waiting forever for a consumer
      throw e;
    }
  }

  private void work(Supplier<Producer> producers) {
    try (Producer producer = producers.get()) {
      while (true) {
        long g;
        long n;
        synchronized (lock) {
          while (!closed && (nextToClaim >= end || nextToClaim >= consumed + depth)) {
            lock.wait();
          }
          if (closed) {
            return;
          }
          n = nextToClaim++;
          g = order.applyAsLong(n);
        }
        if (!makeAndPut(producer, n, g, -1)) {
          return;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      synchronized (lock) {
        // A producer that fails to start or close fails every batch it would have made.
        ready.putIfAbsent(nextToClaim, new Result(null, e));
        lock.notifyAll();
      }
    }
  }

  /**
   * Makes step {@code g} (the {@code n}-th batch; {@code next} as {@link Producer#produce} takes it)
   * and puts it, or its error, in its place; false when the prefetcher closed meanwhile (the batch
   * is closed then, as nobody will take it).
   */
  private boolean makeAndPut(Producer producer, long n, long g, long next) {
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
        return false;
      }
      ready.put(n, r);
      lock.notifyAll();
    }
    return true;
  }

  /** Worker {@code i} in turns: batches {@code first+i, first+i+threads, ...}, each made once the window reaches it. */
  private void workInTurns(int i, Supplier<Producer> producers) {
    try (Producer producer = producers.get()) {
      for (long n = first + i; n < end; n += threads) {
        synchronized (lock) {
          while (!closed && n >= consumed + depth) {
            lock.wait();
          }
          if (closed) {
            return;
          }
        }
        long next = end - n > threads ? n + threads : -1;
        if (!makeAndPut(producer, n, n, next)) {
          return;
        }
        if (next < 0) {
          break;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      died(i, new IOException("prefetch thread " + Thread.currentThread().getName() + " was interrupted", e));
    } catch (Exception e) {
      // A producer that fails to start or close fails every batch it would have made.
      died(i, e);
    }
  }

  private void died(int i, Exception e) {
    synchronized (lock) {
      died[i] = e;
      lock.notifyAll();
    }
  }

  /** In turns, why the worker of batch {@code n} left before making it, or null. */
  @GuardedBy("lock")
  private Exception diedBefore(long n) {
    return inTurns ? died[(int) ((n - first) % threads)] : null;
  }

  /** The next batch in order, or null after the last. */
  Batch take() throws IOException {
    Result r;
    synchronized (lock) {
      if (consumed >= end) {
        return null;
      }
      try {
        while (!closed && !ready.containsKey(consumed) && diedBefore(consumed) == null) {
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
      if (r == null) {
        r = new Result(null, diedBefore(consumed));
      }
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
