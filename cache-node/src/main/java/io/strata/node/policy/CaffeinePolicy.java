package io.strata.node.policy;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;

/**
 * Caffeine's W-TinyLFU (a small LRU admission window, then a frequency-sketch admission filter in
 * front of a segmented LRU), weighted by kilobytes. Every miss enters the window, so every miss is
 * a flash write; the filter decides what survives.
 */
public final class CaffeinePolicy implements CachePolicy {
  private final Cache<Integer, Long> cache;
  private Evictions sink = Evictions.NONE;

  public CaffeinePolicy(long budgetBytes) {
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
