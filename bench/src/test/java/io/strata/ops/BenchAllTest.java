package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.bench.BenchAll;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code strata bench all --quick} on small datasets: every comparison runs with its peers, the
 * JSON results and SVG charts are written, and the generated section of a BENCHMARKS file is
 * replaced without touching the rest. Timing claims are not checked here (BENCHMARKS.md holds the
 * measured runs); the shape and consistency of the figures are.
 */
class BenchAllTest {
  @TempDir Path tmp;

  @Test
  void everyComparisonRunsAndTheReportIsWritten() throws Exception {
    Path md = tmp.resolve("BENCH.md");
    Files.writeString(md, "# Benchmarks\n\nintro\n\n## Older section\n\nkept\n");
    Path out = tmp.resolve("results");
    Cli.Result r = Cli.run("bench", "all", "--quick", "--rows", "400000", "--scan-rows", "100000", "--data",
        tmp.resolve("data").toString(), "--out", out.toString(), "--markdown", md.toString(), "--json");
    assertEquals(0, r.code(), r.out() + r.err());
    JsonNode all = r.json();
    for (String n : BenchAll.NAMES) {
      assertTrue(all.has(n), "missing " + n);
      assertTrue(Files.exists(out.resolve(n + ".json")), n);
      if (!(n.equals("gpu") || n.equals("python") || n.equals("cluster") || n.equals("peers"))
          || all.path(n).path("available").asBoolean()) {
        String svg = Files.readString(out.resolve(n + ".svg"));
        assertTrue(svg.startsWith("<svg") && svg.strip().endsWith("</svg>"), n);
      }
    }
    JsonNode sample = all.path("sample");
    assertTrue(sample.path("numpyGathersTheSameBytes").asBoolean());
    for (String peer : new String[] {"memcpy", "strata", "strata2threads", "numpy", "orc"}) {
      assertTrue(sample.path("peers").path(peer).path("batchesPerSecond").asDouble() > 0, peer);
    }
    assertEquals(sample.path("peers").path("strata").path("batchesPerSecond").asDouble()
        / sample.path("peers").path("orc").path("batchesPerSecond").asDouble(), sample.path("ratios").path("strataVsOrc").asDouble(), 1e-9);
    assertEquals(3, all.path("scan").path("featuresScanned").asInt());
    // The Parquet copy's peers run where pyarrow is (CI's venv), or say why not.
    assertTrue(all.path("sample").path("ratios").path("strataVsParquet").asDouble() > 0
        || !all.path("sample").path("parquetSkipped").asText().isEmpty(), all.path("sample").toString());
    assertTrue(all.path("scan").path("ratios").path("strataVsParquetProjection").asDouble() > 0
        || !all.path("scan").path("parquetSkipped").asText().isEmpty(), all.path("scan").toString());
    assertEquals(4, all.path("policy").path("budgets").size());
    for (JsonNode b : all.path("policy").path("budgets")) {
      assertTrue(b.path("opt").asDouble() >= b.path("strata").asDouble() - 1e-9, "OPT is an upper bound: " + b);
      assertTrue(b.path("opt").asDouble() >= b.path("lru").asDouble() - 1e-9, "OPT is an upper bound: " + b);
    }
    JsonNode live = all.path("policy-live");
    assertTrue(live.path("checks").path("traceHasEveryRead").asBoolean(), live.toString());
    assertTrue(live.path("checks").path("optBoundsLive").asBoolean(), live.toString());
    assertTrue(live.path("jobs").asInt() >= 6 && live.path("planRecords").asInt() == live.path("jobs").asInt(), live.toString());
    for (String k : new String[] {"liveVsOpt", "liveVsLru", "flashVsLru"}) {
      assertTrue(live.path("ratios").path(k).isNumber(), k + ": " + live);
    }
    assertTrue(all.path("policy").path("eventsPerSecond").path("strata").asDouble() > 0);
    assertTrue(all.path("derived").path("byteIdentical").asBoolean());
    JsonNode cluster = all.path("cluster");
    if (cluster.path("available").asBoolean()) {
      assertEquals(0, cluster.path("mismatches").asLong(), cluster.toString());
      assertTrue(cluster.path("ratios").path("hddClusteredVsAlone").asDouble() < 1, cluster.toString());
    } else {
      assertTrue(cluster.path("reason").asText().contains("namespace"), cluster.toString());
    }
    JsonNode relayout = all.path("relayout");
    assertTrue(relayout.path("identical").asBoolean(), relayout.toString());
    assertTrue(relayout.path("after").path("requestsPerEpoch").asLong() < relayout.path("before").path("requestsPerEpoch").asLong(),
        "a relayout learned from the jobs' trace lowers their read requests: " + relayout);
    assertTrue(relayout.path("ratios").path("epochTimeAfterVsBefore").isNumber(), relayout.toString());
    assertTrue(all.path("api").path("points").size() >= 2);
    assertEquals(2, all.path("memory").path("runs").size());
    JsonNode python = all.path("python");
    if ("1".equals(System.getenv("STRATA_REQUIRE_PYTHON"))) {
      assertTrue(python.path("available").asBoolean(), "python: " + python);
    }
    if (python.path("available").asBoolean()) {
      assertTrue(python.path("ratios").path("pythonVsJava").asDouble() > 0, python.toString());
      assertTrue(python.path("ratios").path("pythonVsTorchMemmap").asDouble() > 0, python.toString());
      assertTrue(python.path("memory").path("servicePrivateBytesOneJob").asLong() > 0, python.toString());
    }
    // The tools a PyTorch user would pick: every peer present, each one's batches equal to Strata's.
    JsonNode peers = all.path("peers");
    if ("1".equals(System.getenv("STRATA_REQUIRE_PYTHON"))) {
      assertTrue(peers.path("available").asBoolean(), "peers: " + peers);
    }
    if (peers.path("available").asBoolean()) {
      assertTrue(peers.path("atom").path("batchesChecked").asInt() >= 1, peers.path("atom").toString());
      for (String p : new String[] {"pyarrowIpc", "numpyMemmap", "duckdbParquet", "strata1", "strata2"}) {
        assertTrue(peers.path("atom").path("peers").path(p).path("rowsPerSecond").asDouble() > 0, p + ": " + peers.path("atom"));
      }
      assertTrue(peers.path("rows").path("batchesChecked").asInt() >= 1, peers.path("rows").toString());
      assertTrue(peers.path("rows").path("rayChecked").asInt() > 0, "Ray Data's batch checked: " + peers.path("rows"));
      for (String p : new String[] {"numpyLoop", "numpyBatchSampler", "numpyIterable", "huggingFace", "rayData", "strata"}) {
        assertTrue(peers.path("rows").path("workers0").path(p).path("batchesPerSecond").asDouble() > 0, p + ": " + peers.path("rows"));
      }
      assertTrue(peers.path("docs").path("docsChecked").asInt() > 0, peers.path("docs").toString());
      // The cold run: measured where a memory cgroup can be made, else the reason it was not.
      JsonNode cold = peers.path("cold");
      if (cold.path("available").asBoolean()) {
        for (String p : new String[] {"pyarrowIpc", "numpyMemmap", "strata"}) {
          assertTrue(cold.path("peers").path(p).path("rowsPerSecond").asDouble() > 0, p + ": " + cold);
        }
        assertTrue(peers.path("ratios").path("atomColdVsBestPeer").asDouble() > 0, peers.path("ratios").toString());
      } else {
        assertTrue(!cold.path("reason").asText().isBlank(), "a cold run not made says why: " + cold);
      }
      // Equal cores: each scenario on one core and on every core, every side's CPU a batch counted.
      for (String k : new String[] {"atom1", "atomN", "rows1", "rowsN"}) {
        assertTrue(peers.path("ratios").path("equalCores").path(k).asDouble() > 0, k + ": " + peers.path("ratios"));
      }
      // (CPU is counted in clock ticks: a quick run's short turns may count none, so the figures are asked for, not their size.)
      assertTrue(peers.path("ratios").path("cpuPerBatchVsBestPeer").isObject(), peers.path("ratios").toString());
      for (JsonNode run : new JsonNode[] {peers, peers.path("oneCore")}) {
        assertTrue(run.path("atom").path("peers").path("strata1").path("cpuSecondsPerBatch").isNumber(), run.path("atom").toString());
        assertTrue(run.path("rows").path("workers0").path("numpyLoop").path("cpuSecondsPerBatch").isNumber(), run.path("rows").toString());
      }
      assertEquals(1, peers.path("oneCore").path("rows").path("cores").asInt(), peers.path("oneCore").toString());
      for (String k : new String[] {"atomVsBestPeer", "rowsVsBestPeer0", "rowsVsBestPeerN", "docsVsIrDatasets",
          "memoryVsLeanestPeer3", "assemblyVsGatherFloor1", "assemblyVsGatherFloorN"}) {
        assertTrue(peers.path("ratios").path(k).asDouble() > 0, k + ": " + peers.path("ratios"));
      }
      // The floor says what each side spends a batch, every thread counted, and whether the loader planned ahead.
      for (String k : new String[] {"floor1", "loader1", "floorN", "loaderN"}) {
        assertTrue(peers.path("floor").path("cpuMsPerBatch").path(k).asDouble() > 0, k + ": " + peers.path("floor"));
      }
      assertTrue(peers.path("floor").path("loaderPlansAhead").path("threads1").isBoolean(), peers.path("floor").toString());
      assertTrue(peers.path("versions").path("duckdb").isTextual(), "peers are pinned by version: " + peers.path("versions"));
    }
    String text = Files.readString(md);
    assertTrue(text.contains(BenchAll.BEGIN) && text.contains(BenchAll.END), text);
    assertTrue(text.indexOf(BenchAll.BEGIN) < text.indexOf("## Older section") && text.contains("kept"), text);
    assertTrue(text.contains("![sample](results/sample.svg)"), text);
    // A second run replaces the section instead of adding one; comparisons it does not run keep their earlier results.
    assertEquals(0, Cli.run("bench", "all", "--quick", "--only", "policy", "--data", tmp.resolve("data").toString(), "--out",
        out.toString(), "--markdown", md.toString()).code());
    String again = Files.readString(md);
    assertEquals(1, again.split(Pattern.quote(BenchAll.BEGIN), -1).length - 1);
    assertTrue(again.contains("Cache policy") && again.contains("### 1. Sample batches") && again.contains("earlier results"), again);
    // Wrong arguments: one line, usage exit.
    Cli.Result bad = Cli.run("bench", "all", "--only", "nosuch", "--data", tmp.resolve("data").toString());
    assertEquals(2, bad.code());
    assertTrue(bad.err().contains("no comparison 'nosuch'"), bad.err());
  }
}
