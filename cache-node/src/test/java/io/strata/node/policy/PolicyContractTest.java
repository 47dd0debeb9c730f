package io.strata.node.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * What every policy a node can run ({@link Policies}) must do, whatever it decides: stay within
 * its budget, keep pins, account its bytes exactly, place and resize as the node asks, replay the
 * same decisions from the same calls, and, where it takes them, honour plans and the flash
 * write budget. A new entry in the registry runs here with no change.
 */
class PolicyContractTest {
  static List<String> names() {
    return Policies.names();
  }

  private static CachePolicy make(String name, long budget) {
    return Policies.create(name, new Policies.Options(budget, 0, StrataPolicy.DEFAULT_POPULARITY_DISCOUNT));
  }

  private static long size(int key) {
    return 1_000 + (key * 7_919L) % 9_000;
  }

  /** Tracks what the policy says is resident, from its answers and evictions, against its own accounts. */
  private static final class Ledger implements CachePolicy.Evictions {
    final Set<Integer> resident = new HashSet<>();
    final Set<Integer> pinned = new HashSet<>();
    final CachePolicy p;

    Ledger(CachePolicy p) {
      this.p = p;
    }

    @Override
    public void evicted(int key) {
      assertTrue(resident.remove(key), p.name() + " evicted key " + key + ", which was not resident");
      assertFalse(pinned.contains(key), p.name() + " evicted pinned key " + key);
    }

    void check(String when) {
      long bytes = 0;
      for (int k : resident) {
        assertTrue(p.resident(k), p.name() + ": key " + k + " should be resident " + when);
        bytes += size(k);
      }
      assertEquals(bytes, p.residentBytes(), p.name() + ": resident bytes " + when);
      assertTrue(p.residentBytes() <= p.budget(), p.name() + " holds " + p.residentBytes() + " > " + p.budget() + " " + when);
    }
  }

  /** Random reads by a few jobs over a skewed key set, some operator placements and removals, a budget change. */
  private static List<Object> run(String name, long seed, boolean check) {
    CachePolicy p = make(name, 120_000);
    Ledger l = new Ledger(p);
    List<Object> decisions = new ArrayList<>();
    for (int k = 0; k < 400; k++) {
      p.group(k, k % 8);
    }
    for (int k = 0; k < 4; k++) {
      p.pin(k, size(k), true);
      l.pinned.add(k);
      assertTrue(p.place(k, size(k), CachePolicy.Placement.OPERATOR), name + " placed pinned key " + k);
      l.resident.add(k);
    }
    SplittableRandom r = new SplittableRandom(seed);
    for (int i = 0; i < 20_000; i++) {
      double now = i * 0.01;
      int key = r.nextInt(10) < 7 ? r.nextInt(40) : r.nextInt(400);
      int op = r.nextInt(100);
      if (op < 2) {
        boolean placed = p.place(key, size(key), CachePolicy.Placement.OPERATOR);
        boolean fits = p.resident(key) || l.resident.contains(key);
        decisions.add("place " + key + " " + placed);
        if (placed) {
          l.resident.add(key);
        } else {
          assertFalse(fits, name + " refused to place key " + key + ", which was resident");
          assertTrue(p.residentBytes() + size(key) > p.budget(), name + " refused to place key " + key + ", which fits");
        }
      } else if (op < 3 && !l.pinned.contains(key)) {
        p.removed(key);
        l.resident.remove(key);
        decisions.add("removed " + key);
      } else {
        boolean was = l.resident.contains(key);
        CachePolicy.Outcome o = p.access(now, i % 3, key, size(key), l);
        decisions.add(o);
        assertEquals(was, o == CachePolicy.Outcome.HIT, name + ": a read of key " + key + " at row " + i);
        if (o == CachePolicy.Outcome.MISS_ADMITTED) {
          l.resident.add(key);
        }
      }
      if (i == 10_000) {
        p.setBudget(70_000, now, l);
        decisions.add("budget");
      }
      if (check) {
        l.check("after row " + i);
      }
      for (int k : l.pinned) {
        assertTrue(p.resident(k), name + " lost pinned key " + k + " at row " + i);
      }
    }
    return decisions;
  }

  @ParameterizedTest
  @MethodSource("names")
  void neverOverItsBudgetPinsKeptAndItsBytesExact(String name) {
    run(name, 1, true);
  }

  @ParameterizedTest
  @MethodSource("names")
  void theSameCallsGiveTheSameDecisions(String name) {
    assertEquals(run(name, 2, false), run(name, 2, false), name + " replayed differently");
  }

