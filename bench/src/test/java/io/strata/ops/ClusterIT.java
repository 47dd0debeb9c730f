package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.bench.ClusterBench;
import io.strata.bench.ClusterLab;
import io.strata.bench.DerivedClusterBench;
import io.strata.bench.HdfsLab;
import io.strata.bench.S3Lab;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three hosts as Linux network namespaces on a private bridge, a node per host bound to its
 * address, real loader jobs as separate processes on hosts 1, then 2 and 3 (overlapping
 * features), run with the nodes alone and clustered; in the clustered run host 1's node is
 * killed with SIGKILL while the jobs of hosts 2 and 3 read; and once more with the shared tier on
 * HDFS, and once more in an S3 bucket; and a derived feature computed by every node against once
 * by a Spark standalone cluster in the lab (an executor and the driver killed), or copied from a peer. Skipped, with the reason, where namespaces cannot be created (root and iproute2 are
 * needed; CI has both).
 */
class ClusterIT {
  @TempDir Path dir;

  @Test
  void peersServeChunksValuesMatchOrcHddBytesDropAndAKilledHostIsSurvived() throws Exception {
    String why = ClusterLab.unavailable();
    Assumptions.assumeTrue(why == null, () -> "skipped: " + why);
    JsonNode r = ClusterBench.run(dir, 120_000, 20, true, new PrintWriter(System.out, true, java.nio.charset.Charset.defaultCharset()));
    System.out.println(r.toPrettyString());
    JsonNode clustered = everyJobVerifiedAndTheClusterSavedHddBytes(r);
    assertTrue(clustered.path("killedDuringJobs").asBoolean());
    double noticed = clustered.path("deadHostNoticedSeconds").asDouble();
    assertTrue(noticed > 0 && noticed < 60, "host 2 dropped the killed host after " + noticed + " s");
    // No partial segment anywhere (a peer read cut by the kill lands nothing).
    try (Stream<Path> files = Files.walk(dir.resolve("clustered"))) {
      List<Path> temps = files.filter(p -> p.getFileName().toString().startsWith(".tmp-")).toList();
      assertTrue(temps.isEmpty(), "partial files: " + temps);
    }
  }

  /**
   * The same with the shared tier on a real HDFS (a fourth host: a NameNode and three DataNodes, a
   * process each, replication 3): the nodes' roots, promotions and the jobs' misses read it over the
   * hosts' network; in both runs a DataNode is killed (SIGKILL) and then the NameNode restarted while jobs B and C
   * read, and every job still verifies every sample. (Before the NameNode's restart was waited out,
   * B and C failed, their reads cut mid-call, and one took a name node that did not answer for a
   * missing file.)
   */
  @Test
  void theSharedTierOnHdfsOutlivesADataNodeKilledAndTheNameNodeRestarted() throws Exception {
    String why = ClusterLab.unavailable();
    Assumptions.assumeTrue(why == null, () -> "skipped: " + why);
    Assumptions.assumeTrue(HdfsLab.unavailable() == null, HdfsLab::unavailable);
    JsonNode r = ClusterBench.run(dir, 120_000, 20, false, true,
        new PrintWriter(System.out, true, java.nio.charset.Charset.defaultCharset()));
    System.out.println(r.toPrettyString());
    assertEquals("hdfs", r.path("hdd").asText());
    everyJobVerifiedAndTheClusterSavedHddBytes(r);
    for (String mode : List.of("alone", "clustered")) {
      JsonNode h = r.path(mode).path("hdfs");
      assertTrue(h.path("dataNodeKilledDuringJobs").asBoolean(), mode + " " + h);
      assertTrue(h.path("nameNodeRestartedDuringJobs").asBoolean(), mode + " " + h);
    }
    assertTrue(r.path("clustered").path("orcDecodeCopyGBps").asDouble() > 0, r.toString());
  }

  /**
   * The same with the shared tier in a bucket of a real S3 server (S3Proxy, a process of a fourth
   * host): the nodes' roots are {@code s3://strata/shared}, the jobs
   * read the bucket with the AWS SDK's environment variables, and in both runs the server is killed
   * (SIGKILL) and started again while jobs B and C read; every job still verifies every sample.
   */
  @Test
  void theSharedTierOnS3OutlivesTheServerKilledAndRestarted() throws Exception {
    String why = ClusterLab.unavailable();
    Assumptions.assumeTrue(why == null, () -> "skipped: " + why);
    Assumptions.assumeTrue(S3Lab.unavailable() == null, S3Lab::unavailable);
    // The link unshaped (no tc needed): what is checked here is values and survival, not rates.
    JsonNode r = ClusterBench.run(dir, 120_000, 20, false, "s3", 0,
        new PrintWriter(System.out, true, java.nio.charset.Charset.defaultCharset()));
    System.out.println(r.toPrettyString());
    assertEquals("s3", r.path("hdd").asText());
    everyJobVerifiedAndTheClusterSavedHddBytes(r);
    for (String mode : List.of("alone", "clustered")) {
      JsonNode s = r.path(mode).path("s3");
      assertTrue(s.path("restartedDuringJobs").asBoolean(), mode + " " + s);
    }
  }

