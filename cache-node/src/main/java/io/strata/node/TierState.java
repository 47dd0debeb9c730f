package io.strata.node;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.strata.node.policy.CachePolicy.Placement;
import io.strata.node.policy.CachePolicy;
import io.strata.node.policy.Policies;
import io.strata.sdk.Dataset;
import io.strata.sdk.Tier;
import io.strata.sdk.format.ResidencyBeacon;
import io.strata.sdk.tier.SegmentRef;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.DoubleSupplier;

/**
 * What is where on the SSD tier, and the policy that decides it: the one class that calls the
 * policy, a {@link CachePolicy} chosen by name ({@link Policies}) and replaced whole, under this
 * object's monitor, when the operator picks another ({@link #setPolicy}). It holds the key space
 * (an int per dataset version, feature and chunk), the resident segments and the placements in
 * flight, the jobs and their plans, the recorded trace, pins and quotas, the bytes read per feature
 * stream and the co-access log ({@link CoAccessLog}). Every placement a read did not decide asks
 * the policy ({@code place}): the budget is the policy's. File work is not done here: placements are
 * handed to the {@link PromotionQueue} and come back through {@link #landed} or {@link #unplace},
 * evicted segments go to its unlinking thread.
 *
 * <p>Threads and locks: every method runs under this object's monitor, and quickly (in-memory
 * work only; handing work to the queue never blocks: its queues refuse rather than wait). The
 * callers (API workers, promotion threads, the node's timer) validate requests against their
 * dataset before they come here, so nothing in here reads a file. It calls out, under its
 * monitor, to the policy, the key space, {@link Jobs}, {@link TraceRecorder} and the queue's
 * non-blocking {@code submit}/{@code unlink}, none of which calls back in, and to the lock-free
 * {@link TierCounters}.
 */
final class TierState {
  /** A job's report of one read: {@code bytes} of {@code feature} in {@code chunk}, and the tier that served it. */
  record Read(String feature, int chunk, long bytes, Tier tier) {}

  /** The policy in force (one of {@link Policies}, replaced whole by {@link #setPolicy}) and its name. */
  @GuardedBy("this")
  private CachePolicy policy;
  @GuardedBy("this")
  private String policyName;
  /** The node's settings the policy was made with (a policy ignores those it has no use for). */
  @GuardedBy("this")
  private double flashBudgetPerHour;
  @GuardedBy("this")
  private double popularityDiscount;
  private final TierCounters counters;
  private final DoubleSupplier clock;
  @GuardedBy("this")
  private final KeySpace keys = new KeySpace();
  @GuardedBy("this")
  private final Map<Integer, SegmentRef> residentRefs = new HashMap<>();
  /** Keys being written (placed, not landed), and when each was placed. */
  @GuardedBy("this")
  private final Map<Integer, Double> pending = new HashMap<>();
  /** When each resident key's segment landed (a miss of it reported later than that was a stale reader's). */
  @GuardedBy("this")
  private final Map<Integer, Double> landedAt = new HashMap<>();
  /** When each job last reported reads: the reads of a report were made after its previous one. */
  @GuardedBy("this")
  private final Map<String, Double> reportedAt = new HashMap<>();
  @GuardedBy("this")
  private final Jobs jobs;
  private final TraceRecorder trace;
  @GuardedBy("this")
  private final Reservations reserved = new Reservations();
  /** Per dataset, what its current version's readers read per job and feature: what a relayout would learn from. */
  @GuardedBy("this")
  private final CoAccessLog coAccess = new CoAccessLog();
  @GuardedBy("this")
  private PromotionQueue queue;
  /** The plans in force, by job name (what peer prefetch looks ahead in). */
  @GuardedBy("this")
  private final Map<String, CachePolicy.JobPlan> planned = new HashMap<>();
  /** Keys whose residency a prefetch pass found on no peer, and when: not asked about again for a while. */
  @GuardedBy("this")
  private final Map<Integer, Double> noPeerSince = new HashMap<>();
  /** Jobs whose last report time is kept (for {@link TierCounters#hddBytesLanded}). */
  private static final int MAX_REPORTING_JOBS = 4096;
  /** Seconds before a chunk no peer held is looked up again. */
  static final double PEER_RETRY_SECONDS = 5;
  /** Keys of a plan a prefetch pass looks at, from the job's position on. */
  static final int PEER_LOOKAHEAD_KEYS = 4096;
  /** Changes whenever a segment lands or goes: readers re-resolve when it differs from what they saw. */
  @GuardedBy("this")
  private long residency;
  /** Where {@link #residency} is published to jobs on this host (null: nowhere). */
  @GuardedBy("this")
  private ResidencyBeacon beacon;
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

