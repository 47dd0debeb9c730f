package io.strata.node.policy;

import static io.strata.node.policy.StrataTuning.NEVER;
import static io.strata.node.policy.StrataTuning.REBUILD_MIN;
import static io.strata.node.policy.StrataTuning.REBUILD_SHARE;
import static io.strata.node.policy.StrataTuning.HYSTERESIS;

import java.util.Arrays;
import java.util.BitSet;
import java.util.LinkedHashMap;
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
 * <p>A job that declared nothing tells its future by reading ({@link StreamStats}): the chunks of
 * a stream it has not read in its current pass come before the pass ends. Its pass counts only
 * while the job keeps reading: silent for three of its usual gaps between reads, it has finished,
 * died or paused, and its chunks are no longer credited to it (on recorded live traces replayed
 * without plans, this took the policy from 0.78 to 0.93 of OPT).
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
 * <h2>Worth the write</h2>
 *
 * Next use alone swaps without end where jobs read every chunk once an epoch in shuffled orders
 * (issue 58's fleet wrote 7–9 times its budget in three epochs), and Belady's order is the best
 * one only when every miss costs the same. So where writes cost (a flash write budget is set), a
 * swap must save the slow tier more of its time than it gives up over the declared plans, each
 * chunk weighed by what a miss of it costs the slow tier (its stored bytes and one read's
 * positioning, as the node tells them: {@link #slowBytes}); where next use refuses a swap, victims
 * worth far less per SSD byte are taken instead, and free space is not written for a chunk worth
 * far less than what fills the budget. {@link SlowTierWorth}'s note has the rules and the figures
 * that led to them.
 *
 * <p>A stream more jobs read displaces one fewer jobs read; chunks of equal worth stay where they
 * are. Chunks no plan declares (guesses from popularity or
 * history) keep the next-use rule alone. Without a write budget, writes are free and Belady's
 * rule alone decides: on the generated traces of {@code bench policy} (where an admission is
 * instant, so a swap's reads are never lost to the write) the worth rule keeps 0.88–0.89 of the
 * byte hits for 0.69–0.75 of the flash writes; in the fleet, where a swap costs a segment write and
 * the slow tier's reads meanwhile, it took writes from 6.6 to 3.4 budgets and made every epoch faster.
 *
 * <h2>In a cluster</h2>
 *
 * A chunk another node holds can be copied from it without reading the HDD tier, so for such a
 * chunk ({@link #heldElsewhere}) the guesses (stream popularity, the chunk's own history) do not
 * count: it is admitted and kept only for the reads this node's jobs declared or are making.
 * Hosts thus keep the same popular chunk only where their own jobs need it.
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
 * another order (the loader takes a step up to 32 ahead when its chunks are resident): its reads
 * consume the chunk's next occurrence and move its position forward, never back, as every
 * job's do. (Moving it by its reported steps alone, as first built, cost the live node 11 to 18
 * % of its byte hit ratio in `bench policy-live --substitution`: the steps a job reports lag its
 * reads, so the policy kept what the job had just read.)
 *
 * <p>Not thread-safe: the node serializes calls (under its tier monitor), as does the simulator.
 */
public final class StrataPolicy implements CachePolicy {
  private long rebuiltAt;

  /** Default factor by which guessed (popularity) next uses are pushed back against declared ones. */
  public static final double DEFAULT_POPULARITY_DISCOUNT = 2.0;

  private long budget;
  private final FlashBudget flash;

  private long[] size = new long[256];
  private boolean[] pinned = new boolean[256];
  private final ReadHistory history = new ReadHistory();
  private final ResidentKeys residents = new ResidentKeys();
  private long accesses;
  private long bypassNoNextUse;
  private long bypassNoTokens;
  private long bypassVictimSooner;
  /** Admissions refused because the victims' declared reads were worth as much as the chunk's. */
  private long bypassNotWorth;
  /** What each key costs the slow tier, and the decisions weighed by it. */
  private final SlowTierWorth worth = new SlowTierWorth();
  /** Whether the last {@link #victims} refused for worth (not for a victim needed sooner). */
  private boolean refusedForWorth;
  private long admittedPlanned;
  private long admittedPopular;
  private final NextUseHeap heap = new NextUseHeap();
  private final DeclaredPlans plans = new DeclaredPlans();
  private final StreamStats streams = new StreamStats();
  /** When each key is expected to be read next, from the plans, the streams and its history. */
  private final NextUses next = new NextUses(plans, streams, history);
  /** Whether key {@code k} may be evicted (the heap hands out only these as victims): resident and not pinned. */
  private boolean evictable(int k) {
    return residents.contains(k) && !pinned[k];
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
    CachePolicy.checkBudget(budgetBytes);
    if (!(popularityDiscount >= 1)) {
      throw new IllegalArgumentException("popularity discount must be at least 1, got " + popularityDiscount);
    }
    next.setDiscount(popularityDiscount);
    this.budget = budgetBytes;
    this.flash = new FlashBudget(flashBytesPerHour);
  }

  @Override
  public String name() {
    return "strata";
  }

  private void ensure(int key) {
    if (key >= size.length) {
      int n = Math.max(size.length * 2, key + 1);
      size = Arrays.copyOf(size, n);
      worth.ensure(n);
      residents.ensure(n);
      pinned = Arrays.copyOf(pinned, n);
      history.ensure(n);
      streams.ensureKeys(n);
      plans.ensureKeys(n);
      next.ensure(n);
    }
  }

  @Override
  public void plan(int job, JobPlan jobPlan) {
    jobEnded(job);
    int max = -1;
    for (int k : jobPlan.keys()) {
      max = Math.max(max, k);
    }
    if (max >= 0) {
      ensure(max);
    }
    plans.add(job, jobPlan);
  }

  @Override
  public void progress(int job, long step, double time) {
    plans.progress(job, step, time);
  }

  @Override
  public void group(int key, int group) {
    ensure(key);
    next.group(key, group);
  }

  @Override
  public void jobEnded(int job) {
    int[] keys = plans.end(job);
    if (keys == null) {
      return;
    }
    // Its resident chunks may now be needed later than the heap says: push them anew.
    double now = flash.now();
    BitSet done = new BitSet();
    for (int k : keys) {
      if (residents.contains(k) && !pinned[k] && !done.get(k)) {
        done.set(k);
        push(k, nextUse(k, now));
      }
    }
  }

  /**
   * In a cluster: another node holds {@code key}. Its guessed next uses (the popularity of its
   * stream, its own history) no longer count, only the reads this node's jobs declared and are
   * making: a job that comes later copies it from the peer without reading the HDD tier, so hosts
   * do not all keep the same popular chunks on a guess.
   */
  @Override
  public void heldElsewhere(int key, boolean held) {
    ensure(key);
    if (!next.heldElsewhere(key, held)) {
      return;
    }
    if (residents.contains(key) && !pinned[key]) {
      push(key, nextUse(key, flash.now()));
    }
  }

  @Override
  public void pin(int key, long bytes, boolean pin) {
    ensure(key);
    size[key] = bytes;
    boolean was = pinned[key];
    pinned[key] = pin;
    if (was && !pin && residents.contains(key)) {
      push(key, nextUse(key, flash.now()));
    }
  }

  /** When {@code key} is expected to be read next ({@link NextUses#of}). */
  double nextUse(int key, double now) {
    return next.of(key, now, accesses);
  }

  @Override
  public Outcome access(double time, int job, int key, long bytes, Evictions evictions) {
    ensure(key);
    size[key] = bytes;
    if (++accesses % (16L * size.length) == 0) {
      history.decay();
    }
    history.read(key, time);
    int group = next.groupOf(key);
    if (group >= 0) {
      streams.noteGroup(group, job, time);
      if (plans.get(job) == null) {
        streams.notePass(job, key, group, time);
      }
    }
    plans.consume(job, key, time);
    flash.refill(time);
    if (accesses - rebuiltAt >= Math.max(REBUILD_MIN, residents.count() / REBUILD_SHARE)) {
      rebuild(time);
    }
    if (residents.contains(key)) {
      if (!pinned[key]) {
        push(key, nextUse(key, time));
      }
      return Outcome.HIT;
    }
    return admit(time, key, bytes, evictions) ? Outcome.MISS_ADMITTED : Outcome.MISS_BYPASSED;
  }

  /** The slow-tier bytes a read of {@code key} from the SSD saves: as told ({@link #slowBytes}), else its size. */
  private long saves(int key) {
    return worth.saves(key, size[key]);
  }

  @Override
  public void slowBytes(int key, long slowBytes, long ssdBytes) {
    ensure(key);
    worth.set(key, slowBytes);
    if (size[key] == 0 && ssdBytes > 0) {
      size[key] = ssdBytes; // an estimate until the key's first read or placement says
    }
  }

  /** Rebuilds the next-use heap from the resident chunks (drops stale entries, corrects drifted ones). */
  private void rebuild(double now) {
    rebuiltAt = accesses;
    if (flash.perHour() > 0) {
      worth.updateFill(budget, size, plans);
    }
    heap.clear();
    for (int s = 0; s < residents.count(); s++) {
      int k = residents.key(s);
      if (!pinned[k]) {
        push(k, nextUse(k, now));
      }
    }
  }

  /**
   * Takes victims off the heap, farthest next use first, until {@code need} bytes are free.
   * Returns them, or null (and leaves the heap as it was) when a victim would be needed no later
   * than {@code limit}, or too few can go, or, for a chunk with {@code reads} declared reads still
   * to come (0: none declared, or pinned), when a victim that will be read again has as many declared
   * reads left per slow-tier byte saved, or the victims' declared reads times the slow-tier bytes
   * they save reach the chunk's (see "Worth the write" in the class essay).
   */
  private int[] victims(int key, long need, double limit, double now, int reads, long bytes) {
    long free = budget - residents.bytes();
    double lost = 0;
    refusedForWorth = false;
    int[] victims = new int[4];
    double[] etas = new double[4];
    int nv = 0;
    boolean ok = true;
    while (free < need) {
      int k = heap.top(this::evictable);
      if (k < 0) {
        ok = false;
        break;
      }
      double stored = heap.topEta();
      heap.pop();
      double real = nextUse(k, now);
      if (real < stored) {
        // Its future came closer since it was pushed (a new plan): put it back where it belongs.
        push(k, real);
        continue;
      }
      boolean weighed = reads > 0 && real != NEVER; // a victim no one reads again is always worth evicting
      int left = weighed ? plans.futurePasses(k) : 0;
      // Per SSD byte, the victim would save at least as many slow-tier bytes as the chunk: it stays.
      if (real <= limit || (weighed && (double) left * saves(k) * bytes >= (double) reads * saves(key) * size[k])) {
        refusedForWorth = real > limit;
        push(k, real);
        ok = false;
        break;
      }
      lost += (double) left * saves(k);
      if (nv == victims.length) {
        victims = Arrays.copyOf(victims, nv * 2);
        etas = Arrays.copyOf(etas, nv * 2);
      }
      victims[nv] = k;
      etas[nv++] = real;
      free += size[k];
    }
    if (ok && reads > 0 && lost >= (double) reads * saves(key)) {
      ok = false;
      refusedForWorth = true;
    }
    if (!ok) {
      for (int v = 0; v < nv; v++) {
        push(victims[v], etas[v]);
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
    if (flash.tokens() < bytes || (!pin && flash.low() && plans.futureReads(key) < 2)) {
      bypassNoTokens++;
      return false;
    }
    if (!pin && flash.perHour() > 0 && worth.belowFill(key, plans.futurePasses(key), bytes)) {
      return false; // free space too: a write spent twice (again for the chunk that displaces it)
    }
    if (budget - residents.bytes() < bytes) {
      int reads = pin || flash.perHour() <= 0 ? 0 : plans.futurePasses(key);
      int[] victims = victims(key, bytes, pin ? Double.NEGATIVE_INFINITY : now + (eta - now) * HYSTERESIS, now, reads, bytes);
      if (victims == null && reads > 0 && worth.known(key)) {
        // Where next use refuses: residents saving the slow tier far fewer bytes per SSD byte.
        victims = worth.victims(key, bytes, budget - residents.bytes(), reads, size, pinned, residents,
            k -> nextUse(k, now), plans);
        refusedForWorth = victims == null;
      }
      if (victims == null) {
        if (refusedForWorth) {
          bypassNotWorth++;
        } else {
          bypassVictimSooner++;
        }
        return false;
      }
      for (int v : victims) {
        remove(v);
        evictions.evicted(v);
      }
    }
    flash.spend(bytes);
    if (plans.futureReads(key) > 0) {
      admittedPlanned++;
    } else {
      admittedPopular++;
    }
    add(key, bytes);
    if (!pin) {
      push(key, eta);
    }
    return true;
  }

  /** Pushes {@code key}'s next use onto the heap (its earlier entries go stale). */
  private void push(int key, double nextUse) {
    heap.push(key, nextUse, history.freq(key));
  }

  private void add(int key, long bytes) {
    residents.add(key, bytes);
  }

  private void remove(int key) {
    heap.invalidate(key);
    residents.remove(key, size[key]);
  }

  @Override
  public void removed(int key) {
    if (residents.contains(key)) {
      remove(key);
    }
  }

  /**
   * Marks a key resident without spending flash budget (a segment found on disk at start-up, an
   * operator's promotion, a peer's copy), or corrects the size of a resident key.
   */
  @Override
  public boolean place(int key, long bytes, Placement why) {
    ensure(key);
    if (!residents.contains(key) && why != Placement.FOUND && residents.bytes() + bytes > budget) {
      return false;
    }
    if (residents.contains(key)) {
      residents.resized(bytes - size[key]);
    }
    size[key] = bytes;
    if (!residents.contains(key)) {
      add(key, bytes);
      if (!pinned[key]) {
        push(key, nextUse(key, flash.now()));
      }
    }
    return true;
  }

  @Override
  public long residentBytes() {
    return residents.bytes();
  }

  @Override
  public boolean resident(int key) {
    return residents.contains(key);
  }

  @Override
  public long budget() {
    return budget;
  }

  /** Flash write budget in bytes per hour; 0 for none. */
  public double flashBudgetPerHour() {
    return flash.perHour();
  }

  public double popularityDiscount() {
    return next.discount();
  }

  /**
   * Changes the SSD budget; when it shrinks, evicts the chunks needed farthest in the future
   * (pinned ones last) until the resident bytes fit.
   */
  @Override
  public void setBudget(long bytes, double now, Evictions evictions) {
    budget = CachePolicy.checkBudget(bytes);
    shrink(now, evictions);
  }

  /**
   * Sets the size of a resident key to what its segment really takes, evicting (farthest next
   * use first) if that pushes the tier over its budget.
   */
  @Override
  public void resize(int key, long bytes, double now, Evictions evictions) {
    ensure(key);
    if (residents.contains(key)) {
      residents.resized(bytes - size[key]);
    }
    size[key] = bytes;
    shrink(now, evictions);
  }

  private void shrink(double now, Evictions evictions) {
    if (residents.bytes() <= budget) {
      return;
    }
    rebuild(now);
    while (residents.bytes() > budget && residents.count() > 0) {
      int k = heap.top(this::evictable);
      if (k >= 0) {
        heap.pop();
      } else {
        k = residents.key(residents.count() - 1); // only pinned chunks are left
      }
      remove(k);
      evictions.evicted(k);
    }
  }

  /** Changes the flash write budget (bytes per hour; 0 for none). */
  @Override
  public void setFlashBudget(double bytesPerHour) {
    flash.set(bytesPerHour);
  }

  @Override
  public void setPopularityDiscount(double discount) {
    if (!(discount >= 1)) {
      throw new IllegalArgumentException("popularity discount must be at least 1, got " + discount);
    }
    next.setDiscount(discount);
  }

  /**
   * Counts of the policy's decisions: admissions for planned reads and for popularity, and
   * bypasses for no expected reuse, no flash budget, victims needed sooner or a swap not worth the
   * write; and how many keys the node told the slow-tier bytes of.
   */
  @Override
  public Map<String, Long> decisionCounts() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("admittedPlanned", admittedPlanned);
    m.put("admittedPopular", admittedPopular);
    m.put("bypassNoNextUse", bypassNoNextUse);
    m.put("bypassNoFlashBudget", bypassNoTokens);
    m.put("bypassVictimNeededSooner", bypassVictimSooner);
    m.put("bypassNotWorthTheWrite", bypassNotWorth);
    m.put("keysWeighedBySlowTierBytes", worth.told);
    m.put("admittedForSlowTierBytes", worth.swaps);
    m.put("bypassBelowWhatFillsTheBudget", worth.belowFill);
    return m;
  }

  /** Flash bytes the policy could write right now. */
  public double flashTokens() {
    return flash.tokens();
  }
}
