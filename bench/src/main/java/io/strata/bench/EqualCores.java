package io.strata.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Map;

/**
 * The equal-cores comparison of {@code bench peers}: of one scenario run on one core and on every
 * core (every process of the run confined to them), the best set-up of Strata (any of its thread or
 * worker counts) against the best set-up of any peer on the same cores, and what each spends a
 * batch in CPU, every process counted. Stateless.
 */
final class EqualCores {
  private EqualCores() {}

  /**
   * Puts {@code <scenario>1} and {@code <scenario>N} (Strata's best {@code field} over the best
   * peer's) into {@code equal}, and into {@code cpuPerBatch} {@code <scenario>} (on every core) and
   * {@code <scenario>1} (on one): Strata's best set-up's CPU seconds a batch over the best peer's.
   * {@code one} and {@code every}: the scenario's tables of set-ups (name to figures) on one core and on every core.
   */
  static void compare(ObjectNode equal, ObjectNode cpuPerBatch, ObjectNode which, String scenario, String field,
      List<JsonNode> one, List<JsonNode> every) {
    for (Map.Entry<String, List<JsonNode>> run : Map.of("1", one, "N", every).entrySet()) {
      Map.Entry<String, JsonNode> s = best(run.getValue(), field, true);
      Map.Entry<String, JsonNode> p = best(run.getValue(), field, false);
      if (s == null || p == null) {
        continue;
      }
      JsonNode strata = s.getValue();
      JsonNode peer = p.getValue();
      which.putObject(scenario + run.getKey()).put("strata", s.getKey()).put("peer", p.getKey());
      equal.put(scenario + run.getKey(), strata.path(field).asDouble() / peer.path(field).asDouble());
      double peerCpu = peer.path("cpuSecondsPerBatch").asDouble();
      if (peerCpu > 0) {
        cpuPerBatch.put(scenario + (run.getKey().equals("N") ? "" : "1"),
            strata.path("cpuSecondsPerBatch").asDouble() / peerCpu);
      }
    }
  }

  /**
   * The set-up (name and figures) with the highest {@code field} of Strata's (names starting
   * "strata") or of the peers', or null; a name found in more than one table (0 workers, N workers)
   * is suffixed with its table's index.
   */
  static Map.Entry<String, JsonNode> best(List<JsonNode> tables, String field, boolean strata) {
    Map.Entry<String, JsonNode> best = null;
    for (int t = 0; t < tables.size(); t++) {
      for (var e : tables.get(t).properties()) {
        if (e.getKey().startsWith("strata") == strata && e.getValue().path(field).asDouble() > 0
            && (best == null || e.getValue().path(field).asDouble() > best.getValue().path(field).asDouble())) {
          best = Map.entry(tables.size() > 1 ? e.getKey() + "@" + t : e.getKey(), e.getValue());
        }
      }
    }
    return best;
  }
}