  /**
   * Publishes the residency counter in {@code b} from now on (set once, before any request),
   * continuing from the value a previous run left there so that jobs still mapping it see a change.
   */
  synchronized void attach(ResidencyBeacon b) {
    this.beacon = b;
    residency = Math.max(residency, b.get() + 1);
    b.publish(residency);
  }

  /** Segments landed or went: jobs re-resolve (at their next report's answer, or at once through the beacon). */
  @GuardedBy("this")
  private void residencyChanged() {
    residency++;
    if (beacon != null) {
      beacon.publish(residency);
    }
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

  /** In a cluster: chunks other nodes hold (kept for keys allocated later too). */
  @GuardedBy("this")
  private final Set<String> elsewhere = new HashSet<>();

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
      residentRefs.put(key, ref);
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
        SegmentRef ref = residentRefs.get(key(ds, f, c));
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
    return new TierViews.Resolved(ds.name(), ds.version(), segments, ds.directory().toString(), residency,
        beacon == null ? null : beacon.path().toString());
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
    Double previousReport = reported(job, now);
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
        Double landed = landedAt.get(k);
        if (landed != null && previousReport != null && landed <= previousReport) {
          counters.hddBytesLanded.add(r.bytes()); // landed before the read: the reader had not re-resolved
        } else if (pending.containsKey(k)) {
          counters.hddBytesInFlight.add(r.bytes());
        }
      }
      if (planned != null) {
        planned[r.tier().ordinal()] += r.bytes();
      }
      coAccess.note(ds, job, r.feature(), r.bytes());
      CachePolicy.Outcome o = policy.access(now, jid, k, keys.bytes(k), this::evicted);
      if (o == CachePolicy.Outcome.MISS_ADMITTED || (o == CachePolicy.Outcome.HIT && !residentRefs.containsKey(k) && !pending.containsKey(k))) {
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
    return new TierViews.ReadsAnswer(reads.size(), admitted, jobs.hasPlan(job), residency);
  }

  /** Notes that {@code job} reports now; returns when it reported before (null: not known). */
  @GuardedBy("this")
  private Double reported(String job, double now) {
    if (reportedAt.size() >= MAX_REPORTING_JOBS && !reportedAt.containsKey(job)) {
      reportedAt.values().removeIf(t -> now - t > 60); // jobs without plans that went quiet
      if (reportedAt.size() >= MAX_REPORTING_JOBS) {
        return null;
      }
    }
    return reportedAt.put(job, now);
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
      reportedAt.remove(j.name());
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
    reportedAt.remove(job);
    trace.end(now, job, j.dataset());
  }

  /** A chunk a prefetch pass may place: its key and what it is. */
  record Candidate(int key, KeySpace.KeyInfo info) {}

