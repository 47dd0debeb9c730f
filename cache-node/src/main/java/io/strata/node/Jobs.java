package io.strata.node;

import io.strata.sdk.tier.Tier;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The jobs a node knows: an int id per job name (the policy's), the plans in force and when each
 * planned job was last heard from (a plan whose job is silent longer than the lease expires), when
 * each job last reported reads, the
 * bytes each planned job read per tier (for the metrics), and the bytes of evicted segments each
 * job still maps (as it last reported).
 *
 * <p>Threads and locks: not thread-safe; {@link TierState} calls it under its monitor only,
 * except {@link #unlinkedTotal()} and {@link #unlinked}, whose table is concurrent.
 */
final class Jobs {
  /** A plan in force: its steps are global steps {@code firstStep} to {@code endStep} (exclusive). */
  record Job(String name, int id, String dataset, List<String> features, double started, long firstStep, long endStep) {}

  /** A plan that ended (the job said so, or it was silent past the lease), with its last figures. */
  record Ended(Job job, String how, double ended, long step, long ssdBytes, long hddBytes) {}

  /** Ended plans kept for the dashboard. */
  static final int RECENT = 20;

  /** Jobs whose unlinked-but-mapped bytes are counted at most (a bound on the table). */
  static final int MAX_UNLINKED_JOBS = 4096;

  private final Map<String, Integer> ids = new HashMap<>();
  private final Map<String, Job> plans = new LinkedHashMap<>();
  private final Map<String, Double> lastSeen = new HashMap<>();
  private final Map<String, long[]> bytes = new HashMap<>();
  private final Map<String, Long> unlinked = new ConcurrentHashMap<>();
  private final Map<String, Long> steps = new HashMap<>();
  /** When each job (planned or not) last reported reads. */
  private final Map<String, Double> reportedAt = new HashMap<>();
  /** Jobs whose last report time is kept. */
  private static final int MAX_REPORTING_JOBS = 4096;
  private final ArrayDeque<Ended> recent = new ArrayDeque<>();
  private double leaseSeconds;

  Jobs(double leaseSeconds) {
    this.leaseSeconds = leaseSeconds;
  }

  /** 400 unless {@code job} is 1 to 128 letters, digits or {@code _.:@-}. */
  static void checkName(String job) {
    if (job == null || !job.matches("[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}")) {
      throw NodeException.badRequest("'job' must be 1 to 128 letters, digits or _.:@- characters, got '" + job + "'");
    }
  }

  /** The job's id, given on first sight. */
  int id(String job) {
    return ids.computeIfAbsent(job, j -> ids.size());
  }

  /** Records {@code job}'s plan of global steps {@code [firstStep, endStep)} (replacing an earlier one); returns its id. */
  int planned(String job, String dataset, List<String> features, double now, long firstStep, long endStep) {
    int id = id(job);
    plans.put(job, new Job(job, id, dataset, List.copyOf(features), now, firstStep, endStep));
    lastSeen.put(job, now);
    steps.put(job, firstStep - 1);
    return id;
  }

  /** The planned job reached global step {@code step}. */
  void stepped(String job, long step) {
    if (plans.containsKey(job)) {
      steps.merge(job, step, Math::max);
    }
  }

  /** The last step a planned job reached (one before its first step until it reports one). */
  long step(String job) {
    return steps.getOrDefault(job, -1L);
  }

  boolean hasPlan(String job) {
    return plans.containsKey(job);
  }

  /** The job was heard from (a read report): its plan's lease starts again. */
  void heard(String job, double now) {
    if (plans.containsKey(job)) {
      lastSeen.put(job, now);
    }
  }

  /** Removes and returns the plans whose jobs have been silent longer than the lease. */
  List<Job> expire(double now) {
    List<Job> gone = new ArrayList<>();
    var it = plans.values().iterator();
    while (it.hasNext()) {
      Job j = it.next();
      if (now - lastSeen.getOrDefault(j.name(), now) > leaseSeconds) {
        it.remove();
        remember(j, "expired", now);
        forget(j.name());
        gone.add(j);
      }
    }
    return gone;
  }

  /** Ends {@code job}'s plan at {@code now}; returns it, or null when it had none. */
  Job end(String job, double now) {
    Job j = plans.remove(job);
    if (j != null) {
      remember(j, "ended", now);
      forget(job);
    }
    return j;
  }

  private void remember(Job j, String how, double now) {
    long[] b = bytes.getOrDefault(j.name(), new long[Tier.values().length]);
    recent.addFirst(new Ended(j, how, now, step(j.name()), b[Tier.SSD.ordinal()], b[Tier.HDD.ordinal()]));
    while (recent.size() > RECENT) {
      recent.removeLast();
    }
  }

  private void forget(String job) {
    reportedAt.remove(job);
    lastSeen.remove(job);
    bytes.remove(job);
    unlinked.remove(job);
    steps.remove(job);
  }

  /**
   * Notes that {@code job} reports reads now; returns when it reported before (null: not known).
   * The reads of a report were made after its previous one (for {@link TierCounters#hddBytesLanded}).
   */
  Double reported(String job, double now) {
    if (reportedAt.size() >= MAX_REPORTING_JOBS && !reportedAt.containsKey(job)) {
      reportedAt.values().removeIf(t -> now - t > 60); // jobs without plans that went quiet
      if (reportedAt.size() >= MAX_REPORTING_JOBS) {
        return null;
      }
    }
    return reportedAt.put(job, now);
  }

  /** The plans that ended most recently, newest first. */
  List<Ended> recent() {
    return List.copyOf(recent);
  }

  /** The bytes {@code job} read from each tier (indexed by {@link Tier#ordinal()}), when it has a plan (null otherwise). */
  long[] bytesOf(String job) {
    return plans.containsKey(job) ? bytes.computeIfAbsent(job, x -> new long[Tier.values().length]) : null;
  }

  /** What {@code job} last reported still mapping of evicted segments ({@code < 0}: not reported). */
  void unlinked(String job, long b) {
    if (b == 0) {
      unlinked.remove(job);
    } else if (b > 0 && (unlinked.size() < MAX_UNLINKED_JOBS || unlinked.containsKey(job))) {
      unlinked.put(job, b);
    }
  }

  long unlinkedTotal() {
    long b = 0;
    for (long v : unlinked.values()) {
      b += v;
    }
    return b;
  }

  /** A copy of the bytes read per planned job, by name. */
  Map<String, long[]> bytesByJob() {
    Map<String, long[]> out = new TreeMap<>();
    bytes.forEach((j, b) -> out.put(j, b.clone()));
    return out;
  }

  /** Changes how long a silent job's plan is kept (tests). */
  void lease(double seconds) {
    leaseSeconds = seconds;
  }

  /** The rows of the jobs with a plan: progress, bytes per tier, rate. */
  List<TierViews.JobRow> rows(double now) {
    List<TierViews.JobRow> out = new ArrayList<>();
    for (Job j : plans.values()) {
      long[] b = bytes.getOrDefault(j.name(), new long[Tier.values().length]);
      out.add(TierViews.JobRow.of(j, step(j.name()), b[Tier.SSD.ordinal()], b[Tier.HDD.ordinal()], now - j.started(), null, null));
    }
    return out;
  }

  /** The rows of the plans that ended lately, newest first as {@link #recent()} gives them. */
  List<TierViews.JobRow> recentRows(double now) {
    List<TierViews.JobRow> out = new ArrayList<>();
    for (Ended e : recent()) {
      out.add(TierViews.JobRow.of(e.job(), e.step(), e.ssdBytes(), e.hddBytes(), e.ended() - e.job().started(), e.how(),
          now - e.ended()));
    }
    return out;
  }
}
