package io.strata.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.Progress;
import io.strata.sdk.dataset.DatasetGenerator;
import io.strata.sdk.internal.Json;
import io.strata.sdk.node.NodeClient;
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
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
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
              + io.strata.sdk.loader.PlanProgram.ALGORITHM + "\",\"mode\":\"rows\",\"unitsPerBatch\":4,\"blockRows\":64,\"seed\":\"5\","
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
      case 7 -> f.numberNode(new java.math.BigInteger("123456789012345678901234567890"));
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
