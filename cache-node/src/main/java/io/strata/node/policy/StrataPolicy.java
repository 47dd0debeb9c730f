package io.strata.node.policy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Strata's tiering policy: keep what running jobs will read soonest, admit what jobs will still
 * read, never admit what no one will read again, and stay under a flash write budget.
 *
 * <h2>Why not LRU or TinyLFU</h2>
 *
 * Training jobs scan: every epoch reads every chunk of the job's features once, in an order that
 * is a function of its seed. A scan larger than the cache is LRU's worst case (each chunk is
 * evicted just before it is read again), and frequency alone cannot tell the chunk a job will
 * read in a minute from the one it read for the last time. What makes this tier different from a
 * CDN is that the readers can say what they will read: jobs declare their plans (dataset,
 * features, epochs, and the chunk order when they know it), so the node knows the future of every
 * declared job. That makes Belady's rule (evict what is needed farthest in the future) nearly
 * computable online.
 *
 * <h2>Next use</h2>
 *
 * A declared job contributes, for every chunk of its plan, the positions at which it will read
 * it. The node tracks each job's position (its reads advance it) and its read rate (reads per
 * second since its first read; jobs read in bursts, so the long-run rate is the one that
 * predicts), so the next read of chunk {@code k} by job {@code j} is expected at {@code
 * now + (position of k in j's plan - j's position) / rate(j)}. The next use of a chunk is the
 * soonest over all jobs; one cached chunk is thereby credited to every job that will read it.
 *
 * <p>Jobs that have not started yet cannot have declared anything, yet popular features are read
 * by job after job. Jobs read whole feature streams, so popularity is learned per stream: the
 * smoothed gap between the arrivals of new jobs reading a stream predicts when the next one comes,
 * and that job reaches a given chunk half an epoch later on average; when the next job is overdue,
 * it is expected as far ahead as the silence has lasted. Such a guess is less certain than a
 * declared read, so its distance is multiplied by a discount (2 by default; on generated traces
 * it was worth one to three points of byte hit ratio over 1). A chunk's next use is the
 * sooner of its planned reads and this popularity estimate; a chunk of a stream that fewer than
 * two jobs have read has no popularity estimate.
 *
 * <h2>Decisions</h2>
 *
 * On a miss of chunk {@code k}: if it has no next use, it is bypassed (served from HDD, not
 * written to flash). Otherwise, if it fits in free space it is admitted; if not, victims are
 * taken in order of farthest next use (chunks no one will read first, then the least frequently
 * read), and {@code k} is admitted only if every victim is needed later than {@code k} (Belady
 * with bypass). Pinned chunks are never victims. Every admission spends its size from a token
 * bucket refilled at the flash write budget (bytes per hour, with one hour's worth of burst at
 * most); when the bucket is low, only chunks that at least two more reads will use are
 * admitted, and when it is empty nothing is.
 *
 * <h2>Substitutable reads</h2>
 *
 * A job that declares its plan substitutable (after Quiver) lets the node reorder its reads
 * within an epoch: the same rows every epoch, resident chunks first. The policy accepts reads in
 * any order within a job's epoch: a read consumes the first unread occurrence of that chunk at or
 * after the job's position.
 *
 * <p>Complexity: a decision that must evict scans the resident chunks (O(resident)); next-use
 * cursors only move forward, so the plan bookkeeping is linear in the plan's length overall.
 * Not thread-safe: the node serializes calls.
 */
public final class StrataPolicy implements CachePolicy {
  private static final double NEVER = Double.POSITIVE_INFINITY;
  static final double RATE_WINDOW_SECONDS = 30;

  /** Default factor by which guessed (popularity) next uses are pushed back against declared ones. */
  public static final double DEFAULT_POPULARITY_DISCOUNT = 2.0;

  private long budget;
  private double popularityDiscount;
  private double flashBytesPerSecond;
  private double burst;
  private double tokens;
  private double lastRefill = Double.NaN;

  private long[] size = new long[256];
  private boolean[] resident = new boolean[256];
  private boolean[] pinned = new boolean[256];
  private int[] freq = new int[256];
  private double[] lastRead = new double[256];
  private double[] gap = new double[256];
  private int[] slot = new int[256];
  private int[] groupOf = new int[256];
  private int[] residentKeys = new int[256];
  private int residentCount;
  private long used;
  private long accesses;
  private long bypassNoNextUse;
  private long bypassNoTokens;
  private long bypassVictimSooner;
  private long admittedPlanned;
  private long admittedPopular;

