package io.strata.node;

import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.FeatureInfo;
import io.strata.tools.CoAccessOrder;
import io.strata.tools.Relayout;
import io.strata.sdk.files.Manifest;
import io.strata.sdk.tiering.SegmentStore;
import io.strata.store.FeatureStore;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;

/**
 * What the node reports of itself: the status ({@code GET /v1/tiers}) and the values behind
 * {@code /metrics}, put together from the tier state's snapshot, the counters, their history,
 * the segment store and the registry.
 *
 * <p>Threads and locks: none of its own; each part is read under its owner's lock (the tier
 * state's snapshot is taken at once), so a report is consistent part by part, not across parts.
 */
final class TierReport {
  private final NodeConfig config;
  private final SegmentStore store;
  private final FeatureStore features;
  private final DatasetRegistry datasets;
  private final TierState state;
  private final TierCounters counters;
  private final TierHistory history;
  private final DoubleSupplier clock;
  private final Supplier<List<String>> startupNotes;
  private final Cluster cluster;

  TierReport(NodeConfig config, SegmentStore store, FeatureStore features, DatasetRegistry datasets, TierState state,
      TierCounters counters, TierHistory history, DoubleSupplier clock, Supplier<List<String>> startupNotes, Cluster cluster) {
    this.config = config;
    this.cluster = cluster;
    this.store = store;
    this.features = features;
    this.datasets = datasets;
    this.state = state;
    this.counters = counters;
    this.history = history;
    this.clock = clock;
    this.startupNotes = startupNotes;
  }

  TierViews.Status status() {
    TierState.Snapshot s = state.snapshot();
    TierCounters.Snapshot c = counters.snapshot();
    double now = clock.getAsDouble();
    TierViews.Ssd ssd = new TierViews.Ssd(config.ssdDir().toString(), store.bytes(), s.residentBytes(), s.budgetBytes(),
        store.segments().size(), s.pending(), store.unlinkedMappedBytes() + s.jobsUnlinkedBytes(), c.damagedSegments(),
        counters.lastDamagedSegment, counters.vanishedSegments.sum(), counters.repairedSegments.sum(),
        counters.scrubbedBytes.sum(), counters.scrubPasses.sum(), config.scrubBytesPerSecond());
    TierViews.Hdd hdd = new TierViews.Hdd(datasets.names().size(), datasets.totalOrcBytes(), roots(),
        counters.promotionOrcBytes.sum(), counters.promotionsFromReaders.sum());
    long[] mem = TierHistory.hostMemory();
    TierViews.Dram dram = new TierViews.Dram(config.dramBudgetBytes(), datasets.openCount(), mem[0], mem[1]);
    TierViews.Traffic traffic = new TierViews.Traffic(c.reads(), c.ssdReads(), c.ssdBytes(), c.hddBytes(), c.byteHitRatio(),
        c.ssdBytes(), c.flashBytes(), history.flashBytesPerHour(now, c.flashBytes()), history.flashBytesPerSecond(60),
        c.promotions(), c.promotionFailures(), counters.lastPromotionFailure, c.rejectedPromotions(), c.evictions(),
        features.computations(), counters.hddBytesInFlight.sum(), counters.hddBytesLanded.sum(),
        counters.landings.sum() == 0 ? 0 : counters.landingNanos.sum() / 1e9 / counters.landings.sum());
    List<TierViews.DatasetBrief> dsl = new ArrayList<>();
    for (String name : datasets.names()) {
      dsl.add(new TierViews.DatasetBrief(name, datasets.orcBytes(name), s.datasetBytes().getOrDefault(name, 0L),
          s.quotas().getOrDefault(name, -1L), layout(name)));
    }
    return new TierViews.Status(now, ssd, hdd, dram, traffic, s.topStreams(), s.jobs(), s.recentJobs(), s.pins(),
        new TierViews.PolicyBrief(s.policy(), s.budgetBytes(), (long) s.flashBudgetPerHour(), s.popularityDiscount()), dsl,
        history.churn(), startupNotes.get(), clusterBrief());
  }

  private TierViews.ClusterBrief clusterBrief() {
    Cluster.View v = cluster.view();
    if (v == null) {
      return null;
    }
    return new TierViews.ClusterBrief(v.nodeId(), v.members(), v.holders(), v.announced(), v.retracted(), v.membersLeft(),
        v.cleaned(), v.dropped(), v.lastLeft(), counters.peerReads.sum(), counters.peerBytes.sum(),
        counters.peerNanos.sum() / 1e9, counters.peerFailures.sum(), counters.lastPeerFailure, counters.peerServed.sum(),
        counters.peerServedBytes.sum(), counters.orcSegmentBytes.sum(), counters.orcNanos.sum() / 1e9, v.jobs(),
        v.datasetReadBytes(), v.heldByOthers());
  }

