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
 * A job declares its plan as a program (seed, batching, shard, epochs); the node expands it, with
 * the loader's own code, into the chunks each step (batch) reads, so the policy knows, for every
 * chunk, the steps at which each job will read it. Jobs report their step with their reads, so
 * the node tracks each job's position (in keys of its plan) and its read rate (keys per second
 * since it started moving; jobs read in bursts, so the long-run rate is the one that predicts).
 * The next read of chunk {@code k} by job {@code j} is expected at {@code now + (position of k's
 * next step in j's plan - j's position) / rate(j)}. The next use of a chunk is the soonest over
 * all jobs; one cached chunk is thereby credited to every job that will read it. A job that
 * reports no step (a trace without step records) advances by its reads: a read consumes the
 * chunk's first occurrence at or after the job's position and moves the position there.
 *
 * <p>Jobs that have not started yet cannot have declared anything, yet popular features are read
 * by job after job. Jobs read whole feature streams, so popularity is learned per stream: the
 * smoothed gap between the arrivals of new jobs reading a stream predicts when the next one comes,
 * and that job reaches a given chunk half an epoch later on average; when the next job is overdue,
 * it is expected as far ahead as the silence has lasted. Such a guess is less certain than a
 * declared read, so its distance is multiplied by a discount (2 by default; on generated traces
 * it was worth one to three points of byte hit ratio over 1). A chunk's next use is the
 * sooner of its planned reads and this popularity estimate; a chunk of a stream that fewer than
 * two jobs have read has no popularity estimate. A chunk no plan covers, read at least twice,
 * is expected again after its own smoothed gap between reads.
 *
 * <h2>Decisions</h2>
 *
 * On a miss of chunk {@code k}: if it has no next use, it is bypassed (served from HDD, not
 * written to flash). Otherwise, if it fits in free space it is admitted; if not, victims are
 * taken in order of farthest next use (chunks no one will read first, then the least frequently
 * read), and {@code k} is admitted only if every victim is needed later than {@code k} (Belady
 * with bypass), by a margin: half as far again (a live admission takes a segment write, an
 * eviction is immediate, so swapping near-equals loses reads and flash). Pinned chunks are never victims. Every admission spends its size from a token
 * bucket refilled at the flash write budget (bytes per hour, with one hour's worth of burst at
 * most); when the bucket is low, only chunks that at least two more reads will use are
 * admitted, and when it is empty nothing is.
 *
 * <h2>The next-use index</h2>
 *
 * Victims come from a max-heap of resident chunks ordered by their expected next use (an
 * absolute time, so it does not drift as time passes while rates hold). Entries go stale when a
 * chunk's future changes; each chunk carries a stamp and only its latest entry counts. A chunk
 * whose next use became sooner (a new plan) is found when it reaches the top: its next use is
 * recomputed there and it is pushed back. One whose next use became later (a read consumed it, a
 * plan ended) is pushed anew when that happens; drift that no event marks (a popularity guess
 * going overdue, rates changing) is corrected by rebuilding the heap every quarter-resident-set of
 * reads. A decision thus costs O(log resident) plus a few next-use computations amortized,
 * instead of a scan of every resident chunk.
 *
 * <h2>Substitutable reads</h2>
 *
 * A job that declares its plan substitutable (after Quiver) may read the steps of an epoch in
 * another order: its reads consume occurrences without moving its position, which only its
 * reported steps move.
 *
 * <p>Not thread-safe: the node serializes calls (under its tier monitor), as does the simulator.
 */
public final class StrataPolicy implements CachePolicy {
  private static final double NEVER = Double.POSITIVE_INFINITY;
  /**
   * A job's rate is known once its position has moved for this long. Jobs report their step every
   * quarter second; on recorded live traces 1–2 s gave 3–5 points of byte hit ratio over 30 s
   * (a rate unknown for the first half minute of every job), on generated traces 1–2 points.
   */
  static final double RATE_WINDOW_SECONDS = 2;
  /**
   * The next-use heap is rebuilt (stale-early entries corrected) every {@code max(REBUILD_MIN,
   * resident / REBUILD_SHARE)} reads: at most REBUILD_SHARE next-use computations per read,
   * amortized. Rebuilding only every 4,096 reads cost 4–5 points of byte hit ratio on the
   * generated traces; this schedule is within 0.5 point of recomputing before every decision.
   */
  private static final int REBUILD_MIN = 64;
  private static final int REBUILD_SHARE = 4;
  private long rebuiltAt;

