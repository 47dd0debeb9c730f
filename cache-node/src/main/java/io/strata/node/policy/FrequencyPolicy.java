package io.strata.node.policy;

import java.util.Arrays;
import java.util.TreeSet;

/**
 * A plain frequency-admission cache, the online baseline: every key's reads are counted (halved
 * every ten reads per key seen, so old popularity fades); a miss is admitted only when its key
 * has been read at least twice and, if room must be made, only when it has been read more often
 * than each resident key it would evict (least frequently read first; pinned keys never). No
 * plans, no timing. Not thread-safe.
 */
public final class FrequencyPolicy implements CachePolicy {
  private long budget;
  private int[] count = new int[256];
  private long[] size = new long[256];
  private boolean[] resident = new boolean[256];
  private boolean[] pinned = new boolean[256];
  /** Resident keys ordered by (count at last update, key). */
  private final TreeSet<Long> byCount = new TreeSet<>();
  private long used;
  private long reads;
  private int keysSeen;

  public FrequencyPolicy(long budgetBytes) {
    CachePolicy.checkBudget(budgetBytes);
    this.budget = budgetBytes;
  }

  @Override
  public String name() {
    return "frequency";
  }

  private static long entry(int count, int key) {
    return ((long) count << 32) | key;
  }

  private void ensure(int key) {
    if (key >= count.length) {
      int n = Math.max(count.length * 2, key + 1);
      count = Arrays.copyOf(count, n);
      size = Arrays.copyOf(size, n);
      resident = Arrays.copyOf(resident, n);
      pinned = Arrays.copyOf(pinned, n);
    }
    keysSeen = Math.max(keysSeen, key + 1);
  }

  @Override
  public Outcome access(double time, int job, int key, long bytes, Evictions evictions) {
    ensure(key);
    if (++reads % (10L * keysSeen) == 0) {
      byCount.clear();
      for (int k = 0; k < keysSeen; k++) {
        count[k] >>= 1;
        if (resident[k]) {
          byCount.add(entry(count[k], k));
        }
      }
    }
    if (resident[key]) {
      byCount.remove(entry(count[key], key));
    }
    count[key] = Math.min(count[key] + 1, Integer.MAX_VALUE >> 1);
    if (resident[key]) {
      byCount.add(entry(count[key], key));
      return Outcome.HIT;
    }
    if (count[key] < 2 || bytes > budget) {
      return Outcome.MISS_BYPASSED;
    }
    long free = budget - used;
    long need = bytes;
    if (free < need) {
      long freed = free;
      for (long e : byCount) {
        if (pinned[(int) e]) {
          continue;
        }
        if ((int) (e >>> 32) >= count[key]) {
          return Outcome.MISS_BYPASSED;
        }
        freed += size[(int) e];
        if (freed >= need) {
          break;
        }
      }
      if (freed < need) {
        return Outcome.MISS_BYPASSED;
      }
      shrinkTo(budget - need, evictions);
    }
    resident[key] = true;
    size[key] = bytes;
    used += bytes;
    byCount.add(entry(count[key], key));
    return Outcome.MISS_ADMITTED;
  }

  /** Evicts the least frequently read unpinned keys while more than {@code limit} bytes are resident. */
  private void shrinkTo(long limit, Evictions evictions) {
    var it = byCount.iterator();
    while (used > limit && it.hasNext()) {
      int k = (int) (long) it.next();
      if (pinned[k]) {
        continue;
      }
      it.remove();
      resident[k] = false;
      used -= size[k];
      evictions.evicted(k);
    }
  }

  @Override
  public void pin(int key, long bytes, boolean pin) {
    ensure(key);
    pinned[key] = pin;
  }

  @Override
  public boolean place(int key, long bytes, Placement why) {
    ensure(key);
    if (resident[key]) {
      resizeResident(key, bytes);
      return true;
    }
    if (why != Placement.FOUND && used + bytes > budget) {
      return false;
    }
    resident[key] = true;
    size[key] = bytes;
    used += bytes;
    byCount.add(entry(count[key], key));
    return true;
  }

  @Override
  public void resize(int key, long bytes, double now, Evictions evictions) {
    ensure(key);
    if (resident[key]) {
      resizeResident(key, bytes);
      shrinkTo(budget, evictions);
    }
  }

  private void resizeResident(int key, long bytes) {
    used += bytes - size[key];
    size[key] = bytes;
  }

  @Override
  public long budget() {
    return budget;
  }

  @Override
  public void setBudget(long bytes, double now, Evictions evictions) {
    budget = CachePolicy.checkBudget(bytes);
    shrinkTo(budget, evictions);
  }

  @Override
  public void removed(int key) {
    if (key < resident.length && resident[key]) {
      byCount.remove(entry(count[key], key));
      resident[key] = false;
      used -= size[key];
    }
  }

  @Override
  public long residentBytes() {
    return used;
  }

  @Override
  public boolean resident(int key) {
    return key < resident.length && resident[key];
  }
}
