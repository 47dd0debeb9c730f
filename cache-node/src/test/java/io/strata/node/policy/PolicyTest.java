package io.strata.node.policy;

import io.strata.node.sim.Simulator;
import io.strata.node.sim.Trace;
import io.strata.node.sim.TraceGenerator;
import io.strata.node.sim.OptPolicy;
import io.strata.node.sim.CaffeinePolicy;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.LongFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PolicyTest {
  @TempDir Path tmp;

  /** One job scanning {@code keys} chunks {@code epochs} times in order; with {@code declare}, it declares that plan first. */
  private static Trace cyclic(int keys, int epochs, boolean declare) {
    Trace.Builder b = new Trace.Builder();
    if (declare) {
      int[][] steps = new int[keys * epochs][];
      for (int s = 0; s < steps.length; s++) {
        steps[s] = new int[] {s % keys};
      }
      b.plan(0, "job", "ds", List.of("f"), 0, keys, false, steps);
    }
    double t = 0;
    for (int e = 0; e < epochs; e++) {
      for (int k = 0; k < keys; k++) {
        b.add(t++, "job", "ds", "f", k, 100);
      }
    }
    return b.build();
  }

  @Test
  void onADeclaredCyclicScanStrataMatchesBeladyAndLruGetsNothing() {
    Trace t = cyclic(100, 3, true);
    long budget = 50 * 100;
    Simulator.Result opt = Simulator.run(t, new OptPolicy(t, budget));
    Simulator.Result strata = Simulator.run(t, new StrataPolicy(budget, 0));
    Simulator.Result lru = Simulator.run(t, new LruPolicy(budget));
    assertEquals(0, lru.hits());
    assertTrue(opt.hits() >= 98, "Belady keeps about half the scan: " + opt.hits());
    assertEquals(opt.hits(), strata.hits());
    assertEquals(opt.flashBytes(), strata.flashBytes());
  }

  @Test
  void undeclaredTheScanIsLearnedOnline() {
    Trace t = cyclic(100, 3, false);
    long budget = 50 * 100;
    Simulator.Result strata = Simulator.run(t, new StrataPolicy(budget, 0));
    Simulator.Result opt = Simulator.run(t, new OptPolicy(t, budget));
    Simulator.Result lru = Simulator.run(t, new LruPolicy(budget));
    // The job's pass over the stream tells what it has still to read, and that it comes back.
    assertTrue(strata.hits() >= 0.8 * opt.hits() && strata.hits() <= opt.hits(), strata + " vs " + opt);
    assertEquals(0, lru.hits());
  }

  @Test
  void stepReportsMoveTheJobWithoutItsReads() {
    // A job that reports steps but whose reads were aggregated away still moves: a chunk it has
    // passed is not kept for it.
    StrataPolicy p = new StrataPolicy(1000, 0);
    int[] keys = {0, 1, 2, 3};
    p.plan(7, new CachePolicy.JobPlan(keys, new int[] {1, 2, 3, 4}, 10, 4, false));
    p.group(0, 0);
    double before = p.nextUse(1, 0);
    p.progress(7, 12, 1);
    assertEquals(Double.POSITIVE_INFINITY, p.nextUse(1, 1), "step 11 is behind the job at step 12");
    assertTrue(before < Double.POSITIVE_INFINITY);
    assertTrue(p.nextUse(3, 1) < Double.POSITIVE_INFINITY);
  }

  @Test
  void aJobsReadsOfAChunkWithinTheReuseTimeCountAsOne() {
    // A job at 1,000 steps/s: its next read of key 0 is a step away (1 ms), of key 1 a second.
    int[] keys = new int[4000];
    int[] ends = new int[keys.length];
    for (int s = 0; s < keys.length; s++) {
      keys[s] = s == 2001 ? 0 : s == 3000 ? 1 : 10 + s;
      ends[s] = s + 1;
    }
    StrataPolicy p = new StrataPolicy(1L << 30, 0);
    p.plan(7, new CachePolicy.JobPlan(keys, ends, 0, keys.length, false));
    p.progress(7, 0, 0);
    p.progress(7, 2000, 2);
    assertEquals(2 + StrataTuning.REUSE_SECONDS, p.nextUse(0, 2), 1e-9, "a read sooner than the reuse time counts as at it");
    assertEquals(3, p.nextUse(1, 2), 0.01, "a later read counts when it comes");
    // A second job reading key 0 as soon: two reads per reuse time.
    p.plan(8, new CachePolicy.JobPlan(keys, ends, 0, keys.length, false));
    p.progress(8, 0, 0);
    p.progress(8, 2000, 2);
    assertEquals(2 + StrataTuning.REUSE_SECONDS / 2, p.nextUse(0, 2), 1e-9);
  }

  @Test
  void noPolicyEverExceedsItsBudget() {
    Trace t = TraceGenerator.generate(new TraceGenerator.Spec(2, 20, 16, 10, 1.1, 30, 4));
    long budget = t.distinctBytes() / 8;
    List<LongFunction<CachePolicy>> policies = List.of(
        b -> new StrataPolicy(b, 0), b -> new StrataPolicy(b, 3600.0 * 50_000_000), LruPolicy::new, CaffeinePolicy::new,
        b -> new OptPolicy(t, b), FrequencyPolicy::new);
    for (LongFunction<CachePolicy> make : policies) {
      CachePolicy p = make.apply(budget);
      Simulator.groups(t, p);
      int c = 0;
      for (int i = 0; i < t.size(); i++) {
        while (c < t.controls().size() && t.controls().get(c).at() == i) {
          Simulator.apply(t.controls().get(c++), p);
        }
        int key = t.key(i);
        p.access(t.time(i), t.job(i), key, t.bytes(key), CachePolicy.Evictions.NONE);
        long held = p instanceof CaffeinePolicy ? p.residentBytes() - (1L << 20) : p.residentBytes();
        assertTrue(held <= budget, p.name() + " holds " + p.residentBytes() + " > " + budget + " at row " + i);
      }
    }
  }

  /**
   * Job after job reads one chunk of a popular stream: the policy admits its chunks on the
   * stream's popularity (and their own history), unless another node holds them (a later job
   * copies them from that peer). Reads a job is making still count (the pass of a job in progress).
   */
  @Test
  void aPopularChunkAnotherNodeHoldsIsNotKeptOnAGuess() {
    int[] admitted = new int[2];
    for (int variant = 0; variant < 2; variant++) {
      StrataPolicy p = new StrataPolicy(1_000_000, 0);
      for (int k = 0; k < 10; k++) {
        p.group(k, 0);
        if (variant == 1) {
          p.heldElsewhere(k, true);
        }
      }
      for (int job = 0; job < 40; job++) {
        if (p.access(job * 100.0, job, job % 10, 1000, CachePolicy.Evictions.NONE) == CachePolicy.Outcome.MISS_ADMITTED) {
          admitted[variant]++;
        }
      }
    }
    assertTrue(admitted[0] > 0, "a popular stream's chunks are admitted on a guess: " + admitted[0]);
    assertEquals(0, admitted[1], "held by a peer, they are not kept on a guess");
  }

  @Test
  void chunksNoOneWillReadAgainAreNeverWritten() {
    Trace.Builder b = new Trace.Builder();
    for (int k = 0; k < 500; k++) {
      b.add(k, "job" + k, "ds", "f" + k, k, 1000);
    }
    Trace t = b.build();
    Simulator.Result r = Simulator.run(t, new StrataPolicy(100_000, 0));
    assertEquals(0, r.flashBytes(), "single reads are bypassed, not written to flash");
    Simulator.Result lru = Simulator.run(t, new LruPolicy(100_000));
    assertEquals(500_000, lru.flashBytes());
  }

  @Test
  void theFlashWriteBudgetCapsWrites() {
    Trace t = TraceGenerator.generate(TraceGenerator.Spec.defaults(2));
    long budget = t.distinctBytes() / 10;
    double hours = (t.time(t.size() - 1) - t.time(0)) / 3600;
    double perHour = 2e9;
    Simulator.Result capped = Simulator.run(t, new StrataPolicy(budget, perHour));
    Simulator.Result free = Simulator.run(t, new StrataPolicy(budget, 0));
    assertTrue(capped.flashBytes() <= perHour * (hours + 1), capped.flashBytes() + " written in " + hours + " h");
    assertTrue(capped.flashBytes() < free.flashBytes());
  }

  /** The claims of BENCHMARKS.md on the default generated traces at a 10 % budget, plans declared as jobs declare them. */
  @Test
  void onGeneratedTracesStrataApproachesOptAndBeatsLru() {
    for (long seed = 1; seed <= 3; seed++) {
      Trace t = TraceGenerator.generate(TraceGenerator.Spec.defaults(seed));
      assertTrue(!t.controls().isEmpty());
      long budget = t.distinctBytes() / 10;
      Simulator.Result strata = Simulator.run(t, new StrataPolicy(budget, 0));
      Simulator.Result opt = Simulator.run(t, new OptPolicy(t, budget));
      Simulator.Result lru = Simulator.run(t, new LruPolicy(budget));
      double vsOpt = strata.byteHitRatio() / opt.byteHitRatio();
      double absorbed = (double) strata.hitBytes() / lru.hitBytes();
      double flash = (double) strata.flashBytes() / lru.flashBytes();
      assertTrue(vsOpt >= 0.85, "seed " + seed + ": " + vsOpt + " of OPT's byte hit ratio");
      assertTrue(absorbed >= 2.0, "seed " + seed + ": " + absorbed + "x LRU's HDD bytes absorbed");
      assertTrue(flash <= 0.5, "seed " + seed + ": " + flash + " of LRU's flash writes");
    }
  }

  @Test
  void malformedTracesAreRejectedWithTheLine() throws IOException {
    Object[][] cases = {
      {"", "is empty"},
      {"a,b,c\n", "expected 'time,job,dataset,feature,chunk,bytes'"},
      {Trace.HEADER + "\n1,j,d,f,0\n", "line 2: expected 6 fields"},
      {Trace.HEADER + "\n1,j,d,f,x,10\n", "line 2: bad number"},
      {Trace.HEADER + "\n5,j,d,f,0,10\n4,j,d,f,1,10\n", "line 3: row 2: time 4.0 goes back"},
      {Trace.HEADER + "\n1,j,d,f,0,10\n2,j,d,f,0,11\n", "line 3: row 2: d/f/0 has 11 bytes but had 10"},
      {Trace.HEADER + "\n1,j,d,f,0,-1\n", "bytes must be positive"},
      {Trace.HEADER + "\n1,j,d,@plan,0,4|0|f\n", "STEPS_PER_EPOCH|SUBSTITUTABLE|FEATURES|STEPS"},
      {Trace.HEADER + "\n1,j,d,@plan,0,0|0|f|1\n", "an epoch at least one step"},
      {Trace.HEADER + "\n1,j,d,@bogus,0,0\n", "unknown record '@bogus'"},
      {Trace.HEADER + "\n1,j,d,f,0,10,flash\n", "tier must be ssd or hdd"},
    };
    for (Object[] c : cases) {
      Path f = tmp.resolve("t.csv");
      Files.writeString(f, (String) c[0]);
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Trace.read(f));
      assertTrue(e.getMessage().contains((String) c[1]), e.getMessage());
    }
  }

  @Test
  void tracesRoundTripThroughCsv() throws IOException {
    Trace t = TraceGenerator.generate(new TraceGenerator.Spec(1, 5, 4, 3, 1.1, 10, 1));
    Path f = tmp.resolve("rt.csv");
    t.write(f);
    Trace back = Trace.read(f);
    assertEquals(t.size(), back.size());
    assertEquals(t.distinctBytes(), back.distinctBytes());
    for (int i = 0; i < t.size(); i++) {
      assertEquals(t.keyName(t.key(i)), back.keyName(back.key(i)));
    }
    assertEquals(t.controls().size(), back.controls().size());
    for (int i = 0; i < t.controls().size(); i++) {
      assertEquals(t.controlRow(t.controls().get(i)), back.controlRow(back.controls().get(i)));
    }
    assertEquals(Simulator.run(t, new StrataPolicy(t.distinctBytes() / 5, 0)).hits(),
        Simulator.run(back, new StrataPolicy(back.distinctBytes() / 5, 0)).hits(), "the plans survive the round trip");
  }

  /** The goals of issue 11 for traces without plan records, at a 10 % budget. */
  @Test
  void anUndeclaredJobThatStopsReadingStopsCounting() {
    // One job, no plan, reads all 10 chunks of a stream every quarter second for 4 s.
    StrataPolicy p = new StrataPolicy(1L << 30, 0);
    for (int k = 0; k < 10; k++) {
      p.group(k, 0);
    }
    double t = 0;
    for (; t <= 4; t += 0.25) {
      for (int k = 0; k < 10; k++) {
        p.access(t, 1, k, 1000, CachePolicy.Evictions.NONE);
      }
    }
    double last = t - 0.25;
    assertTrue(p.nextUse(3, last + 0.1) < last + 1, "a job reading the stream now will read it again soon");
    // Silent for 2 s (8 of its gaps): finished or dead. Only the chunk's own history is left.
    assertTrue(p.nextUse(3, last + 2) >= last + 4 - 1e-9, "a silent job's pass no longer counts: " + p.nextUse(3, last + 2));
    for (int k = 0; k < 10; k++) {
      p.access(last + 2, 1, k, 1000, CachePolicy.Evictions.NONE);
    }
    assertTrue(p.nextUse(3, last + 2.05) < last + 3, "it counts again once the job reads again");
  }

  @Test
  void withoutPlansTheJobsPassesAreLearnedOnline() {
    for (long seed = 1; seed <= 3; seed++) {
      Trace t = TraceGenerator.generate(TraceGenerator.Spec.defaults(seed));
      long budget = t.distinctBytes() / 10;
      Simulator.Result declared = Simulator.run(t, new StrataPolicy(budget, 0));
      Trace bare = t.withoutPlans();
      Simulator.Result online = Simulator.run(bare, new StrataPolicy(budget, 0));
      Simulator.Result lru = Simulator.run(bare, new LruPolicy(budget));
      Simulator.Result freq = Simulator.run(bare, new FrequencyPolicy(budget));
      Simulator.Result caffeine = Simulator.run(bare, new CaffeinePolicy(budget));
      assertTrue(declared.byteHitRatio() >= online.byteHitRatio(), "seed " + seed + ": plans never hurt: " + declared + " vs " + online);
      assertTrue(online.byteHitRatio() >= 1.5 * lru.byteHitRatio(), "seed " + seed + ": " + online + " vs " + lru);
      assertTrue(online.byteHitRatio() > freq.byteHitRatio(), "seed " + seed + ": " + online + " vs " + freq);
      assertTrue(online.byteHitRatio() > caffeine.byteHitRatio(), "seed " + seed + ": " + online + " vs " + caffeine);
    }
  }

  /**
   * Where writes cost (a flash write budget, here one too large ever to run out), a chunk displaces
   * residents only if its declared passes are worth more than theirs: on the generated traces
   * that cuts flash writes by at least a fifth for at most 15 % of the byte hit ratio.
   */
  @Test
  void withAWriteBudgetSwapsMustBeWorthTheWrite() {
    for (long seed = 1; seed <= 3; seed++) {
      Trace t = TraceGenerator.generate(TraceGenerator.Spec.defaults(seed));
      long budget = t.distinctBytes() / 10;
      StrataPolicy aware = new StrataPolicy(budget, 1e18);
      Simulator.Result free = Simulator.run(t, new StrataPolicy(budget, 0));
      Simulator.Result costly = Simulator.run(t, aware);
      assertTrue(costly.flashBytes() <= 0.8 * free.flashBytes(), "seed " + seed + ": " + costly + " vs " + free);
      assertTrue(costly.byteHitRatio() >= 0.85 * free.byteHitRatio(), "seed " + seed + ": " + costly + " vs " + free);
      assertTrue(aware.decisionCounts().get("bypassNotWorthTheWrite") > 0, aware.decisionCounts().toString());
    }
  }

  /**
   * Under a write budget, the swap's worth is counted in the slow tier's bytes: two resident
   * chunks whose columns compress 3:1 give way to an incompressible one of the same size and
   * passes (it saves the slow tier three times as much), and not the other way round; untold, the
   * SSD bytes stand in and equal passes keep what is resident.
   */
  @Test
  void withAWriteBudgetTheSlowTiersBytesDecideTheSwap() {
    assertEquals(CachePolicy.Outcome.MISS_ADMITTED, thirdChunk(new long[] {33, 33, 100}));
    assertEquals(CachePolicy.Outcome.MISS_BYPASSED, thirdChunk(new long[] {100, 100, 33}));
    assertEquals(CachePolicy.Outcome.MISS_BYPASSED, thirdChunk(null));
  }

  /** Reads chunks 0, 1 (admitted) and 2 (the swap) of a plan where 2 comes back soonest; every chunk 100 SSD bytes, two fit. */
  private static CachePolicy.Outcome thirdChunk(long[] slow) {
    StrataPolicy p = new StrataPolicy(200, 1e18);
    // Steps: 0 1 2 | 2 again at once | 0 1 | then each once more: equal passes left for all three.
    int[] keys = {0, 1, 2, 3, 2, 3, 0, 1, 3, 0, 1, 2};
    int[] ends = new int[keys.length];
    for (int i = 0; i < ends.length; i++) {
      ends[i] = i + 1;
    }
    p.plan(1, new CachePolicy.JobPlan(keys, ends, 0, keys.length, false));
    for (int k = 0; k < 4; k++) {
      p.group(k, k);
      if (slow != null && k < slow.length) {
        p.slowBytes(k, slow[k], 100);
      }
    }
    for (int s = 0; s < 2; s++) {
      p.progress(1, s, s);
      assertEquals(CachePolicy.Outcome.MISS_ADMITTED, p.access(s, 1, keys[s], 100, CachePolicy.Evictions.NONE));
    }
    p.progress(1, 2, 2);
    return p.access(2, 1, 2, 100, CachePolicy.Evictions.NONE);
  }

  /**
   * Under a write budget, free space is not filled with what the budget's best would displace:
   * once the policy has weighed the declared chunks (at its first rebuild), a chunk worth far less
   * per SSD byte than those that fill the budget is not written even with room to spare.
   */
  @Test
  void withAWriteBudgetFreeSpaceIsKeptForWhatFillsTheBudget() {
    StrataPolicy p = new StrataPolicy(100 * 100, 1e18);
    // One epoch, twice: even keys compress 20:1 (5 slow-tier bytes for 100 SSD bytes), odd ones not at all.
    int n = 200;
    int[] keys = new int[2 * n];
    int[] ends = new int[keys.length];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = i % n;
      ends[i] = i + 1;
    }
    p.plan(1, new CachePolicy.JobPlan(keys, ends, 0, n, false));
    for (int k = 0; k < n; k++) {
      p.group(k, k % 2);
      p.slowBytes(k, k % 2 == 0 ? 5 : 100, 100);
    }
    int lowAdmittedLate = 0;
    int highAdmittedLate = 0;
    for (int s = 0; s < 120; s++) {
      p.progress(1, s, s);
      CachePolicy.Outcome o = p.access(s, 1, keys[s], 100, CachePolicy.Evictions.NONE);
      if (s >= 80 && o == CachePolicy.Outcome.MISS_ADMITTED) {
        if (keys[s] % 2 == 0) {
          lowAdmittedLate++;
        } else {
          highAdmittedLate++;
        }
      }
    }
    assertTrue(p.residentBytes() < 100 * 100, "room to spare: " + p.residentBytes());
    assertEquals(0, lowAdmittedLate, p.decisionCounts().toString());
    assertEquals(20, highAdmittedLate, p.decisionCounts().toString());
    assertTrue(p.decisionCounts().get("bypassBelowWhatFillsTheBudget") >= 20, p.decisionCounts().toString());
  }
}
