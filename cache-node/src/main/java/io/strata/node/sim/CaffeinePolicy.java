package io.strata.node.sim;

import io.strata.node.policy.CachePolicy;
import io.strata.node.policy.Policies;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;

/**
 * Caffeine's W-TinyLFU (a small LRU admission window, then a frequency-sketch admission filter in
 * front of a segmented LRU), weighted by kilobytes. Every miss enters the window, so every miss is
 * a flash write; the filter decides what survives. A simulation baseline only: Caffeine has no way
 * to keep chunks pinned, so the node does not offer it ({@link Policies}).
 */
public final class CaffeinePolicy implements CachePolicy {
  private final Cache<Integer, Long> cache;
  private Evictions sink = Evictions.NONE;
  private long budget;

  public CaffeinePolicy(long budgetBytes) {
    this.budget = budgetBytes;
    cache = Caffeine.newBuilder()
        .maximumWeight(Math.max(1, budgetBytes >> 10))
        .weigher((Integer k, Long v) -> (int) Math.min(Integer.MAX_VALUE, Math.max(1, v >> 10)))
        .executor(Runnable::run)
        .removalListener((Integer k, Long v, RemovalCause cause) -> {
          if (cause.wasEvicted() && k != null) {
            sink.evicted(k);
          }
        })
        .build();
  }

  @Override
  public String name() {
    return "caffeine-wtinylfu";
  }

  @Override
  public Outcome access(double time, int job, int key, long bytes, Evictions evictions) {
    sink = evictions;
    try {
      if (cache.getIfPresent(key) != null) {
        return Outcome.HIT;
      }
      cache.put(key, bytes);
      cache.cleanUp();
      return Outcome.MISS_ADMITTED;
    } finally {
      sink = Evictions.NONE;
    }
  }

  @Override
  public long budget() {
    return budget;
  }

  @Override
  public void setBudget(long bytes, double now, Evictions evictions) {
    budget = bytes;
    sink = evictions;
    try {
      cache.policy().eviction().ifPresent(e -> e.setMaximum(Math.max(1, bytes >> 10)));
      cache.cleanUp();
    } finally {
      sink = Evictions.NONE;
    }
  }

  /** Puts the key in (Caffeine's filter may turn it away at once: then false). */
  @Override
  public boolean place(int key, long bytes, Placement why) {
    if (!resident(key) && why != Placement.FOUND && residentBytes() + bytes > budget) {
      return false;
    }
    cache.put(key, bytes);
    cache.cleanUp();
    return resident(key);
  }

  @Override
  public void resize(int key, long bytes, double now, Evictions evictions) {
    if (!resident(key)) {
      return;
    }
    sink = evictions;
    try {
      cache.put(key, bytes);
      cache.cleanUp();
    } finally {
      sink = Evictions.NONE;
    }
  }

  @Override
  public void removed(int key) {
    cache.invalidate(key);
  }

  @Override
  public long residentBytes() {
    long b = 0;
    for (long v : cache.asMap().values()) {
      b += v;
    }
    return b;
  }

  @Override
  public boolean resident(int key) {
    return cache.asMap().containsKey(key);
  }
}
