package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.Column;
import io.strata.sdk.format.Columns;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.Json;
import io.strata.sdk.node.NodeClient;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The node is killed with SIGKILL in the middle of promotions 20 times. After every restart,
 * every segment it serves checks out (structure and checksums) and holds exactly the ORC values,
 * and no partial file is left in the SSD tier.
 */
class NodeKillIT {
  @TempDir Path tmp;

  private static Process startNode(Path home) throws Exception {
    return NodeCommand.startChild(List.of("-Xmx512m"), home, List.of("--port", "0"), home.resolve("node.log")).process();
  }

  private static String url(Path home) throws Exception {
    return Json.parse(Files.readAllBytes(home.resolve(NodeCommand.INFO))).path("url").asText();
  }

  @Test
  void sigkillDuringPromotionNeverLeavesACorruptOrPartialSegment() throws Exception {
    Path home = tmp.resolve("node");
    Path ds = home.resolve("hdd/events");
    assertEquals(0, Cli.run("dataset", "generate", "--out", ds.toString(), "--rows", "300000", "--features", "10",
        "--rows-per-chunk", "25000", "--seed", "6").code());
    SplittableRandom r = new SplittableRandom(20);
    int served = 0;
    int kills = 0;
    int inFlightAtKill = 0;
    for (int i = 0; i < 20; i++) {
      Process node = startNode(home);
      NodeClient client = new NodeClient(url(home), null);
      if (i == 0) {
        client.registerDataset(ds);
      }
      served += checkServedSegments(client, ds, home);
      // Churn: evict what is there, promote everything again, and kill in the middle of it.
      client.evict("events", null, null);
      long before = client.tiers().path("traffic").path("promotions").asLong();
      int total = client.promote("events", null, null).path("scheduled").asInt();
      // Kill while promotions are in flight: after the first lands, at a random point of the rest.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (client.tiers().path("traffic").path("promotions").asLong() == before && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      Thread.sleep(r.nextInt(600));
      JsonNode t = client.tiers();
      inFlightAtKill += t.path("ssd").path("pendingPromotions").asLong() > 0 ? 1 : 0;
      assertTrue(total > 0);
      node.destroyForcibly();
      assertTrue(node.waitFor(30, TimeUnit.SECONDS));
      assertEquals(137, node.exitValue(), "killed with SIGKILL");
      kills++;
    }
    Process node = startNode(home);
    try {
      NodeClient client = new NodeClient(url(home), null);
      served += checkServedSegments(client, ds, home);
      JsonNode notes = client.tiers().path("startupNotes");
      assertTrue(notes.toString().contains("did not stop cleanly"), notes.toString());
      System.out.printf("node killed %d times (%d with promotions in flight); %d served segments verified against ORC%n",
          kills, inFlightAtKill, served);
      assertTrue(inFlightAtKill >= 10, "most kills hit promotions in flight: " + inFlightAtKill);
      assertTrue(served > 20, "segments were served across the restarts: " + served);
    } finally {
      node.destroy();
      node.waitFor(30, TimeUnit.SECONDS);
    }
  }

  /** Every segment the node resolves is whole, checks out and equals ORC; no temporary file remains. */
  private static int checkServedSegments(NodeClient client, Path dsDir, Path home) throws Exception {
    try (Stream<Path> files = Files.walk(home.resolve("ssd"))) {
      List<Path> temps = files.filter(p -> p.getFileName().toString().startsWith(".tmp-")).toList();
      assertTrue(temps.isEmpty(), "partial files left after restart: " + temps);
    }
    int n = 0;
    try (Dataset ds = Dataset.open(dsDir)) {
      JsonNode r = client.resolve(null, "events", ds.featureNames(), null);
      List<JsonNode> segments = new ArrayList<>();
      r.path("segments").forEach(segments::add);
      for (JsonNode s : segments) {
        Path p = Path.of(s.path("path").asText());
        try (SegmentFile f = SegmentFile.open(p, SegmentFile.Verify.ALWAYS); Arena arena = Arena.ofConfined()) {
          Map<String, Column> orc = ds.readChunk(f.info().chunk(), f.columnNames(), arena);
          for (String c : f.columnNames()) {
            assertEquals(-1, Columns.firstDifference(orc.get(c), f.column(c)), p + " column " + c);
          }
        }
        n++;
      }
    }
    return n;
  }
}