  /** In a cluster, what this node publishes every second: its planned jobs, and bytes read per dataset. */
  void publishTo(Cluster cluster, String host) {
    if (!cluster.clustered()) {
      return;
    }
    List<Cluster.Job> js = new ArrayList<>();
    for (TierViews.JobRow j : state.jobRows()) {
      js.add(new Cluster.Job(host, j.job(), j.dataset(), j.features(), j.stepsDone(), j.steps(), j.ssdBytes(), j.hddBytes()));
    }
    Map<String, Long> reads = new TreeMap<>();
    state.readBytesByDataset().forEach((ds, b) -> reads.put(ds, Arrays.stream(b).sum()));
    cluster.publish(js, reads);
  }

  /** A relayout is suggested when the learned order would cut the read requests per stripe by at least this factor. */
  static final double RELAYOUT_GAIN = 1.5;
  /** Seconds a dataset's layout advice is kept before it is computed again. */
  static final double LAYOUT_SECONDS = 30;

  private record Advice(String version, double at, TierViews.Layout layout) {}

  private final Map<String, Advice> advice = new ConcurrentHashMap<>();

  /**
   * What a relayout of {@code name} would gain, from what jobs read of its current version:
   * computed at most every {@link #LAYOUT_SECONDS} per dataset (the order search is not free);
   * null before any job read it or when it cannot be opened.
   */
  private TierViews.Layout layout(String name) {
    String version = state.coAccessVersion(name);
    if (version == null) {
      return null;
    }
    double now = clock.getAsDouble();
    Advice a = advice.get(name);
    if (a != null && a.version().equals(version) && now - a.at() < LAYOUT_SECONDS) {
      return a.layout();
    }
    CoAccessLog.CoAccess ca = state.coAccess(name);
    if (ca == null || ca.reads().isEmpty()) {
      return null;
    }
    List<String> columns;
    List<String> stored;
    Manifest manifest;
    try {
      Dataset ds = datasets.dataset(name);
      if (!ds.version().equals(ca.version())) {
        return null;
      }
      columns = ds.columns().stream().map(FeatureInfo::name).toList();
      manifest = ds.manifest();
      stored = manifest.layout();
    } catch (RuntimeException e) {
      return null;
    }
    CoAccessOrder.Plan p = CoAccessOrder.plan(columns, ca.reads());
    // Now: the stored order, second copies included (a relayout may have stored some twice).
    double runsNow = CoAccessOrder.runs(stored, columns, ca.reads());
    // What the relayout's default also does: merge small stripes. A job's data reads an epoch:
    // stripes x runs per stripe. A Parquet dataset is never suggested: the relayout refuses it.
    boolean orc = manifest.fileFormat() == Manifest.FileFormat.ORC;
    int chunksNow = manifest.chunks().size();
    int chunksAfter = Relayout.chunksAfter(manifest, Relayout.mergeBytes(
        (long) Relayout.DEFAULT_STRIPE_MIB << 20, manifest.fileBytes(), 0));
    double readsNow = runsNow * chunksNow;
    double readsLearned = p.runsAfter() * chunksAfter;
    TierViews.Layout l = new TierViews.Layout(p.jobs(), runsNow, p.runsAfter(), chunksNow, chunksAfter, readsNow, readsLearned,
        orc && p.jobs() >= 2 && readsNow >= RELAYOUT_GAIN * readsLearned);
    advice.put(name, new Advice(ca.version(), now, l));
    return l;
  }

  /** The values behind {@code /metrics}, taken at once. */
  NodeMetrics.Values metricValues() {
    TierState.Snapshot s = state.snapshot();
    TierCounters.Snapshot c = counters.snapshot();
    Map<String, Number> m = new LinkedHashMap<>();
    m.put("reads", c.reads());
    m.put("ssdReads", c.ssdReads());
    m.put("ssdBytes", c.ssdBytes());
    m.put("hddBytes", c.hddBytes());
    m.put("flashBytes", c.flashBytes());
    m.put("promotions", c.promotions());
    m.put("promotionFailures", c.promotionFailures());
    m.put("rejectedPromotions", c.rejectedPromotions());
    m.put("evictions", c.evictions());
    m.put("damagedSegments", c.damagedSegments());
    m.put("vanishedSegments", counters.vanishedSegments.sum());
    m.put("repairedSegments", counters.repairedSegments.sum());
    m.put("scrubbedBytes", counters.scrubbedBytes.sum());
    m.put("ssdBytesHeld", store.bytes());
    m.put(Setting.SSD_BUDGET_BYTES.key(), s.budgetBytes());
    m.put("unlinkedMappedBytes", store.unlinkedMappedBytes() + s.jobsUnlinkedBytes());
    m.put("pendingPromotions", s.pending());
    m.put("datasets", datasets.names().size());
    m.put("jobs", s.jobs().size());
    m.put("byteHitRatio", c.byteHitRatio());
    m.put("flashBytesPerSecond", history.flashBytesPerSecond(60));
    return new NodeMetrics.Values(m, s.bytesByDataset(), s.bytesByJob());
  }

  private List<String> roots() {
    return config.hddRoots().stream().map(Path::toString).toList();
  }
}
