package io.strata.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.Progress;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.internal.Json;
import io.strata.sdk.loader.PlanProgram;
import io.strata.sdk.node.NodeClient;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.net.Socket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A seeded fuzzer over the node's HTTP API: valid requests of every route, mutated (wrong types,
 * missing and unknown fields, path traversal, truncated and byte-flipped JSON, random bytes, huge
 * and deeply nested bodies, odd path parameters). Every answer must be a 2xx, or a 4xx whose body
 * is a JSON object with an {@code error} naming the problem; never a 5xx, a hang or a closed
 * connection. Afterwards the node still serves, and nothing was written outside its directories.
 */
class HttpApiFuzzTest {
  static final int TRIALS = Integer.getInteger("strata.fuzz.trials", 4000);

  @TempDir Path tmp;

  record Route(String method, String path, String body) {}

  @Test
  void mutatedRequestsGetJsonErrorsAndNeverBreakTheNode() throws Exception {
    Path home = Files.createDirectories(tmp.resolve("node"));
    Path ds = home.resolve("hdd/events");
    DatasetGenerator.generate(ds, DatasetGenerator.Options.of("events", 40_000, 3).withFeatures(8).withChunking(10_000, 2)
        .withMeanSampleLength(40), Progress.NONE);
    Files.writeString(tmp.resolve("sentinel"), "untouched");
    try (CacheNode node = CacheNode.start(NodeConfig.embedded(home, 0).withSsdBudget(16L << 20))) {
      NodeClient client = new NodeClient(node.url(), null);
      client.registerDataset(ds);
      List<Route> routes = List.of(
          new Route("GET", "/health", null),
          new Route("GET", "/v1/datasets", null),
          new Route("POST", "/v1/datasets", "{\"path\":\"" + ds + "\"}"),
          new Route("GET", "/v1/datasets/{events}", null),
          new Route("POST", "/v1/resolve", "{\"job\":\"j1\",\"dataset\":\"events\",\"features\":[\"amount\",\"score\"],\"chunks\":[0,1]}"),
          new Route("POST", "/v1/reads", "{\"job\":\"j1\",\"dataset\":\"events\",\"reads\":[{\"feature\":\"amount\",\"chunk\":0,\"bytes\":80000,\"tier\":\"hdd\"}],\"step\":3}"),
          new Route("POST", "/v1/plans", "{\"job\":\"j2\",\"dataset\":\"events\",\"features\":[\"amount\",\"score\"],\"program\":{\"algorithm\":\""
              + PlanProgram.ALGORITHM + "\",\"mode\":\"rows\",\"unitsPerBatch\":4,\"blockRows\":64,\"seed\":\"5\","
              + "\"shuffle\":true,\"rank\":0,\"world\":1,\"dropLast\":false,\"epochs\":2,\"startStep\":1}}"),
          new Route("POST", "/v1/reads", "{\"job\":\"j1\",\"dataset\":\"events\",\"reads\":[],\"unlinkedMappedBytes\":4096}"),
          new Route("POST", "/v1/segments/check", "{\"dataset\":\"events\",\"feature\":\"amount\",\"chunk\":0,\"problem\":\"test\"}"),
          new Route("GET", "/v1/trace", null),
          new Route("DELETE", "/v1/trace", null),
          new Route("POST", "/v1/plans", "{\"job\":\"j1\",\"dataset\":\"events\",\"features\":[\"amount\"],\"epochs\":2,\"chunkOrder\":[1,0,2,3]}"),
          new Route("DELETE", "/v1/plans/{j1}", null),
          new Route("POST", "/v1/features", "{\"dataset\":\"events\",\"spec\":\"log1p(amount)\"}"),
          new Route("GET", "/v1/features", null),
          new Route("GET", "/v1/tiers", null),
          new Route("GET", "/v1/policy", null),
          new Route("PUT", "/v1/policy", "{\"ssdBudgetBytes\":16777216,\"flashWriteBudgetBytesPerHour\":0,\"popularityDiscount\":0.5,\"quotas\":{\"events\":8388608}}"),
          new Route("POST", "/v1/promote", "{\"dataset\":\"events\",\"features\":[\"amount\"],\"chunks\":[0]}"),
          new Route("POST", "/v1/evict", "{\"dataset\":\"events\",\"features\":[\"amount\"],\"chunks\":[0]}"),
          new Route("POST", "/v1/pin", "{\"dataset\":\"events\",\"feature\":\"score\"}"),
          new Route("POST", "/v1/unpin", "{\"dataset\":\"events\",\"feature\":\"score\"}"),
          new Route("GET", "/metrics", null),
          new Route("GET", "/ui/data", null));
      HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
      SplittableRandom r = new SplittableRandom(7);
      Map<String, Integer> statuses = new TreeMap<>();
      int mutated = 0;
      for (int trial = 0; trial < TRIALS; trial++) {
        Route route = routes.get(r.nextInt(routes.size()));
        String method = r.nextInt(20) == 0 ? pick(r, "GET", "POST", "PUT", "DELETE", "PATCH") : route.method();
        String path = mutatePath(r, route.path());
        byte[] body = route.body() == null && r.nextInt(4) != 0 ? null : mutateBody(r, route.body());
        if (body != null || !path.equals(route.path().replaceAll("[{}]", ""))) {
          mutated++;
        }
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(node.url() + path)).timeout(Duration.ofSeconds(30))
            .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        if (r.nextInt(10) == 0) {
          b.header("Content-Type", pick(r, "text/plain", "application/json; charset=latin1", "multipart/form-data; boundary=x"));
        } else if (r.nextInt(20) == 0) {
          b.header("Origin", pick(r, "http://evil.example", "null", "http://127.0.0.1:1"));
        } else if (r.nextInt(20) != 0) {
          b.header("Content-Type", "application/json"); // what a client sends (now and then, nothing)
        }
        HttpResponse<String> resp;
        try {
          resp = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        } catch (Exception e) {
          fail("trial " + trial + ": " + method + " " + path + " with " + describe(body) + " got no answer: " + e);
          return;
        }
        int s = resp.statusCode();
        statuses.merge(Integer.toString(s), 1, Integer::sum);
        String what = "trial " + trial + ": " + method + " " + path + " with " + describe(body) + " -> " + s + " " + resp.body();
        assertTrue(s >= 200 && s < 500, what);
        if (s >= 400) {
          JsonNode e = Json.parse(resp.body());
          assertTrue(e.isObject() && e.path("error").isTextual() && !e.path("error").asText().isBlank(), what);
          assertNamesNoLibrary(e.path("error").asText(), what);
        }
      }
      // The node still works: health, a resolve, a promotion that lands.
      assertEquals("ok", client.health().path("status").asText());
      client.setPolicy(Json.object().put("ssdBudgetBytes", 16L << 20));
      assertEquals(200, http.send(HttpRequest.newBuilder(URI.create(node.url() + "/v1/tiers")).build(),
          HttpResponse.BodyHandlers.ofString()).statusCode());
      assertTrue(client.resolve("after", "events", List.of("amount"), List.of(0)).path("segments").isArray());
      // Nothing was created beside the node's directory.
      try (Stream<Path> s = Files.list(tmp)) {
        assertEquals(List.of("node", "sentinel"), s.map(p -> p.getFileName().toString()).sorted().toList());
      }
      assertEquals("untouched", Files.readString(tmp.resolve("sentinel")));
      System.out.printf("FAULTS http-fuzz: %d requests (%d mutated) over %d routes; statuses %s; 0 server errors%n", TRIALS,
          mutated, routes.size(), statuses);
    }
  }

  /** Words of the libraries under the API that an error must not pass on to a caller. */
  private static final Pattern LIBRARY =
      Pattern.compile("fasterxml|jackson|JsonReadFeature|StreamReadConstraints|io\\.netty|io\\.vertx|"
          + "[A-Z][A-Za-z]*(Exception|Error)\\b|\\bjava\\.[a-z]+\\.");

  private static void assertNamesNoLibrary(String error, String what) {
    assertTrue(!LIBRARY.matcher(error).find(), "an error naming a library or class: " + what);
  }

  /**
   * Below the JSON: the request line, the version, the path's escapes, the chunked framing and
   * the body's JSON syntax, first the cases found by probing, then seeded mutations of raw
   * requests. Every answer is a 2xx, or a 4xx with a JSON error naming no library; never a 5xx, a
   * plain-text body, a 2xx carrying an error, or silence.
   */
  @Test
  void protocolEdgesGetJsonErrorsNamingNoLibrary() throws Exception {
    Path home = Files.createDirectories(tmp.resolve("node"));
    try (CacheNode node = CacheNode.start(NodeConfig.embedded(home, 0))) {
      int port = node.port();
      String json = "Content-Type: application/json\r\n";
      Map<String, String> cases = new LinkedHashMap<>();
      cases.put("bad chunk size", "POST /v1/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\n" + json
          + "Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n");
      cases.put("HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
      cases.put("HTTP/9.9", "GET /health HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n");
      cases.put("%zz in the path", "GET /v1/datasets/%zz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      cases.put("bad UTF-8 in the path", "GET /v1/datasets/%C3%28 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      cases.put("text after the JSON", post("/v1/datasets", "{\"path\":\"/x\"} {}"));
      cases.put("a key twice", post("/v1/datasets", "{\"path\":\"/x\",\"path\":\"/y\"}"));
      cases.put("NaN", post("/v1/datasets", "{\"path\":NaN}"));
      cases.put("nested too deep", post("/v1/datasets", "[".repeat(2000)));
      cases.put("a comment", post("/v1/datasets", "{/* c */\"path\":\"/x\"}"));
      cases.put("single quotes", post("/v1/datasets", "{'path':'/x'}"));
      cases.put("a raw control character", post("/v1/datasets", "{\"path\":\"a\u0001b\"}"));
      Map<String, String> expect = Map.of("text after the JSON", "after the JSON value", "a key twice", "duplicate key 'path'",
          "nested too deep", "nested deeper", "NaN", "not standard JSON", "HTTP/9.9", "HTTP/1.1", "bad chunk size", "chunk size");
      for (var c : cases.entrySet()) {
        String[] answer = exchange(port, c.getValue().getBytes(StandardCharsets.UTF_8));
        String what = c.getKey() + " -> " + answer[0] + " " + answer[1];
        assertEquals("400", answer[0], what);
        JsonNode e = Json.parse(answer[1]);
        assertEquals(400, e.path("status").asInt(), what);
        assertNamesNoLibrary(e.path("error").asText(), what);
        if (expect.containsKey(c.getKey())) {
          assertTrue(e.path("error").asText().contains(expect.get(c.getKey())), what);
        }
      }
      assertEquals("200", exchange(port, "GET /health HTTP/1.0\r\n\r\n".getBytes(StandardCharsets.US_ASCII))[0], "HTTP/1.0 is served");
      assertEquals("200", exchange(port, ("POST /v1/resolve HTTP/1.1\r\nHost: 127.0.0.1\r\n" + json
          + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n").getBytes(StandardCharsets.US_ASCII))[0].equals("400")
          ? "200" : "chunked body not read", "a well-formed chunked body reaches the route (which checks its fields)");
      // Seeded mutations of raw requests.
      SplittableRandom r = new SplittableRandom(11);
      Map<String, Integer> statuses = new TreeMap<>();
      int trials = Math.max(200, TRIALS / 10);
      for (int t = 0; t < trials; t++) {
        byte[] req = rawMutation(r);
        String[] answer = exchange(port, req);
        String what = "raw trial " + t + ": " + describe(req) + " -> " + answer[0] + " " + answer[1];
        statuses.merge(answer[0], 1, Integer::sum);
        int st = Integer.parseInt(answer[0]);
        assertTrue(st >= 200 && st < 500, what);
        JsonNode e;
        try {
          e = Json.parse(answer[1]);
        } catch (IOException notJson) {
          fail("not JSON: " + what);
          return;
        }
        if (st >= 400) {
          assertTrue(e.path("error").isTextual(), what);
          assertNamesNoLibrary(e.path("error").asText(), what);
        } else {
          assertTrue(!e.has("error"), what);
        }
      }
      System.out.printf("FAULTS http-protocol: %d probed cases and %d raw mutations; statuses %s; every error JSON, none names a library%n",
          cases.size(), trials, statuses);
    }
  }

  private static String post(String path, String body) {
    return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: "
        + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body;
  }

  /** A raw request, one of its parts broken: the version, a path escape, the chunk framing, a header line, the JSON. */
  private static byte[] rawMutation(SplittableRandom r) {
    String version = "HTTP/1.1";
    String path = pick(r, "/health", "/v1/datasets", "/v1/tiers", "/v1/policy", "/v1/datasets/events");
    String headers = "Host: 127.0.0.1\r\n";
    String body = "{\"dataset\":\"events\",\"features\":[\"amount\"]}";
    boolean chunked = false;
    switch (r.nextInt(6)) {
      case 0 -> version = pick(r, "HTTP/0.9", "HTTP/2.0", "HTTP/3.0", "HTTP/1.2", "HTTP/9.9", "HTTP/1.1");
      case 1 -> path = path + "/%" + (char) (0x21 + r.nextInt(0x5e)) + (char) (0x21 + r.nextInt(0x5e));
      case 2 -> chunked = true;
      case 3 -> headers += pick(r, "X-A: b", "X-Long: " + "v".repeat(r.nextInt(2000)), "Accept: */*", "Connection: keep-alive") + "\r\n";
      case 4 -> body = body.substring(0, r.nextInt(body.length())) + pick(r, "}", "]", "NaN", "//", "'", "\u0001", "} x", ",\"dataset\":1}");
      default -> path = path + "?" + pick(r, "a=%", "a=%G1", "a=b", "%%");
    }
    boolean post = r.nextBoolean();
    String line = (post ? "POST " : "GET ") + path.replace("/health", post ? "/v1/resolve" : "/health") + " " + version + "\r\n";
    if (!post) {
      return (line + headers + "\r\n").getBytes(StandardCharsets.UTF_8);
    }
    headers += "Content-Type: application/json\r\n";
    if (chunked) {
      String size = r.nextBoolean() ? Integer.toHexString(body.length()) : pick(r, "zz", "-1", "fffffffffffffffffff", "0x10", " ");
      return (line + headers + "Transfer-Encoding: chunked\r\n\r\n" + size + "\r\n" + body + "\r\n0\r\n\r\n")
          .getBytes(StandardCharsets.UTF_8);
    }
    return (line + headers + "Content-Length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body)
        .getBytes(StandardCharsets.UTF_8);
  }

  /** Sends {@code request} on a new connection; returns the answer's status code and body (fails on silence). */
  private static String[] exchange(int port, byte[] request) throws Exception {
    try (Socket s = new Socket(java.net.InetAddress.getLoopbackAddress(), port)) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(request);
      s.getOutputStream().flush();
      InputStream in = new BufferedInputStream(s.getInputStream());
      String status = readLine(in);
      if (status == null) {
        fail("no answer to " + describe(request));
      }
      int length = -1;
      for (String h = readLine(in); h != null && !h.isEmpty(); h = readLine(in)) {
        if (h.regionMatches(true, 0, "content-length:", 0, 15)) {
          length = Integer.parseInt(h.substring(15).strip());
        }
      }
      byte[] body = length >= 0 ? in.readNBytes(length) : in.readAllBytes();
      String[] parts = status.split(" ", 3);
      return new String[] {parts.length > 1 ? parts[1] : status, new String(body, StandardCharsets.UTF_8)};
    }
  }

  private static String readLine(InputStream in) throws IOException {
    StringBuilder sb = new StringBuilder();
    int c;
    while ((c = in.read()) != -1) {
      if (c == '\n') {
        return sb.toString().stripTrailing();
      }
      sb.append((char) c);
    }
    return sb.isEmpty() ? null : sb.toString();
  }

  private static final String[] TRAVERSAL = {
    "..", "../..", "../../../../etc/passwd", "/etc/passwd", "..%2F..%2Fetc", "%2e%2e", "a/../../b", "\u0000", "x\u0000y",
    "/", "~root", "C:\\windows", "events/../events", "." , "%00", "\u202e", "😀", " "
  };

  private static String pick(SplittableRandom r, String... options) {
    return options[r.nextInt(options.length)];
  }

  private static String mutatePath(SplittableRandom r, String path) {
    String p = path;
    if (p.contains("{")) {
      String param = p.substring(p.indexOf('{') + 1, p.indexOf('}'));
      String value = switch (r.nextInt(4)) {
        case 0 -> param;
        case 1 -> pick(r, TRAVERSAL);
        case 2 -> "x".repeat(1 + r.nextInt(5000));
        default -> randomString(r);
      };
      p = p.substring(0, p.indexOf('{')) + URLEncoder.encode(value, StandardCharsets.UTF_8).replace("+", "%20");
    }
    return switch (r.nextInt(12)) {
      case 0 -> p + "/" + URLEncoder.encode(pick(r, TRAVERSAL), StandardCharsets.UTF_8);
      case 1 -> p + "?" + "q=" + URLEncoder.encode(randomString(r), StandardCharsets.UTF_8);
      case 2 -> p.replace("/v1/", "/v1/../v1/");
      case 3 -> p + "/";
      default -> p;
    };
  }

  private static byte[] mutateBody(SplittableRandom r, String template) throws Exception {
    if (template == null || r.nextInt(12) == 0) {
      return switch (r.nextInt(6)) {
        case 0 -> new byte[0];
        case 1 -> randomBytes(r, 1 + r.nextInt(300));
        case 2 -> "[".repeat(20_000).getBytes(StandardCharsets.UTF_8);
        case 3 -> ("{\"a\":" + "{\"a\":".repeat(5000) + "1" + "}".repeat(5001)).getBytes(StandardCharsets.UTF_8);
        case 4 -> "   \n ".getBytes(StandardCharsets.UTF_8);
        default -> "null".getBytes(StandardCharsets.UTF_8);
      };
    }
    if (r.nextInt(200) == 0) {
      return ("{\"dataset\":\"events\",\"pad\":\"" + "z".repeat((3 << 20) + r.nextInt(1 << 20)) + "\"}").getBytes(StandardCharsets.UTF_8);
    }
    ObjectNode o = (ObjectNode) Json.parse(template);
    int n = 1 + r.nextInt(3);
    for (int i = 0; i < n; i++) {
      mutate(r, o);
    }
    String text = Json.compact(o);
    return switch (r.nextInt(10)) {
      case 0 -> text.substring(0, r.nextInt(text.length())).getBytes(StandardCharsets.UTF_8);
      case 1 -> {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        for (int k = 0; k < 1 + r.nextInt(4); k++) {
          b[r.nextInt(b.length)] = (byte) r.nextInt(256);
        }
        yield b;
      }
      default -> text.getBytes(StandardCharsets.UTF_8);
    };
  }

  /** Changes one field somewhere in the tree: wrong type, removed, added, traversal string. */
  private static void mutate(SplittableRandom r, JsonNode node) {
    if (node instanceof ObjectNode o) {
      List<String> names = new ArrayList<>();
      for (Iterator<String> it = o.fieldNames(); it.hasNext(); ) {
        names.add(it.next());
      }
      if (names.isEmpty() || r.nextInt(8) == 0) {
        o.set(pick(r, "bogus", "dataset", "features", "path", "job", "chunks", "spec", "feature"), randomValue(r, 0));
        return;
      }
      String name = names.get(r.nextInt(names.size()));
      JsonNode child = o.get(name);
      switch (r.nextInt(5)) {
        case 0 -> o.remove(name);
        case 1 -> o.set(name, randomValue(r, 0));
        case 2 -> o.put(name, pick(r, TRAVERSAL));
        default -> {
          if (child.isContainerNode() && !child.isEmpty()) {
            mutate(r, child);
          } else {
            o.set(name, randomValue(r, 0));
          }
        }
      }
    } else if (node instanceof ArrayNode a) {
      int i = r.nextInt(a.size());
      switch (r.nextInt(4)) {
        case 0 -> a.remove(i);
        case 1 -> a.set(i, randomValue(r, 0));
        case 2 -> {
          for (int k = 0; k < 1 + r.nextInt(2000); k++) {
            a.add(a.get(0).deepCopy());
          }
        }
        default -> {
          if (a.get(i).isContainerNode() && !a.get(i).isEmpty()) {
            mutate(r, a.get(i));
          } else {
            a.set(i, randomValue(r, 0));
          }
        }
      }
    }
  }

  private static JsonNode randomValue(SplittableRandom r, int depth) {
    JsonNodeFactory f = JsonNodeFactory.instance;
    return switch (r.nextInt(depth > 2 ? 9 : 11)) {
      case 0 -> f.nullNode();
      case 1 -> f.booleanNode(r.nextBoolean());
      case 2 -> f.numberNode(r.nextLong());
      case 3 -> f.numberNode(pick(r, "-1", "0", "2147483648", "-9223372036854775808", "1e308").equals("1e308") ? 1e308 : -1L);
      case 4 -> f.numberNode(r.nextDouble() * 1e6 - 5e5);
      case 5 -> f.textNode(pick(r, TRAVERSAL));
      case 6 -> f.textNode(randomString(r));
      case 7 -> f.numberNode(new BigInteger("123456789012345678901234567890"));
      case 8 -> f.textNode("");
      case 9 -> {
        ArrayNode a = f.arrayNode();
        for (int k = r.nextInt(4); k > 0; k--) {
          a.add(randomValue(r, depth + 1));
        }
        yield a;
      }
      default -> {
        ObjectNode o = f.objectNode();
        for (int k = r.nextInt(3); k > 0; k--) {
          o.set(randomString(r), randomValue(r, depth + 1));
        }
        yield o;
      }
    };
  }

  private static String randomString(SplittableRandom r) {
    StringBuilder s = new StringBuilder();
    for (int i = r.nextInt(40); i > 0; i--) {
      s.appendCodePoint(r.nextInt(8) == 0 ? 0x80 + r.nextInt(0x2000) : 0x20 + r.nextInt(0x5f));
    }
    return s.toString();
  }

  private static byte[] randomBytes(SplittableRandom r, int n) {
    byte[] b = new byte[n];
    for (int i = 0; i < n; i++) {
      b[i] = (byte) r.nextInt(256);
    }
    return b;
  }

  private static String describe(byte[] body) {
    if (body == null) {
      return "no body";
    }
    String s = new String(body, 0, Math.min(body.length, 160), StandardCharsets.UTF_8);
    return body.length + " bytes \"" + s + (body.length > 160 ? "..." : "") + "\"";
  }
}
