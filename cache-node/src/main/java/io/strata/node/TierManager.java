package io.strata.node;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.node.policy.CachePolicy;
import io.strata.sdk.loader.PlanProgram;
import io.strata.node.policy.StrataPolicy;
import io.strata.sdk.Column;
import io.strata.sdk.Dataset;
import io.strata.sdk.FeatureType;
import io.strata.sdk.dataset.FeatureInfo;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.format.SegmentInfo;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.Json;
import io.strata.sdk.tier.Promoter;
import io.strata.sdk.tier.SegmentRef;
import io.strata.sdk.tier.SegmentStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SequencedMap;
import java.util.TreeMap;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The tiers of one node, without HTTP: the segment store (SSD tier), the policy (which only this
 * class calls), promotions and evictions, pins, quotas and statistics; the jobs and their plans
 * are kept by {@link Jobs}, the keys by {@link KeySpace}, the metrics by {@link NodeMetrics}; all
 * three are guarded by this object's monitor. It works over the datasets of the HDD tier ({@link
 * DatasetRegistry}, which has its own locks and never takes this object's; some methods here look
 * a dataset up while holding this monitor, which on a cache miss includes reading its manifest).
 *
 * <p>State changes are serialized on this object and are in-memory and quick; file work runs on
 * named pools with bounded queues: decoding ORC and writing segments on {@code
 * strata-promote-N} (rate-limited in bytes per second so that promotion never starves the jobs'
 * own reads), unlinking evicted segments on {@code strata-evict}. A request that would queue
 * beyond the bound is refused rather than piling up. Two pieces of work run outside the monitor
 * because they may be long: expanding a job's plan program (then installed under it) and
 * computing a derived feature; both hold their dataset by a lease. The recorded trace ({@link TraceRecorder}) and the kept
 * settings ({@link Settings}) are changed under the monitor only.
 */
final class TierManager implements AutoCloseable {
  static final String RUNNING_MARKER = "node.running";
  /** A plan whose job has sent nothing for this long is dropped (the job finished or died). */
  static final double PLAN_LEASE_SECONDS = 600;
  /** Rows the read trace keeps (the oldest go first). */
  static final int TRACE_ROWS = 1_000_000;
  /** Chunk entries a plan may expand to, all features together. */
  static final long MAX_PLAN_READS = 50_000_000;



  private static final class Counters {
    long reads;
    long ssdReads;
    long ssdBytes;
    long hddBytes;
    long flashBytes;
    long promotions;
    long promotionFailures;
    long evictions;
    long rejectedPromotions;
    long damagedSegments;
  }

  /** What the last damaged segment's check found (status), or null. */
  private String lastDamagedSegment;

  private final NodeConfig config;
  private final Settings settings;
  private final SegmentStore store;
  private final io.strata.store.FeatureStore features;
  private final StrataPolicy policy;
  private final DatasetRegistry datasets;
  private final double startNanos = System.nanoTime();
  private final KeySpace keys = new KeySpace();
  private final Map<Integer, SegmentRef> residentRefs = new HashMap<>();
  private final Set<Integer> pending = new HashSet<>();
  private final Jobs jobs = new Jobs(PLAN_LEASE_SECONDS);
  private final TraceRecorder trace = new TraceRecorder(TRACE_ROWS);
  private final Set<String> pins = new HashSet<>();
  private final Map<String, Long> quotas = new TreeMap<>();
  private final Counters counters = new Counters();
  private final Map<Integer, long[]> groupBytes = new HashMap<>();
  private final NodeMetrics metrics;
  private final ArrayDeque<double[]> history = new ArrayDeque<>();
  private final ThreadPoolExecutor promoter;
  private final ThreadPoolExecutor evictor;
  private final List<String> startupNotes = new ArrayList<>();
  private double promoteTokens;
  private double lastPromoteRefill = Double.NaN;
  private boolean closed;
  private static final System.Logger LOG = System.getLogger("io.strata.node");
  /** What the last failed promotion was and why (shown in the status), or null. */
  private String lastPromotionFailure;
  /** Changes whenever a segment lands or goes: readers re-resolve when it differs from what they saw. */
  private long residency;

  TierManager(NodeConfig config) throws IOException {
    this(config, Settings.STARTABLE);
  }

  /**
   * A node's tiers; {@code given} names the settings given explicitly at start (the others in
   * {@code config} are defaults, and the values kept in the home's settings file win over them).
   */
  TierManager(NodeConfig startConfig, Set<String> given) throws IOException {
    this.settings = Settings.load(startConfig, given, StrataPolicy.DEFAULT_POPULARITY_DISCOUNT);
    NodeConfig config = startConfig.withHddRoots(settings.hddRoots).withSsdBudget(settings.ssdBudgetBytes);
    this.config = config;
    Files.createDirectories(config.home());
    if (settings.problem != null) {
      startupNotes.add(settings.problem);
    }
    Path marker = config.home().resolve(RUNNING_MARKER);
    boolean unclean = Files.exists(marker);
    AtomicFiles.write(marker, Long.toString(ProcessHandle.current().pid()).getBytes(StandardCharsets.UTF_8));
    this.store = SegmentStore.open(config.ssdDir(), unclean, SegmentFile.Verify.FIRST_OPEN);
    if (unclean) {
      startupNotes.add("the previous run did not stop cleanly: every segment's checksums were verified");
    }
    startupNotes.addAll(store.dropped());
    this.features = io.strata.store.FeatureStore.openWriter(config.home().resolve("features"));
    this.policy = new StrataPolicy(settings.ssdBudgetBytes, settings.flashWriteBudgetBytesPerHour, settings.popularityDiscount);
    this.datasets = new DatasetRegistry(config);
    AtomicInteger n = new AtomicInteger();
    this.promoter = new ThreadPoolExecutor(config.promotionThreads(), config.promotionThreads(), 30, TimeUnit.SECONDS,
        new ArrayBlockingQueue<>(1024), r -> daemon(r, "strata-promote-" + n.incrementAndGet()));
    this.evictor = new ThreadPoolExecutor(1, 1, 30, TimeUnit.SECONDS, new ArrayBlockingQueue<>(4096),
        r -> daemon(r, "strata-evict"), new ThreadPoolExecutor.CallerRunsPolicy());
    this.promoteTokens = config.promotionBytesPerSecond();
    datasets.load(startupNotes);
    restoreResident();
    quotas.putAll(settings.quotas);
    for (String p : settings.pins) {
      int slash = p.indexOf('/');
      try {
        pin(slash < 0 ? p : p.substring(0, slash), slash < 0 ? null : p.substring(slash + 1), true);
      } catch (RuntimeException e) {
        startupNotes.add("the kept pin " + p + " is not restored: " + e.getMessage());
      }
    }
    settings.pins.clear();
    settings.pins.addAll(pins);
    settings.save();
    this.metrics = new NodeMetrics(this::metricValues);
  }