  /** Per feature stream: when jobs started reading it and how often a new job comes. */
  private static final class GroupStats {
    final java.util.Set<Integer> jobs = new java.util.HashSet<>();
    double firstArrival = Double.NaN;
    double lastArrival = Double.NaN;
    double gap = Double.NaN;
  }

  private final Map<Integer, GroupStats> groups = new HashMap<>();

  /** Per key: the plans that will read it. */
  private final Map<Integer, List<Occurrence>> occurrences = new HashMap<>();
  private final Map<Integer, Plan> plans = new HashMap<>();

  private static final class Plan {
    final int[] keys;
    final boolean[] consumed;
    int cursor;
    int reads;
    double firstTime = Double.NaN;
    double lastTime = Double.NaN;
    boolean ended;

    /**
     * Reads per second since the job's first read; NaN until the job has read for {@link
     * #RATE_WINDOW_SECONDS} (jobs read in bursts: a rate from the first burst alone would be
     * far too high).
     */
    double rate() {
      return lastTime - firstTime < RATE_WINDOW_SECONDS ? Double.NaN : (reads - 1) / (lastTime - firstTime);
    }

    final int epochLength;

    Plan(int[] keys, int epochLength) {
      this.keys = keys;
      this.consumed = new boolean[keys.length];
      this.epochLength = epochLength;
    }
  }

  /** Positions of one key in one plan; {@code next} only moves forward. */
  private static final class Occurrence {
    final Plan plan;
    int[] positions = new int[2];
    int count;
    int next;

    Occurrence(Plan plan) {
      this.plan = plan;
    }

    void add(int p) {
      if (count == positions.length) {
        positions = Arrays.copyOf(positions, count * 2);
      }
      positions[count++] = p;
    }

    /** The first unconsumed position at or after the plan's cursor, or -1. */
    int nextPosition() {
      while (next < count && (positions[next] < plan.cursor || plan.consumed[positions[next]])) {
        next++;
      }
      return next < count ? positions[next] : -1;
    }
  }

  /**
   * @param budgetBytes SSD bytes the policy may fill
   * @param flashBytesPerHour flash write budget; 0 or less for none
   */
  public StrataPolicy(long budgetBytes, double flashBytesPerHour) {
    this(budgetBytes, flashBytesPerHour, DEFAULT_POPULARITY_DISCOUNT);
  }

  /**
   * @param budgetBytes SSD bytes the policy may fill
   * @param flashBytesPerHour flash write budget; 0 or less for none
   * @param popularityDiscount how much farther a guessed next use counts than a declared one (at least 1)
   */
  public StrataPolicy(long budgetBytes, double flashBytesPerHour, double popularityDiscount) {
    if (budgetBytes < 0) {
      throw new IllegalArgumentException("SSD budget must not be negative: " + budgetBytes);
    }
    if (!(popularityDiscount >= 1)) {
      throw new IllegalArgumentException("popularity discount must be at least 1, got " + popularityDiscount);
    }
    Arrays.fill(groupOf, -1);
    this.popularityDiscount = popularityDiscount;
    this.budget = budgetBytes;
    this.flashBytesPerSecond = flashBytesPerHour > 0 ? flashBytesPerHour / 3600 : Double.POSITIVE_INFINITY;
    this.burst = flashBytesPerHour > 0 ? flashBytesPerHour : Double.POSITIVE_INFINITY;
    this.tokens = burst;
  }

  @Override
  public String name() {
    return "strata";
  }

  private void ensure(int key) {
    if (key >= size.length) {
      int n = Math.max(size.length * 2, key + 1);
      size = Arrays.copyOf(size, n);
      resident = Arrays.copyOf(resident, n);
      pinned = Arrays.copyOf(pinned, n);
      freq = Arrays.copyOf(freq, n);
      lastRead = Arrays.copyOf(lastRead, n);
      gap = Arrays.copyOf(gap, n);
      slot = Arrays.copyOf(slot, n);
      int old = groupOf.length;
      groupOf = Arrays.copyOf(groupOf, n);
      Arrays.fill(groupOf, old, n, -1);
      residentKeys = Arrays.copyOf(residentKeys, n);
    }
  }

