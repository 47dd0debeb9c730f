package io.strata.sdk.node;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.tier.Tier;
import io.strata.sdk.internal.Json;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * A client of a cache node's HTTP/JSON API (docs/API.md). Every call is synchronous; a node that
 * cannot be reached is a {@link NodeUnavailableException}, a refused request a {@link
 * NodeRequestException} carrying the node's message. Thread-safe.
 */
public final class NodeClient {
  /** The node could not be reached (down, wrong address, timed out). */
  public static class NodeUnavailableException extends IOException {
    private static final long serialVersionUID = 1L;

    NodeUnavailableException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** The node answered with an error status. */
  public static final class NodeRequestException extends IOException {
    private static final long serialVersionUID = 1L;

    private final int status;

    NodeRequestException(int status, String message) {
      super(message);
      this.status = status;
    }

    public int status() {
      return status;
    }
  }

  /** How long {@link #derive} waits for the node to compute a feature. */
  public static final Duration DERIVE_TIMEOUT = Duration.ofHours(2);

  private final URI base;
  private final String token;
  private final HttpClient http;
  private final Duration timeout;

  /** A client of the node at {@code url} (for example {@code http://127.0.0.1:7070}); {@code token} may be null. */
  public NodeClient(String url, String token) {
    this(url, token, Duration.ofSeconds(10));
  }

  public NodeClient(String url, String token, Duration timeout) {
    Objects.requireNonNull(url, "url");
    URI u;
    try {
      u = URI.create(url.endsWith("/") ? url.substring(0, url.length() - 1) : url);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("bad node URL '" + url + "': " + e.getMessage());
    }
    if (u.getScheme() == null || !u.getScheme().startsWith("http") || u.getHost() == null) {
      throw new IllegalArgumentException("bad node URL '" + url + "': expected http://host:port");
    }
    this.base = u;
    this.token = token;
    this.timeout = timeout;
    this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(3)).build();
  }

  public String url() {
    return base.toString();
  }

  private JsonNode call(String method, String path, JsonNode body) throws IOException {
    return call(method, path, body, timeout);
  }

