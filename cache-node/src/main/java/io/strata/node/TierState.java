package io.strata.node;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.strata.node.policy.CachePolicy.Placement;
import io.strata.node.policy.CachePolicy;
import io.strata.node.policy.Policies;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.tier.Tier;
import io.strata.sdk.format.ResidencyBeacon;
import io.strata.sdk.tiering.SegmentRef;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.DoubleSupplier;

/**
 * What is where on the SSD tier, and the policy that decides it: the one class whose monitor guards
 * the policy, a {@link CachePolicy} chosen by name ({@link Policies}) and replaced whole when the
 * operator picks another ({@link TierOperations#setPolicy}). Split by concern under that one
 * monitor: the key space (an int per dataset version, feature and chunk: {@link KeySpace}), what is
 * resident or being written and the residency counter ({@link Residency}), the jobs and their plans
 * ({@link Jobs}), pins and quotas ({@link Reservations}), the co-access log ({@link CoAccessLog}),
 * and what operators do ({@link TierOperations}, which takes this monitor too); this class holds
 * them and the read path: reads reported, placements, landings, evictions, peer prefetch. Every
 * placement a read did not decide asks the policy ({@code place}): the budget is the policy's. File
 * work is not done here: placements are handed to the {@link PromotionQueue} and come back through
 * {@link #landed} or {@link #unplace}, evicted segments go to its unlinking thread.
 *
 * <p>Threads and locks: every method runs under this object's monitor, and quickly (in-memory
 * work only; handing work to the queue never blocks: its queues refuse rather than wait). The
 * parts above have no lock of their own: the fields holding them are guarded by this monitor, so
 * the checker proves every use is made holding it. The callers (API workers, promotion threads,
 * the node's timer) validate requests against their dataset before they come here, so nothing in
 * here reads a file. It calls out, under its monitor, to the policy, the parts, {@link
 * TraceRecorder} and the queue's non-blocking {@code submit}/{@code unlink}, none of which calls
 * back in, and to the lock-free {@link TierCounters}. What a chunk stores on the slow tier (read
 * from file footers) is learned by {@link SlowCosts}' thread, handed each new feature without
 * blocking and reporting back through {@link #slowBytes}.
 */
final class TierState {
  /** A job's report of one read: {@code bytes} of {@code feature} in {@code chunk}, and the tier that served it. */
  record Read(String feature, int chunk, long bytes, Tier tier) {}

  /** The policy in force (one of {@link Policies}, replaced whole by {@link TierOperations#setPolicy}) and its name. */
  @GuardedBy("this")
  CachePolicy policy;
  @GuardedBy("this")
  String policyName;
  /** The node's settings the policy was made with (a policy ignores those it has no use for). */
  @GuardedBy("this")
  double flashBudgetPerHour;
  @GuardedBy("this")
  double popularityDiscount;
  private final TierCounters counters;
  final DoubleSupplier clock;
  @GuardedBy("this")
  final KeySpace keys = new KeySpace();
  /** What is resident, what is being written, and the residency counter. */
  @GuardedBy("this")
  final Residency residency = new Residency();
  @GuardedBy("this")
  final Jobs jobs;
  private final TraceRecorder trace;
  @GuardedBy("this")
  final Reservations reserved = new Reservations();
  /** Per dataset, what its current version's readers read per job and feature: what a relayout would learn from. */
  @GuardedBy("this")
  private final CoAccessLog coAccess = new CoAccessLog();
  @GuardedBy("this")
  private PromotionQueue queue;
  /** The plans in force, by job name (what peer prefetch looks ahead in). */
  @GuardedBy("this")
  final Map<String, CachePolicy.JobPlan> planned = new HashMap<>();
  /** What peer prefetch looks at next, and the chunks it found on no peer lately. */
  @GuardedBy("this")
  private final PeerLookahead lookahead = new PeerLookahead();
  @GuardedBy("this")
  private boolean closed;

  TierState(String policyName, Policies.Options options, TierCounters counters, DoubleSupplier clock, double planLeaseSeconds,
      TraceRecorder trace) {
    this.policy = Policies.create(policyName, options);
    this.policyName = policyName;
    this.flashBudgetPerHour = options.flashBytesPerHour();
    this.popularityDiscount = options.popularityDiscount();
    this.counters = counters;
    this.clock = clock;
    this.jobs = new Jobs(planLeaseSeconds);
    this.trace = trace;
  }

