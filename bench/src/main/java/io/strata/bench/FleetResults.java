package io.strata.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.internal.Json;
import io.strata.ops.Terminal;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * The figures of {@code bench fleet}: each side's epochs read from its jobs' JSON lines ({@link
 * #collect}), the ratios against the best peer ({@link #ratios}; the keys issue 58 names) and the
 * table printed. Stateless; called on the bench's thread.
 */
final class FleetResults {
  private FleetResults() {}

  /** Reads the jobs' JSON lines: per job its epochs, per epoch the side's aggregate. */
  static void collect(ObjectNode r, List<FleetJob> plan, int epochs, Path sideDir, FleetSampler sampler, long cpuNanos)
      throws IOException {
    ArrayNode js = r.putArray("jobs");
    boolean valuesOk = true;
    long units = 0;
    double[] eStart = new double[epochs];
    double[] eEnd = new double[epochs];
    long[] eUnits = new long[epochs];
    long[] eRows = new long[epochs];
    long[] eSamples = new long[epochs];
    int[] eJobs = new int[epochs];
    Arrays.fill(eStart, Double.MAX_VALUE);
    for (FleetJob j : plan) {
      ObjectNode o = js.addObject().put("name", j.name()).put("mode", j.mode()).put("features", String.join(",", j.features()));
      double started = Double.NaN;
      double first = Double.NaN;
      ArrayNode es = o.putArray("epochs");
      Path f = sideDir.resolve(j.name() + ".out");
      for (String line : Files.exists(f) ? Files.readAllLines(f) : List.<String>of()) {
        if (!line.startsWith("{")) {
          continue;
        }
        JsonNode l = Json.parse(line.getBytes(StandardCharsets.UTF_8));
        if (l.has("started")) {
          started = l.path("started").asDouble();
        } else if (l.has("first")) {
          first = l.path("first").asDouble();
        } else if (l.path("stats").isObject()) {
          o.set("loaderStats", l.path("stats")); // a Strata job's: bytes per tier, chunk columns read ahead and released
        } else if (l.has("epoch")) {
          es.add(l);
          int e = l.path("epoch").asInt();
          if (e < epochs) {
            eStart[e] = Math.min(eStart[e], l.path("start").asDouble());
            eEnd[e] = Math.max(eEnd[e], l.path("end").asDouble());
            long u = j.mode().equals("rows") ? l.path("rows").asLong() : l.path("samples").asLong();
            eUnits[e] += u;
            eRows[e] += l.path("rows").asLong();
            eSamples[e] += l.path("samples").asLong();
            eJobs[e]++;
            units += u;
          }
          valuesOk &= l.path("valuesChecked").asBoolean();
        }
      }
      valuesOk &= es.size() == epochs;
      o.put("firstBatchSeconds", first - started);
      if (es.size() != epochs) {
        Path err = sideDir.resolve(j.name() + ".err");
        o.put("error", Files.exists(err) ? FleetBench.tail(Files.readString(err)) : "no output");
      }
    }
    ArrayNode ep = r.putArray("epochs");
    for (int e = 0; e < epochs; e++) {
      double secs = eJobs[e] == 0 ? 0 : eEnd[e] - eStart[e];
      ep.addObject().put("epoch", e).put("jobsDone", eJobs[e]).put("seconds", secs)
          .put("unitsPerSecond", secs <= 0 ? 0 : eUnits[e] / secs).put("rowsPerSecond", secs <= 0 ? 0 : eRows[e] / secs)
          .put("samplesPerSecond", secs <= 0 ? 0 : eSamples[e] / secs)
          .put("slowTierBytesToEnd", sampler.slowBytesAt(eEnd[e]));
    }
    double laterStart = epochs > 1 ? eStart[1] : Double.NaN;
    double laterEnd = eEnd[epochs - 1];
    long laterUnits = 0;
    for (int e = 1; e < epochs; e++) {
      laterUnits += eUnits[e];
    }
    r.put("firstEpochUnitsPerSecond", ep.get(0).path("unitsPerSecond").asDouble())
        .put("laterEpochsUnitsPerSecond", epochs > 1 && laterEnd > laterStart ? laterUnits / (laterEnd - laterStart) : 0)
        .put("cpuSecondsPerUnit", units == 0 ? 0 : cpuNanos / 1e9 / units).put("valuesChecked", valuesOk);
  }

  static ObjectNode ratios(ObjectNode sides, long ssdBudget) {
    ObjectNode q = Json.object();
    JsonNode s = sides.path("strata");
    if (s.isMissingNode()) {
      return q;
    }
    double bestFirst = 0;
    double bestLater = 0;
    double leastBytes = Double.MAX_VALUE;
    double leastMemory = Double.MAX_VALUE;
    boolean valuesAll = true;
    for (var it = sides.properties().iterator(); it.hasNext(); ) {
      var e = it.next();
      valuesAll &= e.getValue().path("valuesChecked").asBoolean();
      if (e.getKey().equals("strata")) {
        continue;
      }
      bestFirst = Math.max(bestFirst, e.getValue().path("firstEpochUnitsPerSecond").asDouble());
      bestLater = Math.max(bestLater, e.getValue().path("laterEpochsUnitsPerSecond").asDouble());
      leastBytes = Math.min(leastBytes, e.getValue().path("slowTierBytes").asDouble());
      leastMemory = Math.min(leastMemory, e.getValue().path("peakPssBytes").asDouble());
    }
    if (bestFirst > 0) {
      q.put("fleetVsBestPeerFirstEpoch", s.path("firstEpochUnitsPerSecond").asDouble() / bestFirst);
    }
    if (bestLater > 0) {
      q.put("fleetVsBestPeerLaterEpochs", s.path("laterEpochsUnitsPerSecond").asDouble() / bestLater);
    }
    if (leastBytes > 0 && leastBytes < Double.MAX_VALUE) {
      q.put("slowTierBytesVsBestPeer", s.path("slowTierBytes").asDouble() / leastBytes);
    }
    if (leastMemory > 0 && leastMemory < Double.MAX_VALUE) {
      q.put("memoryVsBestPeer", s.path("peakPssBytes").asDouble() / leastMemory);
    }
    q.put("ssdBytesWrittenVsBudget", s.path("ssdBytesWritten").asDouble() / Math.max(1, ssdBudget));
    q.put("valuesChecked", valuesAll);
    return q;
  }

  static void printTable(PrintWriter out, ObjectNode r, int jobs, int epochs) {
    out.printf("fleet: %d jobs x %d epochs, %s rows (%s), memory %s, SSD budget %s, slow tier %s%n", jobs, epochs,
        Terminal.count(r.path("rows").asLong()), Terminal.bytes(r.path("datasetBytes").asLong()),
        Terminal.bytes(r.path("memoryLimitBytes").asLong()), Terminal.bytes(r.path("ssdBudgetBytes").asLong()),
        r.path("slowTier").path("device").asText());
    out.printf("%-8s %12s %12s %12s %12s %10s %8s%n", "side", "epoch 1 u/s", "later u/s", "slow bytes", "peak PSS", "ssd wr", "values");
    for (var it = r.path("sides").properties().iterator(); it.hasNext(); ) {
      var e = it.next();
      JsonNode s = e.getValue();
      out.printf("%-8s %12.0f %12.0f %12s %12s %10s %8s%n", e.getKey(), s.path("firstEpochUnitsPerSecond").asDouble(),
          s.path("laterEpochsUnitsPerSecond").asDouble(), Terminal.bytes(s.path("slowTierBytes").asLong()),
          Terminal.bytes(s.path("peakPssBytes").asLong()), Terminal.bytes(s.path("ssdBytesWritten").asLong()),
          s.path("valuesChecked").asBoolean() ? "ok" : "WRONG");
    }
    out.println("ratios: " + Json.compact(r.path("ratios")));
  }
}