  /**
   * The chunks the planned jobs read next (from each job's position, in plan order, up to {@link
   * #PEER_LOOKAHEAD_KEYS} per job) that are neither resident nor in flight nor recently found on
   * no peer, at most {@code max}, and no more bytes than the SSD budget has free.
   */
  synchronized List<Candidate> peerCandidates(int max, double now) {
    noPeerSince.values().removeIf(t -> now - t > PEER_RETRY_SECONDS);
    long free = policy.budget() - policy.residentBytes();
    List<Candidate> out = new ArrayList<>();
    Set<Integer> seen = new HashSet<>();
    for (Map.Entry<String, CachePolicy.JobPlan> e : planned.entrySet()) {
      CachePolicy.JobPlan jp = e.getValue();
      long s = Math.max(0, jobs.step(e.getKey()) - jp.firstStep());
      if (s >= jp.steps()) {
        continue;
      }
      int from = jp.stepStart((int) s);
      int to = (int) Math.min(jp.keys().length, (long) from + PEER_LOOKAHEAD_KEYS);
      for (int i = from; i < to && out.size() < max; i++) {
        int k = jp.keys()[i];
        if (residentRefs.containsKey(k) || pending.containsKey(k) || noPeerSince.containsKey(k) || !seen.add(k)) {
          continue;
        }
        long b = keys.bytes(k);
        if (b > free) {
          return out;
        }
        free -= b;
        out.add(new Candidate(k, keys.get(k)));
      }
    }
    return out;
  }

  /** A prefetch candidate a peer holds: placed now (copied from the peer) if the budget still has room. */
  synchronized boolean placeFromPeer(int key) {
    if (closed || residentRefs.containsKey(key) || pending.containsKey(key) || !policy.place(key, keys.bytes(key), Placement.PEER)) {
      return false;
    }
    return schedule(key);
  }

  /** A prefetch candidate no peer holds: not asked about again for {@link #PEER_RETRY_SECONDS}. */
  synchronized void noPeer(int key, double now) {
    noPeerSince.put(key, now);
  }

  // ---------------------------------------------------------------- placements

  /** Hands the placement of one feature chunk to the queue; false (and the policy told) if refused. */
  @GuardedBy("this")
  private boolean schedule(int key) {
    if (residentRefs.containsKey(key) || pending.containsKey(key) || closed) {
      return false;
    }
    if (!withinQuota(key)) {
      policy.removed(key);
      return false;
    }
    pending.put(key, clock.getAsDouble());
    if (queue.submit(key, keys.get(key))) {
      return true;
    }
    pending.remove(key);
    policy.removed(key);
    counters.rejectedPromotions.increment();
    return false;
  }

  /**
   * Reserves a derived feature's chunk for placement by the caller, if the budget has room and it
   * is neither resident nor in flight: the caller writes it and reports {@link #landed} or {@link #unplace}.
   */
  synchronized boolean reserve(int key) {
    if (closed || residentRefs.containsKey(key) || pending.containsKey(key) || !policy.place(key, keys.bytes(key), Placement.DERIVED)) {
      return false;
    }
    pending.put(key, clock.getAsDouble());
    return true;
  }

  /** A placement's segment was written; false if the policy evicted it meanwhile (the caller unlinks it). */
  synchronized boolean landed(int key, SegmentRef ref) {
    double now = clock.getAsDouble();
    Double placed = pending.remove(key);
    if (placed != null) {
      counters.landings.increment();
      counters.landingNanos.add((long) ((now - placed) * 1e9));
    }
    counters.flashBytes.add(ref.bytes());
    setKeyBytes(key, ref.bytes());
    if (!policy.resident(key) || closed) {
      return false;
    }
    residentRefs.put(key, ref);
    landedAt.put(key, now);
    residencyChanged();
    counters.promotions.increment();
    policy.resize(key, ref.bytes(), now, this::evicted);
    String ds = keys.get(key).dataset();
    Long quota = reserved.quota(ds);
    if (quota != null && residentRefs.containsKey(key) && datasetBytes(ds) > quota) {
      policy.removed(key);
      evicted(key);
    }
    return true;
  }

  /** A placement that failed: no longer pending, not resident. */
  synchronized void unplace(int key) {
    pending.remove(key);
    policy.removed(key);
  }

  /** Forgets {@code key}'s segment and when it landed; returns the segment (null: none). */
  @GuardedBy("this")
  private SegmentRef dropResident(int key) {
    landedAt.remove(key);
    return residentRefs.remove(key);
  }