  /** Publishes the residency counter in {@code b} from now on (see {@link Residency#attach}). */
  synchronized void attach(ResidencyBeacon b) {
    residency.attach(b);
  }

  /** The queue placements go to (set once, before any request). */
  synchronized void attach(PromotionQueue q) {
    this.queue = q;
  }

  // ---------------------------------------------------------------- keys

  /** The key of {@code chunk} of {@code feature}; a feature's keys are allocated (and told to the policy) on first use. */
  synchronized int key(Dataset ds, String feature, int chunk) {
    int k = keys.find(ds.name(), ds.version(), feature, chunk);
    if (k >= 0) {
      return k;
    }
    int chunks = ds.chunks().size();
    int base = keys.allocate(ds.name(), ds.version(), feature, chunks, c -> KeySpace.estimateBytes(ds, feature, c));
    slowCosts.request(ds, feature, base);
    boolean pinned = reserved.pinned(ds.name(), feature);
    for (int c = 0; c < chunks; c++) {
      policy.group(base + c, keys.get(base + c).group());
      if (pinned) {
        policy.pin(base + c, keys.bytes(base + c), true);
      }
      if (!elsewhere.isEmpty() && elsewhere.contains(Cluster.chunkKey(ds.name(), ds.version(), feature, c))) {
        policy.heldElsewhere(base + c, true);
      }
    }
    return base + chunk;
  }

  /** Learns what a miss of each keyed chunk reads from the slow tier, off this monitor (its own thread). */
  private final SlowCosts slowCosts = new SlowCosts(this);

  /**
   * {@link SlowCosts}' report: chunk {@code c} of {@code feature}, keyed from {@code base}, stores
   * {@code stored[c]} bytes on the slow tier (-1: not known). Kept with the key (a replaced policy
   * is told again) and told to the policy; a report for keys no longer the feature's is dropped.
   */
  synchronized void slowBytes(Dataset ds, String feature, int base, long[] stored) {
    if (closed || keys.find(ds.name(), ds.version(), feature, 0) != base) {
      return;
    }
    for (int c = 0; c < stored.length; c++) {
      if (stored[c] > 0) {
        keys.setSlowBytes(base + c, stored[c]);
        policy.slowBytes(base + c, stored[c], keys.bytes(base + c));
      }
    }
  }

  /** In a cluster: chunks other nodes hold (kept for keys allocated later too). */
  @GuardedBy("this")
  final Set<String> elsewhere = new HashSet<>();

  /** In a cluster: whether another node holds this chunk now; the policy stops guessing for it (see StrataPolicy). */
  synchronized void heldElsewhere(String dataset, String version, String feature, int chunk, boolean held) {
    if (held ? elsewhere.add(Cluster.chunkKey(dataset, version, feature, chunk))
        : elsewhere.remove(Cluster.chunkKey(dataset, version, feature, chunk))) {
      int k = keys.find(dataset, version, feature, chunk);
      if (k >= 0) {
        policy.heldElsewhere(k, held);
      }
    }
  }

  /** A key's size is now known (its segment's bytes): the policy and the recorded trace use it from now on. */
  @GuardedBy("this")
  private void setKeyBytes(int key, long bytes) {
    keys.setBytes(key, bytes);
    trace.size(key, bytes);
  }

  /** A segment found on disk at start-up, of the current version of {@code ds}: resident again. */
  synchronized void restore(Dataset ds, SegmentRef ref) {
    long share = ref.bytes() / Math.max(1, ref.info().columns().size());
    for (String feature : ref.info().columns()) {
      int key = key(ds, feature, ref.info().chunk());
      residency.found(key, ref);
      setKeyBytes(key, share);
      policy.place(key, share, Placement.FOUND);
    }
  }

  // ---------------------------------------------------------------- reads