  /** The configuration the node runs with (start options, kept settings, defaults). */
  NodeConfig config() {
    return config;
  }

  private static Thread daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }

  /** Seconds since the node started: the policy's clock. */
  double now() {
    return (System.nanoTime() - startNanos) / 1e9;
  }

  List<String> startupNotes() {
    return List.copyOf(startupNotes);
  }

  // ---------------------------------------------------------------- datasets

  /** The open dataset {@code name} (404 if not registered, 409 if it cannot be opened). */
  Dataset dataset(String name) {
    return datasets.dataset(name);
  }

  /** The open dataset {@code name}, held open until the lease is closed. */
  DatasetRegistry.Lease leaseDataset(String name) {
    return datasets.lease(name);
  }

  /** Registers (or re-registers) the dataset in {@code dir}; returns its description. */
  ObjectNode register(String dir) throws IOException {
    return describe(datasets.register(dir));
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
      long share = ref.bytes() / Math.max(1, info.columns().size());
      for (String feature : info.columns()) {
        int key = key(ds, feature, info.chunk());
        residentRefs.put(key, ref);
        setKeyBytes(key, share);
        policy.restore(key, share);
      }
    }
  }

  ArrayNode listDatasets() {
    ArrayNode a = Json.array();
    for (String name : datasets.names()) {
      a.add(describe(name));
    }
    return a;
  }

  ObjectNode describe(String name) {
    Dataset ds = dataset(name);
    ObjectNode o = Json.object();
    o.put("name", ds.name()).put("version", ds.version()).put("path", ds.directory().toString()).put("rows", ds.rows());
    o.put("chunks", ds.chunks().size());
    o.put("orcBytes", datasets.orcBytes(ds.name()));
    ArrayNode features = o.putArray("features");
    for (FeatureInfo f : ds.columns()) {
      ObjectNode fo = features.addObject().put("name", f.name());
      if (f.supported()) {
        fo.put("type", f.type().toString());
        long estimate = 0;
        for (int c = 0; c < ds.chunks().size(); c++) {
          estimate += estimateBytes(ds, f.name(), c);
        }
        fo.put("policyBytes", estimate);
      } else {
        fo.put("unsupported", f.unsupportedReason());
      }
    }
    synchronized (this) {
      long resident = 0;
      for (Map.Entry<Integer, SegmentRef> e : residentRefs.entrySet()) {
        if (keys.get(e.getKey()).dataset().equals(name)) {
          resident += keys.bytes(e.getKey());
        }
      }
      o.put("ssdBytes", resident);
      if (quotas.containsKey(name)) {
        o.put("quotaBytes", quotas.get(name));
      }
    }
    return o;
  }

  // ---------------------------------------------------------------- keys

  /** The key of {@code chunk} of {@code feature}; a feature's keys are allocated (and told to the policy) on first use. */
  private synchronized int key(Dataset ds, String feature, int chunk) {
    int k = keys.find(ds.name(), ds.version(), feature, chunk);
    if (k >= 0) {
      return k;
    }
    int chunks = ds.chunks().size();
    int base = keys.allocate(ds.name(), ds.version(), feature, chunks, c -> estimateBytes(ds, feature, c));
    boolean pinned = pinned(ds.name(), feature);
    for (int c = 0; c < chunks; c++) {
      policy.group(base + c, keys.get(base + c).group());
      if (pinned) {
        policy.pin(base + c, keys.bytes(base + c), true);
      }
    }
    return base + chunk;
  }

  /** A key's size is now known (its segment's bytes): the policy and the recorded trace use it from now on. */
  private synchronized void setKeyBytes(int key, long bytes) {
    keys.setBytes(key, bytes);
    trace.size(key, bytes);
  }

  private static long estimateBytes(Dataset ds, String feature, int chunk) {
    if (io.strata.sdk.derive.Spec.isDerived(feature)) {
      return ds.chunks().get(chunk).rows() * 16 + 4096;
    }
    FeatureType t = ds.feature(feature).type();
    long rows = ds.chunks().get(chunk).rows();
    int width = t.kind().width();
    if (width > 0) {
      return rows * width + 4096;
    }
    if (width == 0) {
      return rows / 8 + 4096;
    }
    return rows * (t.isVariableWidth() ? 24 : 40) + 4096;
  }

  private void checkFeatureAndChunk(Dataset ds, String feature, int chunk) {
    if (io.strata.sdk.derive.Spec.isDerived(feature)) {
      String canonical;
      try {
        canonical = io.strata.sdk.derive.Spec.parse(feature).canonical();
      } catch (IllegalArgumentException e) {
        throw NodeException.badRequest(e.getMessage());
      }
      if (!canonical.equals(feature)) {
        throw NodeException.badRequest("derived features are named by their canonical spec: '" + canonical + "', not '" + feature + "'");
      }
      try {
        if (features.lookup(ds.name(), ds.version(), canonical).isEmpty()) {
          throw NodeException.notFound("derived feature " + canonical + " of " + ds.name() + " is not materialized (POST /v1/features first)");
        }
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    } else {
      try {
        ds.feature(feature);
      } catch (IllegalArgumentException e) {
        throw NodeException.badRequest(e.getMessage());
      }
    }
    if (chunk < 0 || chunk >= ds.chunks().size()) {
      throw NodeException.badRequest("chunk " + chunk + " is outside dataset " + ds.name() + " (0.." + (ds.chunks().size() - 1) + ")");
    }
  }

  // ---------------------------------------------------------------- jobs

  /**
   * A job's plan: {@code epochs} epochs over {@code features} of {@code dataset}, visiting chunks
   * in {@code chunkOrder} (null: dataset order) and, within a chunk, every feature.
   */
  synchronized ObjectNode plan(String job, String datasetName, List<String> features, int epochs, List<Integer> chunkOrder,
      boolean substitutable) {
    Jobs.checkName(job);
    Dataset ds = dataset(datasetName);
    if (features.isEmpty()) {
      throw NodeException.badRequest("'features' must name at least one feature");
    }
    if (epochs < 1 || epochs > 10_000) {
      throw NodeException.badRequest("'epochs' must be in 1..10000, got " + epochs);
    }
    List<Integer> order = chunkOrder;
    if (order == null) {
      order = new ArrayList<>();
      for (int c = 0; c < ds.chunks().size(); c++) {
        order.add(c);
      }
    }
    for (String f : features) {
      checkFeatureAndChunk(ds, f, 0);
    }
    for (int c : order) {
      checkFeatureAndChunk(ds, features.getFirst(), c);
    }
    long length = (long) epochs * order.size() * features.size();
    if (length > 50_000_000) {
      throw NodeException.badRequest("the plan has " + length + " reads; at most 50,000,000 are accepted");
    }
    int[][] stepChunks = new int[epochs * order.size()][];
    for (int k = 0; k < stepChunks.length; k++) {
      stepChunks[k] = new int[] {order.get(k % order.size())};
    }
    installSteps(job, ds, features, stepChunks, 0, Math.max(1, order.size()), substitutable);
    return Json.object().put("job", job).put("dataset", ds.name()).put("version", ds.version()).put("reads", length);
  }

  /**
   * A job's plan as its loader's program: the node expands it with the loader's own code into
   * the chunks of every step from the program's start step on; each step reads every one of
   * {@code features} of its chunks.
   */
  ObjectNode plan(String job, String datasetName, List<String> features, PlanProgram program, boolean substitutable) {
    Jobs.checkName(job);
    Dataset ds = dataset(datasetName);
    if (features.isEmpty()) {
      throw NodeException.badRequest("'features' must name at least one feature");
    }
    for (String f : features) {
      checkFeatureAndChunk(ds, f, 0);
    }
    // Expanding may take a while on large datasets: outside the monitor, so that reads go on.
    int[][] stepChunks;
    long perEpoch;
    try {
      perEpoch = program.stepsPerEpoch(ds);
      stepChunks = program.expand(ds, MAX_PLAN_READS / features.size());
    } catch (IllegalArgumentException e) {
      throw NodeException.badRequest("plan of job '" + job + "': " + e.getMessage());
    }
    return installExpanded(job, ds, features, program, substitutable, stepChunks, perEpoch);
  }

  private synchronized ObjectNode installExpanded(String job, Dataset ds, List<String> features, PlanProgram program,
      boolean substitutable, int[][] stepChunks, long perEpoch) {
    int total = installSteps(job, ds, features, stepChunks, program.startStep(), Math.max(1, perEpoch), substitutable);
    return Json.object().put("job", job).put("dataset", ds.name()).put("version", ds.version()).put("steps", stepChunks.length)
        .put("stepsPerEpoch", perEpoch).put("startStep", program.startStep()).put("reads", total);
  }

  /**
   * Installs a job's plan given as the chunks of each step (every feature of each chunk is read in
   * the step), from global step {@code firstStep}; returns the reads it holds.
   */
  private int installSteps(String job, Dataset ds, List<String> features, int[][] stepChunks, long firstStep, long perEpoch,
      boolean substitutable) {
    int total = 0;
    for (int[] c : stepChunks) {
      total += c.length * features.size();
    }
    int[] seq = new int[total];
    int[] ends = new int[stepChunks.length];
    int i = 0;
    for (int s = 0; s < stepChunks.length; s++) {
      for (int c : stepChunks[s]) {
        for (String f : features) {
          seq[i++] = key(ds, f, c);
        }
      }
      ends[s] = i;
    }
    installPlan(job, ds, features, new CachePolicy.JobPlan(seq, ends, firstStep, perEpoch, substitutable), stepChunks);
    return total;
  }

  private void installPlan(String job, Dataset ds, List<String> features, CachePolicy.JobPlan jp, int[][] stepChunks) {
    double now = now();
    expirePlans(now);
    int id = jobs.planned(job, ds.name(), features, now, jp.firstStep(), jp.firstStep() + jp.stepEnds().length);
    policy.plan(id, jp);
    trace.plan(now, job, ds.name(), features, jp.firstStep(), jp.stepsPerEpoch(), jp.substitutable(), stepChunks);
  }

  /** Changes how long a silent job's plan is kept (tests). */
  synchronized void planLease(double seconds) {
    jobs.lease(seconds);
  }

  /** Drops the plans of jobs silent for longer than the lease. */
  private void expirePlans(double now) {
    for (Jobs.Job j : jobs.expire(now)) {
      policy.jobEnded(j.id());
      trace.end(now, j.name(), j.dataset());
    }
  }

  /** The recorded trace as CSV, and how many of its oldest rows were dropped. */
  synchronized String traceCsv() {
    return trace.csv();
  }

  synchronized long traceDropped() {
    return trace.dropped();
  }

  /** Forgets the recorded trace; returns the rows dropped. */
  synchronized ObjectNode clearTrace() {
    int n = trace.rows();
    trace.clear();
    return Json.object().put("cleared", n);
  }

  synchronized void endJob(String job) {
    Jobs.checkName(job);
    Jobs.Job j = jobs.end(job, now());
    if (j == null) {
      throw NodeException.notFound("no job '" + job + "' has a plan");
    }
    policy.jobEnded(j.id());
    trace.end(now(), job, j.dataset());
  }

  // ---------------------------------------------------------------- reads

  /** Where each requested feature chunk lives now: a segment to map, or the ORC source. */
  ObjectNode resolve(String job, String datasetName, List<String> features, List<Integer> chunks) {
    long t0 = System.nanoTime();
    try {
      return resolveNow(job, datasetName, features, chunks);
    } finally {
      metrics.resolves().record(System.nanoTime() - t0, TimeUnit.NANOSECONDS);
    }
  }

  private ObjectNode resolveNow(String job, String datasetName, List<String> features, List<Integer> chunks) {
    if (job != null) {
      Jobs.checkName(job);
    }
    Dataset ds = dataset(datasetName);
    List<Integer> cs = chunks;
    if (cs == null) {
      cs = new ArrayList<>();
      for (int c = 0; c < ds.chunks().size(); c++) {
        cs.add(c);
      }
    }
    for (String f : features) {
      for (int c : cs) {
        checkFeatureAndChunk(ds, f, c);
      }
    }
    ObjectNode out = Json.object();
    out.put("dataset", ds.name()).put("version", ds.version());
    ArrayNode resident = out.putArray("segments");
    Map<Path, ObjectNode> byPath = new HashMap<>();
    synchronized (this) {
      for (String f : features) {
        for (int c : cs) {
          int k = key(ds, f, c);
          SegmentRef ref = residentRefs.get(k);
          if (ref != null) {
            ObjectNode s = byPath.computeIfAbsent(ref.path(), p -> {
              ObjectNode o = resident.addObject();
              o.put("path", p.toString()).put("chunk", c).put("bytes", ref.bytes());
              o.putArray("features");
              return o;
            });
            ((ArrayNode) s.get("features")).add(f);
          }
        }
      }
    }
    out.put("orcSource", ds.directory().toString());
    synchronized (this) {
      out.put("residency", residency);
    }
    return out;
  }

  /** One reported read: {@code bytes} of {@code feature} in {@code chunk}, served by {@code tier}. */
  record Read(String feature, int chunk, long bytes, boolean ssd) {}

  /**
   * Records a job's reads: statistics, reuse, and the policy's decisions (promotions, evictions);
   * {@code step >= 0} is the step the job reached, {@code unlinkedMappedBytes >= 0} what it still
   * maps of evicted segments.
   */
  synchronized ObjectNode reportReads(String job, String datasetName, List<Read> reads, long step, long unlinkedMappedBytes) {
    Jobs.checkName(job);
    jobs.unlinked(job, unlinkedMappedBytes);
    Dataset ds = dataset(datasetName);
    int jid = jobs.id(job);
    double now = now();
    int admitted = 0;
    for (Read r : reads) {
      checkFeatureAndChunk(ds, r.feature(), r.chunk());
      if (r.bytes() < 0) {
        throw NodeException.badRequest("'bytes' must not be negative");
      }
    }
    expirePlans(now);
    jobs.heard(job, now);
    long[] planned = jobs.bytesOf(job);
    for (Read r : reads) {
      int k = key(ds, r.feature(), r.chunk());
      trace.read(now, job, ds.name(), r.feature(), r.chunk(), k, keys.bytes(k), r.ssd());
      counters.reads++;
      long[] g = groupBytes.computeIfAbsent(keys.get(k).group(), x -> new long[2]);
      long[] jb = planned == null ? null : planned;
      if (r.ssd()) {
        counters.ssdReads++;
        counters.ssdBytes += r.bytes();
        g[0] += r.bytes();
      } else {
        counters.hddBytes += r.bytes();
        g[1] += r.bytes();
      }
      if (jb != null) {
        jb[r.ssd() ? 0 : 1] += r.bytes();
      }
      CachePolicy.Outcome o = policy.access(now, jid, k, keys.bytes(k), this::evicted);
      if (o == CachePolicy.Outcome.MISS_ADMITTED || (o == CachePolicy.Outcome.HIT && !residentRefs.containsKey(k) && !pending.contains(k))) {
        if (schedulePromotion(k)) {
          admitted++;
        }
      }
    }
    if (step >= 0) {
      // After the reads: they belong to steps up to this one.
      policy.progress(jid, step, now);
      jobs.stepped(job, step);
      trace.step(now, job, ds.name(), step);
    }
    return Json.object().put("accepted", reads.size()).put("promotionsScheduled", admitted).put("planned", jobs.hasPlan(job))
        .put("residency", residency);
  }

  /** SSD bytes a dataset holds or has in flight. */
  private long datasetBytes(String ds) {
    long used = 0;
    for (Map.Entry<Integer, SegmentRef> e : residentRefs.entrySet()) {
      if (keys.get(e.getKey()).dataset().equals(ds)) {
        used += keys.bytes(e.getKey());
      }
    }
    for (int p : pending) {
      if (keys.get(p).dataset().equals(ds)) {
        used += keys.bytes(p);
      }
    }
    return used;
  }

  private boolean withinQuota(int key) {
    Long quota = quotas.get(keys.get(key).dataset());
    return quota == null || datasetBytes(keys.get(key).dataset()) + keys.bytes(key) <= quota;
  }

  /** Queues the promotion of one feature chunk; false (and the policy told) if refused. */
  private boolean schedulePromotion(int key) {
    if (residentRefs.containsKey(key) || pending.contains(key) || closed) {
      return false;
    }
    if (!withinQuota(key)) {
      policy.removed(key);
      return false;
    }
    pending.add(key);
    try {
      promoter.execute(() -> promote(key));
      return true;
    } catch (RejectedExecutionException e) {
      pending.remove(key);
      policy.removed(key);
      counters.rejectedPromotions++;
      return false;
    }
  }

  /** Runs on a promotion thread: decode one feature chunk from ORC and write its segment. */
  private void promote(int key) {
    KeySpace.KeyInfo info;
    synchronized (this) {
      info = keys.get(key);
    }
    try (DatasetRegistry.Lease lease = leaseDataset(info.dataset())) {
      Dataset ds = lease.dataset();
      if (!ds.version().equals(info.version())) {
        throw new IOException("dataset " + info.dataset() + " changed version");
      }
      long t0 = System.nanoTime();
      Promoter.ChunkSource source;
      if (io.strata.sdk.derive.Spec.isDerived(info.feature())) {
        String fp = features.lookup(ds.name(), ds.version(), info.feature())
            .orElseThrow(() -> new IOException("derived feature " + info.feature() + " is no longer in the feature store"));
        source = storedFeature(fp, info.feature());
      } else {
        source = Promoter.ChunkSource.orc(ds);
      }
      SegmentRef ref = Promoter.promoteChunk(ds, store, info.chunk(), List.of(info.feature()), source, this::throttle);
      metrics.promotions(io.strata.sdk.derive.Spec.isDerived(info.feature())).record(System.nanoTime() - t0, TimeUnit.NANOSECONDS);
      synchronized (this) {
        pending.remove(key);
        counters.flashBytes += ref.bytes();
        setKeyBytes(key, ref.bytes());
        if (policy.resident(key) && !closed) {
          residentRefs.put(key, ref);
          residency++;
          counters.promotions++;
          policy.resize(key, ref.bytes(), now(), this::evicted);
          Long quota = quotas.get(info.dataset());
          if (quota != null && residentRefs.containsKey(key) && datasetBytes(info.dataset()) > quota) {
            policy.removed(key);
            evicted(key);
          }
        } else {
          // Evicted while being written.
          evictor.execute(() -> removeQuietly(ref));
        }
      }
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt(); // the pool is shutting down
      }
      String what = info.dataset() + "/" + info.feature() + " chunk " + info.chunk();
      boolean quiet;
      unplace(key);
      synchronized (this) {
        counters.promotionFailures++;
        lastPromotionFailure = what + ": " + e.getMessage();
        quiet = closed;
      }
      if (!quiet) {
        LOG.log(System.Logger.Level.WARNING, "promotion of " + what + " failed; it is served from ORC: " + e);
      }
    }
  }

  /** A chunk placement that failed: no longer pending, not resident. */
  private synchronized void unplace(int k) {
    pending.remove(k);
    policy.removed(k);
  }

  /** Chunks of a derived feature from the feature store, named {@code name} in their segments. */
  private Promoter.ChunkSource storedFeature(String fingerprint, String name) {
    return (chunk, names, arena) -> {
      SequencedMap<String, Column> cols = new LinkedHashMap<>();
      cols.put(name, features.chunk(fingerprint, chunk, arena));
      return cols;
    };
  }

  /** Waits until the promotion rate limit allows {@code bytes} more. */
  private void throttle(long bytes) throws InterruptedException {
    long rate = config.promotionBytesPerSecond();
    if (rate <= 0) {
      return;
    }
    while (true) {
      long wait;
      synchronized (this) {
        double t = now();
        if (!Double.isNaN(lastPromoteRefill)) {
          promoteTokens = Math.min(rate, promoteTokens + (t - lastPromoteRefill) * rate);
        }
        lastPromoteRefill = t;
        if (promoteTokens >= Math.min(bytes, rate)) {
          promoteTokens -= bytes;
          return;
        }
        wait = (long) Math.ceil((Math.min(bytes, rate) - promoteTokens) * 1000.0 / rate);
      }
      Thread.sleep(Math.max(1, wait));
    }
  }

  /** Called by the policy for every key it evicts (under this object's lock). */
  private void evicted(int key) {
    SegmentRef ref = residentRefs.remove(key);
    residency++;
    if (ref == null) {
      return;
    }
    counters.evictions++;
    // Other features sharing the segment leave the tier with it.
    for (String f : ref.info().columns()) {
      KeySpace.KeyInfo k = keys.get(key);
      int other = keys.find(k.dataset(), k.version(), f, k.chunk());
      if (other >= 0 && other != key && residentRefs.remove(other) != null) {
        policy.removed(other);
      }
    }
    evictor.execute(() -> removeQuietly(ref));
  }

  /**
   * Evicted segments still mapped, by the node (a derivation or promotion reading them) and by the
   * jobs (as they last reported): their files are unlinked, but their SSD blocks are not free yet.
   */
  private long unlinkedMappedBytes() {
    long b = store.unlinkedMappedBytes();
    return b + jobs.unlinkedTotal();
  }

  /**
   * A reader found the segment of {@code feature} of {@code chunk} damaged after mapping it: every
   * checksum of the file is checked on a fresh mapping (outside this object's lock) and, when the
   * check fails, the segment leaves the tier (its features are read from ORC and may be promoted
   * anew). Returns what the check found.
   */
  ObjectNode checkSegment(String datasetName, String feature, int chunk, String problem) {
    SegmentRef ref;
    synchronized (this) {
      Dataset ds = dataset(datasetName);
      checkFeatureAndChunk(ds, feature, chunk);
      ref = residentRefs.get(key(ds, feature, chunk));
    }
    if (ref == null) {
      return Json.object().put("resident", false).put("damaged", false);
    }
    String damage = SegmentStore.recheck(ref.path(), feature, chunk);
    if (damage == null) {
      return Json.object().put("resident", true).put("damaged", false);
    }
    synchronized (this) {
      Dataset ds = dataset(datasetName);
      int k = key(ds, feature, chunk);
      if (residentRefs.get(k) == ref) {
        LOG.log(System.Logger.Level.WARNING, "dropping a damaged segment: " + damage + " (a reader found: " + problem + ")");
        counters.damagedSegments++;
        lastDamagedSegment = damage;
        policy.removed(k);
        evicted(k);
      }
    }
    return Json.object().put("resident", true).put("damaged", true).put("problem", damage);
  }

  private void removeQuietly(SegmentRef ref) {
    try {
      store.remove(ref);
    } catch (IOException ignored) {
      // The file is gone from the catalog; a failed unlink is retried at the next start-up scan.
    }
  }

  // ---------------------------------------------------------------- derived features

  /**
   * The canonical form of {@code specText} on {@code datasetName}, checked (the dataset exists,
   * the spec parses and its types check): 404 or 400 otherwise. Cheap: no column is read.
   */
  String checkDerivation(String datasetName, String specText) {
    Dataset ds = dataset(datasetName);
    try {
      return io.strata.sdk.derive.Derivation.of(io.strata.sdk.derive.Spec.parse(specText), ds).spec().canonical();
    } catch (IllegalArgumentException e) {
      throw NodeException.badRequest(e.getMessage());
    }
  }

  /**
   * Gets or computes a derived feature of a dataset in the node's feature store (requests for
   * the same feature wait for one computation), then puts every chunk on the SSD tier as a
   * segment named by the canonical spec, telling {@code progress} of the chunks computed. Runs on
   * a derivation job's thread; may take long.
   */
  ObjectNode derive(String datasetName, String specText, io.strata.sdk.Progress progress) throws IOException {
    try (DatasetRegistry.Lease lease = leaseDataset(datasetName)) {
      return derive(lease.dataset(), specText, progress);
    }
  }

  private ObjectNode derive(Dataset ds, String specText, io.strata.sdk.Progress progress) throws IOException {
    io.strata.sdk.derive.Derivation d;
    try {
      d = io.strata.sdk.derive.Derivation.of(io.strata.sdk.derive.Spec.parse(specText), ds);
    } catch (IllegalArgumentException e) {
      throw NodeException.badRequest(e.getMessage());
    }
    io.strata.sdk.derive.Derivation.SourceReader reader = io.strata.sdk.derive.Derivation.SourceReader.orc(ds);
    boolean cached = features.complete(d, reader) != null;
    long t0 = System.nanoTime();
    io.strata.store.FeatureMeta m = features.getOrCompute(d, reader, progress);
    double seconds = (System.nanoTime() - t0) / 1e9;
    String canonical = d.spec().canonical();
    int placed = 0;
    for (int c = 0; c < ds.chunks().size(); c++) {
      int k;
      synchronized (this) {
        k = key(ds, canonical, c);
        if (residentRefs.containsKey(k) || pending.contains(k) || policy.residentBytes() + keys.bytes(k) > policy.budget()) {
          continue;
        }
        policy.restore(k, keys.bytes(k));
        pending.add(k);
      }
      try {
        SegmentRef ref = Promoter.promoteChunk(ds, store, c, List.of(canonical), storedFeature(m.fingerprint(), canonical),
            this::throttle);
        synchronized (this) {
          pending.remove(k);
          setKeyBytes(k, ref.bytes());
          residentRefs.put(k, ref);
          residency++;
          counters.flashBytes += ref.bytes();
          policy.resize(k, ref.bytes(), now(), this::evicted);
          placed++;
        }
      } catch (IOException | RuntimeException e) {
        unplace(k);
        throw e;
      } catch (InterruptedException e) {
        unplace(k);
        Thread.currentThread().interrupt();
        throw new java.io.InterruptedIOException("placing " + canonical + " on the SSD tier was interrupted at chunk " + c);
      }
    }
    ObjectNode o = m.toJson();
    o.put("cached", cached).put("seconds", seconds).put("segmentsWritten", placed);
    return o;
  }

  ArrayNode derivedFeatures() throws IOException {
    ArrayNode a = Json.array();
    for (io.strata.store.FeatureMeta m : features.list()) {
      ObjectNode o = m.toJson();
      o.remove("statistics");
      a.add(o);
    }
    return a;
  }

  // ---------------------------------------------------------------- operator actions

  private List<Integer> chunkList(Dataset ds, List<Integer> chunks) {
    List<Integer> cs = new ArrayList<>();
    if (chunks == null) {
      for (int c = 0; c < ds.chunks().size(); c++) {
        cs.add(c);
      }
    } else {
      cs.addAll(chunks);
    }
    return cs;
  }

  /** Promotes features of chunks now (an operator's request), within the SSD budget and quotas. */
  synchronized ObjectNode promoteNow(String datasetName, List<String> features, List<Integer> chunks) {
    Dataset ds = dataset(datasetName);
    List<String> fs = features == null || features.isEmpty() ? ds.featureNames() : features;
    int scheduled = 0;
    long need = 0;
    List<Integer> todo = new ArrayList<>();
    for (String f : fs) {
      for (int c : chunkList(ds, chunks)) {
        checkFeatureAndChunk(ds, f, c);
        int k = key(ds, f, c);
        if (!residentRefs.containsKey(k) && !pending.contains(k)) {
          todo.add(k);
          need += keys.bytes(k);
        }
      }
    }
    if (policy.residentBytes() + need > policy.budget()) {
      throw NodeException.conflict("promoting " + todo.size() + " chunks needs about " + need + " bytes but only "
          + Math.max(0, policy.budget() - policy.residentBytes()) + " of the SSD budget are free: evict, unpin or raise the budget");
    }
    for (int k : todo) {
      policy.restore(k, keys.bytes(k));
      if (schedulePromotion(k)) {
        scheduled++;
      }
    }
    return Json.object().put("scheduled", scheduled).put("bytes", need);
  }

  /** Evicts features of chunks (all features or chunks when not given). */
  synchronized ObjectNode evictNow(String datasetName, List<String> features, List<Integer> chunks) {
    Dataset ds = dataset(datasetName);
    List<String> fs = features == null || features.isEmpty() ? ds.featureNames() : features;
    int n = 0;
    for (String f : fs) {
      for (int c : chunkList(ds, chunks)) {
        checkFeatureAndChunk(ds, f, c);
        int k = key(ds, f, c);
        if (pinned(ds.name(), f)) {
          throw NodeException.conflict("feature " + f + " of " + ds.name() + " is pinned: unpin it first");
        }
        if (residentRefs.containsKey(k)) {
          policy.removed(k);
          evicted(k);
          n++;
        }
      }
    }
    return Json.object().put("evicted", n);
  }

  private boolean pinned(String dataset, String feature) {
    return pins.contains(dataset) || pins.contains(dataset + "/" + feature);
  }

  /** Keeps the settings in the home; a failure to write them is a startup-note-worthy problem, not a failed request. */
  private void saveSettings() {
    try {
      settings.save();
    } catch (IOException e) {
      LOG.log(System.Logger.Level.WARNING, "the settings could not be kept in " + config.home() + ": " + e);
      startupNotes.add("settings not kept: " + e.getMessage());
    }
  }

  /** The SSD bytes the pinned features take (estimated until their segments are written): reserved in the budget. */
  private long pinnedBytes() {
    long b = 0;
    for (int k = 0; k < keys.size(); k++) {
      KeySpace.KeyInfo ki = keys.get(k);
      if (pinned(ki.dataset(), ki.feature())) {
        b += keys.bytes(k);
      }
    }
    return b;
  }

  /**
   * Pins (or unpins) a dataset or one feature: pinned chunks are promoted and never evicted.
   * Pinned bytes are reserved in the SSD budget: a pin the budget cannot hold is refused (409).
   */
  synchronized ObjectNode pin(String datasetName, String feature, boolean pin) {
    Dataset ds = dataset(datasetName);
    if (feature != null) {
      checkFeatureAndChunk(ds, feature, 0);
    }
    String p = feature == null ? ds.name() : ds.name() + "/" + feature;
    if (pin) {
      if (!pins.contains(p)) {
        long more = 0;
        for (String f : feature == null ? ds.featureNames() : List.of(feature)) {
          if (!pinned(ds.name(), f)) {
            for (int c = 0; c < ds.chunks().size(); c++) {
              more += keys.bytes(key(ds, f, c));
            }
          }
        }
        long already = pinnedBytes();
        if (already + more > policy.budget()) {
          throw NodeException.conflict("pinning " + p + " needs " + more + " bytes of SSD budget; " + already + " of the "
              + policy.budget() + "-byte budget are pinned already: raise the budget or unpin first");
        }
      }
      pins.add(p);
    } else if (!pins.remove(p)) {
      throw NodeException.notFound(p + " is not pinned");
    }
    if (settings.pins.size() != pins.size() || !settings.pins.containsAll(pins)) {
      settings.pins.clear();
      settings.pins.addAll(pins);
      settings.changed("pins");
      saveSettings();
    }
    List<String> fs = feature == null ? ds.featureNames() : List.of(feature);
    int scheduled = 0;
    for (String f : fs) {
      for (int c = 0; c < ds.chunks().size(); c++) {
        int k = key(ds, f, c);
        policy.pin(k, keys.bytes(k), pinned(ds.name(), f));
        if (pin && !residentRefs.containsKey(k) && !pending.contains(k) && policy.residentBytes() + keys.bytes(k) <= policy.budget()) {
          policy.restore(k, keys.bytes(k));
          if (schedulePromotion(k)) {
            scheduled++;
          }
        }
      }
    }
    return Json.object().put("pinned", pin).put("target", p).put("promotionsScheduled", scheduled);
  }

  synchronized ObjectNode policyJson() {
    ObjectNode o = Json.object();
    o.put("ssdBudgetBytes", policy.budget());
    o.put("flashWriteBudgetBytesPerHour", (long) policy.flashBudgetPerHour());
    o.put("popularityDiscount", policy.popularityDiscount());
    o.put("promotionBytesPerSecond", config.promotionBytesPerSecond());
    ObjectNode q = o.putObject("quotas");
    quotas.forEach(q::put);
    ArrayNode p = o.putArray("pins");
    pins.stream().sorted().forEach(p::add);
    o.put("pinnedBytes", pinnedBytes());
    ObjectNode src = o.putObject("sources");
    settings.sources().forEach(src::put);
    ArrayNode roots = o.putArray("hddRoots");
    config.hddRoots().forEach(r -> roots.add(r.toString()));
    o.set("decisions", Json.MAPPER.valueToTree(policy.decisionCounts()));
    return o;
  }

  /**
   * A change of policy, as parsed from a request: each field null when not changed; a quota of
   * null in {@code quotas} removes the dataset's quota.
   */
  record PolicyChange(Long ssdBudgetBytes, Long flashWriteBudgetBytesPerHour, Double popularityDiscount,
      Map<String, Long> quotas) {}

  /**
   * Applies {@code change}, checked as a whole first (a refused change changes nothing): 404 for
   * a quota of an unregistered dataset, 409 for a budget below the pinned bytes.
   */
  synchronized ObjectNode setPolicy(PolicyChange change) {
    Long budget = change.ssdBudgetBytes();
    Long flash = change.flashWriteBudgetBytesPerHour();
    Double discount = change.popularityDiscount();
    Map<String, Long> quotaChanges = change.quotas();
    for (String name : quotaChanges.keySet()) {
      if (!datasets.contains(name)) {
        throw NodeException.notFound("no dataset '" + name + "' is registered");
      }
    }
    long pinned = budget == null ? 0 : pinnedBytes();
    if (budget != null && budget < pinned) {
      throw NodeException.conflict("an SSD budget of " + budget + " bytes is below the " + pinned
          + " bytes pinned features take: unpin first (pins: " + pins.stream().sorted().toList() + ")");
    }
    if (budget != null) {
      policy.setBudget(budget, now(), this::evicted);
    }
    if (flash != null) {
      policy.setFlashBudget(flash);
    }
    if (discount != null) {
      policy.setPopularityDiscount(discount);
    }
    quotaChanges.forEach((name, bytes) -> {
      if (bytes == null) {
        quotas.remove(name);
      } else {
        quotas.put(name, bytes);
      }
    });
    settings.ssdBudgetBytes = policy.budget();
    settings.flashWriteBudgetBytesPerHour = policy.flashBudgetPerHour();
    settings.popularityDiscount = policy.popularityDiscount();
    settings.quotas.clear();
    settings.quotas.putAll(quotas);
    List<String> changed = new ArrayList<>();
    if (budget != null) {
      changed.add("ssdBudgetBytes");
    }
    if (flash != null) {
      changed.add("flashWriteBudgetBytesPerHour");
    }
    if (discount != null) {
      changed.add("popularityDiscount");
    }
    if (!quotaChanges.isEmpty()) {
      changed.add("quotas");
    }
    settings.changed(changed.toArray(String[]::new));
    saveSettings();
    return policyJson();
  }

  // ---------------------------------------------------------------- status

  synchronized ObjectNode status() {
    ObjectNode o = Json.object();
    o.put("uptimeSeconds", now());
    ObjectNode ssd = o.putObject("ssd");
    ssd.put("directory", config.ssdDir().toString());
    ssd.put("bytes", store.bytes()).put("residentBytes", policy.residentBytes()).put("budgetBytes", policy.budget());
    ssd.put("segments", store.segments().size()).put("pendingPromotions", pending.size());
    ssd.put("unlinkedMappedBytes", unlinkedMappedBytes());
    ssd.put("damagedSegments", counters.damagedSegments);
    if (lastDamagedSegment != null) {
      ssd.put("lastDamagedSegment", lastDamagedSegment);
    }
    ObjectNode hdd = o.putObject("hdd");
    hdd.put("datasets", datasets.names().size());
    hdd.put("bytes", datasets.totalOrcBytes());
    ArrayNode roots = hdd.putArray("roots");
    config.hddRoots().forEach(r -> roots.add(r.toString()));
    ObjectNode dram = o.putObject("dram");
    dram.put("budgetBytes", config.dramBudgetBytes());
    dram.put("openDatasets", datasets.openCount());
    long[] mem = hostMemory();
    dram.put("hostBytes", mem[0]).put("pageCacheBytes", mem[1]);
    ObjectNode t = o.putObject("traffic");
    long total = counters.ssdBytes + counters.hddBytes;
    t.put("reads", counters.reads).put("ssdReads", counters.ssdReads);
    t.put("ssdBytes", counters.ssdBytes).put("hddBytes", counters.hddBytes);
    t.put("byteHitRatio", total == 0 ? 0 : (double) counters.ssdBytes / total);
    t.put("hddBytesAvoided", counters.ssdBytes);
    t.put("flashBytesWritten", counters.flashBytes);
    t.put("flashBytesPerHour", flashRate());
    t.put("flashBytesPerSecondLastMinute", recentFlashRate(60));
    t.put("promotions", counters.promotions).put("promotionFailures", counters.promotionFailures);
    if (lastPromotionFailure != null) {
      t.put("lastPromotionFailure", lastPromotionFailure);
    }
    t.put("rejectedPromotions", counters.rejectedPromotions).put("evictions", counters.evictions);
    t.put("derivedComputations", features.computations());
    ArrayNode top = o.putArray("topStreams");
    groupBytes.entrySet().stream()
        .sorted(Comparator.comparingLong((Map.Entry<Integer, long[]> e) -> e.getValue()[0] + e.getValue()[1]).reversed())
        .limit(10)
        .forEach(e -> top.addObject()
            .put("stream", keys.groupName(e.getKey()))
            .put("ssdBytes", e.getValue()[0])
            .put("hddBytes", e.getValue()[1]));
    double now = now();
    ArrayNode js = o.putArray("jobs");
    Map<String, long[]> jobBytes = jobs.bytesByJob();
    for (Jobs.Job j : jobs.plans()) {
      long[] b = jobBytes.getOrDefault(j.name(), new long[2]);
      jobJson(js.addObject(), j, jobs.step(j.name()), b[0], b[1], now - j.started());
    }
    ArrayNode recent = o.putArray("recentJobs");
    for (Jobs.Ended e : jobs.recent()) {
      jobJson(recent.addObject(), e.job(), e.step(), e.ssdBytes(), e.hddBytes(), e.ended() - e.job().started())
          .put("how", e.how()).put("endedSecondsAgo", now - e.ended());
    }
    ArrayNode pinned = o.putArray("pins");
    pins.stream().sorted().forEach(pinned::add);
    ObjectNode pol = o.putObject("policy");
    pol.put("ssdBudgetBytes", policy.budget()).put("flashWriteBudgetBytesPerHour", (long) policy.flashBudgetPerHour())
        .put("popularityDiscount", policy.popularityDiscount());
    ArrayNode dsl = o.putArray("datasets");
    for (String name : datasets.names()) {
      dsl.addObject().put("name", name).put("orcBytes", datasets.orcBytes(name)).put("ssdBytes", datasetBytes(name))
          .put("quotaBytes", quotas.getOrDefault(name, -1L));
    }
    o.set("churn", churn());
    ArrayNode notes = o.putArray("startupNotes");
    startupNotes.forEach(notes::add);
    return o;
  }

  /** One job's row: progress in steps, bytes per tier, hit ratio, rate. */
  private static ObjectNode jobJson(ObjectNode o, Jobs.Job j, long step, long ssd, long hdd, double seconds) {
    long total = j.endStep() - j.firstStep();
    long done = Math.max(0, Math.min(total, step + 1 - j.firstStep()));
    o.put("job", j.name()).put("dataset", j.dataset()).put("features", j.features().size());
    o.put("stepsDone", done).put("steps", total).put("progress", total == 0 ? 0 : (double) done / total);
    o.put("ssdBytes", ssd).put("hddBytes", hdd).put("byteHitRatio", ssd + hdd == 0 ? 0 : (double) ssd / (ssd + hdd));
    o.put("seconds", seconds).put("bytesPerSecond", seconds <= 0 ? 0 : (ssd + hdd) / seconds);
    return o;
  }

  /**
   * Promotions and evictions over the last minute, and whether the tier thrashes: it evicts
   * nearly as much as it promotes, so that what it writes leaves again before it is reused (the
   * budget is too small for the working set, or the jobs' reuse too far apart).
   */
  private ObjectNode churn() {
    double[][] w = window(60);
    long promoted = w == null ? 0 : (long) (w[1][5] - w[0][5]);
    long evicted = w == null ? 0 : (long) (w[1][6] - w[0][6]);
    double seconds = w == null ? 0 : w[1][0] - w[0][0];
    boolean thrashing = promoted >= CHURN_MIN && evicted >= 0.8 * promoted;
    ObjectNode o = Json.object().put("seconds", seconds).put("promotions", promoted).put("evictions", evicted)
        .put("thrashing", thrashing);
    if (thrashing) {
      o.put("warning", "the SSD tier is thrashing: " + evicted + " evictions for " + promoted + " promotions in the last "
          + Math.round(seconds) + " s; what it writes leaves before it is reused (raise the budget, or pin what matters)");
    }
    return o;
  }

  /** Promotions in the last minute below which churn is no warning. */
  static final int CHURN_MIN = 20;

  /** MemTotal and Cached of /proc/meminfo in bytes (zeros where it cannot be read): the page cache is the DRAM tier. */
  private static long[] hostMemory() {
    long[] out = new long[2];
    try {
      for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
        String[] p = line.trim().split("\\s+");
        if (p.length >= 2 && p[0].equals("MemTotal:")) {
          out[0] = Long.parseLong(p[1]) * 1024;
        } else if (p.length >= 2 && p[0].equals("Cached:")) {
          out[1] = Long.parseLong(p[1]) * 1024;
        }
      }
    } catch (IOException | RuntimeException e) {
      // Not Linux: the DRAM tier is reported as unknown.
    }
    return out;
  }

  /** Flash bytes written over the last hour of samples, scaled to an hour. */
  private double flashRate() {
    if (history.isEmpty()) {
      return 0;
    }
    double[] first = history.peekFirst();
    double dt = now() - first[0];
    return dt <= 0 ? 0 : (counters.flashBytes - first[3]) * 3600 / dt;
  }

  /** Samples the counters (called every second by the node): the history behind rates and the dashboard. */
  synchronized void sample() {
    history.addLast(new double[] {now(), counters.ssdBytes, counters.hddBytes, counters.flashBytes, store.bytes(),
        counters.promotions, counters.evictions});
    while (history.size() > 3600) {
      history.removeFirst();
    }
  }

  /** The last {@code n} samples: time, SSD bytes read, HDD bytes read, flash written, SSD bytes held, promotions, evictions. */
  synchronized List<double[]> history(int n) {
    List<double[]> all = new ArrayList<>(history);
    return all.subList(Math.max(0, all.size() - n), all.size());
  }

  /** The values behind {@code /metrics}, taken at once. */
  synchronized NodeMetrics.Values metricValues() {
    Map<String, Number> m = new LinkedHashMap<>();
    m.put("reads", counters.reads);
    m.put("ssdReads", counters.ssdReads);
    m.put("ssdBytes", counters.ssdBytes);
    m.put("hddBytes", counters.hddBytes);
    m.put("flashBytes", counters.flashBytes);
    m.put("promotions", counters.promotions);
    m.put("promotionFailures", counters.promotionFailures);
    m.put("rejectedPromotions", counters.rejectedPromotions);
    m.put("evictions", counters.evictions);
    m.put("damagedSegments", counters.damagedSegments);
    m.put("ssdBytesHeld", store.bytes());
    m.put("ssdBudgetBytes", policy.budget());
    m.put("unlinkedMappedBytes", unlinkedMappedBytes());
    m.put("pendingPromotions", pending.size());
    m.put("datasets", datasets.names().size());
    m.put("jobs", jobs.plans().size());
    long total = counters.ssdBytes + counters.hddBytes;
    m.put("byteHitRatio", total == 0 ? 0.0 : (double) counters.ssdBytes / total);
    m.put("flashBytesPerSecond", recentFlashRate(60));
    Map<String, long[]> perDataset = new TreeMap<>();
    for (Map.Entry<Integer, long[]> e : groupBytes.entrySet()) {
      String group = keys.groupName(e.getKey());
      long[] d = perDataset.computeIfAbsent(group.substring(0, group.indexOf('/')), x -> new long[2]);
      d[0] += e.getValue()[0];
      d[1] += e.getValue()[1];
    }
    return new NodeMetrics.Values(m, perDataset, jobs.bytesByJob());
  }

  /** Flash bytes written per second over the last {@code seconds} of samples. */
  private double recentFlashRate(int seconds) {
    double[][] w = window(seconds);
    double dt = w == null ? 0 : w[1][0] - w[0][0];
    return dt <= 0 ? 0 : (w[1][3] - w[0][3]) / dt;
  }

  /**
   * The oldest sample no more than {@code seconds} before the last one, and the last one (counters
   * differ by what happened in between); null before the first sample.
   */
  private double[][] window(int seconds) {
    double[] last = history.peekLast();
    if (last == null) {
      return null;
    }
    double[] from = last;
    for (var it = history.descendingIterator(); it.hasNext(); ) {
      double[] x = it.next();
      if (last[0] - x[0] > seconds) {
        break;
      }
      from = x;
    }
    return new double[][] {from, last};
  }

  /** {@code GET /metrics}: Prometheus's text format. */
  String scrapeMetrics() {
    return metrics.scrape();
  }

  /** Waits until no promotion is queued or running (tests and orderly shutdown). */
  boolean awaitIdle(long timeoutMillis) throws InterruptedException {
    long end = System.currentTimeMillis() + timeoutMillis;
    while (System.currentTimeMillis() < end) {
      synchronized (this) {
        if (pending.isEmpty() && promoter.getActiveCount() == 0 && evictor.getActiveCount() == 0 && evictor.getQueue().isEmpty()) {
          return true;
        }
      }
      Thread.sleep(20);
    }
    return false;
  }

  SegmentStore store() {
    return store;
  }

  @Override
  public void close() throws IOException {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    promoter.shutdown();
    evictor.shutdown();
    try {
      promoter.awaitTermination(30, TimeUnit.SECONDS);
      evictor.awaitTermination(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    datasets.close();
    metrics.close();
    store.close();
    features.close();
    Files.deleteIfExists(config.home().resolve(RUNNING_MARKER));
  }
}
