package io.strata.node.policy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The futures jobs declared: each job's plan (the keys it reads, step by step) and its position
 * in it, and per key the plans that will read it and at which steps. From them, the rate at which
 * a key will be read by declared jobs, and the typical read rate and epoch duration of jobs.
 *
 * <p>Not thread-safe: {@link StrataPolicy}'s, under its caller's serialization.
 */
final class DeclaredPlans {
  /** A declared plan and the job's position in it. */
  static final class Plan {
    final CachePolicy.JobPlan plan;
    final int epochKeys;
    /** The job's step (local to the plan) and the matching index in the plan's keys. */
    int step;
    int position;
    /** When and where the job's position first and last moved (for its rate). */
    double firstTime = Double.NaN;
    int firstPosition;
    double lastTime = Double.NaN;
    int lastPosition;
    boolean ended;

    Plan(CachePolicy.JobPlan plan) {
      this.plan = plan;
      int epochSteps = (int) Math.min(plan.steps(), plan.stepsPerEpoch());
      this.epochKeys = epochSteps == 0 ? 0 : plan.stepEnds()[epochSteps - 1];
    }

    /** Moves the position forward to local step {@code s} at {@code time}. */
    void moveTo(int s, double time) {
      if (s <= step && !Double.isNaN(firstTime)) {
        return;
      }
      step = Math.max(step, Math.min(s, plan.steps() - 1));
      position = plan.stepStart(step);
      if (Double.isNaN(firstTime)) {
        firstTime = time;
        firstPosition = position;
      }
      lastTime = time;
      lastPosition = position;
    }

    /**
     * Keys per second since the job's position first moved; NaN until it has moved for {@link
     * StrataPolicy#RATE_WINDOW_SECONDS} (jobs read in bursts: a rate from the first burst alone
     * would be far too high).
     */
    double rate() {
      double dt = lastTime - firstTime;
      return dt < StrataTuning.RATE_WINDOW_SECONDS || lastPosition <= firstPosition ? Double.NaN
          : (lastPosition - firstPosition) / dt;
    }
  }

  /** The steps (local, ascending) at which one plan reads one key; {@code next} only moves forward. */
  private static final class Occurrence {
    final Plan plan;
    int[] steps = new int[2];
    int count;
    int next;

    Occurrence(Plan plan) {
      this.plan = plan;
    }

    void add(int s) {
      if (count > 0 && steps[count - 1] == s) {
        return;
      }
      if (count == steps.length) {
        steps = Arrays.copyOf(steps, count * 2);
      }
      steps[count++] = s;
    }

    /** The first unconsumed step at or after the plan's position, or -1. */
    int nextStep() {
      while (next < count && steps[next] < plan.step) {
        next++;
      }
      return next < count ? steps[next] : -1;
    }
  }

  /** The plans that will read one key. */
  private static final class Occurrences extends ArrayList<Occurrence> {
    private static final long serialVersionUID = 1;
  }

  /** Per key: the plans that will read it. */
  private Occurrences[] occurrences = new Occurrences[256];
  /** Declared plans by job, and the same plans as a list (for the typical rate). */
  private Plan[] planOf = new Plan[64];
  private final List<Plan> plans = new ArrayList<>();
  private long typicalAt = -1;
  private double typicalRate;
  private double typicalEpoch;

  /** Makes room for keys below {@code n}. */
  void ensureKeys(int n) {
    if (n > occurrences.length) {
      occurrences = Arrays.copyOf(occurrences, n);
    }
  }

  /** {@code job}'s plan in force, or null. */
  Plan get(int job) {
    return job >= 0 && job < planOf.length ? planOf[job] : null;
  }

  /** Adds {@code job}'s plan (any earlier one ended first by the caller); its keys must fit {@link #ensureKeys}. */
  void add(int job, CachePolicy.JobPlan jobPlan) {
    Plan p = new Plan(jobPlan);
    if (job >= planOf.length) {
      planOf = Arrays.copyOf(planOf, Math.max(planOf.length * 2, job + 1));
    }
    planOf[job] = p;
    plans.add(p);
    typicalAt = -1;
    int[] keys = jobPlan.keys();
    Map<Integer, Occurrence> byKey = new HashMap<>();
    for (int s = 0; s < jobPlan.steps(); s++) {
      for (int i = jobPlan.stepStart(s); i < jobPlan.stepEnds()[s]; i++) {
        int k = keys[i];
        Occurrence o = byKey.get(k);
        if (o == null) {
          o = new Occurrence(p);
          byKey.put(k, o);
          if (occurrences[k] == null) {
            occurrences[k] = new Occurrences();
          }
          occurrences[k].add(o);
        }
        o.add(s);
      }
    }
  }