  private JsonNode call(String method, String path, JsonNode body, Duration limit) throws IOException {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path)).timeout(limit);
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    if (body != null) {
      b.header("content-type", "application/json");
      b.method(method, HttpRequest.BodyPublishers.ofString(Json.compact(body)));
    } else {
      b.method(method, HttpRequest.BodyPublishers.noBody());
    }
    HttpResponse<String> r;
    try {
      r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    } catch (ConnectException | HttpTimeoutException e) {
      throw new NodeUnavailableException("cache node at " + base + " is unreachable: " + e.getClass().getSimpleName()
          + (e.getMessage() == null ? "" : " " + e.getMessage()), e);
    } catch (IOException e) {
      throw new NodeUnavailableException("cache node at " + base + " is unreachable: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new NodeUnavailableException("interrupted while calling the cache node", e);
    }
    JsonNode json;
    try {
      json = r.body().isEmpty() ? Json.object() : Json.parse(r.body());
    } catch (IOException e) {
      throw new NodeRequestException(r.statusCode(), "the node answered " + r.statusCode() + " with a body that is not JSON");
    }
    if (r.statusCode() >= 400) {
      throw new NodeRequestException(r.statusCode(), json.path("error").asText("HTTP " + r.statusCode()));
    }
    return json;
  }

  public JsonNode health() throws IOException {
    return call("GET", "/health", null);
  }

  /** Registers the dataset directory {@code dir} (inside one of the node's HDD roots). */
  public JsonNode registerDataset(Path dir) throws IOException {
    return call("POST", "/v1/datasets", Json.object().put("path", dir.toAbsolutePath().normalize().toString()));
  }

  public JsonNode datasets() throws IOException {
    return call("GET", "/v1/datasets", null);
  }

  public JsonNode dataset(String name) throws IOException {
    return call("GET", "/v1/datasets/" + name, null);
  }

  /** Where {@code features} of {@code chunks} (all when null) live now. */
  public JsonNode resolve(String job, String dataset, List<String> features, List<Integer> chunks) throws IOException {
    ObjectNode b = Json.object().put("dataset", dataset);
    if (job != null) {
      b.put("job", job);
    }
    ArrayNode f = b.putArray("features");
    features.forEach(f::add);
    if (chunks != null) {
      ArrayNode c = b.putArray("chunks");
      chunks.forEach(c::add);
    }
    return call("POST", "/v1/resolve", b);
  }

  /** One read to report. */
  public record Read(String feature, int chunk, long bytes, Tier tier) {}

  public JsonNode reportReads(String job, String dataset, List<Read> reads) throws IOException {
    return reportReads(job, dataset, reads, -1);
  }

  /**
   * Reports reads and, when {@code step >= 0}, that the job has reached global step {@code step}
   * of its plan. The answer's {@code planned} says whether the node holds a plan for the job.
   */
  public JsonNode reportReads(String job, String dataset, List<Read> reads, long step) throws IOException {
    return reportReads(job, dataset, reads, step, -1);
  }

  /**
   * As {@link #reportReads(String, String, List, long)}, also telling the node how many bytes of
   * segments it evicted the job still keeps mapped ({@code unlinkedMappedBytes}, when {@code >= 0}).
   */
  public JsonNode reportReads(String job, String dataset, List<Read> reads, long step, long unlinkedMappedBytes)
      throws IOException {
    ObjectNode b = Json.object().put("job", job).put("dataset", dataset);
    if (step >= 0) {
      b.put("step", step);
    }
    if (unlinkedMappedBytes >= 0) {
      b.put("unlinkedMappedBytes", unlinkedMappedBytes);
    }
    ArrayNode a = b.putArray("reads");
    for (Read r : reads) {
      a.addObject().put("feature", r.feature()).put("chunk", r.chunk()).put("bytes", r.bytes()).put("tier", r.tier().apiName());
    }
    return call("POST", "/v1/reads", b);
  }

  /**
   * Declares a job's plan as its loader's program: the node expands it into the chunks of every
   * step, from {@code program.startStep()} on.
   */
  public JsonNode declarePlan(String job, String dataset, List<String> features, NodePlan program,
      boolean substitutable) throws IOException {
    ObjectNode b = Json.object().put("job", job).put("dataset", dataset).put("substitutable", substitutable);
    ArrayNode f = b.putArray("features");
    features.forEach(f::add);
    b.set("program", program.toJson());
    return call("POST", "/v1/plans", b);
  }

  /**
   * Declares a distributed job's plan once: {@code program}'s shard for each rank goes to the node
   * of {@code hosts.get(rank)} (a cluster address or a node's URL), here or through the cluster;
   * each rank's plan is named {@code job@rank}, the name its loader declares under.
   */
  public JsonNode declareDistributedPlan(String job, String dataset, List<String> features,
      NodePlan program, boolean substitutable, List<String> hosts) throws IOException {
    ObjectNode b = Json.object().put("job", job).put("dataset", dataset).put("substitutable", substitutable);
    features.forEach(b.putArray("features")::add);
    b.set("program", program.toJson());
    hosts.forEach(b.putArray("ranks")::add);
    return call("POST", "/v1/plans", b);
  }

  /** Declares a job's plan as one chunk order for every epoch; {@code chunkOrder} may be null (dataset order). */
  public JsonNode declarePlan(String job, String dataset, List<String> features, int epochs, List<Integer> chunkOrder,
      boolean substitutable) throws IOException {
    ObjectNode b = Json.object().put("job", job).put("dataset", dataset).put("epochs", epochs).put("substitutable", substitutable);
    ArrayNode f = b.putArray("features");
    features.forEach(f::add);
    if (chunkOrder != null) {
      ArrayNode c = b.putArray("chunkOrder");
      chunkOrder.forEach(c::add);
    }
    return call("POST", "/v1/plans", b);
  }

  /**
   * Tells the node that a reader found its segment of {@code feature} of {@code chunk} damaged
   * after mapping it ({@code problem}): the node checks every checksum of the file and drops it
   * when damaged. The answer's {@code damaged} says what the check found.
   */
  public JsonNode checkSegment(String dataset, String feature, int chunk, String problem) throws IOException {
    return call("POST", "/v1/segments/check", Json.object().put("dataset", dataset).put("feature", feature)
        .put("chunk", chunk).put("problem", problem));
  }

  public JsonNode endPlan(String job) throws IOException {
    return call("DELETE", "/v1/plans/" + job, null);
  }

  /**
   * Asks the node for a derived feature of {@code dataset}: it computes it if no job has yet
   * (callers asking meanwhile wait for that one computation), stores it and puts its chunks on
   * the SSD tier. Returns the feature's fingerprint and state. Computing may take long: the node
   * answers with a job at once, and this call polls it for up to {@link #DERIVE_TIMEOUT}.
   */
  public JsonNode derive(String dataset, String spec) throws IOException {
    JsonNode job = startDerive(dataset, spec);
    long deadline = System.nanoTime() + DERIVE_TIMEOUT.toNanos();
    long pause = 50;
    while (job.path("state").asText().equals("queued") || job.path("state").asText().equals("running")) {
      if (System.nanoTime() > deadline) {
        throw new NodeUnavailableException("the node's derivation of " + spec + " (" + job.path("job").asText()
            + ") did not finish within " + DERIVE_TIMEOUT, null);
      }
      try {
        Thread.sleep(pause);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted while waiting for the node's derivation of " + spec);
      }
      pause = Math.min(1_000, pause * 2);
      job = derivation(job.path("job").asText());
    }
    if (job.path("state").asText().equals("failed")) {
      throw new NodeRequestException(job.path("error").path("status").asInt(500), job.path("error").path("message").asText());
    }
    return job.path("feature");
  }

  /**
   * Asks the node to derive a feature and returns at once with the job ({@code job}, {@code
   * state}: queued, running, done or failed); {@link #derivation} polls it.
   */
  public JsonNode startDerive(String dataset, String spec) throws IOException {
    return call("POST", "/v1/features", Json.object().put("dataset", dataset).put("spec", spec));
  }

  /** A derivation job's state: progress while it runs, the feature once done, the error if it failed. */
  public JsonNode derivation(String job) throws IOException {
    return call("GET", "/v1/features/jobs/" + URLEncoder.encode(job, StandardCharsets.UTF_8), null);
  }

  /** The derived features the node's feature store holds. */
  public JsonNode derivedFeatures() throws IOException {
    return call("GET", "/v1/features", null);
  }

  public JsonNode tiers() throws IOException {
    return call("GET", "/v1/tiers", null);
  }

  public JsonNode policy() throws IOException {
    return call("GET", "/v1/policy", null);
  }

  public JsonNode setPolicy(JsonNode changes) throws IOException {
    return call("PUT", "/v1/policy", changes);
  }

  private static ObjectNode target(String dataset, List<String> features, List<Integer> chunks) {
    ObjectNode b = Json.object().put("dataset", dataset);
    if (features != null) {
      ArrayNode f = b.putArray("features");
      features.forEach(f::add);
    }
    if (chunks != null) {
      ArrayNode c = b.putArray("chunks");
      chunks.forEach(c::add);
    }
    return b;
  }

  public JsonNode promote(String dataset, List<String> features, List<Integer> chunks) throws IOException {
    return call("POST", "/v1/promote", target(dataset, features, chunks));
  }

  public JsonNode evict(String dataset, List<String> features, List<Integer> chunks) throws IOException {
    return call("POST", "/v1/evict", target(dataset, features, chunks));
  }

  public JsonNode pin(String dataset, String feature) throws IOException {
    ObjectNode b = Json.object().put("dataset", dataset);
    if (feature != null) {
      b.put("feature", feature);
    }
    return call("POST", "/v1/pin", b);
  }

  public JsonNode unpin(String dataset, String feature) throws IOException {
    ObjectNode b = Json.object().put("dataset", dataset);
    if (feature != null) {
      b.put("feature", feature);
    }
    return call("POST", "/v1/unpin", b);
  }

  /** The node's recorded trace: its CSV text and how many of its oldest rows the node dropped. */
  public record RecordedTrace(String csv, long droppedRows) {}

  /** What the node recorded of the jobs' reads and plans ({@code GET /v1/trace}). */
  public RecordedTrace trace() throws IOException {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve("/v1/trace")).timeout(timeout).GET();
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    HttpResponse<String> r;
    try {
      r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new NodeUnavailableException("cache node at " + base + " is unreachable: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new NodeUnavailableException("interrupted while calling the cache node", e);
    }
    if (r.statusCode() >= 400) {
      String msg;
      try {
        msg = Json.parse(r.body()).path("error").asText("HTTP " + r.statusCode());
      } catch (IOException e) {
        msg = "HTTP " + r.statusCode();
      }
      throw new NodeRequestException(r.statusCode(), msg);
    }
    return new RecordedTrace(r.body(), Long.parseLong(r.headers().firstValue("x-strata-trace-dropped").orElse("0")));
  }

  /** Forgets the recorded trace. */
  public JsonNode clearTrace() throws IOException {
    return call("DELETE", "/v1/trace", null);
  }

  /** The raw text of {@code /metrics}. */
  public String metrics() throws IOException {
    HttpRequest req = HttpRequest.newBuilder(base.resolve("/metrics")).timeout(timeout).GET().build();
    try {
      return http.send(req, HttpResponse.BodyHandlers.ofString()).body();
    } catch (IOException e) {
      throw new NodeUnavailableException("cache node at " + base + " is unreachable: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new NodeUnavailableException("interrupted while calling the cache node", e);
    }
  }
}
