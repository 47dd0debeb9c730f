package io.strata.node;

import io.strata.sdk.dataset.Dataset;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * What the jobs read of each dataset's current version, per job and feature: the co-access a
 * relayout learns from (the node's layout advice in its status). The first
 * {@link #JOBS} jobs of a version are kept; a new version starts afresh.
 *
 * <p>Not thread-safe: {@link TierState} calls it under its monitor.
 */
final class CoAccessLog {
  /** Jobs per dataset version whose reads are kept (the first ones). */
  static final int JOBS = 256;

  /** What the jobs read of one version of a dataset: job to feature to reads. */
  record CoAccess(String version, Map<String, Map<String, Long>> reads) {}

  private final Map<String, CoAccess> byDataset = new HashMap<>();

  /** {@code job} read {@code bytes} of {@code feature} of {@code ds} (a read of no bytes is not counted). */
  void note(Dataset ds, String job, String feature, long bytes) {
    if (bytes <= 0) {
      return;
    }
    CoAccess ca = byDataset.get(ds.name());
    if (ca == null || !ca.version().equals(ds.version())) {
      ca = new CoAccess(ds.version(), new HashMap<>());
      byDataset.put(ds.name(), ca);
    }
    Map<String, Map<String, Long>> byJob = ca.reads();
    Map<String, Long> features = byJob.get(job);
    if (features == null) {
      if (byJob.size() >= JOBS) {
        return;
      }
      features = new HashMap<>();
      byJob.put(job, features);
    }
    features.merge(feature, 1L, Long::sum);
  }

  /** The version of {@code dataset} whose reads are kept, or null before any read. */
  String version(String dataset) {
    CoAccess ca = byDataset.get(dataset);
    return ca == null ? null : ca.version();
  }

  /** A copy of what jobs read of {@code dataset}'s version, or null before any read. */
  CoAccess copy(String dataset) {
    CoAccess ca = byDataset.get(dataset);
    if (ca == null) {
      return null;
    }
    Map<String, Map<String, Long>> copy = new TreeMap<>();
    ca.reads().forEach((j, f) -> copy.put(j, new TreeMap<>(f)));
    return new CoAccess(ca.version(), copy);
  }
}