  @Override
  public void plan(int job, int[] keys, int[] epochEnds, boolean substitutable) {
    Plan old = plans.remove(job);
    if (old != null) {
      old.ended = true;
    }
    Plan p = new Plan(keys.clone(), epochEnds.length == 0 ? keys.length : epochEnds[0]);
    plans.put(job, p);
    Map<Integer, Occurrence> byKey = new HashMap<>();
    for (int i = 0; i < keys.length; i++) {
      int k = keys[i];
      Occurrence o = byKey.get(k);
      if (o == null) {
        o = new Occurrence(p);
        byKey.put(k, o);
        occurrences.computeIfAbsent(k, x -> new ArrayList<>()).add(o);
      }
      o.add(i);
    }
  }

  @Override
  public void group(int key, int group) {
    ensure(key);
    groupOf[key] = group;
  }

  /** Records that {@code job} reads feature stream {@code g}: a new reader updates the arrival gap. */
  private void noteGroup(int g, int job, double time) {
    GroupStats s = groups.computeIfAbsent(g, x -> new GroupStats());
    if (s.jobs.add(job)) {
      if (Double.isNaN(s.firstArrival)) {
        s.firstArrival = time;
      }
      s.lastArrival = time;
      if (s.jobs.size() >= 2 && time > s.firstArrival) {
        s.gap = (time - s.firstArrival) / (s.jobs.size() - 1);
      }
    }
  }

  /**
   * When a job not yet declared is expected to read {@code key}: the next job of its feature
   * stream (the last arrival plus the smoothed gap between arrivals) plus half an epoch (a new
   * job reaches a given chunk half way through its epoch on average). Infinite until two jobs
   * have read the stream.
   */
  private double popularNextUse(int key, double now) {
    int g = groupOf[key];
    if (g < 0) {
      return NEVER;
    }
    GroupStats s = groups.get(g);
    if (s == null || s.jobs.size() < 2 || Double.isNaN(s.gap)) {
      return NEVER;
    }
    double arrival = s.lastArrival + s.gap;
    if (arrival < now) {
      // Overdue: the longer no new job came, the later the next one is expected.
      arrival = now + Math.max(s.gap, now - s.lastArrival);
    }
    double eta = arrival + typicalEpochSeconds() / 2;
    return now + (eta - now) * popularityDiscount;
  }

  /** The median duration of an epoch among declared jobs (reads per epoch / read rate). */
  private double typicalEpochSeconds() {
    typical();
    return typicalEpoch;
  }

  @Override
  public void jobEnded(int job) {
    Plan p = plans.remove(job);
    if (p != null) {
      p.ended = true;
    }
  }

  @Override
  public void pin(int key, long bytes, boolean pin) {
    ensure(key);
    size[key] = bytes;
    pinned[key] = pin;
  }

  /** Advances the plan of {@code job} over a read of {@code key}. */
  private void consume(int job, int key, double time) {
    Plan p = plans.get(job);
    if (p == null) {
      return;
    }
    if (Double.isNaN(p.firstTime)) {
      p.firstTime = time;
    }
    p.lastTime = time;
    p.reads++;
    List<Occurrence> occ = occurrences.get(key);
    if (occ != null) {
      for (Occurrence o : occ) {
        if (o.plan == p) {
          int pos = o.nextPosition();
          if (pos >= 0) {
            p.consumed[pos] = true;
          }
          break;
        }
      }
    }
    while (p.cursor < p.keys.length && p.consumed[p.cursor]) {
      p.cursor++;
    }
    if (p.cursor >= p.keys.length) {
      jobEnded(job);
    }
  }

  /** When {@code key} is expected to be read next, from declared plans or its own history. */
  double nextUse(int key, double now) {
    double best = NEVER;
    List<Occurrence> occ = occurrences.get(key);
    if (occ != null) {
      boolean anyAlive = false;
      for (Occurrence o : occ) {
        if (o.plan.ended) {
          continue;
        }
        int pos = o.nextPosition();
        if (pos < 0) {
          continue;
        }
        anyAlive = true;
        double rate = o.plan.rate();
        if (Double.isNaN(rate)) {
          rate = typicalRate();
        }
        double eta = now + (pos - o.plan.cursor + 1) / rate;
        best = Math.min(best, eta);
      }
      if (!anyAlive) {
        occ.removeIf(o -> o.plan.ended || o.nextPosition() < 0);
        if (occ.isEmpty()) {
          occurrences.remove(key);
        }
      }
    }
    best = Math.min(best, popularNextUse(key, now));
    if (best == NEVER && freq[key] >= 2 && gap[key] > 0 && !planned(key)) {
      double expected = lastRead[key] + gap[key];
      best = expected >= now ? expected : now + Math.max(gap[key], now - lastRead[key]);
    }
    return best;
  }

