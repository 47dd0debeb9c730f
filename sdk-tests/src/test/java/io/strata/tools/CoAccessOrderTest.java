package io.strata.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class CoAccessOrderTest {
  private static Map<String, Long> reads(String... features) {
    Map<String, Long> m = new TreeMap<>();
    for (String f : features) {
      m.put(f, 1000L);
    }
    return m;
  }

  @Test
  void featuresReadTogetherBecomeAdjacent() {
    List<String> columns = List.of("a", "b", "c", "d", "e", "f", "g", "h", "i", "j");
    // Nested and overlapping sets that one order can serve with one run each.
    Map<String, Map<String, Long>> r = new TreeMap<>();
    r.put("job1", reads("a", "e", "i"));
    r.put("job2", reads("a", "e", "i", "c"));
    r.put("job3", reads("c", "g"));
    r.put("job4", reads("b", "j"));
    CoAccessOrder.Plan p = CoAccessOrder.plan(columns, r);
    assertEquals(new HashSet<>(columns), new HashSet<>(p.order()), "a permutation of the columns");
    assertEquals(columns.size(), p.order().size());
    assertEquals(1.0, p.runsAfter(), 1e-9, "every job reads one run: " + p.order());
    assertTrue(p.runsBefore() > 2, "scattered before: " + p.runsBefore());
    assertEquals(List.of("d", "f", "h"), p.order().subList(7, 10), "unread columns last, in their order");
    assertEquals(p, CoAccessOrder.plan(columns, r), "deterministic");
  }

  @Test
  void aSecondCopyJoinsRunsThatNoOrderCanJoinWithinItsBudget() {
    // A triangle: whatever the order, one of the three jobs reads two runs; a copy of one feature
    // beside the third gives every job one run.
    List<String> columns = List.of("a", "b", "c", "d");
    Map<String, Map<String, Long>> r = new TreeMap<>();
    r.put("job1", reads("a", "b"));
    r.put("job2", reads("b", "c"));
    r.put("job3", reads("a", "c"));
    Map<String, Long> bytes = Map.of("a", 100L, "b", 100L, "c", 100L, "d", 100L);
    CoAccessOrder.Plan single = CoAccessOrder.plan(columns, r);
    assertEquals(4.0 / 3, single.runsAfter(), 1e-9, "one job reads two runs: " + single.order());
    assertEquals(single.order(), single.layout(), "no copies without a budget");
    CoAccessOrder.Plan copied = CoAccessOrder.plan(columns, r, bytes, 100);
    assertEquals(1.0, copied.runsAfter(), 1e-9, "every job one run: " + copied.layout());
    assertEquals(columns.size() + 1, copied.layout().size());
    assertEquals(1, copied.replicated().size());
    assertEquals(100, copied.replicaBytes());
    assertEquals(single.order(), copied.order(), "the order of first copies is the plain order");
    assertEquals(1.0, CoAccessOrder.runs(copied.layout(), columns, r), 1e-9, "runs() reads the copies the same way");
    CoAccessOrder.Plan tooSmall = CoAccessOrder.plan(columns, r, bytes, 99);
    assertEquals(single.layout(), tooSmall.layout(), "a copy that does not fit the budget is not made");
    assertEquals(copied, CoAccessOrder.plan(columns, r, bytes, 100), "deterministic");
  }

  @Test
  void keptSavingsChooseTheSameCopiesAsEvaluatingEveryCandidateAtEveryStep() {
    // Zipf-popular features, jobs of 3 to 10 of them: the copy search that keeps each candidate's
    // saving until one of its jobs' runs changes must make the very choices of the search that
    // evaluates every candidate afresh.
    Random rnd = new Random(3);
    int copies = 0;
    for (int trial = 0; trial < 6; trial++) {
      int n = 16 + 8 * trial;
      List<String> columns = new ArrayList<>();
      Map<String, Long> bytes = new TreeMap<>();
      long total = 0;
      for (int i = 0; i < n; i++) {
        columns.add("f" + i);
        long b = 1_000L + rnd.nextInt(1_000);
        bytes.put("f" + i, b);
        total += b;
      }
      Map<String, Map<String, Long>> r = new TreeMap<>();
      for (int j = 0; j < 6 + 2 * trial; j++) {
        Map<String, Long> m = new TreeMap<>();
        int k = 3 + rnd.nextInt(8);
        while (m.size() < k) {
          int f = (int) Math.min(n - 1, Math.floor(Math.pow(n + 1, rnd.nextDouble())) - 1);
          m.put("f" + f, 1L + rnd.nextInt(5));
        }
        r.put("job" + j, m);
      }
      CoAccessOrder.Plan kept = CoAccessOrder.plan(columns, r, bytes, total / 4, true);
      CoAccessOrder.Plan afresh = CoAccessOrder.plan(columns, r, bytes, total / 4, false);
      assertEquals(afresh, kept, "trial " + trial);
      assertTrue(kept.runsAfter() <= CoAccessOrder.plan(columns, r).runsAfter(), "copies never cost runs");
      assertTrue(kept.replicaBytes() <= total / 4);
      copies += kept.replicated().size();
    }
    assertTrue(copies >= 12, "the instances call for copies: " + copies);
  }

  @Test
  void heavierJobsWinWhenNotEveryoneCanHaveOneRun() {
    List<String> columns = List.of("a", "b", "c", "d");
    Map<String, Map<String, Long>> r = new TreeMap<>();
    // Five pairs over four columns: no order makes every pair adjacent; the heavy one must be.
    r.put("heavy", Map.of("a", 1_000_000L, "c", 1_000_000L));
    r.put("light1", Map.of("a", 10L, "b", 10L));
    r.put("light2", Map.of("b", 10L, "c", 10L));
    r.put("light3", Map.of("a", 10L, "d", 10L));
    r.put("light4", Map.of("c", 10L, "d", 10L));
    CoAccessOrder.Plan p = CoAccessOrder.plan(columns, r);
    int a = p.order().indexOf("a");
    int c = p.order().indexOf("c");
    assertEquals(1, Math.abs(a - c), "the heavy job's features are adjacent: " + p.order());
    assertTrue(p.runsAfter() <= p.runsBefore());
  }

  @Test
  void jobsCountByTheirStripeReadsNotByTheirFeatures() {
    // Both jobs read every chunk 4 times; one reads two features in two runs, one four in one run.
    // Each issues its runs per stripe read whatever its feature count: the mean is 1.5 requests
    // per stripe read (bytes or feature counts as weights would say 1.33).
    List<String> order = List.of("a", "b", "c", "d");
    Map<String, Map<String, Long>> r = new TreeMap<>();
    r.put("narrow", Map.of("a", 4L, "c", 4L));
    r.put("wide", Map.of("a", 4L, "b", 4L, "c", 4L, "d", 4L));
    assertEquals(1.5, CoAccessOrder.runs(order, order, r), 1e-9);
  }

  @Test
  void aTraceGivesChunkReadsPerJobAndFeature() throws Exception {
    String csv = "time,job,dataset,feature,chunk,bytes\n"
        + "0,j1,ds,a,0,800\n1,j1,ds,a,1,800\n2,j1,ds,b,0,80\n3,j2,ds,a,0,800\n"
        + "4,j2,other,a,0,800\n5,j2,ds,@plan,0,0\n6,j2,ds,b,3,0\n";
    Map<String, Map<String, Long>> r = CoAccessOrder.readsFromTrace(csv, "ds", "t.csv");
    assertEquals(Map.of("j1", Map.of("a", 2L, "b", 1L), "j2", Map.of("a", 1L)), r);
  }
}
