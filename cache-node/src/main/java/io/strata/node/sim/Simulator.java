package io.strata.node.sim;

import io.strata.node.policy.CachePolicy;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Replays a trace through a policy and counts what it cost. The policy gets exactly what the node
 * gets, in the same calls: the reads, and the plan, step and end records the trace holds (what
 * jobs declared to the node and reported to it), each at its place in the trace. A trace without
 * plan records leaves the policy to learn online from the reads alone. Nothing is taken from the
 * trace's future.
 */
public final class Simulator {
  private Simulator() {}

  /**
   * What a policy did on a trace.
   *
   * @param policy policy name
   * @param reads reads replayed
   * @param hits reads served by the SSD tier
   * @param hitBytes bytes served by the SSD tier (HDD bytes absorbed)
   * @param hddBytes bytes read from HDD (misses)
   * @param flashBytes bytes written to flash (admissions)
   * @param seconds wall time of the replay
   */
  public record Result(String policy, long reads, long hits, long hitBytes, long hddBytes, long flashBytes, double seconds) {
    public double byteHitRatio() {
      long total = hitBytes + hddBytes;
      return total == 0 ? 0 : (double) hitBytes / total;
    }

    /** Trace reads replayed per second of wall time. */
    public double eventsPerSecond() {
      return seconds <= 0 ? 0 : reads / seconds;
    }
  }

  /** Tells {@code policy} which feature stream (dataset/feature) each key of {@code trace} belongs to. */
  public static void groups(Trace trace, CachePolicy policy) {
    Map<String, Integer> groupIds = new HashMap<>();
    for (int k = 0; k < trace.keys(); k++) {
      String name = trace.keyName(k);
      String g = name.substring(0, name.lastIndexOf('/'));
      policy.group(k, groupIds.computeIfAbsent(g, x -> groupIds.size()));
    }
  }

  /** Hands {@code c} to {@code policy} as the node would. */
  public static void apply(Trace.Control c, CachePolicy policy) {
    switch (c) {
      case Trace.PlanRecord p -> policy.plan(p.job(), p.plan());
      case Trace.StepRecord s -> policy.progress(s.job(), s.step(), s.time());
      case Trace.EndRecord e -> policy.jobEnded(e.job());
    }
  }

  /** Replays {@code trace} through {@code policy}. */
  public static Result run(Trace trace, CachePolicy policy) {
    long started = System.nanoTime();
    groups(trace, policy);
    List<Trace.Control> controls = trace.controls();
    int c = 0;
    long hits = 0;
    long hitBytes = 0;
    long hddBytes = 0;
    long flashBytes = 0;
    for (int i = 0; i < trace.size(); i++) {
      while (c < controls.size() && controls.get(c).at() == i) {
        apply(controls.get(c++), policy);
      }
      int key = trace.key(i);
      long bytes = trace.bytes(key);
      switch (policy.access(trace.time(i), trace.job(i), key, bytes, CachePolicy.Evictions.NONE)) {
        case HIT -> {
          hits++;
          hitBytes += bytes;
        }
        case MISS_ADMITTED -> {
          hddBytes += bytes;
          flashBytes += bytes;
        }
        case MISS_BYPASSED -> hddBytes += bytes;
      }
    }
    return new Result(policy.name(), trace.size(), hits, hitBytes, hddBytes, flashBytes, (System.nanoTime() - started) / 1e9);
  }

  /** What the node did live on a recorded trace: reads whose tier the trace records, in the same units. */
  public static Result live(Trace trace) {
    long hits = 0;
    long hitBytes = 0;
    long hddBytes = 0;
    for (int i = 0; i < trace.size(); i++) {
      long bytes = trace.bytes(trace.key(i));
      if (trace.tier(i) == Trace.Tier.SSD) {
        hits++;
        hitBytes += bytes;
      } else {
        hddBytes += bytes;
      }
    }
    return new Result("live", trace.size(), hits, hitBytes, hddBytes, -1, 0);
  }
}
