package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.node.CacheNode;
import io.strata.node.NodeConfig;
import io.strata.node.Sizes;
import io.strata.sdk.internal.Json;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** Every {@code strata} command against a real node on a loopback port, and the node unreachable. */
class NodeCommandsTest {
  @TempDir static Path home;
  static CacheNode node;
  static String url;
  static Path dataset;

  @BeforeAll
  static void start() throws Exception {
    dataset = home.resolve("hdd/events");
    Cli.Result g = Cli.run("dataset", "generate", "--out", dataset.toString(), "--name", "events", "--rows", "60000",
        "--rows-per-chunk", "20000", "--features", "12", "--mean-sample-length", "60");
    assertEquals(0, g.code(), g.err());
    node = CacheNode.start(NodeConfig.embedded(home, 0).withSsdBudget(256L << 20));
    url = node.url();
  }

  @AfterAll
  static void stop() throws Exception {
    node.close();
  }

  /** Runs a command against the test's node and expects success. */
  private Cli.Result ok(String... args) {
    List<String> a = new ArrayList<>(List.of(args));
    a.addAll(List.of("--node", url));
    Cli.Result r = Cli.run(a.toArray(String[]::new));
    assertEquals(0, r.code(), String.join(" ", args) + " failed: " + r.err() + r.out());
    return r;
  }

  private JsonNode json(String... args) throws Exception {
    List<String> a = new ArrayList<>(List.of(args));
    a.add("--json");
    return Json.parse(ok(a.toArray(String[]::new)).out());
  }

  /** Issue 51: {@code promote} printed "100 % 64/64" and exited 0 when every promotion failed. */
  @Test
  void promotionsThatFailAreCountedAndTheCommandFails() throws Exception {
    Path broken = home.resolve("hdd/zz-broken");
    assertEquals(0, Cli.run("dataset", "generate", "--out", broken.toString(), "--name", "zz-broken", "--rows", "20000",
        "--rows-per-chunk", "10000", "--features", "4").code());
    ok("dataset", "register", broken.toString());
    // Damaged after registration, its size kept: every chunk's streams fail their checksums.
    for (var f : io.strata.sdk.files.Manifest.read(broken).files()) {
      Path p = broken.resolve(f.path());
      byte[] b = Files.readAllBytes(p);
      for (int i = 3; i < b.length - 512; i++) {
        b[i] ^= 0x5a;
      }
      Files.write(p, b);
    }
    Cli.Result r = Cli.run("promote", "--dataset", "zz-broken", "--node", url, "--json");
    assertEquals(1, r.code(), r.out() + r.err());
    JsonNode j = Json.parse(r.out());
    assertEquals(j.path("scheduled").asInt(), j.path("failed").asInt(), r.out());
    assertEquals(0, j.path("promoted").asInt(), r.out());
    assertTrue(r.err().contains("promotions of zz-broken failed"), r.err());
  }

