package io.strata.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.files.DiskModel;
import io.strata.sdk.files.OrcReads;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The disks under a node's HDD roots (issue 52): the configuration's {@code hddDisks} sets the gap
 * each root's reads read through, from the drive's figures or in bytes, instead of the one
 * model's break-even on every rotational device.
 */
class NodeDisksTest {
  @TempDir Path home;

  @Test
  void eachRootsReadsReadThroughItsOwnDisksBreakEven() throws Exception {
    Path fast = Files.createDirectories(home.resolve("hdd-fast"));
    Path slow = Files.createDirectories(home.resolve("hdd-slow"));
    Path config = home.resolve("node.json");
    Files.writeString(config, "{\"home\": \"" + home + "\", \"port\": 0, \"hddRoots\": [\"" + fast + "\", \"" + slow + "\"],"
        + " \"hddDisks\": {\"" + fast + "\": {\"gapBytes\": 0},"
        + " \"" + slow + "\": {\"mbps\": 130, \"averageSeekMs\": 7.4, \"rpm\": 7200}}}");
    NodeConfig c = NodeConfig.read(config);
    long inner = new DiskModel("x", 7.4, 0.23, 7200, 130e6, DiskModel.HDD.capacityBytes(), 0.2).breakEvenGapBytes();
    assertEquals(0L, c.hddGapBytes().get(fast));
    assertEquals(inner, c.hddGapBytes().get(slow));
    assertTrue(inner < DiskModel.HDD.breakEvenGapBytes(), "a slower drive's break-even is shorter");
    try (CacheNode node = CacheNode.start(c)) {
      assertTrue(node.url().startsWith("http://127.0.0.1:"), node.url());
      assertEquals(0, OrcReads.gapBytes(fast.resolve("ds/part-00000.orc")));
      assertEquals(inner, OrcReads.gapBytes(slow.resolve("ds/part-00000.orc")));
    } finally {
      OrcReads.setGapBytes(fast, -1);
      OrcReads.setGapBytes(slow, -1);
    }
    Files.writeString(config, "{\"home\": \"" + home + "\", \"hddDisks\": {\"" + slow + "\": {\"mbps\": 130}}}");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> NodeConfig.read(config));
    assertTrue(e.getMessage().contains("hddDisks") && e.getMessage().contains("averageSeekMs"), e.getMessage());
  }
}
