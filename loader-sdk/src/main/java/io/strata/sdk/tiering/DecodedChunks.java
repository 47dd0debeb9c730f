package io.strata.sdk.tiering;

import io.strata.sdk.Column;
import java.lang.foreign.Arena;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Chunks this JVM's readers decoded whole from the slow tier, offered to a cache node's promoter
 * in the same JVM (a node hosting its jobs' loader service: {@code node start --loader-socket}),
 * so that admitting a chunk a job has just read writes what the job decoded instead of reading and
 * decoding the slow tier a second time (issue 58: the fleet's promotions were a second read of
 * every admitted chunk, and a sixth of the node's CPU).
 *
 * <p>A reader offers the columns of a whole-chunk block as it decodes them ({@link #offer}) and
 * withdraws them when it drops the block ({@link Holder#close}); the block's memory is freed only
 * when the reader has dropped it and no promoter holds it ({@link #take} retains it until the lease
 * is closed). Keyed by dataset name and version, chunk and feature: a version names the data, so
 * any reader's decode of a key is the same columns. Nothing here reads a file or crosses a process.
 *
 * <p>Threads: any. The table is a concurrent map; each block's reference count is guarded by its
 * holder's monitor, and a block's arena is shared (readable by the promoter's thread) and closed
 * by whichever thread drops the last reference.
 */
public final class DecodedChunks {
  private DecodedChunks() {}

  private record Key(String dataset, String version, int chunk, String feature) {}

  private record Offer(Column column, Holder holder) {}

  private static final ConcurrentHashMap<Key, Offer> OFFERED = new ConcurrentHashMap<>();
  private static final AtomicLong TAKEN = new AtomicLong();
  private static volatile boolean enabled;

  /**
   * Turns offering on for this JVM: a cache node hosting its jobs' loaders calls it (elsewhere no
   * promoter could take an offer, and readers keep their blocks in confined arenas, cheaper to free).
   */
  public static void enable() {
    enabled = true;
  }

  /** Whether readers offer what they decode whole ({@link #enable}). */
  static boolean enabled() {
    return enabled;
  }

  /** A whole-chunk block's memory: a shared arena freed when its reader and every promoter holding it are done. */
  static final class Holder implements AutoCloseable {
    final Arena arena = Arena.ofShared();
    private final List<Key> keys = new java.util.ArrayList<>();
    private int refs = 1;

    private synchronized boolean retain() {
      if (refs == 0) {
        return false;
      }
      refs++;
      return true;
    }

    private void release() {
      boolean last;
      synchronized (this) {
        last = --refs == 0;
      }
      if (last) {
        arena.close();
      }
    }

    /** The reader drops the block: its offers are withdrawn, and its memory freed once no promoter holds it. */
    @Override
    public void close() {
      List<Key> mine;
      synchronized (this) {
        mine = List.copyOf(keys);
        keys.clear();
      }
      for (Key k : mine) {
        OFFERED.computeIfPresent(k, (key, o) -> o.holder == this ? null : o);
      }
      release();
    }
  }

  /** Offers {@code column}, every row of {@code chunk} of {@code feature}, held in {@code holder}'s arena. */
  static void offer(String dataset, String version, int chunk, String feature, Column column, Holder holder) {
    Key k = new Key(dataset, version, chunk, feature);
    synchronized (holder) {
      holder.keys.add(k);
    }
    OFFERED.put(k, new Offer(column, holder));
  }

  /** A promoter's hold on an offered column: readable until closed. */
  public static final class Lease implements AutoCloseable {
    private final Column column;
    private final Holder holder;
    private boolean closed;

    private Lease(Column column, Holder holder) {
      this.column = column;
      this.holder = holder;
    }

    /** Every row of the chunk, as the reader decoded it. */
    public Column column() {
      return column;
    }

    @Override
    public void close() {
      if (!closed) {
        closed = true;
        holder.release();
      }
    }
  }

  /** The column a reader of this JVM decoded for {@code feature} of {@code chunk}, held until the lease is closed; null where none is offered. */
  public static Lease take(String dataset, String version, int chunk, String feature) {
    Offer o = OFFERED.get(new Key(dataset, version, chunk, feature));
    if (o == null || !o.holder.retain()) {
      return null;
    }
    TAKEN.incrementAndGet();
    return new Lease(o.column, o.holder);
  }

  /** Columns taken by promoters so far in this JVM. */
  public static long taken() {
    return TAKEN.get();
  }

  /** Columns on offer now. */
  public static int offered() {
    return OFFERED.size();
  }
}