  /** {@code job} reached global step {@code step}. */
  void progress(int job, long step, double time) {
    Plan p = get(job);
    if (p != null) {
      long local = step - p.plan.firstStep();
      if (local >= 0) {
        p.moveTo((int) Math.min(local, Integer.MAX_VALUE), time);
      }
    }
  }

  /** Ends {@code job}'s plan; returns its keys (their futures changed), or null if it had none. */
  int[] end(int job) {
    Plan p = get(job);
    if (p == null) {
      return null;
    }
    planOf[job] = null;
    plans.remove(p);
    p.ended = true;
    typicalAt = -1;
    return p.plan.keys();
  }

  /**
   * Consumes {@code job}'s next occurrence of {@code key} and moves the job there (forward only: a
   * substitutable job that read a step ahead has not read the ones it left behind).
   */
  void consume(int job, int key, double time) {
    Plan p = get(job);
    List<Occurrence> occ = p == null || key >= occurrences.length ? null : occurrences[key];
    if (occ == null) {
      return;
    }
    for (Occurrence o : occ) {
      if (o.plan == p) {
        int s = o.nextStep();
        if (s >= 0) {
          o.next++;
          p.moveTo(s, time);
        }
        return;
      }
    }
  }

  /**
   * The rate (reads per second) at which declared jobs will read {@code key}: each job's next read
   * of it counts as one read over the time until it (its distance in keys over the job's rate, or
   * the typical rate while the job's is unknown), but no sooner than {@link
   * StrataPolicy#REUSE_SECONDS}; {@code accesses} is the policy's read count (it paces recomputing
   * the typical rate).
   */
  double rate(int key, long accesses) {
    double rate = 0;
    List<Occurrence> occ = key < occurrences.length ? occurrences[key] : null;
    if (occ != null) {
      boolean anyAlive = false;
      for (Occurrence o : occ) {
        if (o.plan.ended) {
          continue;
        }
        int s = o.nextStep();
        if (s < 0) {
          continue;
        }
        anyAlive = true;
        double r = o.plan.rate();
        if (Double.isNaN(r)) {
          r = typicalRate(accesses);
        }
        rate += Math.min(r / (o.plan.plan.stepStart(s) - o.plan.position + 1), 1 / StrataTuning.REUSE_SECONDS);
      }
      if (!anyAlive) {
        occ.removeIf(o -> o.plan.ended || o.nextStep() < 0);
        if (occ.isEmpty()) {
          occurrences[key] = null;
        }
      }
    }
    return rate;
  }

  /** Recomputes the typical rate and epoch duration every 256 reads or when plans change. */
  private void typical(long accesses) {
    if (typicalAt >= 0 && accesses - typicalAt < 256) {
      return;
    }
    typicalAt = accesses;
    double[] rates = plans.stream().mapToDouble(Plan::rate).filter(r -> !Double.isNaN(r)).sorted().toArray();
    typicalRate = rates.length == 0 ? 1.0 : rates[rates.length / 2];
    double[] d = plans.stream()
        .filter(p -> !Double.isNaN(p.rate()))
        .mapToDouble(p -> p.epochKeys / p.rate())
        .sorted()
        .toArray();
    typicalEpoch = d.length == 0 ? 0 : d[d.length / 2];
  }

  /** The median read rate (keys per second) of the jobs whose rate is known, or one per second. */
  private double typicalRate(long accesses) {
    typical(accesses);
    return typicalRate;
  }

  /** The median duration of an epoch among declared jobs (keys per epoch / read rate). */
  double typicalEpochSeconds(long accesses) {
    typical(accesses);
    return typicalEpoch;
  }

  /** Whether a declared plan (live or not yet cleaned up) reads {@code key}. */
  boolean planned(int key) {
    return key < occurrences.length && occurrences[key] != null;
  }

  /**
   * Passes over {@code key} still to come in declared plans: its remaining steps, where a run of
   * consecutive steps counts once (a job shuffling within blocks of chunks reads a chunk in every
   * step of its block, from one decode) and the run a job is in now not at all (its reader holds
   * the chunk already).
   */
  int futurePasses(int key) {
    int n = 0;
    List<Occurrence> occ = key < occurrences.length ? occurrences[key] : null;
    if (occ != null) {
      for (Occurrence o : occ) {
        if (o.plan.ended || o.nextStep() < 0) {
          continue;
        }
        for (int i = o.next; i < o.count; i++) {
          if (i == 0 || o.steps[i] != o.steps[i - 1] + 1) {
            n++; // not the step after the one before: a new pass
          }
        }
      }
    }
    return n;
  }

  /** Reads of {@code key} still to come in declared plans. */
  int futureReads(int key) {
    int n = 0;
    List<Occurrence> occ = key < occurrences.length ? occurrences[key] : null;
    if (occ != null) {
      for (Occurrence o : occ) {
        if (!o.plan.ended && o.nextStep() >= 0) {
          n += o.count - o.next;
        }
      }
    }
    return n;
  }
}