  @Test
  void aDerivedFeatureComputedOnceOnSparkIsIngestedByEveryHostThroughAKilledExecutorAndDriver() throws Exception {
    String why = DerivedClusterBench.unavailable();
    Assumptions.assumeTrue(why == null, () -> "skipped: " + why);
    // The dataset on the HDFS lab host (a fourth host) where one can be started, as the Spark tasks read it there.
    boolean hdfs = HdfsLab.unavailable() == null;
    JsonNode r = DerivedClusterBench.run(dir, 120_000, "zscore(seq_mean(log1p(amount), last=64))", true, true, hdfs,
        new PrintWriter(System.out, true, java.nio.charset.Charset.defaultCharset()));
    assertEquals(hdfs ? "hdfs" : "local", r.path("hdd").asText());
    System.out.println(r.toPrettyString());
    // Every host's stored chunks equal a local promote's, byte for byte, both ways.
    assertEquals(0, r.path("mismatches").asLong(), r.toString());
    int chunks = r.path("chunks").asInt();
    for (String mode : List.of("perHost", "spark", "peers")) {
      JsonNode m = r.path(mode);
      assertEquals(0, m.path("jobFailures").asInt(), mode);
      assertEquals(3, m.path("hosts").size());
      for (JsonNode h : m.path("hosts")) {
        assertEquals(0, h.path("chunksDiffering").asLong(), mode + " " + h);
      }
    }
    JsonNode spark = r.path("spark");
    assertTrue(spark.path("executorKilled").asBoolean(), spark.toString());
    // The rerun after the driver was killed computed only what was not staged yet.
    long stagedAtKill = spark.path("stagedAtDriverKill").asLong();
    assertTrue(stagedAtKill >= 3, spark.toString());
    assertTrue(spark.path("chunksSkipped").asInt() >= stagedAtKill, spark.toString());
    assertEquals(chunks, spark.path("chunksSkipped").asInt() + spark.path("chunksComputed").asInt(), spark.toString());
    // The nodes ingested it: far less CPU on their side than computing it each.
    assertTrue(spark.path("nodesCpuSeconds").asDouble() < r.path("perHost").path("nodesCpuSeconds").asDouble() / 2, r.toString());
    for (JsonNode h : spark.path("hosts")) {
      assertEquals("staged", h.path("source").asText(), h.toString());
    }
    // Clustered, without Spark: host 1's node computed it, the two others copied it from that node.
    JsonNode peers = r.path("peers");
    assertEquals(0, peers.path("jobFailures").asInt(), peers.toString());
    assertEquals("computed", peers.path("hosts").get(0).path("source").asText(), peers.toString());
    assertEquals("peer", peers.path("hosts").get(1).path("source").asText(), peers.toString());
    assertEquals("peer", peers.path("hosts").get(2).path("source").asText(), peers.toString());
  }

  /** Checks what every run must show; the clustered run's figures. */
  private static JsonNode everyJobVerifiedAndTheClusterSavedHddBytes(JsonNode r) {
    JsonNode alone = r.path("alone");
    JsonNode clustered = r.path("clustered");
    assertEquals(0, r.path("jobFailures").asInt(), r.toString());
    assertEquals(0, r.path("mismatches").asLong(), r.toString());
    // Every job verified every sample of its two epochs (3 jobs x 2 runs).
    for (JsonNode run : List.of(alone, clustered)) {
      assertEquals(3, run.path("jobs").size());
      for (JsonNode j : run.path("jobs")) {
        assertEquals(0, j.path("exit").asInt(), j.toString());
        assertTrue(j.path("verifiedValues").asLong() > 0, j.toString());
        assertEquals(j.path("batches").asLong(), j.path("verifiedBatches").asLong(), j.toString());
      }
    }
    assertTrue(clustered.path("peerReads").asLong() > 0, clustered.toString());
    assertTrue(clustered.path("hddBytes").asLong() < alone.path("hddBytes").asLong(),
        "clustered " + clustered.path("hddBytes") + " vs alone " + alone.path("hddBytes"));
    return clustered;
  }
}