  @Test
  void everyNodeCommandWorksAgainstARealNode() throws Exception {
    // Datasets: register, list, describe by name.
    assertTrue(ok("dataset", "register", dataset.toString()).out().contains("registered events"));
    JsonNode list = json("dataset", "list");
    assertEquals("events", list.get(0).path("name").asText());
    assertTrue(list.get(0).path("orcBytes").asLong() > 0, list.toString());
    assertTrue(ok("dataset", "list").out().contains("events"));
    assertTrue(ok("dataset", "describe", "events").out().contains("embedding"));
    assertEquals(3, json("dataset", "describe", "events").path("chunks").asInt());

    // Policy: get, set (budget, flash budget, discount, quota), back to no quota.
    JsonNode p = json("policy", "get");
    assertEquals(256L << 20, p.path("ssdBudgetBytes").asLong());
    JsonNode set = json("policy", "set", "--ssd-budget", "200m", "--flash-budget", "50g", "--popularity-discount", "3",
        "--quota", "events=100m");
    assertEquals(200L << 20, set.path("ssdBudgetBytes").asLong());
    assertEquals(50L << 30, set.path("flashWriteBudgetBytesPerHour").asLong());
    assertEquals(3.0, set.path("popularityDiscount").asDouble());
    assertEquals(100L << 20, set.path("quotas").path("events").asLong());
    assertTrue(ok("policy", "set", "--quota", "events=none").out().contains("SSD budget"));
    assertFalse(json("policy", "get").path("quotas").has("events"));
    // The policy itself, by name: replaced at once, shown by get, and back.
    assertEquals("strata", p.path("policy").asText());
    assertEquals("s3fifo", json("policy", "set", "--policy", "s3fifo").path("policy").asText());
    assertTrue(ok("policy", "get").out().contains("s3fifo (of strata, lru, frequency, s3fifo)"));
    assertEquals("strata", json("policy", "set", "--policy", "strata").path("policy").asText());

    // Promote on the node (waits), then the tier status shows the segments.
    JsonNode pr = json("promote", "--dataset", "events", "--features", "amount,score");
    assertEquals(6, pr.path("scheduled").asInt(), pr.toString());
    JsonNode tiers = json("tier", "status");
    assertEquals(6, tiers.path("ssd").path("segments").asInt(), tiers.toString());
    assertTrue(tiers.path("hdd").path("bytes").asLong() > 0, tiers.toString());
    String human = ok("tier", "status").out();
    assertTrue(human.contains("SSD (segments)") && human.contains("byte hit ratio") && human.contains("HDD (ORC)"), human);

    // Pin a feature: promoted and protected; evicting it is refused until unpinned.
    JsonNode pin = json("pin", "--dataset", "events", "--features", "merchant_id");
    assertTrue(pin.path("pinned").asBoolean());
    node.awaitIdle(30_000);
    Cli.Result refused = Cli.run("evict", "--dataset", "events", "--features", "merchant_id", "--node", url);
    assertEquals(1, refused.code());
    assertEquals("strata: feature merchant_id of events is pinned: unpin it first", refused.err().strip());
    assertTrue(ok("unpin", "--dataset", "events", "--features", "merchant_id").out().contains("unpinned events/merchant_id"));
    assertEquals(3, json("evict", "--dataset", "events", "--features", "merchant_id").path("evicted").asInt());
    assertEquals(3, json("evict", "--dataset", "events", "--features", "score").path("evicted").asInt());

    // A job through the node: its reads show up in the tier status.
    JsonNode job = json("loader", "run", "--dataset", dataset.toString(), "--features", "amount,score", "--mode", "rows",
        "--batch", "5000", "--job", "cli-job");
    assertEquals(60000, job.path("rows").asLong(), job.toString());
    assertTrue(job.path("ssdBytes").asLong() > 0, "amount was promoted: " + job);
    node.awaitIdle(30_000);
    JsonNode after = json("tier", "status");
    assertTrue(after.path("traffic").path("ssdBytes").asLong() > 0 && after.path("traffic").path("hddBytes").asLong() > 0, after.toString());

    // Derived features on the node.
    JsonNode d = json("features", "derive", "--dataset", "events", "--spec", "log1p(amount)");
    assertEquals("log1p(amount)", d.path("spec").asText());
    assertTrue(d.path("complete").asBoolean(), d.toString());
    assertTrue(ok("features", "derive", "--dataset", "events", "--spec", "LOG1P( amount )").out().startsWith("already stored"));
    assertEquals(1, json("features", "list").size());
    assertTrue(ok("features", "list").out().contains("log1p(amount)"));

    // Node status names the node.
    assertTrue(ok("node", "status").out().contains("1 datasets"));
  }