  private long typicalAt = -1;
  private double typicalRate;
  private double typicalEpoch;

  /** Recomputes the typical rate and epoch duration at most once per read. */
  private void typical() {
    if (typicalAt == accesses) {
      return;
    }
    typicalAt = accesses;
    double[] rates = plans.values().stream().mapToDouble(Plan::rate).filter(r -> !Double.isNaN(r)).sorted().toArray();
    typicalRate = rates.length == 0 ? 1.0 : rates[rates.length / 2];
    double[] d = plans.values().stream()
        .filter(p -> !Double.isNaN(p.rate()))
        .mapToDouble(p -> p.epochLength / p.rate())
        .sorted()
        .toArray();
    typicalEpoch = d.length == 0 ? 0 : d[d.length / 2];
  }

  /** The median read rate of the jobs whose rate is known, or one read per second. */
  private double typicalRate() {
    typical();
    return typicalRate;
  }

  private boolean planned(int key) {
    return occurrences.containsKey(key);
  }

  /** Reads of {@code key} still to come in declared plans. */
  int futureReads(int key) {
    int n = 0;
    List<Occurrence> occ = occurrences.get(key);
    if (occ != null) {
      for (Occurrence o : occ) {
        if (!o.plan.ended && o.nextPosition() >= 0) {
          n += o.count - o.next;
        }
      }
    }
    return n;
  }

  private void refill(double time) {
    if (Double.isNaN(lastRefill)) {
      lastRefill = time;
      return;
    }
    if (time > lastRefill) {
      tokens = Math.min(burst, tokens + (time - lastRefill) * flashBytesPerSecond);
      lastRefill = time;
    }
  }

  @Override
  public Outcome access(double time, int job, int key, long bytes, Evictions evictions) {
    ensure(key);
    size[key] = bytes;
    if (++accesses % (16L * size.length) == 0) {
      for (int k = 0; k < freq.length; k++) {
        freq[k] >>= 1;
      }
    }
    if (freq[key] > 0 && time > lastRead[key]) {
      double g = time - lastRead[key];
      gap[key] = gap[key] == 0 ? g : 0.8 * gap[key] + 0.2 * g;
    }
    freq[key] = Math.min(freq[key] + 1, 1 << 20);
    lastRead[key] = time;
    if (groupOf[key] >= 0) {
      noteGroup(groupOf[key], job, time);
    }
    consume(job, key, time);
    refill(time);
    if (resident[key]) {
      return Outcome.HIT;
    }
    return admit(time, key, bytes, evictions) ? Outcome.MISS_ADMITTED : Outcome.MISS_BYPASSED;
  }

  private boolean admit(double now, int key, long bytes, Evictions evictions) {
    if (bytes > budget) {
      return false;
    }
    boolean pin = pinned[key];
    double eta = pin ? now : nextUse(key, now);
    if (eta == NEVER) {
      bypassNoNextUse++;
      return false;
    }
    if (tokens < bytes || (!pin && tokens < 0.25 * burst && futureReads(key) < 2)) {
      bypassNoTokens++;
      return false;
    }
    long free = budget - used;
    if (free < bytes) {
      // Farthest next use first; among equals, the least read. Bypass if a victim is needed sooner.
      int[] victims = new int[4];
      int nv = 0;
      boolean[] taken = new boolean[residentCount];
      double[] etas = new double[residentCount];
      for (int s = 0; s < residentCount; s++) {
        etas[s] = pinned[residentKeys[s]] ? -1 : nextUse(residentKeys[s], now);
      }
      while (free < bytes) {
        int best = -1;
        for (int s = 0; s < residentCount; s++) {
          if (taken[s] || etas[s] < 0) {
            continue;
          }
          if (best < 0 || etas[s] > etas[best]
              || (etas[s] == etas[best] && freq[residentKeys[s]] < freq[residentKeys[best]])) {
            best = s;
          }
        }
        if (best < 0 || (!pin && etas[best] <= eta)) {
          bypassVictimSooner++;
          return false;
        }
        taken[best] = true;
        if (nv == victims.length) {
          victims = Arrays.copyOf(victims, nv * 2);
        }
        victims[nv++] = residentKeys[best];
        free += size[residentKeys[best]];
      }
      for (int v = 0; v < nv; v++) {
        remove(victims[v]);
        evictions.evicted(victims[v]);
      }
    }
    tokens -= bytes;
    if (futureReads(key) > 0) {
      admittedPlanned++;
    } else {
      admittedPopular++;
    }
    resident[key] = true;
    slot[key] = residentCount;
    residentKeys[residentCount++] = key;
    used += bytes;
    return true;
  }