  @ParameterizedTest
  @MethodSource("names")
  void placementsFitTheBudgetUnlessFoundOnDisk(String name) {
    CachePolicy p = make(name, 10_000);
    assertTrue(p.place(1, 6_000, CachePolicy.Placement.OPERATOR));
    assertFalse(p.place(2, 6_000, CachePolicy.Placement.PEER), name + " placed past its budget");
    assertFalse(p.resident(2));
    assertEquals(6_000, p.residentBytes());
    assertTrue(p.place(1, 5_000, CachePolicy.Placement.REPAIR), "a resident key takes its new size");
    assertEquals(5_000, p.residentBytes());
    assertTrue(p.place(3, 9_000, CachePolicy.Placement.FOUND), "a segment found on disk is resident whatever the budget");
    assertEquals(14_000, p.residentBytes());
    List<Integer> evicted = new ArrayList<>();
    p.resize(3, 4_000, 0, evicted::add);
    assertEquals(9_000, p.residentBytes());
    p.setBudget(5_000, 0, evicted::add);
    assertTrue(p.residentBytes() <= 5_000, name + " kept " + p.residentBytes() + " after its budget shrank");
    for (int k : evicted) {
      assertFalse(p.resident(k));
    }
    assertThrows(IllegalArgumentException.class, () -> p.setBudget(-1, 0, CachePolicy.Evictions.NONE));
  }

  @ParameterizedTest
  @MethodSource("names")
  void aResizePastTheBudgetEvicts(String name) {
    CachePolicy p = make(name, 10_000);
    List<Integer> evicted = new ArrayList<>();
    for (int k = 0; k < 4; k++) {
      assertTrue(p.place(k, 2_000, CachePolicy.Placement.OPERATOR), name + " places what fits");
    }
    p.resize(0, 5_000, 5, evicted::add);
    assertTrue(p.residentBytes() <= 10_000, name + " holds " + p.residentBytes());
    assertFalse(evicted.isEmpty());
  }

  /**
   * A job declares it reads five chunks twice, with a scan of other chunks between its passes; a
   * policy that takes plans keeps the five for the second pass.
   */
  @ParameterizedTest
  @MethodSource("names")
  void aPolicyThatTakesPlansKeepsWhatAPlanReadsAgain(String name) {
    Policies.Entry e = Policies.entries().stream().filter(x -> x.name().equals(name)).findFirst().orElseThrow();
    if (!e.takesPlans()) {
      return;
    }
    CachePolicy p = make(name, 50_000);
    int[] keys = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4};
    int[] ends = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    p.plan(1, new CachePolicy.JobPlan(keys, ends, 0, 5, false));
    double t = 0;
    for (int s = 0; s < 5; s++) {
      p.access(t, 1, keys[s], 9_000, CachePolicy.Evictions.NONE);
      p.progress(1, s, t);
      t += 0.5;
    }
    for (int k = 100; k < 160; k++) {
      p.access(t, 2, k, 9_000, CachePolicy.Evictions.NONE);
      t += 0.05;
    }
    for (int s = 5; s < 10; s++) {
      assertEquals(CachePolicy.Outcome.HIT, p.access(t, 1, keys[s], 9_000, CachePolicy.Evictions.NONE),
          name + ": the planned second read of key " + keys[s]);
      p.progress(1, s, t);
      t += 0.5;
    }
  }

  /** A policy that keeps a flash write budget writes no more than it allows (its burst, then its rate). */
  @ParameterizedTest
  @MethodSource("names")
  void aPolicyThatKeepsAFlashBudgetWritesNoMore(String name) {
    Policies.Entry e = Policies.entries().stream().filter(x -> x.name().equals(name)).findFirst().orElseThrow();
    if (!e.keepsFlashBudget()) {
      return;
    }
    double perHour = 3600.0 * 10_000; // 10 kB a second, a 36 MB burst
    CachePolicy p = Policies.create(name, new Policies.Options(1L << 40, perHour, StrataPolicy.DEFAULT_POPULARITY_DISCOUNT));
    long written = 0;
    double t = 0;
    SplittableRandom r = new SplittableRandom(3);
    for (int i = 0; i < 50_000; i++) {
      int key = r.nextInt(20_000);
      if (p.access(t, 0, key, 10_000, CachePolicy.Evictions.NONE) == CachePolicy.Outcome.MISS_ADMITTED) {
        written += 10_000;
      }
      t += 0.01;
    }
    assertTrue(written <= perHour + t * perHour / 3600 + 10_000, name + " wrote " + written + " bytes in " + t + " s");
    assertTrue(written > 0);
  }
}