  /** Called by the policy for every key it evicts (under this object's lock). */
  // Called back by the policy, synchronously, from methods that hold this monitor (a method
  // reference, which the checker cannot follow).
  @SuppressWarnings("GuardedBy")
  private void evicted(int key) {
    SegmentRef ref = dropResident(key);
    residencyChanged();
    if (ref == null) {
      return;
    }
    counters.evictions.increment();
    // Other features sharing the segment leave the tier with it.
    KeySpace.KeyInfo k = keys.get(key);
    for (String f : ref.info().columns()) {
      int other = keys.find(k.dataset(), k.version(), f, k.chunk());
      if (other >= 0 && other != key && dropResident(other) != null) {
        policy.removed(other);
      }
    }
    queue.unlink(ref);
  }

  /** The segment holding {@code feature} of {@code chunk}, or null when it is read from ORC. */
  synchronized SegmentRef segment(Dataset ds, String feature, int chunk) {
    return residentRefs.get(key(ds, feature, chunk));
  }

  /** A resident segment file: one of the keys it holds (its dataset, version and chunk), and the file. */
  record Resident(KeySpace.KeyInfo key, SegmentRef ref) {}

  /** Every resident segment file once (a file holding several features is listed under one of them). */
  synchronized List<Resident> residents() {
    List<Resident> out = new ArrayList<>();
    Set<SegmentRef> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    for (Map.Entry<Integer, SegmentRef> e : residentRefs.entrySet()) {
      if (seen.add(e.getValue())) {
        out.add(new Resident(keys.get(e.getKey()), e.getValue()));
      }
    }
    return out;
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
    if (residentRefs.get(k) != ref) {
      return -1;
    }
    List<Integer> held = new ArrayList<>();
    KeySpace.KeyInfo info = keys.get(k);
    for (String f : ref.info().columns()) {
      int other = keys.find(info.dataset(), info.version(), f, info.chunk());
      if (other >= 0 && residentRefs.get(other) == ref) {
        held.add(other);
      }
    }
    policy.removed(k);
    evicted(k);
    int placed = 0;
    for (int h : held) {
      if (!residentRefs.containsKey(h) && !pending.containsKey(h) && policy.place(h, keys.bytes(h), Placement.REPAIR)) {
        if (schedule(h)) {
          placed++;
        }
      }
    }
    return placed;
  }

  /** SSD bytes a dataset holds or has in flight. */
  @GuardedBy("this")
  private long datasetBytes(String ds) {
    long used = residentBytes(ds);
    for (int p : pending.keySet()) {
      if (keys.get(p).dataset().equals(ds)) {
        used += keys.bytes(p);
      }
    }
    return used;
  }

  @GuardedBy("this")
  private boolean withinQuota(int key) {
    Long quota = reserved.quota(keys.get(key).dataset());
    return quota == null || datasetBytes(keys.get(key).dataset()) + keys.bytes(key) <= quota;
  }

  // ---------------------------------------------------------------- operator actions

  /** Promotes {@code features} of {@code chunks} now (checked by the caller), within the SSD budget (409) and quotas. */
  synchronized TierViews.Promoted promote(Dataset ds, List<String> features, List<Integer> chunks) {
    long need = 0;
    List<Integer> todo = new ArrayList<>();
    for (String f : features) {
      for (int c : chunks) {
        int k = key(ds, f, c);
        if (!residentRefs.containsKey(k) && !pending.containsKey(k)) {
          todo.add(k);
          need += keys.bytes(k);
        }
      }
    }
    if (policy.residentBytes() + need > policy.budget()) {
      throw NodeException.conflict("promoting " + todo.size() + " chunks needs about " + need + " bytes but only "
          + Math.max(0, policy.budget() - policy.residentBytes()) + " of the SSD budget are free: evict, unpin or raise the budget");
    }
    int scheduled = 0;
    for (int k : todo) {
      if (policy.place(k, keys.bytes(k), Placement.OPERATOR) && schedule(k)) {
        scheduled++;
      }
    }
    return new TierViews.Promoted(scheduled, need);
  }

