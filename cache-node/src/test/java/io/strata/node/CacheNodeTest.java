package io.strata.node;

import io.strata.sdk.loader.LoaderBuilder;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.node.policy.LruPolicy;
import io.strata.node.policy.Policies;
import io.strata.node.sim.OptPolicy;
import io.strata.node.sim.Simulator;
import io.strata.node.sim.Trace;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.sdk.tier.Tier;
import io.strata.tools.DatasetGenerator;
import io.strata.tools.ParquetExport;
import io.strata.sdk.format.Columns;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.Json;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.Loader;
import io.strata.sdk.loader.PlanProgram;
import io.strata.sdk.node.NodeClient;
import io.strata.sdk.tiering.SegmentStore;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A real node on a loopback port, real datasets, real loaders through the SDK. */
class CacheNodeTest {
  @TempDir Path home;
  /** Outside every root the node has (a sibling of {@code home}, removed after each test like it). */
  @TempDir Path elsewhere;
  CacheNode node;
  NodeClient client;
  Path datasetDir;
  static final List<String> SHARED = List.of("amount", "merchant_category", "embedding", "score");

  @BeforeEach
  void start() throws IOException {
    datasetDir = home.resolve("hdd/events");
    DatasetGenerator.generate(datasetDir,
        DatasetGenerator.Options.of("events", 120_000, 3).withFeatures(12).withChunking(20_000, 2).withMeanSampleLength(60),
        Progress.NONE);
    node = CacheNode.start(NodeConfig.embedded(home, 0).withSsdBudget(64L << 20));
    client = new NodeClient(node.url(), null);
    client.registerDataset(datasetDir);
  }

  @Test
  void aDatasetMayBeRegisteredByFileUriAndOtherFileSystemsAreRefusedByName() throws Exception {
    HttpResponse<String> ok = raw("POST", "/v1/datasets", "{\"path\":\"" + datasetDir.toUri() + "\"}", null);
    assertEquals(201, ok.statusCode(), ok.body());
    // hdfs:// is a file system a node reads (HdfsCommandsTest); outside every root it is refused as any path is, by its
    // name alone (the name node "nn" is never asked).
    HttpResponse<String> hdfs = raw("POST", "/v1/datasets", "{\"path\":\"hdfs://nn/data/events\"}", null);
    assertEquals(403, hdfs.statusCode(), hdfs.body());
    assertTrue(hdfs.body().contains("hdfs://nn/data/events is outside the node's HDD roots"), hdfs.body());
    HttpResponse<String> s3 = raw("POST", "/v1/datasets", "{\"path\":\"s3a://bucket/data/events\"}", null);
    assertEquals(400, s3.statusCode(), s3.body());
    assertTrue(s3.body().contains("s3a:// file system is not supported"), s3.body());
  }

  @Test
  void theNodeSuggestsARelayoutWhenJobsReadScatteredFeatures() throws Exception {
    List<String> names;
    try (Dataset ds = Dataset.open(datasetDir)) {
      names = ds.columns().stream().map(f -> f.name()).toList();
    }
    // Two jobs, each reading features far apart in the present order: one run each is possible after a relayout.
    String[][] jobs = {{names.get(1), names.get(6), names.get(11)}, {names.get(1), names.get(6), names.get(3)}};
    postReads("events", "scatter", jobs);
    JsonNode layout = client.tiers().path("datasets").get(0).path("layout");
    assertEquals(2, layout.path("jobs").asInt(), layout.toString());
    assertEquals(1.0, layout.path("runsPerStripeLearned").asDouble(), 1e-9, layout.toString());
    assertTrue(layout.path("runsPerStripeNow").asDouble() >= 2.5, layout.toString());
    // The relayout's default also merges this dataset's small stripes: 6 stripes, two a file, into one a file.
    assertEquals(6, layout.path("chunksNow").asInt(), layout.toString());
    assertEquals(3, layout.path("chunksAfterRelayout").asInt(), layout.toString());
    assertEquals(layout.path("runsPerStripeNow").asDouble() * 6, layout.path("readsPerEpochNow").asDouble(), 1e-9);
    assertEquals(3.0, layout.path("readsPerEpochLearned").asDouble(), 1e-9, layout.toString());
    assertTrue(layout.path("relayoutSuggested").asBoolean(), layout.toString());
  }

  @Test
  void theNodeSuggestsARelayoutOfSmallStripesEvenWhereTheOrderIsAlreadyTheLearnedOne() throws Exception {
    List<String> names;
    try (Dataset ds = Dataset.open(datasetDir)) {
      names = ds.columns().stream().map(f -> f.name()).toList();
    }
    // Two jobs reading adjacent features: the order cannot do better, the merge of the stripes halves the reads.
    String[][] jobs = {{names.get(1), names.get(2)}, {names.get(1), names.get(2), names.get(3)}};
    postReads("events", "adjacent", jobs);
    JsonNode layout = client.tiers().path("datasets").get(0).path("layout");
    assertEquals(1.0, layout.path("runsPerStripeNow").asDouble(), 1e-9, layout.toString());
    assertEquals(1.0, layout.path("runsPerStripeLearned").asDouble(), 1e-9, layout.toString());
    assertEquals(6.0, layout.path("readsPerEpochNow").asDouble(), 1e-9, layout.toString());
    assertEquals(3.0, layout.path("readsPerEpochLearned").asDouble(), 1e-9, layout.toString());
    assertTrue(layout.path("relayoutSuggested").asBoolean(), layout.toString());
  }

  @Test
  void aParquetDatasetIsNeverSuggestedForARelayoutWhichRefusesIt() throws Exception {
    Path pq = home.resolve("hdd/events-pq");
    try (Dataset orc = Dataset.open(datasetDir)) {
      ParquetExport.export(orc.directory(), orc.manifest(), orc.table(), pq, "events-pq", Progress.NONE);
    }
    client.registerDataset(pq);
    List<String> names;
    try (Dataset ds = Dataset.open(pq)) {
      names = ds.columns().stream().map(f -> f.name()).toList();
    }
    // Scattered features: an ORC dataset would be suggested (the first test), this one is not.
    postReads("events-pq", "pq", new String[][] {{names.get(1), names.get(6), names.get(11)}, {names.get(1), names.get(6),
        names.get(3)}});
    JsonNode layout = null;
    for (JsonNode d : client.tiers().path("datasets")) {
      if (d.path("name").asText().equals("events-pq")) {
        layout = d.path("layout");
      }
    }
    assertNotNull(layout);
    assertEquals(2, layout.path("jobs").asInt(), layout.toString());
    assertEquals(layout.path("chunksNow").asInt(), layout.path("chunksAfterRelayout").asInt(), layout.toString());
    assertFalse(layout.path("relayoutSuggested").asBoolean(), layout.toString());
  }

  /** Each job's reads of chunk 0 of its features, as a job's reports would tell the node. */
  private void postReads(String dataset, String jobPrefix, String[][] jobs) throws Exception {
    for (int j = 0; j < jobs.length; j++) {
      StringBuilder reads = new StringBuilder();
      for (String f : jobs[j]) {
        reads.append(reads.isEmpty() ? "" : ",").append("{\"feature\":\"").append(f).append("\",\"chunk\":0,\"bytes\":1000,\"tier\":\"hdd\"}");
      }
      HttpResponse<String> r = raw("POST", "/v1/reads", "{\"job\":\"" + jobPrefix + j + "\",\"dataset\":\"" + dataset
          + "\",\"reads\":[" + reads + "]}", null);
      assertEquals(200, r.statusCode(), r.body());
    }
  }

  @AfterEach
  void stop() throws IOException {
    if (node != null) {
      node.close();
    }
  }