  /** Where each of {@code features} of {@code chunks} lives now: the segments to map (the rest is read from ORC). */
  synchronized TierViews.Resolved resolve(Dataset ds, List<String> features, List<Integer> chunks) {
    Map<Path, List<String>> byPath = new LinkedHashMap<>();
    Map<Path, SegmentRef> refs = new HashMap<>();
    for (String f : features) {
      for (int c : chunks) {
        SegmentRef ref = residency.segment(key(ds, f, c));
        if (ref != null) {
          byPath.computeIfAbsent(ref.path(), p -> new ArrayList<>()).add(f);
          refs.put(ref.path(), ref);
        }
      }
    }
    List<TierViews.SegmentView> segments = new ArrayList<>();
    byPath.forEach((p, fs) -> {
      SegmentRef ref = refs.get(p);
      segments.add(new TierViews.SegmentView(p.toString(), ref.info().chunk(), ref.bytes(), fs));
    });
    return new TierViews.Resolved(ds.name(), ds.version(), segments, ds.directory().toString(), residency.counter(),
        residency.beaconPath());
  }

  /**
   * Records a job's reads (checked by the caller): statistics, reuse, and the policy's decisions
   * (promotions, evictions); {@code step >= 0} is the step the job reached, {@code
   * unlinkedMappedBytes >= 0} what it still maps of evicted segments.
   */
  synchronized TierViews.ReadsAnswer reads(String job, Dataset ds, List<Read> reads, long step, long unlinkedMappedBytes) {
    jobs.unlinked(job, unlinkedMappedBytes);
    int jid = jobs.id(job);
    double now = clock.getAsDouble();
    int admitted = 0;
    expirePlans(now);
    jobs.heard(job, now);
    long[] planned = jobs.bytesOf(job);
    Double previousReport = jobs.reported(job, now);
    for (Read r : reads) {
      int k = key(ds, r.feature(), r.chunk());
      trace.read(now, job, ds.name(), r.feature(), r.chunk(), k, keys.bytes(k), r.tier());
      counters.reads.increment();
      keys.read(k, r.tier(), r.bytes());
      if (r.tier() == Tier.SSD) {
        counters.ssdReads.increment();
        counters.ssdBytes.add(r.bytes());
      } else {
        counters.hddBytes.add(r.bytes());
        Double landed = residency.landedAt(k);
        if (landed != null && previousReport != null && landed <= previousReport) {
          counters.hddBytesLanded.add(r.bytes()); // landed before the read: the reader had not re-resolved
        } else if (residency.inFlight(k)) {
          counters.hddBytesInFlight.add(r.bytes());
        }
      }
      if (planned != null) {
        planned[r.tier().ordinal()] += r.bytes();
      }
      coAccess.note(ds, job, r.feature(), r.bytes());
      CachePolicy.Outcome o = policy.access(now, jid, k, keys.bytes(k), this::evicted);
      if (o == CachePolicy.Outcome.MISS_ADMITTED || (o == CachePolicy.Outcome.HIT && residency.absent(k))) {
        if (schedule(k)) {
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
    return new TierViews.ReadsAnswer(reads.size(), admitted, jobs.hasPlan(job), residency.counter());
  }

  /** The version of {@code dataset} whose reads the co-access log holds, or null before any read. */
  synchronized String coAccessVersion(String dataset) {
    return coAccess.version(dataset);
  }

  /** What jobs read of {@code dataset}'s version last read (a copy), or null before any read. */
  synchronized CoAccessLog.CoAccess coAccess(String dataset) {
    return coAccess.copy(dataset);
  }

  // ---------------------------------------------------------------- plans and the trace

  /**
   * Installs a job's plan: {@code jp} holds the keys it reads step by step (built by {@link
   * PlanIntake}), {@code stepChunks} the chunks of each step (for the trace).
   */
  synchronized void installPlan(String job, Dataset ds, List<String> features, CachePolicy.JobPlan jp, int[][] stepChunks) {
    double now = clock.getAsDouble();
    expirePlans(now);
    int id = jobs.planned(job, ds.name(), features, now, jp.firstStep(), jp.firstStep() + jp.stepEnds().length);
    policy.plan(id, jp);
    planned.put(job, jp);
    trace.plan(now, job, ds.name(), features, jp.firstStep(), jp.stepsPerEpoch(), jp.substitutable(), stepChunks);
  }

  /** The plan the node holds for {@code job} (the window of it, for a long program), or null. */
  synchronized CachePolicy.JobPlan planOf(String job) {
    return planned.get(job);
  }

  /** Jobs whose plans the node holds now. */
  synchronized int plannedJobs() {
    return planned.size();
  }

  /** Changes how long a silent job's plan is kept (tests). */
  synchronized void planLease(double seconds) {
    jobs.lease(seconds);
  }

  /** Drops the plans of jobs silent for longer than the lease. */
  @GuardedBy("this")
  private void expirePlans(double now) {
    for (Jobs.Job j : jobs.expire(now)) {
      policy.jobEnded(j.id());
      planned.remove(j.name());
      trace.end(now, j.name(), j.dataset());
    }
  }

  /** Ends a job's plan (404 if it has none). */
  synchronized void endJob(String job) {
    double now = clock.getAsDouble();
    Jobs.Job j = jobs.end(job, now);
    if (j == null) {
      throw NodeException.notFound("no job '" + job + "' has a plan");
    }
    policy.jobEnded(j.id());
    planned.remove(job);
    trace.end(now, job, j.dataset());
  }

  /**
   * The chunks the planned jobs read next that a prefetch pass may copy from a peer (see {@link
   * PeerLookahead#candidates}), at most {@code max}, and no more bytes than the SSD budget has free.
   */
  synchronized List<PeerLookahead.Candidate> peerCandidates(int max, double now) {
    return lookahead.candidates(planned, jobs, residency, keys, policy.budget() - policy.residentBytes(), max, now);
  }

  /** A prefetch candidate a peer holds: placed now (copied from the peer) if the budget still has room. */
  synchronized boolean placeFromPeer(int key) {
    if (closed || !residency.absent(key) || !policy.place(key, keys.bytes(key), Placement.PEER)) {
      return false;
    }
    return schedule(key);
  }

  /** A prefetch candidate no peer holds: not asked about again for {@link PeerLookahead#RETRY_SECONDS}. */
  synchronized void noPeer(int key, double now) {
    lookahead.noPeer(key, now);
  }

  // ---------------------------------------------------------------- placements

  /** Hands the placement of one feature chunk to the queue; false (and the policy told) if refused. */
  @GuardedBy("this")
  boolean schedule(int key) {
    if (!residency.absent(key) || closed) {
      return false;
    }
    if (!withinQuota(key)) {
      policy.removed(key);
      return false;
    }
    residency.placing(key, clock.getAsDouble());
    if (queue.submit(key, keys.get(key))) {
      return true;
    }
    residency.placed(key);
    policy.removed(key);
    counters.rejectedPromotions.increment();
    return false;
  }

  /**
   * Reserves a derived feature's chunk for placement by the caller, if the budget has room and it
   * is neither resident nor in flight: the caller writes it and reports {@link #landed} or {@link #unplace}.
   */
  synchronized boolean reserve(int key) {
    if (closed || !residency.absent(key) || !policy.place(key, keys.bytes(key), Placement.DERIVED)) {
      return false;
    }
    residency.placing(key, clock.getAsDouble());
    return true;
  }

  /** A placement's segment was written; false if the policy evicted it meanwhile (the caller unlinks it). */
  synchronized boolean landed(int key, SegmentRef ref) {
    double now = clock.getAsDouble();
    Double placed = residency.placed(key);
    if (placed != null) {
      counters.landings.increment();
      counters.landingNanos.add((long) ((now - placed) * 1e9));
    }
    counters.flashBytes.add(ref.bytes());
    setKeyBytes(key, ref.bytes());
    if (!policy.resident(key) || closed) {
      return false;
    }
    residency.landed(key, ref, now);
    counters.promotions.increment();
    policy.resize(key, ref.bytes(), now, this::evicted);
    String ds = keys.get(key).dataset();
    Long quota = reserved.quota(ds);
    if (quota != null && residency.resident(key) && residency.datasetBytes(ds, keys) > quota) {
      policy.removed(key);
      evicted(key);
    }
    return true;
  }

  /** A placement that failed: no longer pending, not resident. */
  synchronized void unplace(int key) {
    residency.placed(key);
    policy.removed(key);
  }

  /** Called by the policy for every key it evicts (under this object's lock). */
  // Called back by the policy, synchronously, from methods that hold this monitor (a method
  // reference, which the checker cannot follow).
  @SuppressWarnings("GuardedBy")
  void evicted(int key) {
    SegmentRef ref = residency.drop(key);
    residency.changed();
    if (ref == null) {
      return;
    }
    counters.evictions.increment();
    // Other features sharing the segment leave the tier with it.
    KeySpace.KeyInfo k = keys.get(key);
    for (String f : ref.info().columns()) {
      int other = keys.find(k.dataset(), k.version(), f, k.chunk());
      if (other >= 0 && other != key && residency.drop(other) != null) {
        policy.removed(other);
      }
    }
    queue.unlink(ref);
  }

  /** The segment holding {@code feature} of {@code chunk}, or null when it is read from ORC. */
  synchronized SegmentRef segment(Dataset ds, String feature, int chunk) {
    return residency.segment(key(ds, feature, chunk));
  }

  /** Every resident segment file once (a file holding several features is listed under one of them). */
  synchronized List<Residency.Resident> residents() {
    return residency.residents(keys);
  }

  /**
   * {@code ref}, found gone or damaged, leaves the tier if it still holds {@code feature} of
   * {@code chunk} (with the other features it holds; jobs learn it as any residency change) and
   * is placed again at once, within the budget: the policy had it resident. Returns the keys
   * placed again, or -1 if {@code ref} was no longer resident (evicted meanwhile: nothing to do).
   */
  @SuppressWarnings("ReferenceEquality") // the very reference the caller holds, not an equal one
  synchronized int repair(Dataset ds, String feature, int chunk, SegmentRef ref) {
    int k = key(ds, feature, chunk);
    if (residency.segment(k) != ref) {
      return -1;
    }
    List<Integer> held = new ArrayList<>();
    KeySpace.KeyInfo info = keys.get(k);
    for (String f : ref.info().columns()) {
      int other = keys.find(info.dataset(), info.version(), f, info.chunk());
      if (other >= 0 && residency.segment(other) == ref) {
        held.add(other);
      }
    }
    policy.removed(k);
    evicted(k);
    int placed = 0;
    for (int h : held) {
      if (residency.absent(h) && policy.place(h, keys.bytes(h), Placement.REPAIR)) {
        if (schedule(h)) {
          placed++;
        }
      }
    }
    return placed;
  }

  @GuardedBy("this")
  private boolean withinQuota(int key) {
    Long quota = reserved.quota(keys.get(key).dataset());
    return quota == null || residency.datasetBytes(keys.get(key).dataset(), keys) + keys.bytes(key) <= quota;
  }

  // ---------------------------------------------------------------- what the status shows

  /** The tier's part of the status, taken at once. */
  record Snapshot(String policy, long residentBytes, long budgetBytes, double flashBudgetPerHour, double popularityDiscount,
      int pending, long residency, List<TierViews.Stream> topStreams, List<TierViews.JobRow> jobs,
      List<TierViews.JobRow> recentJobs, List<String> pins, Map<String, Long> quotas, Map<String, Long> datasetBytes,
      Map<String, long[]> bytesByDataset, Map<String, long[]> bytesByJob, long jobsUnlinkedBytes) {}

  synchronized Snapshot snapshot() {
    double now = clock.getAsDouble();
    return new Snapshot(policyName, policy.residentBytes(), policy.budget(), flashBudgetPerHour, popularityDiscount,
        residency.pendingCount(), residency.counter(), keys.topStreams(10), jobs.rows(now), jobs.recentRows(now),
        reserved.pins(), reserved.quotas(), residency.bytesByDataset(keys),
        keys.readBytesByDataset(), jobs.bytesByJob(), jobs.unlinkedTotal());
  }

  /** The planned jobs' rows alone (what a clustered node publishes every second; cheaper than a {@link #snapshot}). */
  synchronized List<TierViews.JobRow> jobRows() {
    return jobs.rows(clock.getAsDouble());
  }

  /** Per dataset, the bytes its jobs read from the SSD and the HDD tier. */
  synchronized Map<String, long[]> readBytesByDataset() {
    return keys.readBytesByDataset();
  }

  /** The SSD bytes resident of one dataset (not counting those in flight). */
  synchronized long residentBytes(String dataset) {
    return residency.residentBytes(dataset, keys);
  }

  /** Whether no placement is in flight. */
  synchronized boolean idle() {
    return residency.pendingCount() == 0;
  }

  /** Takes no more placements. */
  synchronized void close() {
    closed = true;
    slowCosts.close();
    residency.close();
  }
}