  private void remove(int key) {
    resident[key] = false;
    int s = slot[key];
    int last = residentKeys[--residentCount];
    residentKeys[s] = last;
    slot[last] = s;
    used -= size[key];
  }

  @Override
  public void removed(int key) {
    if (key < resident.length && resident[key]) {
      remove(key);
    }
  }

  /**
   * Marks a key resident without spending flash budget (a segment found on disk at start-up, an
   * operator's promotion), or corrects the size of a resident key once its segment is written.
   */
  public void restore(int key, long bytes) {
    ensure(key);
    if (resident[key]) {
      used += bytes - size[key];
    }
    size[key] = bytes;
    if (!resident[key]) {
      resident[key] = true;
      slot[key] = residentCount;
      residentKeys[residentCount++] = key;
      used += bytes;
    }
  }

  @Override
  public long residentBytes() {
    return used;
  }

  @Override
  public boolean resident(int key) {
    return key < resident.length && resident[key];
  }

  public long budget() {
    return budget;
  }

  /** Flash write budget in bytes per hour; 0 for none. */
  public double flashBudgetPerHour() {
    return Double.isInfinite(burst) ? 0 : burst;
  }

  public double popularityDiscount() {
    return popularityDiscount;
  }

  /**
   * Changes the SSD budget; when it shrinks, evicts the chunks needed farthest in the future
   * (pinned ones last) until the resident bytes fit.
   */
  public void setBudget(long bytes, double now, Evictions evictions) {
    if (bytes < 0) {
      throw new IllegalArgumentException("SSD budget must not be negative: " + bytes);
    }
    budget = bytes;
    shrink(now, evictions);
  }

  /**
   * Sets the size of a resident key to what its segment really takes, evicting (farthest next
   * use first) if that pushes the tier over its budget.
   */
  public void resize(int key, long bytes, double now, Evictions evictions) {
    ensure(key);
    if (resident[key]) {
      used += bytes - size[key];
    }
    size[key] = bytes;
    shrink(now, evictions);
  }

  private void shrink(double now, Evictions evictions) {
    while (used > budget && residentCount > 0) {
      int worst = -1;
      double worstEta = -2;
      for (int s = 0; s < residentCount; s++) {
        int k = residentKeys[s];
        double eta = pinned[k] ? -1 : nextUse(k, now);
        if (eta > worstEta) {
          worstEta = eta;
          worst = k;
        }
      }
      remove(worst);
      evictions.evicted(worst);
    }
  }

  /** Changes the flash write budget (bytes per hour; 0 for none). */
  public void setFlashBudget(double bytesPerHour) {
    if (bytesPerHour < 0) {
      throw new IllegalArgumentException("flash write budget must not be negative: " + bytesPerHour);
    }
    flashBytesPerSecond = bytesPerHour > 0 ? bytesPerHour / 3600 : Double.POSITIVE_INFINITY;
    burst = bytesPerHour > 0 ? bytesPerHour : Double.POSITIVE_INFINITY;
    tokens = Math.min(tokens, burst);
  }

  public void setPopularityDiscount(double discount) {
    if (!(discount >= 1)) {
      throw new IllegalArgumentException("popularity discount must be at least 1, got " + discount);
    }
    popularityDiscount = discount;
  }

  /**
   * Counts of the policy's decisions: admissions for planned reads and for popularity, and
   * bypasses for no expected reuse, no flash budget, or victims needed sooner.
   */
  public Map<String, Long> decisionCounts() {
    Map<String, Long> m = new java.util.LinkedHashMap<>();
    m.put("admittedPlanned", admittedPlanned);
    m.put("admittedPopular", admittedPopular);
    m.put("bypassNoNextUse", bypassNoNextUse);
    m.put("bypassNoFlashBudget", bypassNoTokens);
    m.put("bypassVictimNeededSooner", bypassVictimSooner);
    return m;
  }

  /** Flash bytes the policy could write right now. */
  public double flashTokens() {
    return tokens;
  }
}