  /** Names the node does not know and values it refuses are wrong usage: one line, exit 2. */
  @Test
  void theNodeRefusingAnUnknownNameOrBadValueIsOneLineAndExitCode2() {
    for (String[] args : List.of(
        new String[] {"pin", "--dataset", "nosuch"},
        new String[] {"pin", "--dataset", "events", "--features", "nosuch"},
        new String[] {"dataset", "describe", "nosuch"},
        new String[] {"promote", "--dataset", "nosuch"},
        new String[] {"policy", "set", "--quota", "nosuch=1g"},
        new String[] {"policy", "set", "--popularity-discount", "0"},
        new String[] {"features", "derive", "--dataset", "nosuch", "--spec", "log1p(x)"})) {
      List<String> a = new ArrayList<>(List.of(args));
      a.addAll(List.of("--node", url));
      Cli.Result r = Cli.run(a.toArray(String[]::new));
      assertEquals(2, r.code(), String.join(" ", args) + ": " + r.err());
      assertEquals(1, r.err().strip().lines().count(), r.err());
      assertTrue(r.err().startsWith("strata: "), r.err());
    }
  }

  /** Every command that talks to a node, with arguments it would accept. */
  static final List<String[]> NODE_COMMANDS = List.of(
      new String[] {"node", "status"},
      new String[] {"tier", "status"},
      new String[] {"policy", "get"},
      new String[] {"policy", "set", "--ssd-budget", "1g"},
      new String[] {"pin", "--dataset", "events"},
      new String[] {"unpin", "--dataset", "events"},
      new String[] {"promote", "--dataset", "events"},
      new String[] {"evict", "--dataset", "events"},
      new String[] {"dataset", "register", "/tmp"},
      new String[] {"dataset", "list"},
      new String[] {"dataset", "describe", "events"},
      new String[] {"features", "derive", "--dataset", "events", "--spec", "log1p(amount)"},
      new String[] {"features", "list"});

  @Test
  void tokensOthersCanReadAreRefusedAsSshDoes() throws Exception {
    Path token = home.resolve("token");
    Files.writeString(token, "0123456789abcdef-secret\n");
    Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-r--r--"));
    Cli.Result r = Cli.run("pin", "--dataset", "events", "--token-file", token.toString(), "--node", "http://127.0.0.1:9");
    assertEquals(1, r.code(), r.err());
    assertEquals("strata: token file " + token + " is accessible to others (rw-r--r--): chmod 600 " + token, r.err().strip());
    Path config = home.resolve("node.json.conf");
    Files.writeString(config, "{\"home\": \"" + home.resolve("tok-node") + "\", \"token\": \"0123456789abcdef-secret\"}");
    Files.setPosixFilePermissions(config, PosixFilePermissions.fromString("rw-rw----"));
    Cli.Result start = Cli.run("node", "start", "--config", config.toString(), "--foreground");
    assertEquals(1, start.code(), start.err());
    assertTrue(start.err().contains("holding a token") && start.err().contains("chmod 600"), start.err());
    assertFalse(Files.exists(home.resolve("tok-node")), "a refused start creates nothing");
    Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-------"));
    Cli.Result ok = Cli.run("pin", "--dataset", "events", "--token-file", token.toString(), "--node", "http://127.0.0.1:9");
    assertTrue(ok.err().contains("unreachable"), "a private token file is read: " + ok.err());
  }

