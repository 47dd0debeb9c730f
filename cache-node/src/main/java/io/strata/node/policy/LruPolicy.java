package io.strata.node.policy;

import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Least recently used: admits every miss that fits, evicts the least recently read chunk that is
 * not pinned (a miss that only pinned chunks could make room for is bypassed). Not thread-safe.
 */
public final class LruPolicy implements CachePolicy {
  private long budget;
  private final LinkedHashMap<Integer, Long> lru = new LinkedHashMap<>(1024, 0.75f, true);
  private final Set<Integer> pinned = new HashSet<>();
  private long used;

  public LruPolicy(long budgetBytes) {
    CachePolicy.checkBudget(budgetBytes);
    this.budget = budgetBytes;
  }

  @Override
  public String name() {
    return "lru";
  }

  @Override
  public Outcome access(double time, int job, int key, long bytes, Evictions evictions) {
    if (lru.get(key) != null) {
      return Outcome.HIT;
    }
    if (bytes > budget || !makeRoom(bytes, evictions)) {
      return Outcome.MISS_BYPASSED;
    }
    lru.put(key, bytes);
    used += bytes;
    return Outcome.MISS_ADMITTED;
  }

  /** Evicts least recently read unpinned chunks until {@code bytes} more fit; false (nothing evicted) if they cannot. */
  private boolean makeRoom(long bytes, Evictions evictions) {
    long need = used + bytes - budget;
    if (need <= 0) {
      return true;
    }
    long evictable = 0;
    for (Map.Entry<Integer, Long> e : lru.entrySet()) {
      if (!pinned.contains(e.getKey())) {
        evictable += e.getValue();
        if (evictable >= need) {
          break;
        }
      }
    }
    if (evictable < need) {
      return false;
    }
    shrinkTo(budget - bytes, evictions);
    return true;
  }

  /** Evicts least recently read unpinned chunks while more than {@code limit} bytes are resident. */
  private void shrinkTo(long limit, Evictions evictions) {
    Iterator<Map.Entry<Integer, Long>> it = lru.entrySet().iterator();
    while (used > limit && it.hasNext()) {
      Map.Entry<Integer, Long> e = it.next();
      if (pinned.contains(e.getKey())) {
        continue;
      }
      used -= e.getValue();
      it.remove();
      evictions.evicted(e.getKey());
    }
  }

  @Override
  public void pin(int key, long bytes, boolean pin) {
    if (pin) {
      pinned.add(key);
    } else {
      pinned.remove(key);
    }
  }

  @Override
  public boolean place(int key, long bytes, Placement why) {
    if (resizeResident(key, bytes)) {
      return true;
    }
    if (why != Placement.FOUND && used + bytes > budget) {
      return false;
    }
    lru.put(key, bytes);
    used += bytes;
    return true;
  }

  @Override
  public void resize(int key, long bytes, double now, Evictions evictions) {
    if (resizeResident(key, bytes)) {
      shrinkTo(budget, evictions);
    }
  }

  /** Gives a resident key (made most recently read) its new size; false if it is not resident. */
  private boolean resizeResident(int key, long bytes) {
    Long had = lru.get(key);
    if (had == null) {
      return false;
    }
    used += bytes - had;
    lru.put(key, bytes);
    return true;
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
    Long b = lru.remove(key);
    if (b != null) {
      used -= b;
    }
  }

  @Override
  public long residentBytes() {
    return used;
  }

  @Override
  public boolean resident(int key) {
    return lru.containsKey(key);
  }
}
