package io.strata.node.policy;

import java.util.Arrays;

/**
 * S3-FIFO (Yang et al., "FIFO queues are all you need for cache eviction", SOSP 2023), by bytes:
 * a small FIFO of a tenth of the budget that every new chunk enters, a main FIFO for the rest,
 * and a ghost FIFO of chunks lately evicted from the small one (keys only, as many bytes as the
 * main queue may hold). A read of a resident chunk raises its two-bit counter (at most 3). When
 * room is needed: while the small queue holds more than its tenth, its oldest chunk moves to the
 * main queue if it was read again since it came in, else it is evicted and remembered in the
 * ghost; otherwise the main queue's oldest chunk is evicted unless it was read again (then its
 * counter drops by one and it goes back in: FIFO with reinsertion). A missed chunk the ghost
 * remembers goes straight to the main queue. Every miss that fits is admitted (a flash write).
 *
 * <p>Pinned chunks are never evicted: one leaving the small queue moves to the main queue, and
 * the main queue puts them back in. Chunks placed by the node for other reasons than a read
 * ({@link #place}) go to the main queue. The published algorithm counts objects; here the two
 * queues' shares and the ghost are bytes, as the tier's budget is. Not thread-safe.
 */
public final class S3FifoPolicy implements CachePolicy {
  private static final byte NONE = 0;
  private static final byte SMALL = 1;
  private static final byte MAIN = 2;
  private static final byte GHOST = 3;
  private static final int MAX_FREQ = 3;

  private long budget;
  private long smallBytes;
  private long mainBytes;
  private long ghostBytes;
  private byte[] where = new byte[256];
  private byte[] freq = new byte[256];
  private long[] size = new long[256];
  private boolean[] pinned = new boolean[256];
  /** Each key's queue entry is valid while its stamp matches (entries of removed keys are dropped lazily). */
  private int[] stamp = new int[256];
  private final Fifo small = new Fifo();
  private final Fifo main = new Fifo();
  private final Fifo ghost = new Fifo();

  public S3FifoPolicy(long budgetBytes) {
    CachePolicy.checkBudget(budgetBytes);
    this.budget = budgetBytes;
  }

  @Override
  public String name() {
    return "s3fifo";
  }

  private void ensure(int key) {
    if (key >= where.length) {
      int n = Math.max(where.length * 2, key + 1);
      where = Arrays.copyOf(where, n);
      freq = Arrays.copyOf(freq, n);
      size = Arrays.copyOf(size, n);
      pinned = Arrays.copyOf(pinned, n);
      stamp = Arrays.copyOf(stamp, n);
    }
  }

  private long smallShare() {
    return budget / 10;
  }

  @Override
  public Outcome access(double time, int job, int key, long bytes, Evictions evictions) {
    ensure(key);
    if (isResident(key)) {
      freq[key] = (byte) Math.min(MAX_FREQ, freq[key] + 1);
      return Outcome.HIT;
    }
    if (bytes > budget) {
      return Outcome.MISS_BYPASSED;
    }
    boolean remembered = where[key] == GHOST;
    if (remembered) {
      forgetGhost(key);
    }
    while (smallBytes + mainBytes + bytes > budget) {
      if (!evictOne(evictions)) {
        return Outcome.MISS_BYPASSED; // only pinned chunks left
      }
    }
    enter(key, bytes, remembered ? MAIN : SMALL);
    return Outcome.MISS_ADMITTED;
  }

  /** Puts {@code key} at the tail of queue {@code q} (SMALL or MAIN), counter cleared. */
  private void enter(int key, long bytes, byte q) {
    where[key] = q;
    freq[key] = 0;
    size[key] = bytes;
    if (q == SMALL) {
      smallBytes += bytes;
      small.add(key, ++stamp[key]);
    } else {
      mainBytes += bytes;
      main.add(key, ++stamp[key]);
    }
  }

  /** Evicts one chunk (reported to {@code evictions}); false if every resident chunk is pinned. */
  private boolean evictOne(Evictions evictions) {
    if (smallBytes > smallShare() || mainBytes == 0) {
      if (evictSmall(evictions)) {
        return true;
      }
    }
    return evictMain(evictions) || evictSmall(evictions);
  }

  private boolean evictSmall(Evictions evictions) {
    while (!small.isEmpty()) {
      long e = small.poll();
      int k = Fifo.key(e);
      if (where[k] != SMALL || stamp[k] != Fifo.stamp(e)) {
        continue; // removed or moved since
      }
      smallBytes -= size[k];
      if (pinned[k] || freq[k] >= 1) {
        // Read again while in the small queue (or pinned): kept, in the main queue.
        where[k] = MAIN;
        freq[k] = 0;
        mainBytes += size[k];
        main.add(k, ++stamp[k]);
        continue;
      }
      where[k] = GHOST;
      ghostBytes += size[k];
      ghost.add(k, ++stamp[k]);
      trimGhost();
      evictions.evicted(k);
      return true;
    }
    return false;
  }

