package io.strata.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.Progress;
import io.strata.sdk.files.Manifest;
import io.strata.sdk.hadoop.HadoopFileSystems;
import io.strata.sdk.internal.Json;
import io.strata.tools.DatasetGenerator;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 51's probes of a running node, each as it was run: what a request may learn of files
 * outside the roots, a name node that never answers, plans and bodies sized to exhaust the node,
 * content types the API does not take.
 */
class NodeProbesTest {
  @TempDir Path home;
  CacheNode node;
  final List<AutoCloseable> closing = new ArrayList<>();

  @AfterEach
  void stop() throws Exception {
    for (AutoCloseable c : closing.reversed()) {
      c.close();
    }
    if (node != null) {
      node.close();
    }
  }

  private Path generate(String name) throws IOException {
    Path dir = home.resolve("hdd").resolve(name);
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of(name, 20_000, 3).withFeatures(5).withChunking(5_000, 2)
        .withMeanSampleLength(20), Progress.NONE);
    return dir;
  }

  private HttpResponse<String> send(String method, String path, String body, String type) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(node.url() + path)).timeout(Duration.ofSeconds(60))
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    if (type != null) {
      b.header("Content-Type", type);
    }
    return HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> register(String path) throws Exception {
    return send("POST", "/v1/datasets", Json.compact(Json.object().put("path", path)), "application/json");
  }

  /** The answer with the path it names taken out: what the caller learns beyond the name it sent. */
  private static String without(HttpResponse<String> r, String path) {
    return r.statusCode() + " " + r.body().replace(path, "PATH");
  }

  @Test
  void aNameThroughALinkOutOfTheRootsIsAnsweredAlikeWhetherItsTargetExistsOrNot() throws Exception {
    Path ds = generate("events");
    node = CacheNode.start(NodeConfig.embedded(home, 0).withSsdBudget(16L << 20));
    Path root = home.resolve("hdd");
    Files.createSymbolicLink(root.resolve("l_etc"), Path.of("/etc"));
    String there = root.resolve("l_etc/systemd").toString();
    String missing = root.resolve("l_etc/systemdx").toString();
    HttpResponse<String> a = register(there);
    HttpResponse<String> b = register(missing);
    assertEquals(403, a.statusCode(), a.body());
    assertEquals(without(a, there), without(b, missing), "one answer whether /etc/systemd exists or not");
    assertEquals(404, register(root.resolve("nothing-here").toString()).statusCode(), "inside the roots, a missing one is 404");

    // A dataset whose part is a link out: to a file that exists, or to none, the same refusal.
    Manifest m = Manifest.read(ds);
    String part = m.files().get(0).path();
    List<String> answers = new ArrayList<>();
    for (String target : new String[] {"/etc/passwd", "/etc/no-such-file-here"}) {
      Path copy = home.resolve("hdd/copy-" + answers.size());
      Files.createDirectories(copy);
      try (var s = Files.list(ds)) {
        for (Path p : s.toList()) {
          if (Files.isRegularFile(p)) {
            Files.copy(p, copy.resolve(p.getFileName()));
          }
        }
      }
      Files.delete(copy.resolve(part));
      Files.createSymbolicLink(copy.resolve(part), Path.of(target));
      HttpResponse<String> r = register(copy.toString());
      answers.add(without(r, copy.toString()));
    }
    assertTrue(answers.get(0).startsWith("403 "), answers.get(0));
    assertEquals(answers.get(0), answers.get(1), "a part linked to a file outside or to nothing: one answer");
  }

  @Test
  void aNameNodeThatAcceptsAndNeverAnswersFailsItsOwnRequestsInSecondsAndNoOneElses() throws Exception {
    String before = System.getProperty("strata.hdfs.callSeconds");
    System.setProperty("strata.hdfs.callSeconds", "2");
    closing.add(() -> {
      if (before == null) {
        System.clearProperty("strata.hdfs.callSeconds");
      } else {
        System.setProperty("strata.hdfs.callSeconds", before);
      }
    });
    ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    closing.add(silent);
    List<Socket> held = new ArrayList<>();
    closing.add(() -> {
      for (Socket s : held) {
        s.close();
      }
    });
    Thread.ofVirtual().start(() -> {
      try {
        while (true) {
          Socket s = silent.accept(); // accepted, read from by no one, never answered
          synchronized (held) {
            held.add(s);
          }
        }
      } catch (IOException closed) {
        // the test is over
      }
    });
    String nn = "hdfs://127.0.0.1:" + silent.getLocalPort();
    Path local = generate("events");
    node = CacheNode.start(NodeConfig.embedded(home, 0).withSsdBudget(16L << 20)
        .withHddRoots(List.of(home.resolve("hdd"), HadoopFileSystems.path(URI.create(nn + "/x")))));
    long t0 = System.nanoTime();
    HttpResponse<String> hdfs = register(nn + "/x/events");
    double hdfsSeconds = (System.nanoTime() - t0) / 1e9;
    assertEquals(503, hdfs.statusCode(), hdfs.body());
    assertTrue(hdfs.body().contains("did not answer within 2 s"), hdfs.body());
    assertTrue(hdfsSeconds < 10, "failed in " + hdfsSeconds + " s");
    // Meanwhile, and after, local datasets are served as if the name node were not there.
    t0 = System.nanoTime();
    HttpResponse<String> ok = register(local.toString());
    assertEquals(201, ok.statusCode(), ok.body());
    HttpResponse<String> resolve = send("POST", "/v1/resolve", "{\"dataset\":\"events\",\"features\":[\"amount\"]}",
        "application/json");
    assertEquals(200, resolve.statusCode(), resolve.body());
    assertTrue((System.nanoTime() - t0) / 1e9 < 5, "local requests are not held by the silent name node");
    // Asked again at once: refused at once, naming the name node.
    t0 = System.nanoTime();
    HttpResponse<String> again = register(nn + "/x/events");
    assertEquals(503, again.statusCode(), again.body());
    assertTrue((System.nanoTime() - t0) / 1e9 < 1.5, again.body());
    JsonNode e = Json.parse(again.body().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    assertTrue(e.path("error").asText().contains(nn), again.body());
  }

  private static String program(int epochs, long startStep) {
    return "{\"algorithm\":\"" + io.strata.sdk.loader.PlanProgram.ALGORITHM + "\",\"mode\":\"samples\",\"unitsPerBatch\":1,"
        + "\"seed\":\"7\",\"shuffle\":true,\"rank\":0,\"world\":1,\"dropLast\":false,\"epochs\":" + epochs
        + ",\"startStep\":" + startStep + "}";
  }

  @Test
  void aPlanProgramIsBoundedBeforeItIsExpandedAndALongOneIsHeldAWindowAtATime() throws Exception {
    generate("events");
    node = CacheNode.start(NodeConfig.embedded(home, 0).withSsdBudget(16L << 20));
    assertEquals(201, register(home.resolve("hdd/events").toString()).statusCode());
    Runtime rt = Runtime.getRuntime();
    long t0 = System.nanoTime();
    HttpResponse<String> huge = send("POST", "/v1/plans", "{\"job\":\"j\",\"dataset\":\"events\",\"features\":[\"amount\"],"
        + "\"program\":" + program(100_000, 0) + "}", "application/json");
    assertEquals(400, huge.statusCode(), huge.body());
    assertTrue(huge.body().contains("'program.epochs' must be in 1..10000"), huge.body());
    assertTrue((System.nanoTime() - t0) / 1e9 < 2, "refused before anything is expanded");

    // 10,000 epochs of one sample a step: millions of steps, held a window at a time.
    HttpResponse<String> longOne = send("POST", "/v1/plans", "{\"job\":\"j\",\"dataset\":\"events\",\"features\":"
        + "[\"amount\",\"is_online\"],\"program\":" + program(10_000, 0) + "}", "application/json");
    assertEquals(201, longOne.statusCode(), longOne.body());
    JsonNode a = Json.parse(longOne.body().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    long perEpoch = a.path("stepsPerEpoch").asLong();
    assertEquals(perEpoch * 10_000, a.path("steps").asLong(), longOne.body());
    assertTrue(a.path("reads").asLong() <= PlanIntake.WINDOW_READS, "a window held, not the plan: " + longOne.body());
    var held = node.tiers().planOf("j");
    assertEquals(0, held.firstStep());
    long windowSteps = held.steps();
    assertTrue(windowSteps < perEpoch * 10_000, "window " + windowSteps);
    assertTrue(rt.totalMemory() - rt.freeMemory() < 1L << 30, "the node's heap stays small");
    // Half way through the window, the next one is expanded from the step reached.
    long mid = windowSteps / 2 + 1;
    HttpResponse<String> reads = send("POST", "/v1/reads", "{\"job\":\"j\",\"dataset\":\"events\",\"reads\":[],\"step\":"
        + mid + "}", "application/json");
    assertEquals(200, reads.statusCode(), reads.body());
    var next = node.tiers().planOf("j");
    assertEquals(mid, next.firstStep(), "the window moved to the step reached");
    // The window's keys are the program's own: the same as expanding the program from that step.
    try (var ds = io.strata.sdk.dataset.Dataset.open(home.resolve("hdd/events"))) {
      var p = io.strata.sdk.loader.PlanProgram.fromJson(Json.parse(program(10_000, mid).getBytes(java.nio.charset.StandardCharsets.UTF_8)));
      int[][] expect = p.expandWindow(ds, next.steps() * 2L);
      assertEquals(expect[0].length * 2, next.stepEnds()[0], "the first step's reads: its chunks times the features");
    }
    assertEquals(200, send("DELETE", "/v1/plans/j", null, null).statusCode());
    assertEquals(null, node.tiers().planOf("j"));
  }

  @Test
  void bodiesOfAnyTypeButJsonAreRefusedWith415() throws Exception {
    node = CacheNode.start(NodeConfig.embedded(home, 0).withSsdBudget(16L << 20));
    for (String[] r : new String[][] {{"GET", "/nope"}, {"GET", "/v1/policy"}, {"POST", "/v1/datasets"}}) {
      HttpRequest req = HttpRequest.newBuilder(URI.create(node.url() + r[1])).method(r[0], HttpRequest.BodyPublishers.noBody())
          .header("Content-Type", "application/x-www-form-urlencoded").build();
      HttpResponse<String> a = HttpClient.newHttpClient().send(req, HttpResponse.BodyHandlers.ofString());
      assertEquals(415, a.statusCode(), r[0] + " " + r[1] + ": " + a.body());
      assertTrue(a.body().contains("JSON bodies only"), a.body());
      assertEquals("application/json", a.headers().firstValue("content-type").orElse(""));
    }
    assertEquals(200, send("GET", "/v1/policy", null, "application/json; charset=utf-8").statusCode());
  }

  @Test
  void aDatasetWhoseFilesTurnBadWhileTheNodeRunsIsListedAsRefusedAtOnce() throws Exception {
    Path ds = generate("events");
    node = CacheNode.start(NodeConfig.embedded(home, 0).withSsdBudget(16L << 20));
    assertEquals(201, register(ds.toString()).statusCode());
    JsonNode before = Json.parse(send("GET", "/v1/datasets", null, null).body().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    assertTrue(before.get(0).path("refused").isMissingNode(), before.toString());
    String part = Manifest.read(ds).files().get(1).path();
    byte[] b = Files.readAllBytes(ds.resolve(part));
    Files.write(ds.resolve(part), java.util.Arrays.copyOf(b, b.length / 2)); // cut short while the node runs
    JsonNode after = Json.parse(send("GET", "/v1/datasets", null, null).body().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    assertTrue(after.get(0).path("refused").asText().contains(part), after.toString());
  }

  @Test
  void aRootNamedTwiceIsOneRoot() throws Exception {
    Path hdd = home.resolve("hdd");
    NodeConfig c = NodeConfig.embedded(home, 0).withHddRoots(List.of(hdd, hdd.resolve("x/.."), hdd));
    assertEquals(List.of(hdd.toAbsolutePath().normalize()), c.hddRoots());
  }
}
