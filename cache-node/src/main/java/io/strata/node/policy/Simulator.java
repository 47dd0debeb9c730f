package io.strata.node.policy;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Replays a trace through a policy and counts what it cost. A plan-aware policy learns each job's
 * future reads at that job's first read in the trace, never earlier: the job's reads from there
 * on, in order, split into epochs where a chunk repeats. With substitution, a job whose next
 * chunk is not resident reads a resident chunk of its current epoch first (the same chunks per
 * epoch, another order); other jobs and the baselines replay the trace as it is.
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
  }

  /** A job's reads in trace order and where its epochs end. */
  record JobReads(int[] keys, int[] epochEnds, int firstRow, int lastRow) {}

  static JobReads[] jobReads(Trace t) {
    List<List<Integer>> keys = new ArrayList<>();
    int[] first = new int[t.jobs()];
    int[] last = new int[t.jobs()];
    for (int j = 0; j < t.jobs(); j++) {
      keys.add(new ArrayList<>());
      first[j] = -1;
    }
    for (int i = 0; i < t.size(); i++) {
      int j = t.job(i);
      keys.get(j).add(t.key(i));
      if (first[j] < 0) {
        first[j] = i;
      }
      last[j] = i;
    }
    JobReads[] out = new JobReads[t.jobs()];
    for (int j = 0; j < t.jobs(); j++) {
      int[] k = keys.get(j).stream().mapToInt(Integer::intValue).toArray();
      List<Integer> ends = new ArrayList<>();
      Set<Integer> seen = new HashSet<>();
      for (int i = 0; i < k.length; i++) {
        if (!seen.add(k[i])) {
          ends.add(i);
          seen.clear();
          seen.add(k[i]);
        }
      }
      ends.add(k.length);
      out[j] = new JobReads(k, ends.stream().mapToInt(Integer::intValue).toArray(), first[j], last[j]);
    }
    return out;
  }

  /** Replays {@code trace} through {@code policy}. */
  public static Result run(Trace trace, CachePolicy policy, boolean substitute) {
    long started = System.nanoTime();
    JobReads[] jobs = jobReads(trace);
    int[] cursor = new int[trace.jobs()];
    int[] epoch = new int[trace.jobs()];
    boolean[][] consumed = new boolean[trace.jobs()][];
    for (int j = 0; j < jobs.length; j++) {
      consumed[j] = new boolean[jobs[j].keys().length];
    }
    java.util.Map<String, Integer> groupIds = new java.util.HashMap<>();
    for (int k = 0; k < trace.keys(); k++) {
      String name = trace.keyName(k);
      String g = name.substring(0, name.lastIndexOf('/'));
      policy.group(k, groupIds.computeIfAbsent(g, x -> groupIds.size()));
    }
    long hits = 0;
    long hitBytes = 0;
    long hddBytes = 0;
    long flashBytes = 0;
    for (int i = 0; i < trace.size(); i++) {
      int j = trace.job(i);
      JobReads jr = jobs[j];
      if (i == jr.firstRow()) {
        policy.plan(j, jr.keys(), jr.epochEnds(), substitute);
      }
      int pick = cursor[j];
      if (substitute && !policy.resident(jr.keys()[pick])) {
        int end = jr.epochEnds()[epoch[j]];
        for (int p = pick + 1; p < end; p++) {
          if (!consumed[j][p] && policy.resident(jr.keys()[p])) {
            pick = p;
            break;
          }
        }
      }
      consumed[j][pick] = true;
      while (cursor[j] < consumed[j].length && consumed[j][cursor[j]]) {
        cursor[j]++;
      }
      while (epoch[j] < jr.epochEnds().length - 1 && cursor[j] >= jr.epochEnds()[epoch[j]]) {
        epoch[j]++;
      }
      int key = jr.keys()[pick];
      long bytes = trace.bytes(key);
      switch (policy.access(trace.time(i), j, key, bytes, CachePolicy.Evictions.NONE)) {
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
      if (i == jr.lastRow()) {
        policy.jobEnded(j);
      }
    }
    return new Result(policy.name() + (substitute ? "+substitution" : ""), trace.size(), hits, hitBytes, hddBytes,
        flashBytes, (System.nanoTime() - started) / 1e9);
  }
}
