package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.bench.S3Lab;
import io.strata.node.CacheNode;
import io.strata.node.NodeConfig;
import io.strata.sdk.internal.Json;
import io.strata.sdk.s3.S3FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The commands that read a dataset take it by an s3:// URI, against a real S3 server (S3Proxy in
 * a process of its own, on loopback), and read what its local copy holds; a dataset is made in
 * place from objects in a bucket; a node whose HDD root is in a bucket serves it; the Python
 * client reads it; the commands that write refuse such a URI by name.
 */
class S3CommandsTest {
  @TempDir
  static Path tmp;

  private static S3Lab s3;
  private static Path local;
  private static Path truth;
  private static final String REMOTE = "s3://data/datasets/events";

  @BeforeAll
  static void start() throws Exception {
    s3 = S3Lab.startLocal(tmp.resolve("s3"));
    S3FileSystems.configure(s3.settings()); // the commands run in this JVM: their client's settings
    local = tmp.resolve("events");
    assertEquals(0, Cli.run("dataset", "generate", "--out", local.toString(), "--rows", "40000", "--rows-per-chunk", "10000",
        "--seed", "3").code());
    s3.createBucket("data");
    s3.upload(local, "data", "datasets/events");
    truth = tmp.resolve("truth.bin");
    assertEquals(0, Cli.run("dataset", "truth", local.toString(), "-o", truth.toString()).code());
  }

  @AfterAll
  static void stop() {
    if (s3 != null) {
      s3.close();
    }
  }

  @Test
  void readingCommandsTakeAnS3Dataset() throws Exception {
    RemoteDatasetChecks.readingCommandsTake(REMOTE, 40_000, truth, tmp);
  }

  /**
   * Parquet objects in a bucket made a dataset in place (the manifest in a local directory, no
   * object copied), then served by a node whose HDD roots are that directory and the bucket's
   * prefix: a job through the node checks every sample against the local copy's ground truth.
   */
  @Test
  void parquetObjectsMadeADatasetInPlaceAreServedByANodeRootedInTheBucket() throws Exception {
    Path pq = tmp.resolve("events-pq");
    assertEquals(0, Cli.run("dataset", "generate", "--format", "parquet", "--out", pq.toString(), "--rows", "30000",
        "--rows-per-chunk", "10000", "--seed", "5").code());
    Path pqTruth = tmp.resolve("truth-pq.bin");
    assertEquals(0, Cli.run("dataset", "truth", pq.toString(), "-o", pqTruth.toString()).code());
    try (var files = Files.list(pq)) {
      for (Path f : files.filter(f -> f.getFileName().toString().endsWith(".parquet")).toList()) {
        s3.put("data", "lake/events/" + f.getFileName(), Files.readAllBytes(f));
      }
    }
    Cli.Result noOut = Cli.run("dataset", "import", "--in-place", "s3://data/lake/events");
    assertEquals(2, noOut.code(), noOut.err());
    assertTrue(noOut.err().contains("give -o"), noOut.err());
    Path manifests = tmp.resolve("manifests");
    Path dir = manifests.resolve("events");
    Cli.Result imp = Cli.run("dataset", "import", "--in-place", "s3://data/lake/events", "-o", dir.toString(),
        "--sample-column", "sample_id", "--name", "events-pq", "--json");
    assertEquals(0, imp.code(), imp.out() + imp.err());
    try (var written = Files.walk(dir)) {
      assertTrue(written.noneMatch(f -> f.getFileName().toString().endsWith(".parquet")), "no object copied");
    }
    Path config = tmp.resolve("node.json");
    ObjectsConfig.write(config, tmp.resolve("node"), manifests.toString(), "s3://data/lake", s3.settings());
    NodeConfig c = NodeConfig.read(config);
    try (CacheNode node = CacheNode.start(c)) {
      String url = node.url();
      Cli.Result reg = Cli.run("dataset", "register", dir.toString(), "--node", url);
      assertEquals(0, reg.code(), reg.out() + reg.err());
      Cli.Result p = Cli.run("promote", "--dataset", "events-pq", "--node", url);
      assertEquals(0, p.code(), p.out() + p.err());
      Cli.Result run = Cli.run("loader", "run", "--dataset", dir.toString(), "--node", url, "--batch", "256",
          "--verify-against", pqTruth.toString(), "--json");
      assertEquals(0, run.code(), run.out() + run.err());
      // The registry's own dataset of the other bucket prefix is outside its roots.
      Cli.Result outside = Cli.run("dataset", "register", REMOTE, "--node", url);
      assertEquals(1, outside.code(), outside.out() + outside.err());
      assertTrue(outside.err().contains("outside the node's HDD roots"), outside.err());
    }
  }

  /** A node's configuration with a local root, a bucket root and an s3 section. */
  private static final class ObjectsConfig {
    static void write(Path config, Path home, String localRoot, String bucketRoot, Map<String, String> s3) throws Exception {
      var root = Json.object().put("home", home.toString()).put("port", 0).put("ssdBudget", 268435456L);
      root.putArray("hddRoots").add(localRoot).add(bucketRoot);
      var section = root.putObject("s3");
      s3.forEach(section::put);
      Files.writeString(config, Json.compact(root));
    }
  }

  /**
   * The Python client (its loader service of this build, with the AWS SDK's variables) reads the
   * dataset by its s3:// URI: every batch of two shuffled epochs equal to the same batch read from
   * the local copy.
   */
  @Test
  void thePythonClientReadsAnS3DatasetAsItsLocalCopy() throws Exception {
    RemoteDatasetChecks.pythonClientReadsAsTheLocalCopy(REMOTE, local, tmp, s3.environment());
  }

  @Test
  void writingCommandsRefuseS3ByName() {
    Cli.Result g = Cli.run("dataset", "generate", "--out", REMOTE + "-new", "--rows", "100");
    assertEquals(2, g.code(), g.err());
    assertTrue(g.err().contains("needs a local or mounted directory") && g.err().contains("not s3://"), g.err());
    assertFalse(g.err().contains("\tat "), g.err());
    Cli.Result imp = Cli.run("dataset", "import", "--in-place", REMOTE, "-o", "s3://data/manifests");
    assertEquals(2, imp.code(), imp.err());
    assertTrue(imp.err().contains("not s3://"), imp.err());
  }

  @Test
  void aMissingBucketOrObjectIsOneClearLine() {
    Cli.Result d = Cli.run("dataset", "describe", "s3://no-such-bucket/datasets/events");
    assertEquals(1, d.code(), d.err());
    assertTrue(d.err().strip().startsWith("strata: no bucket 'no-such-bucket' at " + s3.endpoint()), d.err());
    assertTrue(d.err().contains("s3://no-such-bucket/datasets/events"), d.err());
    assertFalse(d.err().contains("\tat "), d.err());
    assertEquals(1, d.err().strip().lines().count(), d.err());
  }
}