  /**
   * A chunk displaces resident ones only if they are needed at least this many times farther
   * away than it is. On a live node an admission is not instant (the segment must be written)
   * while an eviction is, so swapping chunks whose next uses are nearly equal loses reads; on
   * recorded live traces 1.5 cut flash writes by a fifth to a half at no loss of byte hit ratio,
   * and cost under a point on generated traces (where admission is instant).
   */
  static final double HYSTERESIS = 1.5;

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
  private int[] stamp = new int[256];
  private int[] residentKeys = new int[256];
  private int residentCount;
  private long used;
  private long accesses;
  private long bypassNoNextUse;
  private long bypassNoTokens;
  private long bypassVictimSooner;
  private long admittedPlanned;
  private long admittedPopular;
  private final EtaHeap heap = new EtaHeap();

  /**
   * Per feature stream: when jobs started reading it and how often a new job comes; the passes of
   * undeclared jobs over it and the number of its keys seen.
   */
  private static final class GroupStats {
    final List<Pass> passes = new ArrayList<>();
    int size;
    final java.util.Set<Integer> jobs = new java.util.HashSet<>();
    double firstArrival = Double.NaN;
    double lastArrival = Double.NaN;
    double gap = Double.NaN;
  }

  private GroupStats[] groups = new GroupStats[64];

  /**
   * An undeclared job's pass over one feature stream. Jobs read whole streams, every chunk once
   * per epoch, so a job that declared nothing still tells its future by reading: the chunks of
   * the stream it has not read in this pass come before the pass ends, the others in its next
   * pass (if it makes one).
   */
  private static final class Pass {
    final int job;
    final java.util.BitSet read = new java.util.BitSet();
    int readInPass;
    int passes;
    long reads;
    double firstTime;
    double lastTime;

    Pass(int job, double time) {
      this.job = job;
      this.firstTime = time;
      this.lastTime = time;
    }

    /** Distinct chunks of the stream read per second, or NaN before it is known. */
    double rate() {
      double dt = lastTime - firstTime;
      return dt < RATE_WINDOW_SECONDS || reads < 2 ? Double.NaN : (reads - 1) / dt;
    }
  }

  /** Each key's index within its stream, plus one (0: not seen yet). */
  private int[] localIndex = new int[256];

  private void ensureGroup(int g) {
    if (g >= groups.length) {
      groups = Arrays.copyOf(groups, Math.max(groups.length * 2, g + 1));
    }
  }

  /** Records an undeclared job's read of {@code key} in its pass over the key's stream. */
  private void notePass(int job, int key, int g, double time) {
    GroupStats gs = groups[g]; // noteGroup made it
    List<Pass> list = gs.passes;
    Pass p = null;
    for (Pass x : list) {
      if (x.job == job) {
        p = x;
        break;
      }
    }
    if (p == null) {
      p = new Pass(job, time);
      list.add(p);
    }
    int li = localIndex[key] - 1;
    if (li < 0) {
      li = gs.size++;
      localIndex[key] = li + 1;
    }
    if (p.read.get(li)) {
      p.read.clear();
      p.readInPass = 0;
      p.passes++;
    }
    p.read.set(li);
    p.readInPass++;
    p.reads++;
    p.lastTime = time;
  }

  /**
   * The rate (reads per second) at which undeclared jobs are expected to read {@code key}: from
   * each live pass over its stream, the chunks left in the pass spread evenly over its remaining
   * time; a chunk already read in this pass counts for the next one, at half weight (the job may
   * be in its last epoch). Passes silent for long are dropped.
   */
  private double passRate(int key, double now) {
    int g = groupOf[key];
    GroupStats gs = g < 0 || g >= groups.length ? null : groups[g];
    if (gs == null || gs.passes.isEmpty()) {
      return 0;
    }
    List<Pass> list = gs.passes;
    int li = localIndex[key] - 1;
    int size = gs.size;
    double total = 0;
    for (int i = list.size() - 1; i >= 0; i--) {
      Pass p = list.get(i);
      double r = p.rate();
      if (Double.isNaN(r)) {
        continue;
      }
      if (now - p.lastTime > Math.max(30, 20 / r)) {
        list.remove(i);
        continue;
      }
      int left = Math.max(1, size - p.readInPass);
      if (li >= 0 && !p.read.get(li)) {
        total += 1 / Math.max(1e-3, left / r / 2);
      } else {
        total += 0.5 / Math.max(1e-3, (left + size / 2.0) / r);
      }
    }
    return total;
  }

