package io.strata.node;

import io.strata.sdk.internal.SafePaths;
import io.strata.node.policy.Policies;
import io.strata.node.policy.StrataPolicy;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.format.ResidencyBeacon;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.format.SegmentInfo;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.loader.PlanProgram;
import io.strata.sdk.tiering.SegmentRef;
import io.strata.sdk.tiering.SegmentStore;
import io.strata.store.FeatureStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The node without HTTP: the facade {@code NodeApi} calls. It checks each request against its
 * dataset and answers with the records of {@link TierViews}, refusing with a {@link
 * NodeException} of the right kind; it keeps no tier state of its own. Behind it: the datasets of
 * the HDD tier ({@link DatasetRegistry}, leases), what is where on the SSD tier and the policy
 * ({@link TierState}, the one caller of the policy), the file work of promotions and evictions
 * ({@link PromotionQueue}), the lock-free counters ({@link TierCounters}) and their sampled
 * history ({@link TierHistory}), the metrics ({@link NodeMetrics}), the feature store and the
 * kept settings ({@link Settings}).
 *
 * <p>Threads and locks: the facade has one lock of its own, the settings object's monitor,
 * taken to change and save the kept settings and never while the tier state's is held. Requests
 * run on the API's workers; a request is checked (which may read a dataset's manifest through the
 * registry) before the tier state's monitor is taken, so that no file is read under it. Two pieces
 * of work run outside every lock because they may be long: expanding a job's plan program (then
 * installed by the tier state) and computing a derived feature (on a derivation job's thread);
 * both hold their dataset by a lease.
 */
final class TierManager implements AutoCloseable {
  static final String RUNNING_MARKER = "node.running";
  /** A plan whose job has sent nothing for this long is dropped (the job finished or died). */
  static final double PLAN_LEASE_SECONDS = 600;
  /** Rows the read trace keeps (the oldest go first). */
  static final int TRACE_ROWS = 1_000_000;
  /** Chunk entries a plan may expand to, all features together. */
  static final long MAX_PLAN_READS = 50_000_000;

  private static final System.Logger LOG = System.getLogger("io.strata.node");

  private final NodeConfig config;
  private final Settings settings;
  private final SegmentStore store;
  private final FeatureStore features;
  private final DatasetRegistry datasets;
  private final TierCounters counters = new TierCounters();
  private final TierHistory history = new TierHistory();
  private final TraceRecorder trace = new TraceRecorder(TRACE_ROWS);
  private final TierState state;
  /** What operators change of the tier: promotions, evictions, pins, the policy and quotas. */
  private final TierOperations operations;
  /** Those of the operators' changes that the node keeps in its home (pins, the policy, quotas). */
  private final KeptChanges kept;
  private final Derivations derivations;
  private final NodeMetrics metrics;
  private final PromotionQueue queue;
  private final double startNanos = System.nanoTime();
  private final List<String> startupNotes = new CopyOnWriteArrayList<>();
  private final RequestChecks checks;
  private final TierReport report;
  private final PlanIntake plans;
  private final Cluster cluster;
  private final ClusterWork clusterWork;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final HomeLock homeLock;
  private final SegmentScrub scrub;

  TierManager(NodeConfig config) throws IOException {
    this(config, Settings.STARTABLE);
  }

  /**
   * A node's tiers; {@code given} names the settings given explicitly at start (the others in
   * {@code config} are defaults, and the values kept in the home's settings file win over them).
   */
  TierManager(NodeConfig startConfig, Set<String> given) throws IOException {
    this(startConfig, given, Cluster.ALONE);
  }

  /** As above, in {@code cluster} (whose members learn what this node holds once it is {@link #online}). */
  TierManager(NodeConfig startConfig, Set<String> given, Cluster cluster) throws IOException {
    this.cluster = cluster;
    // First of all: nothing is written in the home before its lock is held.
    // The node writes, deletes and locks under its home and SSD directory: no link another user
    // planted on the way to either is followed (a node is often run as root).
    SafePaths.trusted(startConfig.home());
    SafePaths.trusted(startConfig.ssdDir());
    this.homeLock = HomeLock.acquire(startConfig.home());
    boolean ok = false;
    try {
      this.settings = Settings.load(startConfig, given, StrataPolicy.DEFAULT_POPULARITY_DISCOUNT);
      NodeConfig config = startConfig.withHddRoots(settings.hddRoots).withSsdBudget(settings.ssdBudgetBytes);
      this.config = config;
      if (settings.problem != null) {
        startupNotes.add(settings.problem);
      }
      Path marker = config.home().resolve(RUNNING_MARKER);
      boolean unclean = Files.exists(marker);
      AtomicFiles.write(marker, Long.toString(ProcessHandle.current().pid()).getBytes(StandardCharsets.UTF_8));
      // A clustered node offers its segments to peers: it verifies every one before announcing them.
      this.store = SegmentStore.open(config.ssdDir(), unclean || cluster.clustered(), SegmentFile.Verify.FIRST_OPEN, true);
      if (unclean) {
        startupNotes.add("the previous run did not stop cleanly: every segment's checksums were verified");
      }
      startupNotes.addAll(store.dropped());
      this.features = FeatureStore.openWriter(config.home().resolve("features"));
      features.useStaging(config.featureStaging()); // features a Spark job staged are ingested, not computed again
      this.datasets = new DatasetRegistry(config);
      this.checks = new RequestChecks(features);
      this.state = new TierState(settings.policy, new Policies.Options(settings.ssdBudgetBytes,
          settings.flashWriteBudgetBytesPerHour, settings.popularityDiscount), counters, this::now, PLAN_LEASE_SECONDS, trace);
      this.operations = new TierOperations(state);
      this.kept = new KeptChanges(settings, operations, config, datasets, startupNotes);
      this.report = new TierReport(config, store, features, datasets, state, counters, history, this::now, this::startupNotes,
          cluster);
      this.metrics = new NodeMetrics(report::metricValues);
      this.queue = new PromotionQueue(config, store, features, datasets, state, counters, metrics, this::now, cluster);
      state.attach(queue);
      try {
        state.attach(ResidencyBeacon.create(config.ssdDir()));
      } catch (IOException | RuntimeException e) {
        startupNotes.add("jobs on this host learn of landed segments from the node's answers only: " + e.getMessage());
      }
      this.plans = new PlanIntake(datasets, state, checks, MAX_PLAN_READS);
      this.clusterWork = new ClusterWork(cluster, config, state, plans, store, counters, this::now);
      datasets.load(startupNotes);
      restoreResident();
      this.scrub = new SegmentScrub(state::residents, this::repair, config.scrubBytesPerSecond(), SegmentScrub.SWEEP_MILLIS,
          SegmentScrub.MIN_PASS_MILLIS, counters);
      kept.restore(this::pin);
      this.derivations = new Derivations(datasets, features, queue, cluster);
      scrub.start();
      ok = true;
    } finally {
      if (!ok) {
        homeLock.close();
      }
    }
  }

  /** The configuration the node runs with (start options, kept settings, defaults). */
  NodeConfig config() {
    return config;
  }

  /** Seconds since the node started: the policy's clock. */
  double now() {
    return (System.nanoTime() - startNanos) / 1e9;
  }

  List<String> startupNotes() {
    return List.copyOf(startupNotes);
  }

  /** Rebuilds residency from the segments on disk: current versions are kept, stale ones removed. */
  private void restoreResident() throws IOException {
    for (SegmentRef ref : store.segments()) {
      SegmentInfo info = ref.info();
      Dataset ds;
      try {
        ds = datasets.contains(info.dataset()) ? datasets.dataset(info.dataset()) : null;
      } catch (RuntimeException e) {
        ds = null;
      }
      if (ds == null || !ds.version().equals(info.datasetVersion())) {
        store.remove(ref);
        startupNotes.add("removed " + ref.path().getFileName() + ": dataset " + info.dataset() + " " + info.datasetVersion()
            + (ds == null ? " is not registered" : " is not the current version"));
        continue;
      }
      state.restore(ds, ref);
    }
  }

  // ---------------------------------------------------------------- datasets

  /** The open dataset {@code name} (not found if not registered, conflict if it cannot be opened). */
  Dataset dataset(String name) {
    return datasets.dataset(name);
  }

  /** Registers (or re-registers) the dataset in {@code dir}; returns its description. */
  TierViews.DatasetView register(String dir) throws IOException {
    return describe(datasets.register(dir));
  }

  List<TierViews.DatasetView> listDatasets() {
    List<TierViews.DatasetView> out = new ArrayList<>();
    for (String name : datasets.names()) {
      try {
        String problem = datasets.problem(name); // its files as they are now, not as when it was opened
        if (problem != null) {
          out.add(TierViews.DatasetView.refused(name, String.valueOf(datasets.directory(name)), "dataset '" + name + "': "
              + problem));
          continue;
        }
        out.add(describe(name));
      } catch (NodeException e) {
        // One dataset that cannot be served (gone, damaged, now outside the roots) is listed as
        // refused, with the reason; the others are served as ever.
        if (e.kind() == NodeException.Kind.NOT_FOUND && !datasets.contains(name)) {
          continue; // unregistered meanwhile
        }
        out.add(TierViews.DatasetView.refused(name, String.valueOf(datasets.directory(name)), e.getMessage()));
      }
    }
    return out;
  }

  TierViews.DatasetView describe(String name) {
    Dataset ds = dataset(name);
    List<TierViews.FeatureView> fs = new ArrayList<>();
    for (FeatureInfo f : ds.columns()) {
      if (f.supported()) {
        long estimate = 0;
        for (int c = 0; c < ds.chunks().size(); c++) {
          estimate += KeySpace.estimateBytes(ds, f.name(), c);
        }
        fs.add(new TierViews.FeatureView(f.name(), f.type().toString(), estimate, null));
      } else {
        fs.add(new TierViews.FeatureView(f.name(), null, null, f.unsupportedReason()));
      }
    }
    return new TierViews.DatasetView(ds.name(), ds.version(), ds.directory().toString(), ds.rows(), ds.chunks().size(),
        datasets.orcBytes(ds.name()), fs, state.residentBytes(ds.name()), operations.quotas().get(ds.name()));
  }

  // ---------------------------------------------------------------- jobs

  /**
   * A job's plan: {@code epochs} epochs over {@code features} of {@code dataset}, visiting chunks
   * in {@code chunkOrder} (null: dataset order) and, within a chunk, every feature.
   */
  TierViews.PlanAnswer plan(String job, String datasetName, List<String> features, int epochs, List<Integer> chunkOrder,
      boolean substitutable) {
    return plans.plan(job, datasetName, features, epochs, chunkOrder, substitutable);
  }

  /** A job's plan as its loader's program, expanded by the node with the loader's own code. */
  TierViews.PlanAnswer plan(String job, String datasetName, List<String> features, PlanProgram program, boolean substitutable) {
    return plans.plan(job, datasetName, features, program, substitutable);
  }

  /** A distributed job's plan, declared once with each rank's host ({@link ClusterWork#plan}). */
  TierViews.DistributedPlanAnswer plan(String job, String datasetName, List<String> features, PlanProgram program,
      boolean substitutable, List<String> hosts) {
    checks.check(dataset(datasetName), features, List.of());
    return clusterWork.plan(job, datasetName, features, program, substitutable, hosts);
  }

  /** The plan the node holds for {@code job} now, or null (tests). */
  io.strata.node.policy.CachePolicy.JobPlan planOf(String job) {
    return state.planOf(job);
  }

  /** Changes how long a silent job's plan is kept (tests). */
  void planLease(double seconds) {
    state.planLease(seconds);
  }

  void endJob(String job) {
    Jobs.checkName(job);
    plans.ended(job);
    state.endJob(job);
  }

  /** The recorded trace as CSV. */
  String traceCsv() {
    return trace.csv();
  }

  /** How many of the trace's oldest rows were dropped. */
  long traceDropped() {
    return trace.dropped();
  }

  /** Forgets the recorded trace; returns the rows dropped. */
  int clearTrace() {
    return trace.clear();
  }

  // ---------------------------------------------------------------- reads

  /** Where each requested feature chunk lives now: a segment to map, or the ORC source. */
  TierViews.Resolved resolve(String job, String datasetName, List<String> features, List<Integer> chunks) {
    long t0 = System.nanoTime();
    try {
      if (job != null) {
        Jobs.checkName(job);
      }
      Dataset ds = dataset(datasetName);
      List<Integer> cs = chunks == null ? RequestChecks.allChunks(ds) : chunks;
      if (!features.isEmpty()) {
        checks.check(ds, features, cs);
      }
      return state.resolve(ds, features, cs);
    } finally {
      metrics.resolves().record(System.nanoTime() - t0, TimeUnit.NANOSECONDS);
    }
  }

  /**
   * Records a job's reads: statistics, reuse, and the policy's decisions (promotions, evictions);
   * {@code step >= 0} is the step the job reached, {@code unlinkedMappedBytes >= 0} what it still
   * maps of evicted segments.
   */
  TierViews.ReadsAnswer reportReads(String job, String datasetName, List<TierState.Read> reads, long step,
      long unlinkedMappedBytes) {
    Jobs.checkName(job);
    Dataset ds = dataset(datasetName);
    for (TierState.Read r : reads) {
      checks.check(ds, r.feature(), r.chunk());
      if (r.bytes() < 0) {
        throw NodeException.badRequest("'bytes' must not be negative");
      }
    }
    TierViews.ReadsAnswer answer = state.reads(job, ds, reads, step, unlinkedMappedBytes);
    if (step >= 0) {
      plans.advance(job, step); // the next window of a long plan, once the job is half way through the one held
    }
    return answer;
  }

  /**
   * A reader found the segment of {@code feature} of {@code chunk} damaged after mapping it: every
   * checksum of the file is checked on a fresh mapping (outside every lock) and, when the check
   * fails, the segment leaves the tier (its features are read from ORC and may be promoted anew).
   */
  TierViews.SegmentCheck checkSegment(String datasetName, String feature, int chunk, String problem) {
    Dataset ds = dataset(datasetName);
    checks.check(ds, feature, chunk);
    SegmentRef ref = state.segment(ds, feature, chunk);
    if (ref == null) {
      return new TierViews.SegmentCheck(false, false, null);
    }
    String damage = SegmentStore.recheck(ref.path(), feature, chunk);
    if (damage == null) {
      return new TierViews.SegmentCheck(true, false, null);
    }
    repair(ds, feature, chunk, ref, damage, "a reader found: " + problem);
    return new TierViews.SegmentCheck(true, true, damage);
  }

  /**
   * A resident segment found gone or damaged (by a reader, or by the background {@link
   * SegmentScrub}): it leaves the tier, counted, and is placed again at once within the budget.
   * Nothing when it was no longer resident (evicted meanwhile).
   */
  private void repair(Dataset ds, String feature, int chunk, SegmentRef ref, String damage, String foundBy) {
    // Looked at first: once dropped, the file is unlinked (on the queue's thread).
    boolean vanished = !Files.isRegularFile(ref.path(), LinkOption.NOFOLLOW_LINKS);
    int placed = state.repair(ds, feature, chunk, ref);
    if (placed < 0) {
      return;
    }
    LOG.log(System.Logger.Level.WARNING, "dropping a " + (vanished ? "vanished" : "damaged") + " segment: " + damage
        + " (" + foundBy + "); placed again: " + placed + " feature chunk(s)");
    (vanished ? counters.vanishedSegments : counters.damagedSegments).increment();
    counters.repairedSegments.add(placed);
    counters.lastDamagedSegment = damage;
  }

  /** The scrub's finding: {@code r}'s file is gone or damaged ({@code damage} says how). */
  void repair(Residency.Resident r, String damage) {
    Dataset ds;
    try {
      ds = dataset(r.key().dataset());
    } catch (NodeException e) {
      return; // unregistered or unopenable meanwhile: its segments go with it
    }
    if (ds.version().equals(r.key().version())) {
      repair(ds, r.key().feature(), r.key().chunk(), r.ref(), damage, "found by the background scrub");
    }
  }

  /** The resident segment files, for the scrub. */
  List<Residency.Resident> residents() {
    return state.residents();
  }

  // ---------------------------------------------------------------- derived features

  /** Derived features: checked, computed once into the node's feature store, placed on the SSD tier. */
  Derivations derivations() {
    return derivations;
  }

  // ---------------------------------------------------------------- operator actions

  /** Promotes features of chunks now (an operator's request), within the SSD budget and quotas. */
  TierViews.Promoted promoteNow(String datasetName, List<String> fs, List<Integer> chunks) {
    Dataset ds = dataset(datasetName);
    List<String> f = fs == null || fs.isEmpty() ? ds.featureNames() : fs;
    List<Integer> cs = chunks == null ? RequestChecks.allChunks(ds) : chunks;
    checks.check(ds, f, cs);
    return operations.promote(ds, f, cs);
  }

  /** Evicts features of chunks (all features or chunks when not given). */
  TierViews.Evicted evictNow(String datasetName, List<String> fs, List<Integer> chunks) {
    Dataset ds = dataset(datasetName);
    List<String> f = fs == null || fs.isEmpty() ? ds.featureNames() : fs;
    List<Integer> cs = chunks == null ? RequestChecks.allChunks(ds) : chunks;
    checks.check(ds, f, cs);
    return operations.evict(ds, f, cs);
  }

  /**
   * Pins (or unpins) a dataset or one feature: pinned chunks are promoted and never evicted.
   * Pinned bytes are reserved in the SSD budget: a pin the budget cannot hold is refused.
   */
  TierViews.Pinned pin(String datasetName, String feature, boolean pin) {
    Dataset ds = dataset(datasetName);
    if (feature != null) {
      checks.check(ds, feature, 0);
    }
    return kept.pin(ds, feature, pin);
  }

  TierViews.PolicyView policy() {
    return kept.policy();
  }

  /** Applies {@code change} and keeps it (see {@link KeptChanges#setPolicy}). */
  TierViews.PolicyView setPolicy(KeptChanges.PolicyChange change) {
    return kept.setPolicy(change);
  }

  // ---------------------------------------------------------------- the cluster

  /** The node listens at {@code url}: in a cluster, the cluster learns where it is and what its SSD tier holds. */
  void online(String url) {
    clusterWork.online(url);
  }

  /** A single-feature segment this node holds, for a peer to copy ({@link ClusterWork#peerSegment}). */
  Path peerSegment(String dataset, String version, String feature, int chunk) throws IOException {
    // Sent by name (a file send): the name is confined to the SSD directory just before.
    return store.realSegmentPath(clusterWork.peerSegment(dataset, version, feature, chunk));
  }

  /** A segment was sent to a peer. */
  void servedToPeer(long bytes) {
    counters.peerServed.increment();
    counters.peerServedBytes.add(bytes);
  }

  /** In a cluster, one pass of peer prefetch ({@link ClusterWork#peerPrefetch}); the chunks placed. */
  int peerPrefetch() {
    return closed.get() ? 0 : clusterWork.peerPrefetch(closed::get);
  }

  // ---------------------------------------------------------------- status

  TierViews.Status status() {
    return report.status();
  }

  /** Samples the counters (called every second by the node): the history behind rates and the dashboard. */
  void sample() {
    history.sample(now(), counters.snapshot(), store.bytes());
    if (cluster.clustered()) {
      report.publishTo(cluster, config.cluster().host());
      clusterWork.installSharedPlans();
    }
  }

  /** The last {@code n} samples: time, SSD bytes read, HDD bytes read, flash written, SSD bytes held, promotions, evictions. */
  List<double[]> history(int n) {
    return history.last(n);
  }

  /** {@code GET /metrics}: Prometheus's text format. */
  String scrapeMetrics() {
    return metrics.scrape();
  }

  /** Waits until no promotion is queued or running (tests and orderly shutdown). */
  boolean awaitIdle(long timeoutMillis) throws InterruptedException {
    long end = System.currentTimeMillis() + timeoutMillis;
    while (System.currentTimeMillis() < end) {
      if (state.idle() && queue.idle()) {
        return true;
      }
      Thread.sleep(20);
    }
    return false;
  }

  @Override
  public void close() throws IOException {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    scrub.close();
    state.close();
    queue.close();
    datasets.close();
    metrics.close();
    store.close();
    features.close();
    Files.deleteIfExists(config.home().resolve(RUNNING_MARKER));
    homeLock.close();
  }
}
