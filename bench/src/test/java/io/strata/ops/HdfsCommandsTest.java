package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.node.CacheNode;
import io.strata.node.NodeConfig;
import io.strata.sdk.files.Locations;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The commands that read a dataset take it by an hdfs:// URI, against a real HDFS (a NameNode and
 * three DataNodes in this JVM), and read what its local copy holds; the commands that write refuse
 * such a URI by name.
 */
class HdfsCommandsTest {
  @TempDir
  static Path tmp;

  private static MiniDFSCluster cluster;
  private static Path local;
  private static String remote;
  private static Path truth;

  @BeforeAll
  static void start() throws Exception {
    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, tmp.resolve("dfs").toString());
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(3).build();
    cluster.waitActive();
    local = tmp.resolve("events");
    assertEquals(0, Cli.run("dataset", "generate", "--out", local.toString(), "--rows", "40000", "--rows-per-chunk", "10000",
        "--seed", "3").code());
    cluster.getFileSystem().copyFromLocalFile(false, true, new org.apache.hadoop.fs.Path(local.toUri()),
        new org.apache.hadoop.fs.Path("/datasets/events"));
    remote = "hdfs://localhost:" + cluster.getNameNodePort() + "/datasets/events";
    truth = tmp.resolve("truth.bin");
    assertEquals(0, Cli.run("dataset", "truth", local.toString(), "-o", truth.toString()).code());
  }

  @AfterAll
  static void stop() {
    if (cluster != null) {
      cluster.shutdown();
    }
  }

  @Test
  void readingCommandsTakeAnHdfsDataset() throws Exception {
    RemoteDatasetChecks.readingCommandsTake(remote, 40_000, truth, tmp);
  }

  /**
   * The Python client (its loader service of this build) reads the dataset by its hdfs:// URI:
   * every batch of two shuffled epochs equal to the same batch read from the local copy.
   */
  @Test
  void thePythonClientReadsAnHdfsDatasetAsItsLocalCopy() throws Exception {
    RemoteDatasetChecks.pythonClientReadsAsTheLocalCopy(remote, local, tmp, Map.of());
  }

  @Test
  void aNodeWhoseHddRootIsOnHdfsServesADatasetThere() throws Exception {
    String datasets = "hdfs://localhost:" + cluster.getNameNodePort() + "/datasets";
    cluster.getFileSystem().copyFromLocalFile(false, true, new org.apache.hadoop.fs.Path(local.toUri()),
        new org.apache.hadoop.fs.Path("/elsewhere/events"));
    Path config = tmp.resolve("node.json");
    Path home = tmp.resolve("node");
    Files.writeString(config, "{\"home\": \"" + home + "\", \"port\": 0, \"ssdBudget\": 268435456, \"hddRoots\": [\"" + datasets
        + "\"], \"hadoop\": {\"dfs.client.retry.policy.enabled\": \"false\", \"ipc.client.connect.max.retries\": 2}}");
    NodeConfig c = NodeConfig.read(config);
    assertEquals(Map.of("dfs.client.retry.policy.enabled", "false", "ipc.client.connect.max.retries", "2"), c.hadoop());
    assertEquals(List.of(Locations.dataset(datasets)), c.hddRoots());
    try (CacheNode node = CacheNode.start(c)) {
      String url = node.url();
      Cli.Result reg = Cli.run("dataset", "register", remote, "--node", url);
      assertEquals(0, reg.code(), reg.out() + reg.err());
      Cli.Result outside = Cli.run("dataset", "register", remote.replace("/datasets/", "/elsewhere/"), "--node", url);
      assertEquals(1, outside.code(), outside.out() + outside.err());
      assertTrue(outside.err().contains("outside the node's HDD roots"), outside.err());
      // Promoted by the node from HDFS to its SSD tier, then a job through the node reads every sample right.
      Cli.Result p = Cli.run("promote", "--dataset", "events", "--node", url);
      assertEquals(0, p.code(), p.out() + p.err());
      Cli.Result run = Cli.run("loader", "run", "--dataset", remote, "--node", url, "--batch", "256", "--verify-against",
          truth.toString(), "--json");
      assertEquals(0, run.code(), run.out() + run.err());
    }
    // A node started again restores the registration from its home.
    try (CacheNode node = CacheNode.start(c)) {
      Cli.Result list = Cli.run("dataset", "list", "--node", node.url());
      assertEquals(0, list.code(), list.err());
      assertTrue(list.out().contains("events"), list.out());
    }
  }

  @Test
  void aParquetDatasetOnHdfsReadsAsItsLocalCopy() throws Exception {
    Path pq = tmp.resolve("events-pq");
    assertEquals(0, Cli.run("dataset", "generate", "--format", "parquet", "--out", pq.toString(), "--rows", "30000",
        "--rows-per-chunk", "10000", "--seed", "5").code());
    cluster.getFileSystem().copyFromLocalFile(false, true, new org.apache.hadoop.fs.Path(pq.toUri()),
        new org.apache.hadoop.fs.Path("/datasets/events-pq"));
    String uri = "hdfs://localhost:" + cluster.getNameNodePort() + "/datasets/events-pq";
    Path localTruth = tmp.resolve("truth-pq.bin");
    Path remoteTruth = tmp.resolve("truth-pq-hdfs.bin");
    assertEquals(0, Cli.run("dataset", "truth", pq.toString(), "-o", localTruth.toString()).code());
    Cli.Result t = Cli.run("dataset", "truth", uri, "-o", remoteTruth.toString());
    assertEquals(0, t.code(), t.out() + t.err());
    assertArrayEquals(Files.readAllBytes(localTruth), Files.readAllBytes(remoteTruth), "the same values as the local copy");
    Cli.Result v = Cli.run("dataset", "verify", uri);
    assertEquals(0, v.code(), v.out() + v.err());
    Cli.Result run = Cli.run("loader", "run", "--dataset", uri, "--batch", "256", "--verify-against", localTruth.toString());
    assertEquals(0, run.code(), run.out() + run.err());
  }

  @Test
  void writingCommandsRefuseHdfsByName() {
    Cli.Result g = Cli.run("dataset", "generate", "--out", remote + "-new", "--rows", "100");
    assertEquals(2, g.code(), g.err());
    assertTrue(g.err().contains("needs a local or mounted directory") && g.err().contains("not hdfs://"), g.err());
    assertFalse(g.err().contains("\tat "), g.err());
    Cli.Result r = Cli.run("dataset", "rollback", remote);
    assertEquals(2, r.code(), r.err());
    assertTrue(r.err().contains("not hdfs://"), r.err());
  }

  @Test
  void anUnknownNameNodeIsOneClearLine() throws IOException {
    Cli.Result d = Cli.run("dataset", "describe", "hdfs://no-such-namenode.invalid/datasets/events");
    assertEquals(1, d.code(), d.err());
    assertTrue(d.err().strip().startsWith("strata: hdfs://no-such-namenode.invalid: cannot open the Hadoop file system"), d.err());
    assertFalse(d.err().contains("\tat "), d.err());
  }
}