  private boolean evictMain(Evictions evictions) {
    // Each pass over an entry either evicts it, lowers its counter or finds it pinned: bounded.
    long tries = 4L * main.size() + 1;
    while (!main.isEmpty() && tries-- > 0) {
      long e = main.poll();
      int k = Fifo.key(e);
      if (where[k] != MAIN || stamp[k] != Fifo.stamp(e)) {
        continue;
      }
      if (pinned[k] || freq[k] > 0) {
        if (!pinned[k]) {
          freq[k]--;
        }
        main.add(k, ++stamp[k]);
        continue;
      }
      where[k] = NONE;
      mainBytes -= size[k];
      evictions.evicted(k);
      return true;
    }
    return false;
  }

  /** Forgets the oldest ghosts while they hold more bytes than the main queue may. */
  private void trimGhost() {
    long cap = budget - smallShare();
    while (ghostBytes > cap && !ghost.isEmpty()) {
      long e = ghost.poll();
      int k = Fifo.key(e);
      if (where[k] == GHOST && stamp[k] == Fifo.stamp(e)) {
        where[k] = NONE;
        ghostBytes -= size[k];
      }
    }
  }

  /** Takes {@code key} out of the ghost (its entry there is dropped when reached). */
  private void forgetGhost(int key) {
    where[key] = NONE;
    ghostBytes -= size[key];
    stamp[key]++;
  }

  @Override
  public void pin(int key, long bytes, boolean pin) {
    ensure(key);
    pinned[key] = pin;
  }

  @Override
  public boolean place(int key, long bytes, Placement why) {
    ensure(key);
    if (isResident(key)) {
      resizeResident(key, bytes);
      return true;
    }
    if (why != Placement.FOUND && smallBytes + mainBytes + bytes > budget) {
      return false;
    }
    if (where[key] == GHOST) {
      forgetGhost(key);
    }
    enter(key, bytes, MAIN);
    return true;
  }

  private void resizeResident(int key, long bytes) {
    if (where[key] == SMALL) {
      smallBytes += bytes - size[key];
    } else {
      mainBytes += bytes - size[key];
    }
    size[key] = bytes;
  }

  @Override
  public void resize(int key, long bytes, double now, Evictions evictions) {
    ensure(key);
    if (isResident(key)) {
      resizeResident(key, bytes);
      shrink(evictions);
    }
  }

  private void shrink(Evictions evictions) {
    while (smallBytes + mainBytes > budget && evictOne(evictions)) {
      // evicting
    }
  }

  @Override
  public long budget() {
    return budget;
  }

  @Override
  public void setBudget(long bytes, double now, Evictions evictions) {
    budget = CachePolicy.checkBudget(bytes);
    shrink(evictions);
    trimGhost();
  }

  @Override
  public void removed(int key) {
    if (isResident(key)) {
      if (where[key] == SMALL) {
        smallBytes -= size[key];
      } else {
        mainBytes -= size[key];
      }
      where[key] = NONE;
      stamp[key]++;
    }
  }

  @Override
  public long residentBytes() {
    return smallBytes + mainBytes;
  }

  @Override
  public boolean resident(int key) {
    return isResident(key);
  }

  private boolean isResident(int key) {
    return key < where.length && (where[key] == SMALL || where[key] == MAIN);
  }

  /** A FIFO of (key, stamp) entries packed in longs: a growable ring. */
  private static final class Fifo {
    private long[] ring = new long[64];
    private int head;
    private int count;

    static int key(long e) {
      return (int) (e >>> 32);
    }

    static int stamp(long e) {
      return (int) e;
    }

    void add(int key, int stamp) {
      if (count == ring.length) {
        long[] r = new long[ring.length * 2];
        for (int i = 0; i < count; i++) {
          r[i] = ring[(head + i) & (ring.length - 1)];
        }
        ring = r;
        head = 0;
      }
      ring[(head + count++) & (ring.length - 1)] = ((long) key << 32) | (stamp & 0xFFFFFFFFL);
    }

    long poll() {
      long e = ring[head];
      head = (head + 1) & (ring.length - 1);
      count--;
      return e;
    }

    boolean isEmpty() {
      return count == 0;
    }

    int size() {
      return count;
    }
  }
}
