package io.strata.store;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Work on a key that only one thread of this process does at a time ({@link #run}): a thread that
 * asks while another runs it waits for that one and gets its result, or its IOException as thrown.
 * A feature store's computations and ingestions (by fingerprint) and its source checksums (by
 * column) each have one.
 *
 * <p>Threads: any; the running work is a concurrent map's, each entry removed when its work ends.
 */
final class SingleFlight<V> {
  /** Work that may fail with an I/O error. */
  interface Work<V> {
    V run() throws IOException;
  }

  private final Map<String, CompletableFuture<V>> running = new ConcurrentHashMap<>();

  /** Runs {@code work} for {@code key}, or waits for the thread already running work for it and returns its result. */
  V run(String key, Work<V> work) throws IOException {
    CompletableFuture<V> mine = new CompletableFuture<>();
    CompletableFuture<V> other = running.putIfAbsent(key, mine);
    if (other != null) {
      try {
        return other.join();
      } catch (CompletionException e) {
        if (e.getCause() instanceof IOException io) {
          throw io;
        }
        throw e;
      }
    }
    try {
      V done = work.run();
      mine.complete(done);
      return done;
    } catch (IOException | RuntimeException e) {
      mine.completeExceptionally(e);
      throw e;
    } finally {
      running.remove(key);
    }
  }

  /** Whether work for {@code key} is running now. */
  boolean running(String key) {
    return running.containsKey(key);
  }
}
