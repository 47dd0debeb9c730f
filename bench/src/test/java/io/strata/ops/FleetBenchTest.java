package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code strata bench fleet --quick} (issue 58): every side present, every job's every epoch
 * delivered and each epoch's values equal to the reference computed from the Parquet copy alone.
 * Not a measurement (a small dataset, no throttle). Where the peers' Python is missing, the
 * command says so; CI (STRATA_REQUIRE_PYTHON) requires them.
 */
class FleetBenchTest {
  @TempDir Path tmp;

  @Test
  void everySideRunsEveryEpochWithItsValuesChecked() throws Exception {
    Path svg = tmp.resolve("fleet.svg");
    Cli.Result r = Cli.run("bench", "fleet", "--quick", "--work", tmp.toString(), "--json", "--svg", svg.toString());
    assertEquals(0, r.code(), r.out() + r.err());
    JsonNode j = r.json();
    if (!j.path("available").asBoolean(true)) {
      assertFalse(System.getenv().containsKey("STRATA_REQUIRE_PYTHON"), "the peers are required here: " + j);
      assertFalse(j.path("reason").asText().isBlank(), j.toString());
      return;
    }
    for (String side : List.of("strata", "pyarrow", "numpy", "fsspec")) {
      JsonNode s = j.path("sides").path(side);
      assertTrue(s.path("valuesChecked").asBoolean(), side + ": " + s);
      assertEquals(4, s.path("jobs").size(), side);
      for (JsonNode job : s.path("jobs")) {
        assertEquals(3, job.path("epochs").size(), side + " " + job);
      }
      assertTrue(s.path("firstEpochUnitsPerSecond").asDouble() > 0, side);
    }
    assertTrue(j.path("ratios").path("valuesChecked").asBoolean(), j.path("ratios").toString());
    for (String k : List.of("fleetVsBestPeerFirstEpoch", "fleetVsBestPeerLaterEpochs", "slowTierBytesVsBestPeer",
        "memoryVsBestPeer", "ssdBytesWrittenVsBudget")) {
      assertTrue(j.path("ratios").path(k).isNumber(), k + ": " + j.path("ratios"));
    }
    assertTrue(j.path("sides").path("strata").path("promotions").asLong() > 0, "the node promoted what the jobs read");
    String chart = java.nio.file.Files.readString(svg);
    for (String side : List.of("strata", "pyarrow", "numpy", "fsspec")) {
      assertTrue(chart.contains(side + ", epoch 1") && chart.contains(side + ", epochs 2-3"), side + ": " + chart);
    }
  }

  /**
   * {@code --tier s3 --quick}: the same files as objects of a real S3 server (S3Proxy, a process of
   * its own); Strata's node rooted in the bucket and pyarrow's S3FileSystem each read every epoch
   * of every job with its values checked.
   */
  @Test
  void theSlowTierInABucketServesBothSidesTheSameValues() throws Exception {
    Cli.Result r = Cli.run("bench", "fleet", "--quick", "--tier", "s3", "--work", tmp.toString(), "--json");
    assertEquals(0, r.code(), r.out() + r.err());
    JsonNode j = r.json();
    if (!j.path("available").asBoolean(true)) {
      assertFalse(System.getenv().containsKey("STRATA_REQUIRE_PYTHON"), "the peers are required here: " + j);
      System.out.println("not measured: " + j);
      return;
    }
    assertEquals("s3", j.path("tier").asText(), j.toString());
    assertTrue(j.path("store").path("dataset").asText().startsWith("s3://"), j.path("store").toString());
    for (String side : List.of("strata", "pyarrow")) {
      JsonNode s = j.path("sides").path(side);
      assertTrue(s.path("valuesChecked").asBoolean(), side + ": " + s);
      assertEquals(4, s.path("jobs").size(), side);
    }
    assertTrue(j.path("ratios").path("valuesChecked").asBoolean(), j.path("ratios").toString());
    Cli.Result numpy = Cli.run("bench", "fleet", "--quick", "--tier", "s3", "--sides", "strata,numpy", "--work",
        tmp.toString());
    assertEquals(2, numpy.code(), numpy.err());
    assertTrue(numpy.err().contains("numpy.memmap reads local files only"), numpy.err());
  }
}