  /** Per key: the plans that will read it. */
  private Occurrences[] occurrences = new Occurrences[256];

  /** The plans that will read one key. */
  private static final class Occurrences extends ArrayList<Occurrence> {
    private static final long serialVersionUID = 1;
  }
  /** Declared plans by job, and the same plans as a list (for the typical rate). */
  private Plan[] planOf = new Plan[64];
  private final List<Plan> plans = new ArrayList<>();

  private Plan plan(int job) {
    return job >= 0 && job < planOf.length ? planOf[job] : null;
  }

  /** A declared plan and the job's position in it. */
  private static final class Plan {
    final JobPlan plan;
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

    Plan(JobPlan plan) {
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
     * #RATE_WINDOW_SECONDS} (jobs read in bursts: a rate from the first burst alone would be far
     * too high).
     */
    double rate() {
      double dt = lastTime - firstTime;
      return dt < RATE_WINDOW_SECONDS || lastPosition <= firstPosition ? Double.NaN : (lastPosition - firstPosition) / dt;
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

  /** Max-heap of (next use, key), ties to the less frequently read; entries carry the key's stamp. */
  private final class EtaHeap {
    double[] eta = new double[256];
    int[] key = new int[256];
    int[] keyStamp = new int[256];
    int[] keyFreq = new int[256];
    int n;

    void clear() {
      n = 0;
    }

    /** Pushes the current next use of resident, unpinned {@code k} (earlier entries of it go stale). */
    void push(int k, double e) {
      if (n == eta.length) {
        eta = Arrays.copyOf(eta, n * 2);
        key = Arrays.copyOf(key, n * 2);
        keyStamp = Arrays.copyOf(keyStamp, n * 2);
        keyFreq = Arrays.copyOf(keyFreq, n * 2);
      }
      int s = ++stamp[k];
      int i = n++;
      eta[i] = e;
      key[i] = k;
      keyStamp[i] = s;
      keyFreq[i] = freq[k];
      up(i);
    }

    private boolean above(int a, int b) {
      return eta[a] > eta[b] || (eta[a] == eta[b] && keyFreq[a] < keyFreq[b]);
    }

    private void up(int i) {
      while (i > 0) {
        int p = (i - 1) >>> 1;
        if (!above(i, p)) {
          break;
        }
        swap(i, p);
        i = p;
      }
    }

    private void down(int i) {
      while (true) {
        int l = 2 * i + 1;
        if (l >= n) {
          return;
        }
        int c = l + 1 < n && above(l + 1, l) ? l + 1 : l;
        if (!above(c, i)) {
          return;
        }
        swap(i, c);
        i = c;
      }
    }

    private void swap(int a, int b) {
      double e = eta[a];
      eta[a] = eta[b];
      eta[b] = e;
      int t = key[a];
      key[a] = key[b];
      key[b] = t;
      t = keyStamp[a];
      keyStamp[a] = keyStamp[b];
      keyStamp[b] = t;
      t = keyFreq[a];
      keyFreq[a] = keyFreq[b];
      keyFreq[b] = t;
    }

    /** Drops stale entries from the top; the top key, or -1 when empty. */
    int top() {
      while (n > 0) {
        int k = key[0];
        if (keyStamp[0] == stamp[k] && resident[k] && !pinned[k]) {
          return k;
        }
        pop();
      }
      return -1;
    }

    double topEta() {
      return eta[0];
    }

    void pop() {
      n--;
      if (n > 0) {
        eta[0] = eta[n];
        key[0] = key[n];
        keyStamp[0] = keyStamp[n];
        keyFreq[0] = keyFreq[n];
        down(0);
      }
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
      stamp = Arrays.copyOf(stamp, n);
      localIndex = Arrays.copyOf(localIndex, n);
      occurrences = Arrays.copyOf(occurrences, n);
      int old = groupOf.length;
      groupOf = Arrays.copyOf(groupOf, n);
      Arrays.fill(groupOf, old, n, -1);
      residentKeys = Arrays.copyOf(residentKeys, n);
    }
  }

  @Override
  public void plan(int job, JobPlan jobPlan) {
    jobEnded(job);
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
        ensure(k);
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

  @Override
  public void progress(int job, long step, double time) {
    Plan p = plan(job);
    if (p != null) {
      long local = step - p.plan.firstStep();
      if (local >= 0) {
        p.moveTo((int) Math.min(local, Integer.MAX_VALUE), time);
      }
    }
  }

  @Override
  public void group(int key, int group) {
    ensure(key);
    groupOf[key] = group;
  }

  /** Records that {@code job} reads feature stream {@code g}: a new reader updates the arrival gap. */
  private void noteGroup(int g, int job, double time) {
    ensureGroup(g);
    GroupStats s = groups[g];
    if (s == null) {
      s = groups[g] = new GroupStats();
    }
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
    GroupStats s = g < groups.length ? groups[g] : null;
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

  /** The median duration of an epoch among declared jobs (keys per epoch / read rate). */
  private double typicalEpochSeconds() {
    typical();
    return typicalEpoch;
  }

  @Override
  public void jobEnded(int job) {
    Plan p = plan(job);
    if (p == null) {
      return;
    }
    planOf[job] = null;
    plans.remove(p);
    p.ended = true;
    typicalAt = -1;
    // Its resident chunks may now be needed later than the heap says: push them anew.
    double now = Double.isNaN(lastRefill) ? 0 : lastRefill;
    java.util.BitSet done = new java.util.BitSet();
    for (int k : p.plan.keys()) {
      if (resident[k] && !pinned[k] && !done.get(k)) {
        done.set(k);
        heap.push(k, nextUse(k, now));
      }
    }
  }

  @Override
  public void pin(int key, long bytes, boolean pin) {
    ensure(key);
    size[key] = bytes;
    boolean was = pinned[key];
    pinned[key] = pin;
    if (was && !pin && resident[key]) {
      heap.push(key, nextUse(key, Double.isNaN(lastRefill) ? 0 : lastRefill));
    }
  }

  /** Consumes {@code job}'s next occurrence of {@code key} and, unless substitutable, moves the job there. */
  private void consume(int job, int key, double time) {
    Plan p = plan(job);
    if (p == null) {
      return;
    }
    List<Occurrence> occ = occurrences[key];
    if (occ == null) {
      return;
    }
    for (Occurrence o : occ) {
      if (o.plan == p) {
        int s = o.nextStep();
        if (s >= 0) {
          o.next++;
          if (!p.plan.substitutable()) {
            p.moveTo(s, time);
          }
        }
        return;
      }
    }
  }

  /**
   * When {@code key} is expected to be read next, from declared plans or its own history. Several
   * jobs' reads combine as rates: a chunk that two jobs will read in ten seconds each is worth
   * what one read in five seconds is (with one job this is Belady's next use).
   */
  double nextUse(int key, double now) {
    double rate = 0;
    List<Occurrence> occ = occurrences[key];
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
          r = typicalRate();
        }
        rate += r / (o.plan.plan.stepStart(s) - o.plan.position + 1);
      }
      if (!anyAlive) {
        occ.removeIf(o -> o.plan.ended || o.nextStep() < 0);
        if (occ.isEmpty()) {
          occurrences[key] = null;
        }
      }
    }
    rate += passRate(key, now);
    double popular = popularNextUse(key, now);
    double best;
    if (rate > 0) {
      // Expected reads per second from every source; a popularity guess adds its own rate.
      best = popular < NEVER ? now + 1 / (rate + 1 / Math.max(1e-9, popular - now)) : now + 1 / rate;
    } else {
      best = popular;
    }
    if (best == NEVER && freq[key] >= 2 && gap[key] > 0 && !planned(key)) {
      double expected = lastRead[key] + gap[key];
      best = expected >= now ? expected : now + Math.max(gap[key], now - lastRead[key]);
    }
    return best;
  }

