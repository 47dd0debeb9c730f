package io.strata.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.sdk.tier.Tier;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.format.Columns;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.loader.BatchMode;
import io.strata.sdk.loader.PlanProgram;
import io.strata.sdk.node.NodeClient;
import io.strata.sdk.tiering.SegmentStore;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two real clustered nodes in this process, on loopback (real Hazelcast, real HTTP): residency is
 * shared, a chunk one holds is copied by the other instead of decoded from ORC, value for value,
 * and a member that leaves is no longer read from. (Across network namespaces, with separate
 * processes and SIGKILL: {@code ClusterIT} in ops.)
 */
class ClusterTest {
  static final String TOKEN = "cluster-test-token-0123456789";
  @TempDir Path dir;
  CacheNode a;
  CacheNode b;

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  NodeConfig config(String name, String cluster, int port, int... members) throws IOException {
    List<String> m = Arrays.stream(members).mapToObj(p -> "127.0.0.1:" + p).toList();
    return NodeConfig.embedded(dir.resolve(name), 0).withHddRoots(List.of(dir.resolve("shared")))
        .withSsdBudget(256L << 20).withBind("127.0.0.1", TOKEN)
        .withCluster(new ClusterSettings("127.0.0.1", m, port, cluster));
  }

  @AfterEach
  void stop() throws IOException {
    if (b != null) {
      b.close();
    }
    if (a != null) {
      a.close();
    }
  }

  /** Starts nodes a and b in cluster {@code cluster} on ports {@code pa} and {@code pb}; returns once a sees both. */
  void startTwo(String cluster, int pa, int pb) throws Exception {
    a = CacheNode.start(config("a", cluster, pa, pa, pb));
    b = CacheNode.start(config("b", cluster, pb, pa, pb));
    JsonNode t = await(new NodeClient(a.url(), TOKEN), x -> x.path("cluster").path("members").size() == 2, "two members");
    assertEquals(2, t.path("cluster").path("members").size(), t.toString());
  }

  static JsonNode await(NodeClient c, Predicate<JsonNode> ok, String what) throws Exception {
    long end = System.nanoTime() + 30_000_000_000L;
    JsonNode t = c.tiers();
    while (!ok.test(t)) {
      if (System.nanoTime() > end) {
        throw new AssertionError("timed out waiting for " + what + ": " + t.path("cluster"));
      }
      Thread.sleep(100);
      t = c.tiers();
    }
    return t;
  }

