package io.strata.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.strata.sdk.tier.Tier;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.Progress;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.internal.Json;
import io.strata.sdk.node.NodeClient;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Loads the dashboard in headless Chromium against a running node with live traffic, through the
 * Chrome DevTools Protocol: the page must show the node's numbers, update them as traffic goes on,
 * draw its charts, and log no console error, exception or failed request.
 *
 * <p>Needs Debian's {@code chromium} (CI installs it and sets STRATA_REQUIRE_CHROMIUM so that a
 * missing browser fails instead of skipping).
 */
class DashboardBrowserTest {
  @TempDir Path home;

  static Path chromium() {
    String env = System.getenv("STRATA_CHROMIUM");
    List<String> candidates = env != null ? List.of(env) : List.of("chromium", "chromium-browser", "google-chrome");
    for (String c : candidates) {
      Path p = Path.of(c);
      if (p.isAbsolute() && Files.isExecutable(p)) {
        return p;
      }
      for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(java.io.File.pathSeparator)) {
        Path q = Path.of(dir, c);
        if (Files.isExecutable(q)) {
          return q;
        }
      }
    }
    return null;
  }

  @Test
  void dashboardShowsLiveNumbersWithoutConsoleErrors() throws Exception {
    Path browser = chromium();
    if (browser == null) {
      if (System.getenv("STRATA_REQUIRE_CHROMIUM") != null) {
        fail("STRATA_REQUIRE_CHROMIUM is set but no chromium is on the PATH (apt-get install chromium)");
      }
      Assumptions.abort("no chromium on the PATH (Debian package 'chromium'); CI installs it");
    }
    Path ds = home.resolve("hdd/events");
    DatasetGenerator.generate(ds, DatasetGenerator.Options.of("events", 40_000, 5).withFeatures(12).withChunking(10_000, 2),
        Progress.NONE);
    try (CacheNode node = CacheNode.start(NodeConfig.embedded(home, 0).withSsdBudget(64L << 20))) {
      NodeClient client = new NodeClient(node.url(), null);
      client.registerDataset(ds);
      client.promote("events", List.of("amount"), List.of(0, 1));
      node.awaitIdle(30_000);
      client.pin("events", "merchant_id");
      client.declarePlan("short-job", "events", List.of("amount"), 1, null, false);
      client.endPlan("short-job");
      AtomicBoolean stop = new AtomicBoolean();
      client.declarePlan("dash-job", "events", List.of("amount", "score"), 2, null, false);
      Thread traffic = Thread.ofPlatform().name("dashboard-traffic").start(() -> {
        int round = 0;
        while (!stop.get()) {
          try {
            int chunk = round % 4;
            client.reportReads("dash-job", "events", List.of(
                new NodeClient.Read("amount", chunk, 80_000, chunk < 2 ? Tier.SSD : Tier.HDD),
                new NodeClient.Read("score", chunk, 40_000, Tier.HDD)), Math.min(round, 7));
            round++;
            // Churn: the same chunks promoted and evicted over and over (what a too small budget does).
            client.promote("events", List.of("quantity"), List.of(2, 3));
            node.awaitIdle(5_000);
            client.evict("events", List.of("quantity"), List.of(2, 3));
            Thread.sleep(50);
          } catch (IOException e) {
            return;
          } catch (InterruptedException e) {
            return;
          }
        }
      });
      try (Browser b = Browser.start(browser, home.resolve("chromium-profile"))) {
        b.navigate(node.url() + "/ui");
        JsonNode first = b.waitForUpdates(2, Duration.ofSeconds(30));
        JsonNode later = b.waitForUpdates(first.path("updates").asInt() + 3, Duration.ofSeconds(30));

        // Live: the counters moved between two renders, as the traffic went on.
        assertNotEquals(first.path("avoided").asText(), later.path("avoided").asText(), later.toString());
        assertTrue(later.path("status").asText().startsWith("live, updated"), later.toString());

        // The numbers are the node's numbers.
        JsonNode tiers = client.tiers();
        assertTrue(later.path("hit").asText().matches("\\d{1,3}\\.\\d %"), later.toString());
        double shown = Double.parseDouble(later.path("hit").asText().replace(" %", ""));
        assertEquals(100 * tiers.path("traffic").path("byteHitRatio").asDouble(), shown, 5.0, later.toString());
        assertTrue(later.path("ssd").asText().endsWith("/ 64.0 MiB"), later.toString());
        // Promotions and evictions go on meanwhile (the churn below): what was shown is at most
        // what the node says a moment later, and close to it.
        String[] moves = later.path("moves").asText().split(" / ");
        long promotions = tiers.path("traffic").path("promotions").asLong();
        long evictions = tiers.path("traffic").path("evictions").asLong();
        assertTrue(Long.parseLong(moves[0]) <= promotions && Long.parseLong(moves[0]) > promotions - 200, later + " vs " + promotions);
        assertTrue(Long.parseLong(moves[1]) <= evictions && Long.parseLong(moves[1]) > evictions - 200, later + " vs " + evictions);
        assertTrue(later.path("streams").asText().contains("events/amount"), later.toString());
        assertTrue(later.path("jobs").asText().contains("dash-job"), later.toString());
        // A job's row: its progress through its plan's steps, its hit ratio and tier mix.
        assertTrue(later.path("jobs").asText().matches(".*dash-job.*\\d+\\.\\d % \\(\\d+ of 8 steps\\).*"), later.toString());
        // Jobs that ended stay visible, as do pins, the policy and the datasets.
        assertTrue(later.path("recent").asText().contains("short-job") && later.path("recent").asText().contains("ended"),
            later.toString());
        assertTrue(later.path("pins").asText().contains("events/merchant_id"), later.toString());
        assertTrue(later.path("policy").asText().startsWith("SSD budget 64.0 MiB"), later.toString());
        assertTrue(later.path("datasets").asText().startsWith("events"), later.toString());
        // The churn warning appears once promotions and evictions chase each other.
        JsonNode churn = later;
        long until = System.nanoTime() + 40_000_000_000L;
        while (churn.path("churn").asText().isEmpty() && System.nanoTime() < until) {
          Thread.sleep(500);
          churn = b.snapshot();
        }
        assertTrue(churn.path("churn").asText().contains("thrashing") && !churn.path("churnHidden").asBoolean(),
            churn.toString() + " / " + client.tiers().path("churn"));
        assertTrue(b.chartsDrawn(), "every chart has pixels");

        assertEquals(List.of(), b.problems(), "console errors, exceptions or failed requests");
      } finally {
        stop.set(true);
        traffic.join(5_000);
      }
    }
  }

  /** A headless Chromium driven over the DevTools protocol. */
  static final class Browser implements AutoCloseable {
    private final Process process;
    private final WebSocket socket;
    private final AtomicInteger ids = new AtomicInteger();
    private final Map<Integer, CompletableFuture<JsonNode>> calls = new ConcurrentHashMap<>();
    private final List<String> problems = Collections.synchronizedList(new ArrayList<>());

    private Browser(Process process, WebSocket socket) {
      this.process = process;
      this.socket = socket;
    }

    static Browser start(Path chromium, Path profile) throws Exception {
      Files.createDirectories(profile);
      List<String> cmd = List.of(chromium.toString(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
          "--no-first-run", "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
          "--disable-extensions", "--disable-sync", "--user-data-dir=" + profile, "--remote-debugging-port=0",
          "--remote-debugging-address=127.0.0.1", "--remote-allow-origins=*", "about:blank");
      Process p = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      String ws = null;
      BufferedReader err = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8));
      StringBuilder seen = new StringBuilder();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      String line;
      while (System.nanoTime() < deadline && (line = err.readLine()) != null) {
        seen.append(line).append('\n');
        int i = line.indexOf("DevTools listening on ");
        if (i >= 0) {
          ws = line.substring(i + "DevTools listening on ".length()).strip();
          break;
        }
      }
      if (ws == null) {
        p.destroyForcibly();
        throw new IOException("chromium did not open its DevTools port: " + seen);
      }
      // Keep draining stderr so the browser never blocks on a full pipe.
      Thread.ofVirtual().start(() -> {
        try {
          while (err.readLine() != null) {
            // Chromium's own diagnostics; the page's console is watched over the protocol.
          }
        } catch (IOException ignored) {
          // The browser exited.
        }
      });
      URI browserWs = URI.create(ws);
      HttpClient http = HttpClient.newHttpClient();
      String list = http.send(HttpRequest.newBuilder(URI.create("http://" + browserWs.getAuthority() + "/json/list")).build(),
          HttpResponse.BodyHandlers.ofString()).body();
      String pageWs = null;
      for (JsonNode t : Json.parse(list)) {
        if (t.path("type").asText().equals("page")) {
          pageWs = t.path("webSocketDebuggerUrl").asText();
          break;
        }
      }
      if (pageWs == null) {
        p.destroyForcibly();
        throw new IOException("chromium has no page target: " + list);
      }
      Browser[] self = new Browser[1];
      WebSocket socket = http.newWebSocketBuilder().buildAsync(URI.create(pageWs), new WebSocket.Listener() {
        private final StringBuilder buf = new StringBuilder();

        @Override
        public CompletionStage<?> onText(WebSocket w, CharSequence data, boolean last) {
          buf.append(data);
          if (last) {
            String msg = buf.toString();
            buf.setLength(0);
            while (self[0] == null) {
              Thread.onSpinWait();
            }
            self[0].onMessage(msg);
          }
          w.request(1);
          return null;
        }
      }).get(30, TimeUnit.SECONDS);
      Browser b = new Browser(p, socket);
      self[0] = b;
      b.call("Runtime.enable", Json.object());
      b.call("Log.enable", Json.object());
      b.call("Network.enable", Json.object());
      b.call("Page.enable", Json.object());
      return b;
    }

    private void onMessage(String msg) {
      JsonNode m;
      try {
        m = Json.parse(msg);
      } catch (IOException e) {
        problems.add("unreadable DevTools message: " + msg);
        return;
      }
      if (m.has("id")) {
        CompletableFuture<JsonNode> f = calls.remove(m.path("id").asInt());
        if (f != null) {
          f.complete(m);
        }
        return;
      }
      String method = m.path("method").asText();
      JsonNode p = m.path("params");
      switch (method) {
        case "Runtime.exceptionThrown" -> problems.add("exception: " + p.path("exceptionDetails"));
        case "Runtime.consoleAPICalled" -> {
          String type = p.path("type").asText();
          if (type.equals("error") || type.equals("assert") || type.equals("warning")) {
            problems.add("console." + type + ": " + p.path("args"));
          }
        }
        case "Log.entryAdded" -> {
          String level = p.path("entry").path("level").asText();
          if (level.equals("error") || level.equals("warning")) {
            problems.add("log " + level + ": " + p.path("entry").path("text").asText() + " " + p.path("entry").path("url").asText());
          }
        }
        case "Network.loadingFailed" -> problems.add("request failed: " + p);
        case "Network.responseReceived" -> {
          int status = p.path("response").path("status").asInt();
          if (status >= 400) {
            problems.add("HTTP " + status + " for " + p.path("response").path("url").asText());
          }
        }
        default -> {
          // Other events are not of interest.
        }
      }
    }

    JsonNode call(String method, ObjectNode params) throws Exception {
      int id = ids.incrementAndGet();
      CompletableFuture<JsonNode> f = new CompletableFuture<>();
      calls.put(id, f);
      ObjectNode msg = Json.object().put("id", id).put("method", method);
      msg.set("params", params);
      synchronized (socket) {
        socket.sendText(Json.compact(msg), true).get(10, TimeUnit.SECONDS);
      }
      JsonNode r = f.get(30, TimeUnit.SECONDS);
      if (r.has("error")) {
        throw new IOException(method + " failed: " + r.path("error"));
      }
      return r.path("result");
    }

    void navigate(String url) throws Exception {
      JsonNode r = call("Page.navigate", Json.object().put("url", url));
      if (r.has("errorText")) {
        throw new IOException("navigating to " + url + " failed: " + r.path("errorText").asText());
      }
    }

    /** What the page shows, as a JSON object (evaluated in the page). */
    JsonNode snapshot() throws Exception {
      return evaluate("""
          (() => {
            const t = id => (document.getElementById(id) || {}).textContent || '';
            return JSON.stringify({updates: Number((document.body && document.body.dataset.updates) || 0), hit: t('hit'), ssd: t('ssd'),
              avoided: t('avoided'), hddread: t('hddread'), moves: t('moves'), status: t('status'),
              streams: t('streams'), jobs: t('jobs'), recent: t('recent'), pins: t('pins'), policy: t('policy'),
              datasets: t('datasets'), churn: t('churn'), churnHidden: !!(document.getElementById('churn') || {}).hidden});
          })()""");
    }

    /** Whether every chart canvas has pixels (read back once per canvas: repeated readbacks make Chromium warn). */
    boolean chartsDrawn() throws Exception {
      return evaluate("""
          JSON.stringify({drawn: ['bytes', 'ratio', 'moveschart', 'held'].every(id => {
            const c = document.getElementById(id);
            if (!c) return false;
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) return true;
            return false;
          })})""").path("drawn").asBoolean();
    }

    private JsonNode evaluate(String js) throws Exception {
      JsonNode r = call("Runtime.evaluate", Json.object().put("expression", js).put("returnByValue", true));
      if (r.has("exceptionDetails")) {
        throw new IOException("evaluating in the page failed: " + r.path("exceptionDetails"));
      }
      return Json.parse(r.path("result").path("value").asText("{}"));
    }

    JsonNode waitForUpdates(int n, Duration limit) throws Exception {
      long deadline = System.nanoTime() + limit.toNanos();
      JsonNode s = snapshot();
      while (s.path("updates").asInt() < n) {
        if (System.nanoTime() > deadline) {
          throw new AssertionError("the dashboard rendered " + s.path("updates").asInt() + " updates, not " + n + ": " + s
              + "; problems " + problems);
        }
        Thread.sleep(200);
        s = snapshot();
      }
      return s;
    }

    List<String> problems() {
      synchronized (problems) {
        return List.copyOf(problems);
      }
    }

    @Override
    public void close() {
      try {
        call("Browser.close", Json.object());
      } catch (Exception ignored) {
        // Killed below anyway.
      }
      socket.abort();
      try {
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
          process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        process.destroyForcibly();
      }
      process.descendants().forEach(ProcessHandle::destroyForcibly);
    }
  }
}
