package io.strata.node.sim;

import io.strata.node.policy.CachePolicy;
import io.strata.node.policy.Policies;
import java.util.Arrays;

/**
 * Belady's MIN computed offline from the whole trace: on a miss, evict the resident chunks whose
 * next read is farthest in the future, and bypass the missed chunk when its own next read is
 * farther than theirs (or never comes). With chunks of different sizes this is the standard
 * offline reference, not a proven optimum of byte hit ratio. An oracle for the simulator only: it
 * takes no placements or budget changes, and the node does not offer it ({@link Policies}).
 */
public final class OptPolicy implements CachePolicy {
  private final Trace trace;
  private final long budget;
  private final int[] nextUse;
  private final boolean[] isResident;
  private final int[] residentKeys;
  private final int[] slot;
  private int count;
  private long used;
  private int position;

  public OptPolicy(Trace trace, long budgetBytes) {
    this.trace = trace;
    this.budget = budgetBytes;
    this.nextUse = new int[trace.size()];
    int[] seen = new int[trace.keys()];
    Arrays.fill(seen, Integer.MAX_VALUE);
    for (int i = trace.size() - 1; i >= 0; i--) {
      nextUse[i] = seen[trace.key(i)];
      seen[trace.key(i)] = i;
    }
    this.isResident = new boolean[trace.keys()];
    this.residentKeys = new int[trace.keys()];
    this.slot = new int[trace.keys()];
    this.keyNext = new int[trace.keys()];
  }

  private final int[] keyNext;

  @Override
  public String name() {
    return "opt";
  }

  /** Reads must be replayed in trace order: the i-th call is row i. */
  @Override
  public Outcome access(double time, int job, int key, long bytes, Evictions evictions) {
    int i = position++;
    if (trace.key(i) != key) {
      throw new IllegalStateException("OPT replays its own trace in order: row " + i + " is not key " + key);
    }
    keyNext[key] = nextUse[i];
    if (isResident[key]) {
      return Outcome.HIT;
    }
    if (nextUse[i] == Integer.MAX_VALUE || bytes > budget) {
      return Outcome.MISS_BYPASSED;
    }
    // Farthest-next-use victims until the chunk fits; bypass if any victim is needed sooner.
    long freed = budget - used;
    int[] victims = new int[0];
    int nv = 0;
    boolean[] taken = new boolean[0];
    while (freed < bytes) {
      int best = -1;
      for (int s = 0; s < count; s++) {
        int k = residentKeys[s];
        if ((taken.length > s && taken[s]) || (best >= 0 && keyNext[k] <= keyNext[residentKeys[best]])) {
          continue;
        }
        best = s;
      }
      if (best < 0 || keyNext[residentKeys[best]] < nextUse[i]) {
        return Outcome.MISS_BYPASSED;
      }
      if (taken.length == 0) {
        taken = new boolean[count];
      }
      taken[best] = true;
      if (nv == victims.length) {
        victims = Arrays.copyOf(victims, Math.max(4, nv * 2));
      }
      victims[nv++] = residentKeys[best];
      freed += trace.bytes(residentKeys[best]);
    }
    for (int v = 0; v < nv; v++) {
      remove(victims[v]);
      evictions.evicted(victims[v]);
    }
    add(key, bytes);
    return Outcome.MISS_ADMITTED;
  }

  private void add(int key, long bytes) {
    isResident[key] = true;
    slot[key] = count;
    residentKeys[count++] = key;
    used += bytes;
  }

  private void remove(int key) {
    isResident[key] = false;
    int s = slot[key];
    int last = residentKeys[--count];
    residentKeys[s] = last;
    slot[last] = s;
    used -= trace.bytes(key);
  }

  @Override
  public long budget() {
    return budget;
  }

  /** OPT replays a recorded trace with a fixed budget: refused. */
  @Override
  public void setBudget(long bytes, double now, Evictions evictions) {
    throw new UnsupportedOperationException("OPT replays a recorded trace with the budget it was made with");
  }

  /** OPT decides from the trace alone: refused. */
  @Override
  public boolean place(int key, long bytes, Placement why) {
    throw new UnsupportedOperationException("OPT replays a recorded trace: it takes no placements");
  }

  /** Sizes come from the trace: refused. */
  @Override
  public void resize(int key, long bytes, double now, Evictions evictions) {
    throw new UnsupportedOperationException("OPT replays a recorded trace: sizes come from it");
  }

  @Override
  public void removed(int key) {
    if (isResident[key]) {
      remove(key);
    }
  }

  @Override
  public long residentBytes() {
    return used;
  }

  @Override
  public boolean resident(int key) {
    return isResident[key];
  }
}