  @Test
  void aChunkOnePeerHoldsIsCopiedNotDecodedAndALeavingPeerIsNotReadFrom() throws Exception {
    Path ds = dir.resolve("shared/events");
    DatasetGenerator.generate(ds, DatasetGenerator.Options.of("events", 60_000, 5).withFeatures(6).withChunking(20_000, 1),
        Progress.NONE);
    String cluster = "t" + UUID.randomUUID().toString().substring(0, 8);
    int pa = freePort();
    int pb = freePort();
    startTwo(cluster, pa, pb);
    NodeClient ca = new NodeClient(a.url(), TOKEN);
    NodeClient cb = new NodeClient(b.url(), TOKEN);
    ca.registerDataset(ds);
    cb.registerDataset(ds);
    List<String> features;
    int chunks;
    try (Dataset d = Dataset.open(ds)) {
      features = d.columns().stream().map(f -> f.name()).limit(3).toList();
      chunks = d.chunks().size();
    }
    // A decodes from ORC; its segments are announced.
    ca.promote("events", features, null);
    assertTrue(a.awaitIdle(60_000));
    int expected = features.size() * chunks;
    await(cb, x -> x.path("cluster").path("residencyEntries").asInt() == expected, "A's announcements");
    // B's policy knows which chunks another node holds (it keeps them only for its own jobs' reads).
    await(cb, x -> x.path("cluster").path("heldByOthers").asInt() == expected, "B to learn what A holds");
    assertEquals(0, ca.tiers().path("cluster").path("heldByOthers").asInt());
    assertTrue(ca.tiers().path("hdd").path("promotionReadBytes").asLong() > 0);

    // B copies every one of them from A, reading nothing from ORC, and the values are A's (ORC's).
    cb.promote("events", features, null);
    assertTrue(b.awaitIdle(60_000));
    JsonNode tb = cb.tiers();
    assertEquals(expected, tb.path("cluster").path("peerReads").asInt(), tb.path("cluster").toString());
    assertEquals(0, tb.path("cluster").path("peerFailures").asInt(), tb.path("cluster").toString());
    assertEquals(0, tb.path("hdd").path("promotionReadBytes").asLong(), tb.toString());
    assertEquals(expected, ca.tiers().path("cluster").path("servedToPeers").asInt());
    try (Dataset d = Dataset.open(ds); Arena arena = Arena.ofConfined();
        var store = SegmentStore.open(dir.resolve("b/ssd"), false, SegmentFile.Verify.NEVER)) {
      for (int c = 0; c < chunks; c++) {
        var orc = d.readChunk(c, features, arena);
        for (String f : features) {
          Path seg = store.find("events", d.version(), f, c).orElseThrow().path();
          assertTrue(seg.startsWith(dir.resolve("b")), seg.toString());
          try (SegmentFile s = SegmentFile.open(seg, SegmentFile.Verify.ALWAYS)) {
            Column got = s.column(f);
            assertEquals(-1, Columns.firstDifference(orc.get(f), got), f + " chunk " + c);
          }
        }
      }
    }

    // A's planned jobs and what they read are seen from B.
    ca.declarePlan("job-x", "events", features, 2, null, false);
    ca.reportReads("job-x", "events", List.of(new NodeClient.Read(features.getFirst(), 0, 1000, Tier.HDD)), 0);
    JsonNode seen = await(cb, x -> x.path("cluster").path("jobs").toString().contains("job-x")
        && x.path("cluster").path("datasetReadBytes").path("events").asLong() >= 1000, "A's job seen from B");
    JsonNode jx = seen.path("cluster").path("jobs").get(0);
    assertEquals("job-x", jx.path("job").asText(), seen.path("cluster").toString());
    assertEquals("127.0.0.1", jx.path("host").asText());
    assertEquals(2L * chunks, jx.path("steps").asLong(), jx.toString());
    assertEquals(1000, jx.path("hddBytes").asLong(), jx.toString());

    // A distributed job declared once on A: rank 0 planned on A, rank 1 reaches B through the cluster.
    PlanProgram program = new PlanProgram(BatchMode.SAMPLES, 64, 0, 0, 0, 0, 7, true, 0, 2,
        false, 2, 0);
    JsonNode d = ca.declareDistributedPlan("dist", "events", features, program, false, List.of(a.url(), b.url()));
    assertEquals("here", d.path("ranks").get(0).path("placed").asText(), d.toString());
    assertEquals("dist@0", d.path("ranks").get(0).path("job").asText(), d.toString());
    assertEquals("shared", d.path("ranks").get(1).path("placed").asText(), d.toString());
    JsonNode onB = await(cb, x -> x.path("jobs").toString().contains("dist@1"), "rank 1's plan on B");
    long expectedSteps = cb.declarePlan("chk@1", "events", features, program.forRank(1), false).path("steps").asLong();
    for (JsonNode j : onB.path("jobs")) {
      if (j.path("job").asText().equals("dist@1")) {
        assertEquals(expectedSteps, j.path("steps").asLong(), j.toString());
      }
    }
    assertTrue(ca.tiers().path("jobs").toString().contains("dist@0"));

    // Peer reads need the cluster's token.
    HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(a.url()
        + "/v1/peer/segment?dataset=events&version=x&feature=" + features.getFirst() + "&chunk=0")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(401, r.statusCode(), r.body());

    // A leaves: B no longer reads from it; a chunk B evicts and places again is decoded from ORC.
    a.close();
    a = null;
    await(cb, x -> x.path("cluster").path("members").size() == 1, "A to leave");
    await(cb, x -> !x.path("cluster").path("jobs").toString().contains("job-x")
        && !x.path("cluster").path("jobs").toString().contains("dist@0"), "A's jobs to leave the cluster's list");
    cb.evict("events", List.of(features.getFirst()), List.of(0));
    cb.promote("events", List.of(features.getFirst()), List.of(0));
    assertTrue(b.awaitIdle(60_000));
    JsonNode after = cb.tiers();
    assertEquals(expected, after.path("cluster").path("peerReads").asInt(), after.path("cluster").toString());
    assertEquals(0, after.path("cluster").path("peerFailures").asInt(), after.path("cluster").toString());
    assertTrue(after.path("hdd").path("promotionReadBytes").asLong() > 0, after.path("hdd").toString());
    assertEquals(1, after.path("cluster").path("membersLeft").asInt());

    // A comes back (a new member): it verifies its segments and announces them again.
    a = CacheNode.start(config("a", cluster, pa, pa, pb));
    JsonNode back = await(new NodeClient(a.url(), TOKEN), x -> x.path("cluster").path("announced").asInt() == expected,
        "A's announcements after its restart");
    assertTrue(back.path("startupNotes").toString().isEmpty() || !back.path("startupNotes").toString().contains("dropped"),
        back.path("startupNotes").toString());
    await(cb, x -> x.path("cluster").path("members").size() == 2 && x.path("cluster").path("residencyEntries").asInt() == 2 * expected,
        "A's chunks back in the residency");
  }

  @Test
  void aDerivedFeatureAPeerHoldsIsCopiedNotComputedAgain() throws Exception {
    Path ds = dir.resolve("shared/events");
    DatasetGenerator.generate(ds, DatasetGenerator.Options.of("events", 40_000, 5).withFeatures(6).withChunking(10_000, 2),
        Progress.NONE);
    startTwo("t" + UUID.randomUUID().toString().substring(0, 8), freePort(), freePort());
    NodeClient ca = new NodeClient(a.url(), TOKEN);
    NodeClient cb = new NodeClient(b.url(), TOKEN);
    await(cb, x -> x.path("cluster").path("members").size() == 2, "two members");
    ca.registerDataset(ds);
    cb.registerDataset(ds);
    String spec = "zscore(seq_mean(log1p(amount), last=8))";
    JsonNode first = ca.derive("events", spec);
    assertEquals("computed", first.path("source").asText(), first.toString());
    JsonNode second = cb.derive("events", spec);
    assertEquals("peer", second.path("source").asText(), second.toString());
    assertEquals(first.path("fingerprint").asText(), second.path("fingerprint").asText());
    assertEquals(first.path("bytes").asLong(), second.path("bytes").asLong());
    // Byte for byte the chunks A computed, in B's store (read beside its writer).
    String fp = first.path("fingerprint").asText();
    try (var sa = io.strata.store.FeatureStore.openReader(dir.resolve("a/features"));
        var sb = io.strata.store.FeatureStore.openReader(dir.resolve("b/features"))) {
      int n = sa.meta(fp).orElseThrow().chunks();
      assertEquals(4, n);
      for (int c = 0; c < n; c++) {
        assertTrue(Arrays.equals(sa.encodedChunk(fp, c), sb.encodedChunk(fp, c)), "chunk " + c);
      }
    }
    // Peer reads of derived features need the cluster's token.
    HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(a.url()
        + "/v1/peer/derived?dataset=events&version=x&spec=x")).GET().build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(401, r.statusCode(), r.body());
  }
}
