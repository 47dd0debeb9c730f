package io.strata.node.policy;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/** Least recently used: admits every miss, evicts the least recently read chunk. */
public final class LruPolicy implements CachePolicy {
  private final long budget;
  private final LinkedHashMap<Integer, Long> lru = new LinkedHashMap<>(1024, 0.75f, true);
  private long used;

  public LruPolicy(long budgetBytes) {
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
    if (bytes > budget) {
      return Outcome.MISS_BYPASSED;
    }
    Iterator<Map.Entry<Integer, Long>> it = lru.entrySet().iterator();
    while (used + bytes > budget && it.hasNext()) {
      Map.Entry<Integer, Long> e = it.next();
      used -= e.getValue();
      it.remove();
      evictions.evicted(e.getKey());
    }
    lru.put(key, bytes);
    used += bytes;
    return Outcome.MISS_ADMITTED;
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
