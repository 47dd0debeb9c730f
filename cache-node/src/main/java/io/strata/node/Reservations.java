package io.strata.node;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What operators reserve on the SSD tier: pins (a dataset, or {@code dataset/feature}: kept
 * resident, their bytes reserved in the budget) and quotas (the most SSD bytes a dataset may
 * hold).
 *
 * <p>Not thread-safe: {@link TierState} uses it under its monitor only.
 */
final class Reservations {
  private final TreeSet<String> pins = new TreeSet<>();
  private final Map<String, Long> quotas = new TreeMap<>();

  /** Whether {@code feature} of {@code dataset} is pinned, by itself or with its dataset. */
  boolean pinned(String dataset, String feature) {
    return pins.contains(dataset) || pins.contains(dataset + "/" + feature);
  }

  void pin(String target) {
    pins.add(target);
  }

  /** Removes a pin; false if it was not there. */
  boolean unpin(String target) {
    return pins.remove(target);
  }

  /** The pins, sorted. */
  List<String> pins() {
    return List.copyOf(pins);
  }

  /** The dataset's quota in bytes, or null for none. */
  Long quota(String dataset) {
    return quotas.get(dataset);
  }

  /** The quotas by dataset. */
  Map<String, Long> quotas() {
    return new TreeMap<>(quotas);
  }

  /** Sets the quotas in {@code changes}; a null value removes the dataset's quota. */
  void quotas(Map<String, Long> changes) {
    changes.forEach((name, bytes) -> {
      if (bytes == null) {
        quotas.remove(name);
      } else {
        quotas.put(name, bytes);
      }
    });
  }
}
