package io.strata.node;

import io.strata.sdk.Progress;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.derive.Derivation;
import io.strata.sdk.derive.Spec;
import io.strata.sdk.internal.Json;
import io.strata.store.FeatureMeta;
import io.strata.store.FeatureStore;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Derived features on a node: a spec checked against a registered dataset, the feature computed
 * once into the node's feature store (requests for the same feature wait for one computation) and
 * its chunks placed on the SSD tier as segments named by the canonical spec. The jobs that run
 * them are {@link DeriveJobs}'.
 *
 * <p>A feature the Spark promotion job staged (the node's {@code featureStaging}) is ingested, not
 * computed. In a cluster, a feature neither stored here nor staged is first asked of the live
 * peers: one whose store holds it complete gives it, chunk by chunk, checked ({@link
 * PeerReads#derived}).
 *
 * <p>Threads and locks: none of its own; the feature store and the promotion queue are
 * thread-safe, and a dataset is leased from the registry for the computation's length.
 */
final class Derivations {
  private final DatasetRegistry datasets;
  private final FeatureStore features;
  private final PromotionQueue queue;
  private final Cluster cluster;

  Derivations(DatasetRegistry datasets, FeatureStore features, PromotionQueue queue, Cluster cluster) {
    this.datasets = datasets;
    this.features = features;
    this.queue = queue;
    this.cluster = cluster;
  }

  /**
   * A derivation's outcome: the stored feature, whether it was there already, where it came from
   * ({@code stored}, {@code computed}, {@code staged} by the Spark job, copied from a {@code
   * peer}), its wall and CPU seconds (this derivation's thread: the fingerprint's source
   * checksums, then computing it, or ingesting or copying it), the CPU seconds placing its
   * segments took, and the segments placed.
   */
  record Derived(FeatureMeta meta, boolean cached, String source, double seconds, double cpuSeconds, double placeCpuSeconds,
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
  Derived derive(String datasetName, String specText, Progress progress) throws IOException, InterruptedException {
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
      String canonical = d.spec().canonical();
      boolean cached = features.lookup(ds.name(), ds.version(), canonical).isPresent();
      long t0 = System.nanoTime();
      FeatureMeta m = null;
      String source = cached ? "stored" : features.hasStaged(ds, canonical) ? "staged" : "computed";
      PeerReads peers = queue.peerReads();
      if (source.equals("computed") && peers != null) {
        // A live peer whose store holds it complete: copied, checked chunk by chunk, not computed again.
        m = peers.derived(cluster.peers(), ds, canonical, features, progress);
        source = m == null ? source : "peer";
      }
      if (m == null) {
        m = features.getOrCompute(d, reader, progress);
      }
      double seconds = (System.nanoTime() - t0) / 1e9;
      long cpu1 = threads.getCurrentThreadCpuTime();
      int placed = queue.placeDerived(ds, canonical, m.fingerprint());
      return new Derived(m, cached, source, seconds, (cpu1 - cpu0) / 1e9, (threads.getCurrentThreadCpuTime() - cpu1) / 1e9,
          placed);
    }
  }

  /**
   * What this node answers a peer for a derived feature its store holds complete: its description
   * (JSON), or with {@code chunk} that chunk's stored form; 404 when it does not hold it.
   */
  byte[] servePeer(String dataset, String version, String spec, Integer chunk) throws IOException {
    String fp = features.lookup(dataset, version, spec).orElseThrow(
        () -> NodeException.notFound("no complete derived feature " + spec + " of " + dataset + " " + version + " here"));
    FeatureMeta m = features.meta(fp).orElseThrow(() -> NodeException.notFound("feature " + fp + " is gone"));
    if (chunk == null) {
      return Json.compact(m.toJson()).getBytes(StandardCharsets.UTF_8);
    }
    if (chunk < 0 || chunk >= m.chunks()) {
      throw NodeException.badRequest("chunk " + chunk + " is outside " + spec + " (" + m.chunks() + " chunks)");
    }
    return features.encodedChunk(fp, chunk);
  }

  List<FeatureMeta> list() throws IOException {
    return features.list();
  }
}
