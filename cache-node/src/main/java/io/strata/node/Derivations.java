package io.strata.node;

import io.strata.sdk.Progress;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.derive.Derivation;
import io.strata.sdk.derive.Spec;
import io.strata.store.FeatureMeta;
import io.strata.store.FeatureStore;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.List;

/**
 * Derived features on a node: a spec checked against a registered dataset, the feature computed
 * once into the node's feature store (requests for the same feature wait for one computation) and
 * its chunks placed on the SSD tier as segments named by the canonical spec. The jobs that run
 * them are {@link DeriveJobs}'.
 *
 * <p>Threads and locks: none of its own; the feature store and the promotion queue are
 * thread-safe, and a dataset is leased from the registry for the computation's length.
 */
final class Derivations {
  private final DatasetRegistry datasets;
  private final FeatureStore features;
  private final PromotionQueue queue;

  Derivations(DatasetRegistry datasets, FeatureStore features, PromotionQueue queue) {
    this.datasets = datasets;
    this.features = features;
    this.queue = queue;
  }

  /**
   * A derivation's outcome: the stored feature, whether it was there already, its wall and CPU
   * seconds (this derivation's thread: the fingerprint's source checksums, then computing it, or
   * ingesting it from the staging directory), the CPU seconds placing its segments took, and the
   * segments placed.
   */
  record Derived(FeatureMeta meta, boolean cached, double seconds, double cpuSeconds, double placeCpuSeconds,
      int segmentsWritten) {}

  /**
   * The canonical form of {@code specText} on {@code datasetName}, checked (the dataset exists,
   * the spec parses and its types check). Cheap: no column is read.
   */
  String check(String datasetName, String specText) {
    Dataset ds = datasets.dataset(datasetName);
    try {
      return Derivation.of(Spec.parse(specText), ds).spec().canonical();
    } catch (IllegalArgumentException e) {
      throw NodeException.badRequest(e.getMessage());
    }
  }

  /**
   * Gets or computes a derived feature of a dataset in the node's feature store (requests for
   * the same feature wait for one computation), then puts its chunks on the SSD tier as segments
   * named by the canonical spec while the budget has room, telling {@code progress} of the chunks
   * computed. Runs on a derivation job's thread; may take long.
   */
  Derived derive(String datasetName, String specText, Progress progress) throws IOException {
    try (DatasetRegistry.Lease lease = datasets.lease(datasetName)) {
      Dataset ds = lease.dataset();
      Derivation d;
      try {
        d = Derivation.of(Spec.parse(specText), ds);
      } catch (IllegalArgumentException e) {
        throw NodeException.badRequest(e.getMessage());
      }
      Derivation.SourceReader reader = Derivation.SourceReader.orc(ds);
      ThreadMXBean threads = ManagementFactory.getThreadMXBean();
      long cpu0 = threads.getCurrentThreadCpuTime();
      // Stored already? By name (dataset, version, spec): no source column is read for that.
      boolean cached = features.lookup(ds.name(), ds.version(), d.spec().canonical()).isPresent();
      long t0 = System.nanoTime();
      FeatureMeta m = features.getOrCompute(d, reader, progress);
      double seconds = (System.nanoTime() - t0) / 1e9;
      long cpu1 = threads.getCurrentThreadCpuTime();
      int placed = queue.placeDerived(ds, d.spec().canonical(), m.fingerprint());
      return new Derived(m, cached, seconds, (cpu1 - cpu0) / 1e9, (threads.getCurrentThreadCpuTime() - cpu1) / 1e9, placed);
    }
  }

  List<FeatureMeta> list() throws IOException {
    return features.list();
  }
}
