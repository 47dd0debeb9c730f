package io.strata.node;

import io.strata.node.policy.CachePolicy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What a clustered node's peer prefetch looks at next: the chunks its planned jobs read soon that
 * are not on its SSD tier, and the chunks a pass found on no peer lately (not asked about again
 * for {@link #RETRY_SECONDS}).
 *
 * <p>Threads and locks: none of its own. {@link TierState} alone holds it, in a field guarded by its
 * monitor, so every call here is made under that monitor.
 */
final class PeerLookahead {
  /** Seconds before a chunk no peer held is looked up again. */
  static final double RETRY_SECONDS = 5;
  /** Keys of a plan a prefetch pass looks at, from the job's position on. */
  static final int LOOKAHEAD_KEYS = 4096;

  /** A chunk a prefetch pass may place: its key and what it is. */
  record Candidate(int key, KeySpace.KeyInfo info) {}

  /** Keys whose residency a prefetch pass found on no peer, and when. */
  private final Map<Integer, Double> noPeerSince = new HashMap<>();

  /**
   * The chunks the planned jobs read next (from each job's position, in plan order, up to {@link
   * #LOOKAHEAD_KEYS} per job) that are neither resident nor in flight nor recently found on no
   * peer, at most {@code max}, and no more than {@code free} bytes.
   */
  List<Candidate> candidates(Map<String, CachePolicy.JobPlan> planned, Jobs jobs, Residency residency, KeySpace keys,
      long free, int max, double now) {
    noPeerSince.values().removeIf(t -> now - t > RETRY_SECONDS);
    List<Candidate> out = new ArrayList<>();
    Set<Integer> seen = new HashSet<>();
    for (Map.Entry<String, CachePolicy.JobPlan> e : planned.entrySet()) {
      CachePolicy.JobPlan jp = e.getValue();
      long s = Math.max(0, jobs.step(e.getKey()) - jp.firstStep());
      if (s >= jp.steps()) {
        continue;
      }
      int from = jp.stepStart((int) s);
      int to = (int) Math.min(jp.keys().length, (long) from + LOOKAHEAD_KEYS);
      for (int i = from; i < to && out.size() < max; i++) {
        int k = jp.keys()[i];
        if (!residency.absent(k) || noPeerSince.containsKey(k) || !seen.add(k)) {
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

  /** No peer holds {@code key}: not asked about again for {@link #RETRY_SECONDS}. */
  void noPeer(int key, double now) {
    noPeerSince.put(key, now);
  }
}
