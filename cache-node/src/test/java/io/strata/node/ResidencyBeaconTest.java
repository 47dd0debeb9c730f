package io.strata.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.format.ResidencyBeacon;
import io.strata.sdk.node.NodeClient;
import io.strata.sdk.node.NodeSegments;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The node's residency beacon (FORMAT.md §2.6): jobs on the node's host learn that segments
 * landed from the mapped counter, without waiting for their refresh or their next report.
 */
class ResidencyBeaconTest {
  @TempDir Path tmp;

  @Test
  void aJobSeesTheCounterTheNodePublishesAndRefusesWhatIsNotABeacon() throws IOException {
    try (ResidencyBeacon node = ResidencyBeacon.create(tmp)) {
      node.publish(41);
      try (ResidencyBeacon job = ResidencyBeacon.open(tmp.resolve(ResidencyBeacon.FILE_NAME))) {
        assertNotNull(job);
        assertEquals(41, job.get());
        node.publish(42);
        assertEquals(42, job.get(), "a published value is seen through the other mapping at once");
      }
    }
    try (ResidencyBeacon again = ResidencyBeacon.create(tmp)) {
      assertEquals(42, again.get(), "a restarted node finds the value it left");
    }
    Files.writeString(tmp.resolve("other"), "STRRES01........");
    assertNull(ResidencyBeacon.open(tmp.resolve("other")), "only a file named " + ResidencyBeacon.FILE_NAME);
    Path bad = Files.createDirectories(tmp.resolve("bad")).resolve(ResidencyBeacon.FILE_NAME);
    Files.writeString(bad, "NOTABEACON123456");
    assertNull(ResidencyBeacon.open(bad), "a file without the magic is not mapped");
    assertNull(ResidencyBeacon.open(tmp.resolve("absent").resolve(ResidencyBeacon.FILE_NAME)));
    Path links = Files.createDirectories(tmp.resolve("links"));
    Files.createSymbolicLink(links.resolve(ResidencyBeacon.FILE_NAME), tmp.resolve(ResidencyBeacon.FILE_NAME));
    assertNull(ResidencyBeacon.open(links.resolve(ResidencyBeacon.FILE_NAME)), "a link is not followed");
    Path torn = Files.createDirectories(tmp.resolve("torn"));
    Files.write(torn.resolve(ResidencyBeacon.FILE_NAME), new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0});
    try (ResidencyBeacon fresh = ResidencyBeacon.create(torn)) {
      assertEquals(0, fresh.get(), "a file without the magic (an interrupted creation) starts the counter afresh");
    }
    IOException e = assertThrows(IOException.class, () -> ResidencyBeacon.create(links));
    assertTrue(e.getMessage().contains(links.resolve(ResidencyBeacon.FILE_NAME).toString()), e.getMessage());
  }

  @Test
  void aJobSeesALandedSegmentWithoutWaitingForItsRefresh() throws Exception {
    Path dir = tmp.resolve("node/hdd/events");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("events", 6_000, 2).withFeatures(6).withChunking(3_000, 1),
        Progress.NONE);
    long before;
    try (Dataset ds = Dataset.open(dir)) {
      NodeConfig config = NodeConfig.embedded(tmp.resolve("node"), 0).withSsdBudget(64L << 20);
      try (CacheNode node = CacheNode.start(config)) {
        NodeClient client = new NodeClient(node.url(), null);
        client.registerDataset(dir);
        String file = client.resolve(null, ds.name(), List.of("amount"), null).path("residencyFile").asText();
        assertEquals(config.ssdDir().resolve(ResidencyBeacon.FILE_NAME).toString(), file);
        // A refresh period of an hour: only the beacon can tell this job that the chunk landed.
        try (NodeSegments job = new NodeSegments(client, "beacon-job", ds, List.of("amount"), 3_600_000)) {
          long g = job.generation();
          assertFalse(job.resident(ds, "amount", 1));
          client.promote(ds.name(), List.of("amount"), List.of(1));
          assertTrue(node.awaitIdle(60_000), "the promotion finished");
          long deadline = System.nanoTime() + 5_000_000_000L;
          while (job.generation() == g && System.nanoTime() < deadline) {
            Thread.sleep(5);
          }
          assertNotEquals(g, job.generation(), "the job resolved again when the counter moved");
          assertTrue(job.resident(ds, "amount", 1));
        }
        try (ResidencyBeacon b = ResidencyBeacon.open(Path.of(file))) {
          before = b.get();
        }
      }
      try (CacheNode node = CacheNode.start(NodeConfig.embedded(tmp.resolve("node"), 0).withSsdBudget(64L << 20));
          ResidencyBeacon b = ResidencyBeacon.open(tmp.resolve("node").resolve("ssd").resolve(ResidencyBeacon.FILE_NAME))) {
        assertNotNull(b, "the beacon of the node at " + node.url());
        assertTrue(b.get() > before, "a restarted node's counter goes on past the old one (" + b.get() + " after " + before + ")");
      }
    }
  }
}