  private HttpResponse<String> raw(String method, String path, String body, String token) throws Exception {
    return raw(method, path, body, token, body == null ? null : "application/json", null);
  }

  private HttpResponse<String> raw(String method, String path, String body, String token, String type, String origin)
      throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(node.url() + path))
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    if (type != null) {
      b.header("Content-Type", type);
    }
    if (origin != null) {
      b.header("Origin", origin);
    }
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    return HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static int run(Loader loader) throws IOException {
    int batches = 0;
    for (Batch b : loader) {
      b.close();
      batches++;
    }
    return batches;
  }

  private LoaderBuilder job(Dataset ds, String name) {
    return Loader.builder(ds).features(SHARED).sampleBatches(64).seed(name.hashCode()).node(client, name).nodeRefresh(100)
        .prefetch(2, 1);
  }

  @Test
  void twoJobsSharingFeaturesPromoteAndTheSecondJobHitsTheSsdTier() throws Exception {
    try (Dataset ds = Dataset.open(datasetDir)) {
      try (Loader first = job(ds, "job-a").epochs(2).build()) {
        run(first);
        assertTrue(first.node().connected());
      }
      assertTrue(node.awaitIdle(30_000));
      JsonNode status = client.tiers();
      assertTrue(status.path("traffic").path("promotions").asLong() > 0, status.toString());
      assertTrue(status.path("ssd").path("segments").asLong() > 0, status.toString());
      try (Loader second = job(ds, "job-b").build()) {
        run(second);
        long ssd = second.tierStats().bytes(Tier.SSD);
        long hdd = second.tierStats().bytes(Tier.HDD);
        assertTrue(ssd > 0, "the second job reads from the SSD tier");
        assertTrue(ssd > hdd, "mostly: ssd " + ssd + " hdd " + hdd);
      }
      // Every segment the node holds matches ORC exactly.
      try (Stream<Path> files = Files.walk(home.resolve("ssd"))) {
        for (Path p : files.filter(f -> f.toString().endsWith(".arrow")).toList()) {
          try (SegmentFile f = SegmentFile.open(p, SegmentFile.Verify.ALWAYS); Arena arena = Arena.ofConfined()) {
            Map<String, Column> orc = ds.readChunk(f.info().chunk(), f.columnNames(), arena);
            for (String c : f.columnNames()) {
              assertEquals(-1, Columns.firstDifference(orc.get(c), f.column(c)), p + " " + c);
            }
          }
        }
      }
    }
  }

  @Test
  void autoAssemblyThreadsShareTheCoresAmongTheJobsTheNodeHasPlansFor() throws Exception {
    int cores = Runtime.getRuntime().availableProcessors();
    try (Dataset ds = Dataset.open(datasetDir)) {
      try (Loader first = job(ds, "auto-1").assemblyThreads(LoaderBuilder.AUTO).build();
          Loader second = job(ds, "auto-2").assemblyThreads(LoaderBuilder.AUTO).build()) {
        assertEquals(1, first.node().jobsPlanned(), "the first job's plan is the node's only one");
        assertEquals(2, second.node().jobsPlanned());
        assertEquals(Math.min(SHARED.size(), cores), first.assemblyThreads());
        assertEquals(Math.min(SHARED.size(), Math.max(1, cores / 2)), second.assemblyThreads());
      }
      try (Loader alone = Loader.builder(ds).features(SHARED).sampleBatches(64).prefetch(2, 2)
          .assemblyThreads(LoaderBuilder.AUTO).build()) {
        assertEquals(Math.min(SHARED.size(), Math.max(1, cores / 2)), alone.assemblyThreads(), "no node: this job alone, 2 workers");
      }
    }
  }

  @Test
  void theNodeExpandsAJobsProgramAndRecordsAReplayableTrace() throws Exception {
    try (Dataset ds = Dataset.open(datasetDir)) {
      PlanProgram program;
      long reported;
      int batches;
      try (Loader loader = job(ds, "job-t").epochs(2).build()) {
        program = loader.planProgram();
        assertEquals(1, client.tiers().path("jobs").size(), "the plan is declared at build");
        batches = run(loader);
        loader.node().flush();
        reported = loader.node().readsReported();
      }
      HttpResponse<String> r = raw("GET", "/v1/trace", null, null);
      assertEquals(200, r.statusCode());
      assertEquals("0", r.headers().firstValue("x-strata-trace-dropped").orElseThrow());
      Path csv = home.resolve("trace.csv");
      Files.writeString(csv, r.body());
      Trace t = Trace.read(csv);
      assertEquals(reported, t.size(), "one row per reported feature chunk");
      assertTrue(t.tier(0) != Trace.Tier.UNKNOWN);
      List<Trace.Control> controls = t.controls();
      var plan = (Trace.PlanRecord) controls.getFirst();
      int[][] expected = program.expand(ds, Long.MAX_VALUE);
      assertEquals(batches, expected.length);
      assertEquals(expected.length, plan.stepChunks().length);
      for (int s = 0; s < expected.length; s++) {
        assertEquals(Arrays.toString(expected[s]), Arrays.toString(plan.stepChunks()[s]), "step " + s);
      }
      long lastStep = controls.stream().filter(c -> c instanceof Trace.StepRecord)
          .mapToLong(c -> ((Trace.StepRecord) c).step()).max().orElse(-1);
      assertEquals(batches - 1, lastStep, "the job reported its last step");
      assertTrue(controls.getLast() instanceof Trace.EndRecord, "closing the loader ends its plan");
      // The same trace replays offline.
      long budget = t.distinctBytes() / 4;
      var opt = Simulator.run(t, new OptPolicy(t, budget));
      var lru = Simulator.run(t, new LruPolicy(budget));
      assertTrue(opt.byteHitRatio() >= lru.byteHitRatio());
      // Clearing empties it.
      assertEquals(200, raw("DELETE", "/v1/trace", null, null).statusCode());
      assertEquals(1, raw("GET", "/v1/trace", null, null).body().strip().lines().count());
    }
    // A program from another loader version, or mixed with a chunk order, is refused by name.
    String good = "{\"algorithm\":\"" + PlanProgram.ALGORITHM + "\",\"mode\":\"samples\",\"unitsPerBatch\":8,"
        + "\"seed\":\"1\",\"shuffle\":true,\"rank\":0,\"world\":1,\"dropLast\":false,\"epochs\":1,\"startStep\":0}";
    Object[][] cases = {
      {good.replace(PlanProgram.ALGORITHM, "feistel-v0"), 400, "plan algorithm 'feistel-v0'"},
      {good.replace("\"samples\"", "\"tapes\""), 400, "plan mode must be samples, rows or windows"},
      {good.replace("\"epochs\":1", "\"epochs\":0"), 400, "'program.epochs'"},
      {good.replace("\"unitsPerBatch\":8", "\"unitsPerBatch\":1e99"), 400, "'program.unitsPerBatch'"},
    };
    for (Object[] c : cases) {
      HttpResponse<String> r = raw("POST", "/v1/plans",
          "{\"job\":\"p\",\"dataset\":\"events\",\"features\":[\"amount\"],\"program\":" + c[0] + "}", null);
      assertEquals((int) c[1], r.statusCode(), r.body());
      assertTrue(Json.parse(r.body()).path("error").asText().contains((String) c[2]), r.body());
    }
    HttpResponse<String> both = raw("POST", "/v1/plans",
        "{\"job\":\"p\",\"dataset\":\"events\",\"features\":[\"amount\"],\"chunkOrder\":[0],\"program\":" + good + "}", null);
    assertEquals(400, both.statusCode());
    HttpResponse<String> ok = raw("POST", "/v1/plans",
        "{\"job\":\"p\",\"dataset\":\"events\",\"features\":[\"amount\"],\"program\":" + good + "}", null);
    assertEquals(201, ok.statusCode(), ok.body());
    assertTrue(Json.parse(ok.body()).path("steps").asLong() > 0, ok.body());
    HttpResponse<String> step = raw("POST", "/v1/reads", "{\"job\":\"p\",\"dataset\":\"events\",\"reads\":[],\"step\":-1}", null);
    assertEquals(400, step.statusCode());
    HttpResponse<String> known = raw("POST", "/v1/reads", "{\"job\":\"p\",\"dataset\":\"events\",\"reads\":[],\"step\":3}", null);
    assertTrue(Json.parse(known.body()).path("planned").asBoolean(), known.body());
    HttpResponse<String> unknown = raw("POST", "/v1/reads", "{\"job\":\"q\",\"dataset\":\"events\",\"reads\":[]}", null);
    assertFalse(Json.parse(unknown.body()).path("planned").asBoolean(), unknown.body());
  }

  @Test
  void aSilentJobsPlanExpiresAndTheJobDeclaresItAgain() throws Exception {
    node.tiers().planLease(0.5);
    try (Dataset ds = Dataset.open(datasetDir); Loader loader = job(ds, "lease-job").epochs(3).build()) {
      Batch first = loader.next();
      first.close();
      loader.node().flush();
      Thread.sleep(800); // silent for longer than the lease
      raw("POST", "/v1/reads", "{\"job\":\"other\",\"dataset\":\"events\",\"reads\":[]}", null); // any call expires it
      assertEquals(0, client.tiers().path("jobs").size(), "the silent job's plan expired");
      // The job's next report (batches prefetched before the expiry may come first) is answered
      // planned: false, so the job declares its plan again.
      JsonNode jobs = client.tiers().path("jobs");
      for (int i = 0; i < 20 && jobs.isEmpty(); i++) {
        loader.next().close();
        loader.node().flush();
        jobs = client.tiers().path("jobs");
      }
      assertEquals(1, jobs.size(), jobs.toString());
      assertEquals("lease-job", jobs.get(0).path("job").asText());
    }
    // A plan too large to hold is refused by name before it is expanded; the job reads on without one, still attached.
    try (Dataset ds = Dataset.open(datasetDir); Loader huge = job(ds, "huge-job").epochs(Integer.MAX_VALUE).build()) {
      for (int i = 0; i < 3; i++) {
        huge.next().close();
      }
      assertTrue(huge.node().connected());
      assertTrue(huge.node().lastError().contains("the node refused the plan") && huge.node().lastError().contains("must be in 1..10000"),
          huge.node().lastError());
    }
  }

  @Test
  void theSsdBudgetHoldsUnderPressure() throws Exception {
    client.setPolicy(Json.object().put("ssdBudgetBytes", 3L << 20));
    try (Dataset ds = Dataset.open(datasetDir)) {
      for (int j = 0; j < 3; j++) {
        try (Loader l = job(ds, "budget-" + j).features(ds.featureNames()).epochs(2).build()) {
          for (Batch b : l) {
            b.close();
            long resident = client.tiers().path("ssd").path("residentBytes").asLong();
            assertTrue(resident <= 3L << 20, "resident " + resident);
          }
        }
      }
      assertTrue(node.awaitIdle(30_000));
      JsonNode s = client.tiers().path("ssd");
      assertTrue(s.path("bytes").asLong() <= (3L << 20) + (1 << 20), "bytes on disk " + s);
    }
  }

  @Test
  void pinnedFeaturesArePromotedAndNeverEvicted() throws Exception {
    client.pin("events", "amount");
    assertTrue(node.awaitIdle(30_000));
    JsonNode r = client.resolve(null, "events", List.of("amount"), null);
    assertEquals(6, r.path("segments").size(), "every chunk of the pinned feature is resident: " + r);
    NodeClient.NodeRequestException e =
        assertThrows(NodeClient.NodeRequestException.class, () -> client.evict("events", List.of("amount"), null));
    assertEquals(409, e.status());
    // Pressure: a small budget and jobs reading other features do not push the pinned feature out.
    client.setPolicy(Json.object().put("ssdBudgetBytes", 2L << 20));
    try (Dataset ds = Dataset.open(datasetDir);
        Loader l = job(ds, "pressure").features("merchant_category", "embedding", "balance").epochs(2).build()) {
      run(l);
    }
    assertTrue(node.awaitIdle(30_000));
    assertEquals(6, client.resolve(null, "events", List.of("amount"), null).path("segments").size());
    // Pinned bytes are reserved: a budget below them, or a pin the budget cannot hold, is refused.
    long pinned = client.policy().path("pinnedBytes").asLong();
    assertTrue(pinned > 0);
    NodeClient.NodeRequestException cut = assertThrows(NodeClient.NodeRequestException.class,
        () -> client.setPolicy(Json.object().put("ssdBudgetBytes", pinned - 1)));
    assertEquals(409, cut.status());
    assertTrue(cut.getMessage().contains("below the " + pinned + " bytes pinned"), cut.getMessage());
    assertEquals(2L << 20, client.policy().path("ssdBudgetBytes").asLong(), "the refused cut changed nothing");
    NodeClient.NodeRequestException all = assertThrows(NodeClient.NodeRequestException.class, () -> client.pin("events", null));
    assertEquals(409, all.status());
    assertEquals(List.of("events/amount"), StreamSupport.stream(client.policy().path("pins").spliterator(), false)
        .map(JsonNode::asText).toList());
    assertEquals(6, client.resolve(null, "events", List.of("amount"), null).path("segments").size());
    client.unpin("events", "amount");
    assertEquals(6, client.evict("events", List.of("amount"), null).path("evicted").asInt());
  }

  /**
   * Every registered policy runs live: switched at once (what is resident and the pins carry
   * over), jobs read under it within the budget, the choice survives a restart, and a name the
   * registry does not know is refused without changing anything.
   */
  @Test
  void aPolicyIsChosenByNameAndReplacedLive() throws Exception {
    assertEquals("strata", client.policy().path("policy").asText());
    assertEquals(Policies.names(),
        StreamSupport.stream(client.policy().path("policies").spliterator(), false).map(JsonNode::asText).toList());
    client.pin("events", "amount");
    client.promote("events", List.of("score"), null);
    assertTrue(node.awaitIdle(30_000));
    client.setPolicy(Json.object().put("ssdBudgetBytes", 3L << 20));
    for (String name : Policies.names()) {
      JsonNode p = client.setPolicy(Json.object().put("policy", name));
      assertEquals(name, p.path("policy").asText());
      assertEquals(6, client.resolve(null, "events", List.of("amount"), null).path("segments").size(),
          "the pinned feature stays resident under " + name);
      try (Dataset ds = Dataset.open(datasetDir);
          Loader l = job(ds, "under-" + name).features("merchant_category", "embedding", "balance").epochs(2).build()) {
        for (Batch b : l) {
          b.close();
          long resident = client.tiers().path("ssd").path("residentBytes").asLong();
          assertTrue(resident <= 3L << 20, name + ": resident " + resident);
        }
      }
      assertTrue(node.awaitIdle(30_000));
      assertEquals(6, client.resolve(null, "events", List.of("amount"), null).path("segments").size(),
          "the pinned feature survived jobs under " + name);
      assertEquals(name, client.tiers().path("policy").path("policy").asText());
    }
    HttpResponse<String> bad = raw("PUT", "/v1/policy", "{\"policy\":\"clairvoyant\", \"ssdBudgetBytes\": 1}", null);
    assertEquals(400, bad.statusCode(), bad.body());
    assertTrue(bad.body().contains("s3fifo"), bad.body());
    assertEquals(3L << 20, client.policy().path("ssdBudgetBytes").asLong(), "the refused change changed nothing");
    client.setPolicy(Json.object().put("policy", "s3fifo"));
    node.close();
    node = CacheNode.start(NodeConfig.embedded(home, 0).withSsdBudget(64L << 20));
    client = new NodeClient(node.url(), null);
    assertEquals("s3fifo", client.policy().path("policy").asText(), "the choice is kept");
    assertTrue(client.policy().path("sources").path("policy").asText().startsWith("policy set at"));
  }

  @Test
  void aRestartKeepsTheSsdTier() throws Exception {
    client.promote("events", List.of("amount", "score"), null);
    assertTrue(node.awaitIdle(30_000));
    JsonNode before = client.resolve(null, "events", List.of("amount", "score"), null);
    assertEquals(12, before.path("segments").size());
    node.close();
    node = CacheNode.start(NodeConfig.embedded(home, 0).withSsdBudget(64L << 20));
    client = new NodeClient(node.url(), null);
    JsonNode after = client.resolve(null, "events", List.of("amount", "score"), null);
    assertEquals(before.path("segments").size(), after.path("segments").size());
    assertTrue(node.startupNotes().isEmpty(), node.startupNotes().toString());
  }

  @Test
  void jobsKeepRunningWhileTheNodeIsDownAndReattach() throws Exception {
    client.promote("events", SHARED, null);
    assertTrue(node.awaitIdle(30_000));
    int port = node.port();
    List<Long> expected = new ArrayList<>();
    try (Dataset ds = Dataset.open(datasetDir);
        Loader plain = Loader.builder(ds).features(SHARED).sampleBatches(64).seed(99).epochs(2).build()) {
      for (Batch b : plain) {
        try (b) {
          expected.add(Columns.checksum(b.column("amount")) ^ Columns.checksum(b.column("embedding")));
        }
      }
    }
    List<Long> got = new ArrayList<>();
    try (Dataset ds = Dataset.open(datasetDir);
        Loader l = Loader.builder(ds).features(SHARED).sampleBatches(64).seed(99).epochs(2).node(client, "survivor")
            .nodeRefresh(50).prefetch(1, 1).build()) {
      int i = 0;
      for (Batch b : l) {
        try (b) {
          got.add(Columns.checksum(b.column("amount")) ^ Columns.checksum(b.column("embedding")));
        }
        if (i == 3) {
          node.close();
          node = null;
        }
        if (i == 10) {
          assertFalse(l.node().connected(), "the loader noticed the node is gone");
          node = CacheNode.start(NodeConfig.embedded(home, port).withSsdBudget(64L << 20));
        }
        i++;
        Thread.sleep(20);
      }
      assertEquals(expected, got, "the same batches with the node up, down and back");
      l.node().refresh();
      assertTrue(l.node().connected(), "re-attached");
      assertTrue(client.tiers().path("jobs").toString().contains("survivor"), "the plan was declared again");
    }
  }

  @Test
  void concurrentJobsAskingTheNodeForADerivedFeatureShareOneComputation() throws Exception {
    String spec = "zscore(seq_mean(log1p(amount), last=32))";
    ExecutorService pool = Executors.newFixedThreadPool(3);
    List<Future<JsonNode>> answers = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      answers.add(pool.submit(() -> client.derive("events", spec)));
    }
    List<String> fps = new ArrayList<>();
    for (var a : answers) {
      JsonNode r = a.get();
      assertTrue(r.path("complete").asBoolean(), r.toString());
      fps.add(r.path("fingerprint").asText());
    }
    pool.shutdown();
    assertEquals(1, fps.stream().distinct().count());
    assertEquals(1, client.tiers().path("traffic").path("derivedComputations").asLong(), "computed once");
    // A job reads it from the SSD tier like any feature, byte-identical to computing it itself.
    List<Long> computed = new ArrayList<>();
    List<Long> fromNode = new ArrayList<>();
    try (Dataset ds = Dataset.open(datasetDir)) {
      try (Loader l = Loader.builder(ds).features("amount", spec).sampleBatches(64).seed(4).build()) {
        for (Batch b : l) {
          try (b) {
            computed.add(Columns.checksum(b.column(spec)));
          }
        }
      }
      try (Loader l = Loader.builder(ds).features("amount", spec).sampleBatches(64).seed(4).node(client, "derived-job").build()) {
        for (Batch b : l) {
          try (b) {
            fromNode.add(Columns.checksum(b.column(spec)));
          }
        }
        assertTrue(l.tierStats().bytes(Tier.SSD) > 0);
      }
    }
    assertEquals(computed, fromNode);
    assertEquals(1, client.derivedFeatures().size());
    HttpResponse<String> bad = raw("POST", "/v1/features", "{\"dataset\": \"events\", \"spec\": \"log1p(merchant_category)\"}", null);
    assertEquals(400, bad.statusCode());
    assertTrue(bad.body().contains("must be numeric"), bad.body());
  }

  @Test
  void evictingUnderAReaderNeverPullsDataFromUnderIt() throws Exception {
    client.promote("events", SHARED, null);
    assertTrue(node.awaitIdle(30_000));
    List<Long> expected = new ArrayList<>();
    try (Dataset ds = Dataset.open(datasetDir);
        Loader plain = Loader.builder(ds).features(SHARED).sampleBatches(64).seed(5).build()) {
      for (Batch b : plain) {
        try (b) {
          expected.add(Columns.checksum(b.column("embedding")) ^ Columns.checksum(b.column("merchant_category")));
        }
      }
    }
    List<Long> got = new ArrayList<>();
    try (Dataset ds = Dataset.open(datasetDir);
        Loader l = Loader.builder(ds).features(SHARED).sampleBatches(64).seed(5).node(client, "reader").nodeRefresh(20)
            .prefetch(1, 1).build()) {
      int i = 0;
      for (Batch b : l) {
        try (b) {
          if (i == 2) {
            // Evict everything while this batch (mapped segments) is in use and the loader holds leases.
            assertTrue(client.evict("events", null, null).path("evicted").asInt() > 0);
            assertTrue(node.awaitIdle(30_000));
          }
          got.add(Columns.checksum(b.column("embedding")) ^ Columns.checksum(b.column("merchant_category")));
        }
        i++;
      }
      assertTrue(l.tierStats().bytes(Tier.SSD) > 0);
    }
    assertEquals(expected, got, "every value stays right across the eviction");
  }

  @Test
  void quotasCapADatasetsShareOfTheSsdTier() throws Exception {
    client.setPolicy(Json.object().set("quotas", Json.object().put("events", 2L << 20)));
    assertEquals(2L << 20, client.policy().path("quotas").path("events").asLong());
    try (Dataset ds = Dataset.open(datasetDir); Loader l = job(ds, "quota").features(ds.featureNames()).epochs(2).build()) {
      run(l);
    }
    assertTrue(node.awaitIdle(30_000));
    long held = client.dataset("events").path("ssdBytes").asLong();
    assertTrue(held > 0 && held <= 2L << 20, "the dataset holds " + held);
    client.setPolicy(Json.object().set("quotas", Json.object().putNull("events")));
    assertTrue(client.policy().path("quotas").isEmpty());
  }

  @Test
  void badRequestsGetJsonErrorsNamingTheProblem() throws Exception {
    Path outside = Files.createDirectories(elsewhere.resolve("outside"));
    Object[][] cases = {
      {"POST", "/v1/datasets", "{\"path\": \"" + outside + "\"}", 403, "outside the node's HDD roots"},
      {"POST", "/v1/datasets", "{\"path\": \"" + home.resolve("hdd/../hdd/events") + "\"}", 403, "'..'"},
      {"POST", "/v1/datasets", "{\"path\": \"relative/dir\"}", 400, "must be absolute"},
      {"POST", "/v1/datasets", "{\"path\": 42}", 400, "'path' must be a string"},
      {"POST", "/v1/datasets", "{not json", 400, "malformed JSON"},
      {"POST", "/v1/datasets", "[1,2]", 400, "must be a JSON object"},
      {"POST", "/v1/datasets", "", 400, "body is required"},
      {"POST", "/v1/resolve", "{\"dataset\": \"nope\", \"features\": [\"a\"]}", 404, "no dataset 'nope'"},
      {"POST", "/v1/resolve", "{\"dataset\": \"events\", \"features\": [\"nope\"]}", 400, "no feature 'nope'"},
      {"POST", "/v1/resolve", "{\"dataset\": \"events\", \"features\": [\"amount\"], \"chunks\": [99]}", 400, "chunk 99 is outside"},
      {"POST", "/v1/resolve", "{\"dataset\": \"events\", \"features\": \"amount\"}", 400, "array of strings"},
      {"POST", "/v1/reads", "{\"job\": \"j\", \"dataset\": \"events\", \"reads\": [{\"feature\": \"amount\", \"chunk\": 0, \"bytes\": 5, \"tier\": \"tape\"}]}", 400, "'tier'"},
      {"POST", "/v1/reads", "{\"job\": \"../x\", \"dataset\": \"events\", \"reads\": []}", 400, "'job'"},
      {"POST", "/v1/plans", "{\"job\": \"j\", \"dataset\": \"events\", \"features\": [\"amount\"], \"epochs\": 0}", 400, "'epochs'"},
      {"DELETE", "/v1/plans/ghost", null, 404, "no job 'ghost'"},
      {"PUT", "/v1/policy", "{\"ssdBudgetBytes\": -5}", 400, "from 0 to"},
      {"PUT", "/v1/policy", "{\"bogus\": 1}", 400, "unknown policy field"},
      {"POST", "/v1/unpin", "{\"dataset\": \"events\"}", 404, "not pinned"},
      {"GET", "/v1/nowhere", null, 404, "no route"},
    };
    for (Object[] c : cases) {
      HttpResponse<String> r = raw((String) c[0], (String) c[1], (String) c[2], null);
      assertEquals((int) c[3], r.statusCode(), c[0] + " " + c[1] + " " + c[2] + " -> " + r.body());
      JsonNode body = Json.parse(r.body());
      assertTrue(body.path("error").asText().contains((String) c[4]), c[1] + ": " + r.body());
    }
    // Symbolic links that leave the HDD roots are refused too.
    Path link = home.resolve("hdd/escape");
    Files.createSymbolicLink(link, outside);
    assertEquals(403, raw("POST", "/v1/datasets", "{\"path\": \"" + link + "\"}", null).statusCode());
    // Bodies are bounded.
    String huge = "{\"path\": \"" + "x".repeat(2 << 20) + "\"}";
    HttpResponse<String> big = raw("POST", "/v1/datasets", huge, null);
    assertEquals(413, big.statusCode());
    assertTrue(Json.parse(big.body()).path("error").asText().contains("exceeds"));
    // A request line or headers too long: the same JSON errors.
    HttpResponse<String> longLine = raw("GET", "/v1/datasets/" + "x".repeat(10_000), null, null);
    assertEquals(414, longLine.statusCode());
    assertTrue(Json.parse(longLine.body()).path("error").asText().contains("request line is too long"), longLine.body());
    HttpResponse<String> bigHeaders = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build().send(HttpRequest.newBuilder(URI.create(node.url() + "/health"))
        .header("X-Padding", "y".repeat(20_000)).build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(431, bigHeaders.statusCode());
    assertTrue(Json.parse(bigHeaders.body()).path("error").asText().contains("headers are too large"), bigHeaders.body());
    // The node still works after all that.
    assertEquals("ok", client.health().path("status").asText());
    assertEquals(200, raw("GET", "/metrics", null, null).statusCode());
  }

  @Test
  void aWebPageOnThisHostCannotChangeTheNode() throws Exception {
    client.promote("events", List.of("amount"), List.of(0));
    assertTrue(node.awaitIdle(30_000));
    String evict = "{\"dataset\":\"events\"}";
    // A cross-site form posts text/plain (no preflight): refused, nothing evicted.
    HttpResponse<String> form = raw("POST", "/v1/evict", evict, null, "text/plain", null);
    assertEquals(415, form.statusCode(), form.body());
    assertTrue(Json.parse(form.body()).path("error").asText().contains("application/json"), form.body());
    assertEquals(415, raw("POST", "/v1/evict", evict, null, null, null).statusCode());
    assertEquals(415, raw("PUT", "/v1/policy", "{\"ssdBudgetBytes\":0}", null, "application/x-www-form-urlencoded", null).statusCode());
    // A page from another origin: refused even with the right type.
    HttpResponse<String> foreign = raw("POST", "/v1/evict", evict, null, "application/json", "http://evil.example");
    assertEquals(403, foreign.statusCode(), foreign.body());
    assertTrue(Json.parse(foreign.body()).path("error").asText().contains("another origin"), foreign.body());
    assertEquals(403, raw("DELETE", "/v1/trace", null, null, null, "https://evil.example:8443").statusCode());
    assertTrue(client.tiers().path("ssd").path("segments").asInt() > 0, "nothing was evicted");
    // The node's own dashboard origin may.
    assertEquals(200, raw("POST", "/v1/evict", evict, null, "application/json; charset=utf-8", "http://127.0.0.1:1234").statusCode());
    // DNS rebinding: a request addressed to another name is refused, reads included.
    for (String req : List.of("GET /v1/datasets HTTP/1.1\r\nHost: evil.example\r\n\r\n",
        "POST /v1/evict HTTP/1.1\r\nHost: 127.evil.invalid\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")) {
      URI u = URI.create(node.url());
      try (Socket sock = new Socket(u.getHost(), u.getPort())) {
        sock.getOutputStream().write(req.getBytes(StandardCharsets.US_ASCII));
        sock.getOutputStream().flush();
        String status = new BufferedReader(new InputStreamReader(sock.getInputStream(), java.nio.charset.StandardCharsets.UTF_8)).readLine();
        assertTrue(status.contains(" 403 "), req + " -> " + status);
      }
    }
  }

  @Test
  void outOfRangeNumbersAreRefusedAndARefusedChangeChangesNothing() throws Exception {
    long before = client.policy().path("ssdBudgetBytes").asLong();
    for (String body : List.of("{\"ssdBudgetBytes\":18446744073709551616}", "{\"ssdBudgetBytes\":99999999999999999999999}",
        "{\"ssdBudgetBytes\":1.5}", "{\"ssdBudgetBytes\":1, \"popularityDiscount\":1e999}",
        "{\"ssdBudgetBytes\":1, \"quotas\":{\"nope\":5}}")) {
      HttpResponse<String> r = raw("PUT", "/v1/policy", body, null);
      assertTrue(r.statusCode() == 400 || r.statusCode() == 404, body + " -> " + r.statusCode() + " " + r.body());
      assertEquals(before, client.policy().path("ssdBudgetBytes").asLong(), body + " changed the budget");
    }
    HttpResponse<String> big = raw("POST", "/v1/reads",
        "{\"job\":\"j\",\"dataset\":\"events\",\"reads\":[{\"feature\":\"amount\",\"chunk\":0,\"bytes\":99999999999999999999999,\"tier\":\"hdd\"}]}",
        null);
    assertEquals(400, big.statusCode(), big.body());
    // A job reads from its host's tiers: a read said to come from a peer (or no tier) is refused by name.
    for (String tier : List.of("peer", "SSD", "tape")) {
      HttpResponse<String> r = raw("POST", "/v1/reads",
          "{\"job\":\"j\",\"dataset\":\"events\",\"reads\":[{\"feature\":\"amount\",\"chunk\":0,\"bytes\":1,\"tier\":\"" + tier + "\"}]}",
          null);
      assertEquals(400, r.statusCode(), r.body());
      assertTrue(r.body().contains("'tier' must be \\\"ssd\\\" or \\\"hdd\\\"") && r.body().contains(tier), r.body());
    }
  }

  @Test
  void aDerivationIsAJobToPollAndAskingAgainJoinsIt() throws Exception {
    String spec = "zscore(seq_mean(log1p(amount),last=48))";
    long t0 = System.nanoTime();
    HttpResponse<String> first = raw("POST", "/v1/features", "{\"dataset\": \"events\", \"spec\": \"" + spec + "\"}", null);
    assertEquals(202, first.statusCode(), first.body());
    JsonNode job = Json.parse(first.body());
    String id = job.path("job").asText();
    assertTrue(id.startsWith("derive-"), first.body());
    assertEquals("/v1/features/jobs/" + id, first.headers().firstValue("location").orElse(""));
    HttpResponse<String> again = raw("POST", "/v1/features", "{\"dataset\": \"events\", \"spec\": \" " + spec + " \"}", null);
    JsonNode second = Json.parse(again.body());
    if (!second.path("state").asText().equals("done")) {
      assertEquals(id, second.path("job").asText(), "the same feature asked again joins the job in flight");
    }
    JsonNode state = job;
    long polls = 0;
    while (!state.path("state").asText().equals("done")) {
      assertTrue(!state.path("state").asText().equals("failed"), state.toString());
      assertTrue(System.nanoTime() - t0 < 120e9, "the derivation finished within two minutes: " + state);
      Thread.sleep(50);
      state = client.derivation(id);
      polls++;
    }
    assertEquals(client.derive("events", spec).path("fingerprint").asText(), state.path("feature").path("fingerprint").asText());
    int chunks = state.path("feature").path("chunks").asInt();
    assertTrue(chunks > 1, state.toString());
    assertEquals(chunks, state.path("progress").path("chunks").asInt(), state.toString());
    assertEquals(chunks, state.path("progress").path("chunksDone").asInt(), state.toString());
    assertTrue(state.path("feature").path("complete").asBoolean(), state.toString());
    HttpResponse<String> unknown = raw("GET", "/v1/features/jobs/derive-999999", null, null);
    assertEquals(404, unknown.statusCode());
    assertTrue(unknown.body().contains("no derivation job"), unknown.body());
    System.out.printf("derivation job %s polled %d times%n", id, polls);
  }

  @Test
  void reRegisteringADatasetNeverClosesItUnderADerivation() throws Exception {
    JsonNode job = client.startDerive("events", "zscore(seq_mean(log1p(amount),last=80))");
    String id = job.path("job").asText();
    int registrations = 0;
    while (job.path("state").asText().equals("queued") || job.path("state").asText().equals("running")) {
      client.registerDataset(datasetDir); // the cache drops its open dataset each time
      registrations++;
      Thread.sleep(10);
      job = client.derivation(id);
    }
    assertEquals("done", job.path("state").asText(), job.toString());
    assertTrue(registrations > 1, "re-registered while deriving: " + registrations);
  }

  @Test
  void derivesInFlightDoNotHoldUpResolves() throws Exception {
    // Six jobs ask for the same derived feature at once (one computes, the others wait for it);
    // a resolve sent after them must not queue behind them. Decided by time, so a stall of the
    // machine could fake a hold-up once: three tries, each with a feature not computed yet (a real
    // hold-up fails every one).
    List<String> outcomes = new ArrayList<>();
    for (int attempt = 0; attempt < 3; attempt++) {
      String spec = "zscore(seq_mean(log1p(amount),last=" + (64 + attempt) + "))";
      ExecutorService pool = Executors.newFixedThreadPool(7);
      try {
        List<Future<Long>> derives = new ArrayList<>();
        long sent = System.nanoTime();
        for (int i = 0; i < 6; i++) {
          derives.add(pool.submit(() -> {
            client.derive("events", spec);
            return System.nanoTime();
          }));
        }
        Thread.sleep(100);
        Future<Long> resolve = pool.submit(() -> {
          client.resolve("r", "events", List.of("amount"), null);
          return System.nanoTime();
        });
        long resolved = resolve.get();
        long firstDerive = Long.MAX_VALUE;
        for (var d : derives) {
          firstDerive = Math.min(firstDerive, d.get());
        }
        outcomes.add(String.format("resolve %.1f ms, first derive %.1f ms", (resolved - sent) / 1e6, (firstDerive - sent) / 1e6));
        if (resolved < firstDerive) {
          return;
        }
      } finally {
        pool.shutdownNow();
      }
    }
    fail("the resolve answered after a derive finished in every try: " + outcomes);
  }

  @Test
  void aFailedPromotionShowsInTheStatusAndTheChunkStaysOnOrc() throws Exception {
    Path part;
    try (Stream<Path> s = Files.list(datasetDir)) {
      part = s.filter(p -> p.toString().endsWith(".orc")).sorted().findFirst().orElseThrow();
    }
    Files.move(part, part.resolveSibling(part.getFileName() + ".away"));
    client.promote("events", List.of("amount"), List.of(0));
    assertTrue(node.awaitIdle(30_000));
    JsonNode traffic = client.tiers().path("traffic");
    assertTrue(traffic.path("promotionFailures").asLong() >= 1, traffic.toString());
    assertTrue(traffic.path("lastPromotionFailure").asText().contains("events/amount chunk 0")
        && traffic.path("lastPromotionFailure").asText().contains(part.getFileName().toString()), traffic.toString());
    assertEquals(0, client.resolve(null, "events", List.of("amount"), List.of(0)).path("segments").size());
  }

  @Test
  void aDatasetThatFailsConfinementAfterARestartIsListedAsRefusedAndTheRestServed() throws Exception {
    Path other = home.resolve("hdd/other");
    copyTree(datasetDir, other);
    Path manifest = other.resolve("manifest.json");
    Files.writeString(manifest, Files.readString(manifest).replace("\"events\"", "\"other\""));
    client.registerDataset(other);
    node.close();
    // While the node is down, a part of 'other' becomes a link out of the roots.
    Path secret = Files.writeString(elsewhere.resolve("secret.orc"), "secret");
    String part = Json.parse(Files.readString(manifest)).path("files").get(0).path("path").asText();
    Files.delete(other.resolve(part));
    Files.createSymbolicLink(other.resolve(part), secret);
    node = CacheNode.start(NodeConfig.embedded(home, 0).withSsdBudget(64L << 20));
    client = new NodeClient(node.url(), null);
    HttpResponse<String> r = raw("GET", "/v1/datasets", null, null);
    assertEquals(200, r.statusCode(), r.body());
    JsonNode list = Json.parse(r.body());
    assertEquals(2, list.size(), r.body());
    assertEquals("events", list.get(0).path("name").asText());
    assertTrue(list.get(0).path("chunks").asInt() > 0 && !list.get(0).has("refused"), "the sound dataset is served");
    assertEquals("other", list.get(1).path("name").asText());
    assertTrue(list.get(1).path("refused").asText().contains("points outside the node's HDD roots"), r.body());
    assertEquals(403, raw("GET", "/v1/datasets/other", null, null).statusCode());
    assertEquals(200, raw("GET", "/v1/datasets/events", null, null).statusCode());
  }

  @Test
  void aPartReplacedByALinkOutAfterRegistrationIsNeverRead() throws Exception {
    // A valid ORC file outside the roots, with the same schema (another copy of the dataset).
    Path copy = elsewhere.resolve("copy");
    copyTree(datasetDir, copy);
    String part = Json.parse(Files.readString(datasetDir.resolve("manifest.json"))).path("files").get(0).path("path").asText();
    Path inside = datasetDir.resolve(part);
    Files.move(inside, inside.resolveSibling(part + ".moved"));
    Files.createSymbolicLink(inside, copy.resolve(part));
    long before = client.tiers().path("traffic").path("promotionFailures").asLong();
    client.promote("events", List.of("amount"), List.of(0, 1));
    assertTrue(node.awaitIdle(30_000));
    JsonNode traffic = client.tiers().path("traffic");
    assertTrue(traffic.path("promotionFailures").asLong() > before, traffic.toString());
    assertTrue(traffic.path("lastPromotionFailure").asText().contains("leads outside the node's HDD roots"), traffic.toString());
    assertEquals(0, client.resolve(null, "events", List.of("amount"), List.of(0, 1)).path("segments").size(),
        "nothing was promoted from the file outside");
    // Back in place, the same request promotes.
    Files.delete(inside);
    Files.move(inside.resolveSibling(part + ".moved"), inside);
    client.promote("events", List.of("amount"), List.of(0));
    assertTrue(node.awaitIdle(30_000));
    assertEquals(1, client.resolve(null, "events", List.of("amount"), List.of(0)).path("segments").size());
  }

  @Test
  void aSegmentReplacedByALinkIsDroppedNotServed() throws Exception {
    client.promote("events", List.of("amount"), List.of(0));
    assertTrue(node.awaitIdle(30_000));
    JsonNode seg = client.resolve(null, "events", List.of("amount"), List.of(0)).path("segments").get(0);
    Path file = Path.of(seg.path("path").asText());
    node.close();
    Path copy = Files.copy(file, elsewhere.resolve("segment.arrow"));
    Files.delete(file);
    Files.createSymbolicLink(file, copy);
    node = CacheNode.start(NodeConfig.embedded(home, 0).withSsdBudget(64L << 20));
    client = new NodeClient(node.url(), null);
    assertTrue(node.startupNotes().stream().anyMatch(n -> n.contains("leads outside the SSD directory")), node.startupNotes().toString());
    assertEquals(0, client.resolve(null, "events", List.of("amount"), List.of(0)).path("segments").size());
    assertFalse(Files.exists(file, LinkOption.NOFOLLOW_LINKS), "the link is gone");
    assertTrue(Files.exists(copy), "what it named is untouched");
  }

  @Test
  void aResidentSegmentDeletedUnderTheNodeIsNoticedDroppedAndPlacedAgain() throws Exception {
    client.promote("events", List.of("amount"), List.of(0, 1));
    assertTrue(node.awaitIdle(30_000));
    JsonNode before = client.resolve(null, "events", List.of("amount"), List.of(0, 1));
    Path gone = Path.of(before.path("segments").get(0).path("path").asText());
    Files.delete(gone);
    // Nobody reads it: the node's sweep notices within one sweep interval.
    long deadline = System.nanoTime() + (SegmentScrub.SWEEP_MILLIS + 20_000) * 1_000_000;
    JsonNode ssd = client.tiers().path("ssd");
    while (ssd.path("vanishedSegments").asLong() == 0 && System.nanoTime() < deadline) {
      Thread.sleep(100);
      ssd = client.tiers().path("ssd");
    }
    assertEquals(1, ssd.path("vanishedSegments").asLong(), ssd.toString());
    assertTrue(ssd.path("lastDamagedSegment").asText().contains(gone.getFileName().toString()), ssd.toString());
    assertTrue(node.awaitIdle(30_000));
    JsonNode after = client.resolve(null, "events", List.of("amount"), List.of(0, 1));
    assertEquals(2, after.path("segments").size(), "placed again: " + after);
    for (JsonNode seg : after.path("segments")) {
      assertTrue(Files.isRegularFile(Path.of(seg.path("path").asText())), "every segment listed is on disk: " + seg);
    }
    assertTrue(client.tiers().path("ssd").path("repairedSegments").asLong() >= 1);
    assertTrue(client.metrics().contains("strata_vanished_segments_total 1.0"), "counted in the metrics too");
  }

  @Test
  void theScrubFindsAFlippedByteInAResidentSegmentAndPlacesItAgain() throws Exception {
    assertTrue(SegmentScrub.MIN_PASS_MILLIS <= 1_000, "the tests run with passes at most a second apart (pom.xml)");
    node.close();
    node = CacheNode.start(NodeConfig.embedded(home, 0).withSsdBudget(64L << 20).withScrubRate(256L << 20));
    client = new NodeClient(node.url(), null);
    client.promote("events", List.of("amount", "score"), List.of(0));
    assertTrue(node.awaitIdle(30_000));
    JsonNode seg = client.resolve(null, "events", List.of("amount"), List.of(0)).path("segments").get(0);
    Path file = Path.of(seg.path("path").asText());
    long residency = client.resolve(null, "events", List.of("amount"), List.of(0)).path("residency").asLong();
    // A bit flipped in the middle of the file (a value), the size unchanged: only a checksum tells.
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE,
        StandardOpenOption.READ)) {
      ByteBuffer b = ByteBuffer.allocate(1);
      long at = ch.size() / 2;
      ch.read(b, at);
      b.put(0, (byte) (b.get(0) ^ 0x10)).rewind();
      ch.write(b, at);
    }
    long deadline = System.nanoTime() + 30_000_000_000L;
    JsonNode ssd = client.tiers().path("ssd");
    while (ssd.path("damagedSegments").asLong() == 0 && System.nanoTime() < deadline) {
      Thread.sleep(100);
      ssd = client.tiers().path("ssd");
    }
    assertEquals(1, ssd.path("damagedSegments").asLong(), ssd.toString());
    assertTrue(ssd.path("scrubbedBytes").asLong() > 0 && ssd.path("scrubBytesPerSecond").asLong() == 256L << 20, ssd.toString());
    assertTrue(node.awaitIdle(30_000));
    JsonNode after = client.resolve(null, "events", List.of("amount"), List.of(0));
    assertTrue(after.path("residency").asLong() != residency, "jobs on the host see the residency change");
    assertEquals(1, after.path("segments").size(), after.toString());
    Path again = Path.of(after.path("segments").get(0).path("path").asText());
    assertFalse(again.equals(file), "a new file");
    assertEquals(null, SegmentStore.recheck(again, "amount", 0), "placed again, intact");
    assertFalse(Files.exists(file), "the damaged file is gone");
  }

  @Test
  void aManifestNamingAMissingPartIsRefusedAtRegistration() throws Exception {
    String original = Files.readString(datasetDir.resolve("manifest.json"));
    String part = Json.parse(original).path("files").get(0).path("path").asText();
    int i = 0;
    for (String missing : List.of("file://" + datasetDir.resolve("nothing.orc"), "nothing.orc", ".")) {
      Path copy = home.resolve("hdd/missing" + i);
      copyTree(datasetDir, copy);
      Files.writeString(copy.resolve("manifest.json"), original.replace("\"" + part + "\"", "\"" + missing + "\"")
          .replace("\"events\"", "\"missing" + i++ + "\""));
      HttpResponse<String> r = raw("POST", "/v1/datasets", "{\"path\": \"" + copy + "\"}", null);
      assertEquals(400, r.statusCode(), missing + ": " + r.body());
      assertTrue(r.body().contains("files[0].path names no file"), r.body());
    }
    assertEquals(1, client.datasets().size(), "nothing was registered");
  }

  @Test
  void aPathOutsideTheRootsGetsOneAnswerWhetherItExistsOrNot() throws Exception {
    Path there = Files.createDirectories(elsewhere.resolve("private"));
    Set<String> answers = new HashSet<>();
    for (Path p : List.of(there, elsewhere.resolve("nonexistent"), Path.of("/root/.nonexistent-strata"), Path.of("/proc/1"))) {
      HttpResponse<String> r = raw("POST", "/v1/datasets", "{\"path\": \"" + p + "\"}", null);
      assertEquals(403, r.statusCode(), p + ": " + r.body());
      answers.add(Json.parse(r.body()).path("error").asText().replace(p.toString(), "PATH"));
    }
    assertEquals(1, answers.size(), "one answer for everything outside the roots: " + answers);
    // Inside the roots a caller may learn what is missing.
    assertEquals(404, raw("POST", "/v1/datasets", "{\"path\": \"" + home.resolve("hdd/nothing-here") + "\"}", null).statusCode());
  }

  @Test
  void aDatasetWhoseManifestPointsOutsideTheRootsIsRefused() throws Exception {
    Path outside = Files.createDirectories(elsewhere.resolve("secret"));
    Path secret = Files.writeString(outside.resolve("part.orc"), "secret");
    Path manifest = datasetDir.resolve("manifest.json");
    String original = Files.readString(manifest);
    JsonNode m = Json.parse(original);
    String firstPart = m.path("files").get(0).path("path").asText();
    List<String> escapes = List.of(secret.toString(), "../../../" + home.getParent().relativize(secret), outside.resolve("missing.orc").toString());
    for (int i = 0; i < escapes.size(); i++) {
      Path copy = home.resolve("hdd/escape" + i);
      copyTree(datasetDir, copy);
      Files.writeString(copy.resolve("manifest.json"), original.replace("\"" + firstPart + "\"", "\"" + escapes.get(i) + "\"")
          .replace("\"events\"", "\"escape" + i + "\""));
      HttpResponse<String> r = raw("POST", "/v1/datasets", "{\"path\": \"" + copy + "\"}", null);
      assertEquals(403, r.statusCode(), escapes.get(i) + ": " + r.body());
      String error = Json.parse(r.body()).path("error").asText();
      assertTrue(error.contains("files[0].path points outside the node's HDD roots"), error);
      assertFalse(error.contains("exist") || error.contains("secret"), "the answer tells nothing of the file: " + error);
    }
    // A part file that is a link out of the roots.
    Path linked = home.resolve("hdd/linked");
    copyTree(datasetDir, linked);
    Files.writeString(linked.resolve("manifest.json"), original.replace("\"events\"", "\"linked\""));
    Path part = linked.resolve(firstPart);
    Files.delete(part);
    Files.createSymbolicLink(part, secret);
    assertEquals(403, raw("POST", "/v1/datasets", "{\"path\": \"" + linked + "\"}", null).statusCode());
    assertEquals(List.of("events"), StreamSupport.stream(client.datasets().spliterator(), false)
        .map(d -> d.path("name").asText()).toList(), "nothing was registered");
  }

  private static void copyTree(Path from, Path to) throws IOException {
    try (Stream<Path> s = Files.walk(from)) {
      for (Path p : s.toList()) {
        Path t = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(t);
        } else {
          Files.copy(p, t);
        }
      }
    }
  }

  @Test
  void aNodeBoundElsewhereRequiresItsTokenForChanges() throws Exception {
    assertThrows(IllegalArgumentException.class, () -> NodeConfig.embedded(home, 0).withBind("0.0.0.0", null));
    // A name is loopback by what it resolves to, not by how it starts.
    assertThrows(IllegalArgumentException.class, () -> NodeConfig.embedded(home, 0).withBind("127.evil.invalid", null));
    NodeConfig.embedded(home, 0).withBind("localhost", null);
    // A short token is refused on loopback too (issue 51: a 5-character token was taken).
    IllegalArgumentException shortOne = assertThrows(IllegalArgumentException.class,
        () -> NodeConfig.embedded(home, 0).withBind("127.0.0.1", "abcde"));
    assertTrue(shortOne.getMessage().contains("at least 16 characters"), shortOne.getMessage());
    // A token that a request could never carry (header values are trimmed ASCII) is refused at start.
    for (String never : List.of(" ".repeat(20), "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t", "0123456789abcdef with-space",
        "0123456789abcdef\u00e9\u00e9", "")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> NodeConfig.embedded(home, 0).withBind("0.0.0.0", never), "token '" + never + "'");
      assertTrue(e.getMessage().contains("printable ASCII"), e.getMessage());
    }
    node.close();
    String token = "0123456789abcdef-secret";
    node = CacheNode.start(NodeConfig.embedded(home, 0).withBind("127.0.0.1", token));
    assertEquals(401, raw("POST", "/v1/pin", "{\"dataset\": \"events\"}", null).statusCode());
    assertEquals(401, raw("POST", "/v1/pin", "{\"dataset\": \"events\"}", "wrong").statusCode());
    assertEquals(200, raw("GET", "/v1/tiers", null, null).statusCode(), "reads need no token");
    assertEquals(200, raw("POST", "/v1/pin", "{\"dataset\": \"events\", \"feature\": \"amount\"}", token).statusCode());
  }

  @Test
  void bytesReadFromEachTierMeanTheSameToTheJobAndToTheNode() throws Exception {
    client.promote("events", List.of("amount", "score"), List.of(0, 1));
    assertTrue(node.awaitIdle(30_000));
    long jobSsd;
    long jobHdd;
    try (Dataset ds = Dataset.open(datasetDir); Loader l = job(ds, "one-definition").epochs(2).build()) {
      run(l);
      l.node().flush();
      jobSsd = l.tierStats().bytes(Tier.SSD);
      jobHdd = l.tierStats().bytes(Tier.HDD);
      assertTrue(l.tierStats().orcDecodedBytes() > 0, "what decoding cost is counted apart");
    }
    JsonNode traffic = client.tiers().path("traffic");
    assertTrue(jobSsd > 0 && jobHdd > 0, jobSsd + " / " + jobHdd);
    assertEquals(jobSsd, traffic.path("ssdBytes").asLong(), "SSD bytes: the job's figure is the node's");
    assertEquals(jobHdd, traffic.path("hddBytes").asLong(), "HDD bytes: the job's figure is the node's");
  }

  @Test
  void metricsAndStatusReportTheTiers() throws Exception {
    String during;
    try (Dataset ds = Dataset.open(datasetDir); Loader l = job(ds, "metrics").build()) {
      run(l);
      l.node().flush();
      during = client.metrics();
    }
    String m = client.metrics();
    assertTrue(m.contains("# TYPE strata_reads_total counter"), m);
    assertTrue(m.contains("# HELP strata_reads_total Feature chunk reads the jobs reported"), m);
    assertTrue(m.contains("strata_read_bytes_total{tier=\"hdd\"}"), m);
    // Per dataset and, while its plan lives, per job; latency histograms; the JVM and the process.
    assertTrue(m.contains("strata_dataset_read_bytes_total{dataset=\"events\",tier=\"hdd\"}"), m);
    assertTrue(during.contains("strata_job_read_bytes_total{job=\"metrics\",tier=\"hdd\"}"), during);
    assertFalse(m.contains("job=\"metrics\""), "a job's series goes with its plan");
    assertTrue(m.contains("strata_resolve_seconds_bucket{le="), m);
    assertTrue(m.contains("strata_resolve_seconds_count"), m);
    assertTrue(m.contains("strata_promotion_seconds_bucket{source=\"orc\",le="), m);
    for (String s : List.of("jvm_memory_used_bytes", "jvm_gc_", "jvm_threads_live_threads", "process_cpu_usage",
        "process_files_open_files", "process_uptime_seconds", "strata_ssd_budget_bytes", "strata_byte_hit_ratio")) {
      assertTrue(m.contains(s), s + " in " + m);
    }
    JsonNode s = client.tiers();
    assertTrue(s.path("traffic").path("reads").asLong() > 0);
    assertNotNull(s.path("topStreams").get(0));
  }
}