  /** Evicts {@code features} of {@code chunks} (checked by the caller); a pinned feature is refused (409) before any is evicted. */
  synchronized TierViews.Evicted evict(Dataset ds, List<String> features, List<Integer> chunks) {
    for (String f : features) {
      if (reserved.pinned(ds.name(), f)) {
        throw NodeException.conflict("feature " + f + " of " + ds.name() + " is pinned: unpin it first");
      }
    }
    int n = 0;
    for (String f : features) {
      for (int c : chunks) {
        int k = key(ds, f, c);
        if (residentRefs.containsKey(k)) {
          policy.removed(k);
          evicted(k);
          n++;
        }
      }
    }
    return new TierViews.Evicted(n);
  }

  /** The SSD bytes the pinned features take (estimated until their segments are written): reserved in the budget. */
  synchronized long pinnedBytes() {
    long b = 0;
    for (int k = 0; k < keys.size(); k++) {
      KeySpace.KeyInfo ki = keys.get(k);
      if (reserved.pinned(ki.dataset(), ki.feature())) {
        b += keys.bytes(k);
      }
    }
    return b;
  }

  /**
   * Pins (or unpins) a dataset ({@code feature} null) or one feature: pinned chunks are promoted
   * and never evicted. Pinned bytes are reserved in the SSD budget: a pin the budget cannot hold
   * is refused (409); unpinning what is not pinned is 404.
   */
  synchronized TierViews.Pinned pin(Dataset ds, String feature, boolean pin) {
    String p = feature == null ? ds.name() : ds.name() + "/" + feature;
    List<String> fs = feature == null ? ds.featureNames() : List.of(feature);
    if (pin) {
      if (!reserved.pins().contains(p)) {
        long more = 0;
        for (String f : fs) {
          if (!reserved.pinned(ds.name(), f)) {
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
      reserved.pin(p);
    } else if (!reserved.unpin(p)) {
      throw NodeException.notFound(p + " is not pinned");
    }
    int scheduled = 0;
    for (String f : fs) {
      for (int c = 0; c < ds.chunks().size(); c++) {
        int k = key(ds, f, c);
        policy.pin(k, keys.bytes(k), reserved.pinned(ds.name(), f));
        if (pin && !residentRefs.containsKey(k) && !pending.containsKey(k) && policy.place(k, keys.bytes(k), Placement.OPERATOR)
            && schedule(k)) {
          scheduled++;
        }
      }
    }
    return new TierViews.Pinned(pin, p, scheduled);
  }

  /** The pins, sorted. */
  synchronized List<String> pins() {
    return reserved.pins();
  }

  /** The quotas by dataset. */
  synchronized Map<String, Long> quotas() {
    return reserved.quotas();
  }

  /** The policy's settings after a change: what the node keeps. */
  record Applied(String policy, long budgetBytes, double flashBudgetPerHour, double popularityDiscount, Map<String, Long> quotas) {}

  /**
   * Applies a change of policy (quota datasets and the policy's name checked by the caller), as a
   * whole or not at all: 409 for a budget below the pinned bytes; a null quota removes the
   * dataset's quota; another policy replaces this one (see {@link #replacePolicy}). Returns the
   * settings in force after it.
   */
  synchronized Applied setPolicy(String name, Long budget, Long flash, Double discount, Map<String, Long> quotaChanges) {
    long pinned = budget == null ? 0 : pinnedBytes();
    if (budget != null && budget < pinned) {
      throw NodeException.conflict("an SSD budget of " + budget + " bytes is below the " + pinned
          + " bytes pinned features take: unpin first (pins: " + pins() + ")");
    }
    if ((flash != null && flash < 0) || (discount != null && !(discount >= 1))) {
      throw new IllegalArgumentException("a flash budget must not be negative and a popularity discount must be at least 1");
    }
    if (name != null && !name.equals(policyName)) {
      replacePolicy(name);
    }
    if (budget != null) {
      policy.setBudget(budget, clock.getAsDouble(), this::evicted);
    }
    if (flash != null) {
      flashBudgetPerHour = flash;
      policy.setFlashBudget(flash);
    }
    if (discount != null) {
      popularityDiscount = discount;
      policy.setPopularityDiscount(discount);
    }
    reserved.quotas(quotaChanges);
    return new Applied(policyName, policy.budget(), flashBudgetPerHour, popularityDiscount, reserved.quotas());
  }

  /**
   * Replaces the policy by a new {@code name} policy with the same settings, told everything the
   * node knows that a policy keeps: each key's feature stream, pins, chunks other nodes hold, what
   * is resident or being written (resident for it, whatever its budget says: a smaller budget
   * sheds the excess at the next read or change), the plans in force and each planned job's
   * position. What the old one learned by itself (read histories, frequencies) is not carried over.
   */
  @GuardedBy("this")
  private void replacePolicy(String name) {
    CachePolicy next = Policies.create(name, new Policies.Options(policy.budget(), flashBudgetPerHour, popularityDiscount));
    for (int k = 0; k < keys.size(); k++) {
      KeySpace.KeyInfo ki = keys.get(k);
      next.group(k, ki.group());
      if (reserved.pinned(ki.dataset(), ki.feature())) {
        next.pin(k, keys.bytes(k), true);
      }
      if (!elsewhere.isEmpty() && elsewhere.contains(Cluster.chunkKey(ki.dataset(), ki.version(), ki.feature(), ki.chunk()))) {
        next.heldElsewhere(k, true);
      }
    }
    for (int k : residentRefs.keySet()) {
      next.place(k, keys.bytes(k), Placement.FOUND);
    }
    for (int k : pending.keySet()) {
      next.place(k, keys.bytes(k), Placement.FOUND);
    }
    double now = clock.getAsDouble();
    for (Map.Entry<String, CachePolicy.JobPlan> e : planned.entrySet()) {
      int id = jobs.id(e.getKey());
      next.plan(id, e.getValue());
      long step = jobs.step(e.getKey());
      if (step >= 0) {
        next.progress(id, step, now);
      }
    }
    policy = next;
    policyName = name;
  }

  /** The policy's settings and decision counts as a view, with the node's part given by the caller. */
  synchronized TierViews.PolicyView policyView(long promotionBytesPerSecond, Map<String, String> sources, List<String> hddRoots) {
    return new TierViews.PolicyView(policyName, Policies.names(), policy.budget(), (long) flashBudgetPerHour, popularityDiscount,
        promotionBytesPerSecond, quotas(), pins(), pinnedBytes(), sources, hddRoots, policy.decisionCounts());
  }

  // ---------------------------------------------------------------- what the status shows

  /** The tier's part of the status, taken at once. */
  record Snapshot(String policy, long residentBytes, long budgetBytes, double flashBudgetPerHour, double popularityDiscount,
      int pending, long residency, List<TierViews.Stream> topStreams, List<TierViews.JobRow> jobs,
      List<TierViews.JobRow> recentJobs, List<String> pins, Map<String, Long> quotas, Map<String, Long> datasetBytes,
      Map<String, long[]> bytesByDataset, Map<String, long[]> bytesByJob, long jobsUnlinkedBytes) {}

  synchronized Snapshot snapshot() {
    double now = clock.getAsDouble();
    Map<String, Long> perDataset = new TreeMap<>();
    for (int k : residentRefs.keySet()) {
      perDataset.merge(keys.get(k).dataset(), keys.bytes(k), Long::sum);
    }
    for (int k : pending.keySet()) {
      perDataset.merge(keys.get(k).dataset(), keys.bytes(k), Long::sum);
    }
    return new Snapshot(policyName, policy.residentBytes(), policy.budget(), flashBudgetPerHour, popularityDiscount,
        pending.size(), residency, keys.topStreams(10), jobs.rows(now), jobs.recentRows(now), pins(), quotas(), perDataset,
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
    long resident = 0;
    for (int k : residentRefs.keySet()) {
      if (keys.get(k).dataset().equals(dataset)) {
        resident += keys.bytes(k);
      }
    }
    return resident;
  }

  /** Whether no placement is in flight. */
  synchronized boolean idle() {
    return pending.isEmpty();
  }

  /** Takes no more placements. */
  synchronized void close() {
    closed = true;
    if (beacon != null) {
      beacon.close();
      beacon = null;
    }
  }
}