  @Test
  void anUnreachableNodeIsOneClearLineAndExitCode1() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    String dead = "http://127.0.0.1:" + port;
    for (String[] args : NODE_COMMANDS) {
      for (boolean json : new boolean[] {false, true}) {
        List<String> a = new ArrayList<>(List.of(args));
        a.addAll(List.of("--node", dead));
        if (json) {
          a.add("--json");
        }
        Cli.Result r = Cli.run(a.toArray(String[]::new));
        assertEquals(1, r.code(), a + ": " + r.err());
        assertEquals("strata: cache node at " + dead + " is unreachable: ConnectException", r.err().strip(), a.toString());
        assertEquals("", r.out(), a.toString());
      }
    }
    Cli.Result loader = Cli.run("loader", "run", "--dataset", dataset.toString(), "--node", dead, "--features", "amount",
        "--max-batches", "1", "--json");
    assertEquals(0, loader.code(), "a loader keeps reading ORC while the node is down: " + loader.err());
    assertEquals("strata: warning: cache node at " + dead + " is unreachable: ConnectException; reading from ORC until the node answers",
        loader.err().strip(), "warned once");
    assertTrue(loader.json().has("nodeReachableAtStart") && !loader.json().path("nodeReachableAtStart").asBoolean(), loader.out());
  }

  @Test
  void wrongArgumentsAreOneLineAndExitCode2() {
    for (String[] args : List.of(
        new String[] {"policy", "set"},
        new String[] {"policy", "set", "--ssd-budget", "lots"},
        // The API refuses these (400); the command does too, before asking it.
        new String[] {"policy", "set", "--ssd-budget", "1e30", "--node", url},
        new String[] {"policy", "set", "--ssd-budget", "99999999999999999999", "--node", url},
        new String[] {"policy", "set", "--ssd-budget", "9000000t", "--node", url},
        new String[] {"policy", "set", "--ssd-budget", "1.5", "--node", url},
        new String[] {"policy", "set", "--ssd-budget", "-1", "--node", url},
        new String[] {"policy", "set", "--policy", "clairvoyant", "--node", url},
        new String[] {"pin"},
        new String[] {"promote", "--dataset", "events", "--chunks", "first"},
        new String[] {"tier", "status", "--bogus"},
        new String[] {"tier"},
        new String[] {"evict", "--dataset"},
        new String[] {"node", "status", "--node", "ftp://x"},
        new String[] {"loader", "run", "--dataset", "x", "--node", url, "--ssd", "y"})) {
      Cli.Result r = Cli.run(args);
      if (args.length == 1 && args[0].equals("tier")) {
        assertEquals(0, r.code(), "a command group prints its usage");
        assertTrue(r.out().contains("status"), r.out());
        continue;
      }
      assertEquals(2, r.code(), String.join(" ", args) + ": " + r.err());
      assertTrue(r.err().startsWith("strata: "), r.err());
      assertFalse(r.err().contains("\tat "), r.err());
      assertTrue(r.err().strip().lines().count() <= 2, "one line and a hint at most: " + r.err());
    }
  }

  @Test
  void byteSizesTakeTheRangeTheApiTakes() {
    assertEquals(3000, Sizes.parse("3000"));
    assertEquals(512L << 20, Sizes.parse("512m"));
    assertEquals(3L << 39, Sizes.parse("1.5t"));
    assertEquals(Long.MAX_VALUE, Sizes.parse("9223372036854775807"));
    for (String bad : List.of("9223372036854775808", "1e30", "8388608t", "NaN", "Infinity", "0x10", "-0", "+5", "1.5", "")) {
      org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> Sizes.parse(bad), bad);
    }
  }

  /** Every command prints help, and every command that prints a result can print it as JSON. */
  @Test
  void everyCommandHasHelpAndJson() {
    CommandLine root = new CommandLine(new Main());
    List<CommandLine> leaves = new ArrayList<>();
    collect(root, leaves);
    assertTrue(leaves.size() >= 25, "commands: " + leaves.size());
    for (CommandLine c : leaves) {
      String name = c.getCommandSpec().qualifiedName();
      if (name.equals("strata help")) {
        continue;
      }
      List<String> args = new ArrayList<>(List.of(name.substring("strata ".length()).split(" ")));
      args.add("--help");
      Cli.Result r = Cli.run(args.toArray(String[]::new));
      assertEquals(0, r.code(), name + " --help: " + r.err());
      assertTrue(r.out().startsWith("Usage: " + name), name + ": " + r.out());
      // loader serve speaks nothing but JSON lines (the Python client's protocol).
      assertTrue(c.getCommandSpec().findOption("--json") != null || name.equals("strata loader serve"), name + " has no --json");
    }
  }

  private static void collect(CommandLine c, List<CommandLine> leaves) {
    if (c.getSubcommands().isEmpty()) {
      leaves.add(c);
    }
    // Aliases appear twice in the map; distinct instances only.
    c.getSubcommands().values().stream().distinct().forEach(s -> collect(s, leaves));
  }

  @Test
  void settingsAndHddRootsSurviveARestart() throws Exception {
    Path h = home.resolve("kept");
    Path extraRoot = Files.createDirectories(home.resolve("more-hdd"));
    Cli.Result start = Cli.run("node", "start", "--home", h.toString(), "--port", "0", "--hdd-root", extraRoot.toString(), "--json");
    assertEquals(0, start.code(), start.err());
    String url = Json.parse(start.out()).path("url").asText();
    Path copy = extraRoot.resolve("events");
    try (Stream<Path> files = Files.walk(dataset)) {
      for (Path f : files.toList()) {
        Path t = copy.resolve(dataset.relativize(f).toString());
        if (Files.isDirectory(f)) {
          Files.createDirectories(t);
        } else {
          Files.copy(f, t);
        }
      }
    }
    try {
      assertEquals(0, Cli.run("dataset", "register", copy.toString(), "--node", url).code());
      Cli.Result set = Cli.run("policy", "set", "--ssd-budget", "150m", "--quota", "events=100m", "--popularity-discount", "3",
          "--node", url);
      assertEquals(0, set.code(), set.err());
    } finally {
      assertEquals(0, Cli.run("node", "stop", "--home", h.toString()).code());
    }
    // The same home, no options: everything as it was set.
    Cli.Result again = Cli.run("node", "start", "--home", h.toString(), "--port", "0", "--json");
    assertEquals(0, again.code(), again.err());
    url = Json.parse(again.out()).path("url").asText();
    try {
      JsonNode p = Json.parse(Cli.run("policy", "get", "--node", url, "--json").out());
      assertEquals(150L << 20, p.path("ssdBudgetBytes").asLong(), p.toString());
      assertEquals(100L << 20, p.path("quotas").path("events").asLong(), p.toString());
      assertEquals(3.0, p.path("popularityDiscount").asDouble(), p.toString());
      assertTrue(p.path("sources").path("ssdBudgetBytes").asText().startsWith("policy set at "), p.toString());
      assertTrue(p.path("sources").path("quotas").asText().startsWith("policy set at "), p.toString());
      assertEquals("start option", p.path("sources").path("hddRoots").asText(), p.toString());
      assertTrue(p.path("hddRoots").toString().contains(extraRoot.toString()), "the extra HDD root is kept: " + p);
      Cli.Result human = Cli.run("policy", "get", "--node", url);
      assertTrue(human.out().contains("policy set at") && human.out().contains("150.0 MiB"), human.out());
      assertTrue(human.out().contains("not admitted: no one is expected to read it") && !human.out().contains("admittedPlanned")
          && !human.out().contains("popularityDiscount"), "people read no internal names: " + human.out());
      // Registering in the kept root still works.
      assertEquals(0, Cli.run("dataset", "register", copy.toString(), "--node", url).code());
    } finally {
      assertEquals(0, Cli.run("node", "stop", "--home", h.toString()).code());
    }
    // A start option wins over the kept value.
    Cli.Result opt = Cli.run("node", "start", "--home", h.toString(), "--port", "0", "--ssd-budget", "64m", "--json");
    assertEquals(0, opt.code(), opt.err());
    try {
      JsonNode p = Json.parse(Cli.run("policy", "get", "--node", Json.parse(opt.out()).path("url").asText(), "--json").out());
      assertEquals(64L << 20, p.path("ssdBudgetBytes").asLong());
      assertEquals("start option", p.path("sources").path("ssdBudgetBytes").asText());
      assertEquals(3.0, p.path("popularityDiscount").asDouble(), "the other kept values stay");
    } finally {
      assertEquals(0, Cli.run("node", "stop", "--home", h.toString()).code());
    }
    // So does the configuration file, in its own field names (sizes as text): they were once looked
    // for under the API's names ("ssdBudgetBytes"), so a file's budget lost to the kept one.
    Path config = home.resolve("node-config.json");
    Files.writeString(config, Json.compact(Json.object().put("home", h.toString()).put("ssdBudget", "96m")
        .put("flashWriteBudgetPerHour", "1g")));
    Cli.Result twoHomes = Cli.run("node", "start", "--port", "0", "--config", config.toString(), "--home",
        home.resolve("elsewhere").toString());
    assertEquals(2, twoHomes.code(), twoHomes.err());
    assertTrue(twoHomes.err().contains("give the home in one place"), twoHomes.err());
    assertFalse(Files.exists(home.resolve("elsewhere")), "nothing made for the refused home");
    Cli.Result fromFile = Cli.run("node", "start", "--port", "0", "--config", config.toString(), "--home", h.toString(),
        "--json");
    assertEquals(0, fromFile.code(), fromFile.err());
    try {
      JsonNode p = Json.parse(Cli.run("policy", "get", "--node", Json.parse(fromFile.out()).path("url").asText(), "--json")
          .out());
      assertEquals(96L << 20, p.path("ssdBudgetBytes").asLong(), p.toString());
      assertEquals("start option", p.path("sources").path("ssdBudgetBytes").asText(), p.toString());
      assertEquals("start option", p.path("sources").path("flashWriteBudgetBytesPerHour").asText(), p.toString());
    } finally {
      assertEquals(0, Cli.run("node", "stop", "--home", h.toString()).code());
    }
  }

  @Test
  void nodeStartStatusStopInTheBackground() throws Exception {
    Path h = home.resolve("bg");
    Cli.Result start = Cli.run("node", "start", "--home", h.toString(), "--port", "0", "--json");
    assertEquals(0, start.code(), start.err());
    JsonNode s = Json.parse(start.out());
    try {
      Cli.Result again = Cli.run("node", "start", "--home", h.toString(), "--port", "0");
      assertEquals(1, again.code());
      assertTrue(again.err().contains("already running"), again.err());
      // With its node.json gone, a second start is still refused by the home's lock, and writes
      // nothing there: the running node's log and marker stay as they were.
      Path log = h.resolve("node.log");
      Path marker = h.resolve("node.running");
      String logBefore = Files.readString(log);
      String markerBefore = Files.readString(marker);
      byte[] info = Files.readAllBytes(h.resolve("node.json"));
      Files.delete(h.resolve("node.json"));
      Cli.Result third = Cli.run("node", "start", "--home", h.toString(), "--port", "0");
      Cli.Result foreground = Cli.run("node", "start", "--foreground", "--home", h.toString(), "--port", "0");
      Files.write(h.resolve("node.json"), info);
      for (Cli.Result r : List.of(third, foreground)) {
        assertEquals(1, r.code(), r.err());
        assertTrue(r.err().contains("already running from " + h + " (pid " + s.path("pid").asLong() + ")"), r.err());
      }
      assertEquals(logBefore, Files.readString(log), "the running node's log is untouched");
      assertEquals(markerBefore, Files.readString(marker), "its running marker too");
      JsonNode st = Json.parse(Cli.run("node", "status", "--home", h.toString(), "--json").out());
      assertTrue(st.has("ssd"), st.toString());
      // Without --node or a node in the default home, commands find the node started last.
      if (System.getenv("STRATA_NODE") == null && !Files.exists(NodeConfig.defaultHome().resolve("node.json"))) {
        assertEquals(s.path("url").asText(), NodeCommand.nodeUrl(null));
      }
      // The root of the node is its dashboard.
      HttpResponse<String> root = HttpClient.newHttpClient().send(
          HttpRequest.newBuilder(URI.create(s.path("url").asText() + "/")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertEquals(302, root.statusCode());
      assertEquals("/ui", root.headers().firstValue("location").orElse(""));
    } finally {
      Cli.Result stop = Cli.run("node", "stop", "--home", h.toString(), "--json");
      assertEquals(0, stop.code(), stop.err());
      assertEquals(s.path("pid").asLong(), Json.parse(stop.out()).path("stopped").asLong());
    }
    Cli.Result status = Cli.run("node", "status", "--home", h.toString());
    assertEquals(1, status.code());
    assertTrue(status.err().contains("no node is running"), status.err());
    try (Stream<Path> files = Files.list(h)) {
      assertFalse(files.anyMatch(f -> f.getFileName().toString().equals("node.running")), "the stop was clean");
    }
  }
}
