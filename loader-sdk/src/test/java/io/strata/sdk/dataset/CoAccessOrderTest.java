package io.strata.sdk.dataset;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
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
}