  private long typicalAt = -1;
  private double typicalRate;
  private double typicalEpoch;

  /** Recomputes the typical rate and epoch duration every 256 reads or when plans change. */
  private void typical() {
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
  private double typicalRate() {
    typical();
    return typicalRate;
  }

  private boolean planned(int key) {
    return occurrences[key] != null;
  }

  /** Reads of {@code key} still to come in declared plans. */
  int futureReads(int key) {
    int n = 0;
    List<Occurrence> occ = occurrences[key];
    if (occ != null) {
      for (Occurrence o : occ) {
        if (!o.plan.ended && o.nextStep() >= 0) {
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
      if (plan(job) == null) {
        notePass(job, key, groupOf[key], time);
      }
    }
    consume(job, key, time);
    refill(time);
    if (accesses - rebuiltAt >= Math.max(REBUILD_MIN, residentCount / REBUILD_SHARE)) {
      rebuild(time);
    }
    if (resident[key]) {
      if (!pinned[key]) {
        heap.push(key, nextUse(key, time));
      }
      return Outcome.HIT;
    }
    return admit(time, key, bytes, evictions) ? Outcome.MISS_ADMITTED : Outcome.MISS_BYPASSED;
  }

  /** Rebuilds the next-use heap from the resident chunks (drops stale entries, corrects drifted ones). */
  private void rebuild(double now) {
    rebuiltAt = accesses;
    heap.clear();
    for (int s = 0; s < residentCount; s++) {
      int k = residentKeys[s];
      if (!pinned[k]) {
        heap.push(k, nextUse(k, now));
      }
    }
  }

  /**
   * Takes victims off the heap, farthest next use first, until {@code need} bytes are free.
   * Returns them, or null (and leaves the heap as it was) when a victim would be needed no later
   * than {@code limit}, or too few can go.
   */
  private int[] victims(long need, double limit, double now) {
    long free = budget - used;
    int[] victims = new int[4];
    double[] etas = new double[4];
    int nv = 0;
    boolean ok = true;
    while (free < need) {
      int k = heap.top();
      if (k < 0) {
        ok = false;
        break;
      }
      double stored = heap.topEta();
      heap.pop();
      double real = nextUse(k, now);
      if (real < stored) {
        // Its future came closer since it was pushed (a new plan): put it back where it belongs.
        heap.push(k, real);
        continue;
      }
      if (real <= limit) {
        heap.push(k, real);
        ok = false;
        break;
      }
      if (nv == victims.length) {
        victims = Arrays.copyOf(victims, nv * 2);
        etas = Arrays.copyOf(etas, nv * 2);
      }
      victims[nv] = k;
      etas[nv++] = real;
      free += size[k];
    }
    if (!ok) {
      for (int v = 0; v < nv; v++) {
        heap.push(victims[v], etas[v]);
      }
      return null;
    }
    return Arrays.copyOf(victims, nv);
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
    if (budget - used < bytes) {
      int[] victims = victims(bytes, pin ? Double.NEGATIVE_INFINITY : now + (eta - now) * HYSTERESIS, now);
      if (victims == null) {
        bypassVictimSooner++;
        return false;
      }
      for (int v : victims) {
        remove(v);
        evictions.evicted(v);
      }
    }
    tokens -= bytes;
    if (futureReads(key) > 0) {
      admittedPlanned++;
    } else {
      admittedPopular++;
    }
    add(key, bytes);
    if (!pin) {
      heap.push(key, eta);
    }
    return true;
  }

  private void add(int key, long bytes) {
    resident[key] = true;
    slot[key] = residentCount;
    residentKeys[residentCount++] = key;
    used += bytes;
  }

  private void remove(int key) {
    resident[key] = false;
    stamp[key]++;
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
      add(key, bytes);
      if (!pinned[key]) {
        heap.push(key, nextUse(key, Double.isNaN(lastRefill) ? 0 : lastRefill));
      }
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
    if (used <= budget) {
      return;
    }
    rebuild(now);
    while (used > budget && residentCount > 0) {
      int k = heap.top();
      if (k >= 0) {
        heap.pop();
      } else {
        k = residentKeys[residentCount - 1]; // only pinned chunks are left
      }
      remove(k);
      evictions.evicted(k);
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
