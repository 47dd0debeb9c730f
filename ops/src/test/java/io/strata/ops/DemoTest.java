package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.internal.Json;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The demo, small: an embedded node, three job processes, one shared derived feature, the summary. */
class DemoTest {
  @TempDir Path home;

  @Test
  void demoRunsThreeJobsThroughANodeAndReportsReuse() throws Exception {
    Cli.Result r = Cli.run("demo", "--home", home.toString(), "--rows", "60000", "--epochs", "3", "--samples-per-batch", "16", "--json");
    assertEquals(0, r.code(), r.err() + r.out());
    JsonNode s = Json.parse(r.out());
    assertEquals(3, s.path("jobs").size(), s.toString());
    for (JsonNode j : s.path("jobs")) {
      assertEquals(3 * 60000, j.path("rows").asLong(), "every job read every row of every epoch: " + j);
      JsonNode epochs = j.path("epochs");
      assertEquals(3, epochs.size(), j.toString());
      assertEquals(0, j.path("derivedChunksComputed").asLong(), "the derived feature came from the node: " + j);
    }
    assertEquals(1, s.path("derivedComputations").asLong(), "computed once for three jobs");
    assertTrue(s.path("segmentsChecked").asInt() > 0, s.toString());
    JsonNode traffic = s.path("node").path("traffic");
    assertTrue(traffic.path("ssdBytes").asLong() > 0 && traffic.path("promotions").asLong() > 0, traffic.toString());
    assertTrue(r.err().contains("[5/5] summary"), "the human summary goes to stderr with --json: " + r.err());
  }
}
