package io.strata.node;

import static io.strata.node.ApiRequests.body;
import static io.strata.node.ApiRequests.integer;
import static io.strata.node.ApiRequests.ints;
import static io.strata.node.ApiRequests.planRequest;
import static io.strata.node.ApiRequests.policyChange;
import static io.strata.node.ApiRequests.readsReport;
import static io.strata.node.ApiRequests.strings;
import static io.strata.node.ApiRequests.text;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.node.ApiRequests.PlanRequest;
import io.strata.node.ApiRequests.ReadsReport;
import io.strata.sdk.internal.Json;
import io.strata.store.FeatureMeta;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Map;
import java.util.concurrent.Callable;

/** The node's HTTP/JSON API (docs/API.md): routes, validation, JSON errors, token check. */
final class NodeApi {
  private static final System.Logger LOG = System.getLogger("io.strata.node");
  private final TierManager tiers;
  private final NodeConfig config;
  private final WorkerExecutor workers;
  private final DeriveJobs derives;
  private final Dashboard dashboard;
  private final boolean loopbackOnly;

  NodeApi(Vertx vertx, TierManager tiers, NodeConfig config, DeriveJobs derives) {
    this.tiers = tiers;
    this.config = config;
    this.workers = vertx.createSharedWorkerExecutor("strata-api", 4);
    this.derives = derives;
    this.dashboard = new Dashboard(tiers);
    this.loopbackOnly = NodeConfig.isLoopback(config.bindHost());
  }

  Router router(Vertx vertx) {
    Router r = Router.router(vertx);
    // A body of any type but JSON is refused before the body handler sees it (it would decode
    // forms and multipart, and fail on a form that has already ended): the API takes JSON only.
    r.route().handler(ctx -> {
      String type = ctx.request().getHeader("content-type");
      String mime = type == null ? null : type.split(";", 2)[0].strip();
      if (mime != null && !mime.equalsIgnoreCase("application/json")) {
        error(ctx, 415, "the API takes JSON bodies only ('Content-Type: application/json'), not '" + clip(type) + "'");
      } else {
        ctx.next();
      }
    });
    r.route().handler(this::guard);
    r.route().handler(BodyHandler.create(false).setBodyLimit(config.maxBodyBytes()));
    r.route().handler(this::authorize);
    r.get("/health").handler(ctx -> ctx.json(Map.of("status", "ok", "uptimeSeconds", tiers.now())));
    r.get("/metrics").handler(ctx -> run(ctx, tiers::scrapeMetrics, "text/plain; version=0.0.4; charset=utf-8"));
    r.get("/").handler(ctx -> ctx.redirect("/ui"));
    r.get("/ui").handler(ctx -> ctx.response().putHeader("content-type", "text/html; charset=utf-8").end(dashboard.html()));
    r.get("/ui/data").handler(ctx -> run(ctx, dashboard::data));
    r.get("/v1/datasets").handler(ctx -> run(ctx, tiers::listDatasets));
    r.post("/v1/datasets").handler(ctx -> run(ctx, () -> {
      JsonNode b = body(ctx);
      return tiers.register(text(b, "path", true));
    }, 201));
    r.get("/v1/datasets/:name").handler(ctx -> run(ctx, () -> tiers.describe(ctx.pathParam("name"))));
    r.post("/v1/resolve").handler(ctx -> run(ctx, () -> {
      JsonNode b = body(ctx);
      return tiers.resolve(text(b, "job", false), text(b, "dataset", true), strings(b, "features", true), ints(b, "chunks"));
    }));
    r.post("/v1/reads").handler(ctx -> run(ctx, () -> {
      ReadsReport q = readsReport(body(ctx));
      return tiers.reportReads(q.job(), q.dataset(), q.reads(), q.step(), q.unlinkedMappedBytes());
    }));
    r.post("/v1/plans").handler(ctx -> run(ctx, () -> {
      PlanRequest q = planRequest(body(ctx));
      if (q.program() == null) {
        return tiers.plan(q.job(), q.dataset(), q.features(), q.epochs(), q.chunkOrder(), q.substitutable());
      }
      return q.ranks() != null ? tiers.plan(q.job(), q.dataset(), q.features(), q.program(), q.substitutable(), q.ranks())
          : tiers.plan(q.job(), q.dataset(), q.features(), q.program(), q.substitutable());
    }, 201));
    r.get("/v1/trace").handler(ctx -> workers.executeBlocking(() -> new TraceExport(tiers.traceCsv(), tiers.traceDropped()), false)
        .onComplete(ar -> {
          if (ar.succeeded()) {
            ctx.response().putHeader("content-type", "text/csv; charset=utf-8")
                .putHeader("x-strata-trace-dropped", String.valueOf(ar.result().dropped())).end(ar.result().csv());
          } else {
            fail(ctx, ar.cause());
          }
        }));
    r.delete("/v1/trace").handler(ctx -> run(ctx, () -> Json.object().put("cleared", tiers.clearTrace())));
    r.post("/v1/segments/check").handler(ctx -> run(ctx, () -> {
      JsonNode b = body(ctx);
      String problem = text(b, "problem", false);
      return tiers.checkSegment(text(b, "dataset", true), text(b, "feature", true), integer(b, "chunk"),
          problem == null ? "unspecified" : clip(problem));
    }));
    r.delete("/v1/plans/:job").handler(ctx -> run(ctx, () -> {
      tiers.endJob(ctx.pathParam("job"));
      return Json.object().put("ended", ctx.pathParam("job"));
    }));
    // Computing a derived feature can take hours: the request is checked and answered 202 with a
    // job to poll; the computation runs on the derive jobs' own threads, so that it never holds up
    // the API's workers (resolves, reads, plans) however many jobs ask at once.
    r.post("/v1/features").handler(ctx -> workers.executeBlocking(() -> {
      JsonNode b = body(ctx);
      String dataset = text(b, "dataset", true);
      String spec = tiers.derivations().check(dataset, text(b, "spec", true));
      return derives.submit(dataset, spec, progress -> derived(tiers.derivations().derive(dataset, spec, progress)));
    }, false).onComplete(ar -> {
      if (ar.succeeded()) {
        ctx.response().setStatusCode(202).putHeader("content-type", "application/json")
            .putHeader("location", "/v1/features/jobs/" + ar.result().path("job").asText()).end(Json.compact(ar.result()));
      } else {
        fail(ctx, ar.cause());
      }
    }));
    r.get("/v1/features/jobs/:id").handler(ctx -> run(ctx, () -> derives.get(ctx.pathParam("id"))));
    r.get("/v1/features").handler(ctx -> run(ctx, () -> {
      com.fasterxml.jackson.databind.node.ArrayNode a = Json.array();
      for (FeatureMeta m : tiers.derivations().list()) {
        a.add(m.toJson().without("statistics"));
      }
      return a;
    }));
    r.get("/v1/tiers").handler(ctx -> run(ctx, tiers::status));
    // Peer reads (clustered nodes): a segment file, streamed, to a holder of the cluster's token.
    r.get("/v1/peer/segment").handler(this::peerSegment);
    r.get("/v1/peer/derived").handler(this::peerDerived);
    r.get("/v1/policy").handler(ctx -> run(ctx, tiers::policy));
    r.put("/v1/policy").handler(ctx -> run(ctx, () -> tiers.setPolicy(policyChange(body(ctx)))));
    r.post("/v1/promote").handler(ctx -> run(ctx, () -> {
      JsonNode b = body(ctx);
      return tiers.promoteNow(text(b, "dataset", true), strings(b, "features", false), ints(b, "chunks"));
    }, 202));
    r.post("/v1/evict").handler(ctx -> run(ctx, () -> {
      JsonNode b = body(ctx);
      return tiers.evictNow(text(b, "dataset", true), strings(b, "features", false), ints(b, "chunks"));
    }));
    r.post("/v1/pin").handler(ctx -> run(ctx, () -> {
      JsonNode b = body(ctx);
      return tiers.pin(text(b, "dataset", true), text(b, "feature", false), true);
    }));
    r.post("/v1/unpin").handler(ctx -> run(ctx, () -> {
      JsonNode b = body(ctx);
      return tiers.pin(text(b, "dataset", true), text(b, "feature", false), false);
    }));
    r.route().last().handler(ctx -> error(ctx, 404, "no route " + ctx.request().method() + " " + ctx.request().path()));
    r.route().failureHandler(ctx -> {
      int status = ctx.statusCode();
      if (status == 413) {
        error(ctx, 413, "request body exceeds " + config.maxBodyBytes() + " bytes");
      } else if (ctx.response().headWritten()) {
        ctx.request().connection().close(); // half an answer is no answer: the client sees the connection end
      } else if (ctx.failure() != null && ctx.statusCode() < 400) {
        // Failed while reading the request (a broken chunked body, a reset): the request's fault.
        ctx.response().putHeader("connection", "close");
        error(ctx, 400, "the request body could not be read: it is not valid HTTP/1.1 (" + bodyProblem(ctx.failure()) + ")");
      } else if (status >= 400 && status < 500) {
        error(ctx, status, ctx.failure() instanceof NodeException n ? n.getMessage() : "the request was refused");
      } else {
        fail(ctx, ctx.failure() == null ? new IllegalStateException("request failed with " + status) : ctx.failure());
      }
    });
    return r;
  }

  /**
   * What a web page on this host must not be able to do to a node: a loopback node answers only
   * requests addressed to loopback (Host, against DNS rebinding); changes come with a JSON body
   * (a cross-site form cannot send {@code application/json} without the browser asking first)
   * and from no foreign Origin.
   */
  private void guard(RoutingContext ctx) {
    HttpMethod m = ctx.request().method();
    if (loopbackOnly) {
      String host = ctx.request().authority() == null ? null : ctx.request().authority().host();
      if (host != null && !NodeConfig.isLoopbackName(host)) {
        error(ctx, 403, "this node serves loopback only; the request is addressed to '" + clip(host) + "'");
        return;
      }
    }
    boolean mutating = m.equals(HttpMethod.POST) || m.equals(HttpMethod.PUT) || m.equals(HttpMethod.DELETE) || m.equals(HttpMethod.PATCH);
    if (mutating) {
      String origin = ctx.request().getHeader("Origin");
      if (origin != null && !sameMachineOrigin(origin)) {
        error(ctx, 403, "changes from another origin are refused (Origin '" + clip(origin) + "')");
        return;
      }
      if (!m.equals(HttpMethod.DELETE)) {
        String type = ctx.request().getHeader("content-type");
        String mime = type == null ? "" : type.split(";", 2)[0].strip();
        if (!mime.equalsIgnoreCase("application/json")) {
          error(ctx, 415, "changes take a JSON body with 'Content-Type: application/json'"
              + (type == null ? "" : ", not '" + clip(type) + "'"));
          return;
        }
      }
    }
    ctx.next();
  }

  private static boolean sameMachineOrigin(String origin) {
    try {
      URI u = URI.create(origin);
      return ("http".equals(u.getScheme()) || "https".equals(u.getScheme())) && u.getHost() != null
          && NodeConfig.isLoopbackName(u.getHost());
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /** A request that could not be decoded: the JSON error with the status its cause calls for. */
  static void invalidRequest(io.vertx.core.http.HttpServerRequest req) {
    Throwable cause = req.decoderResult() == null ? null : req.decoderResult().cause();
    int status = 400;
    String message = "the request could not be decoded";
    if (cause instanceof io.netty.handler.codec.http.TooLongHttpLineException) {
      status = 414;
      message = "the request line is too long";
    } else if (cause instanceof io.netty.handler.codec.http.TooLongHttpHeaderException) {
      status = 431;
      message = "the request's headers are too large";
    }
    ObjectNode o = Json.object().put("error", message).put("status", status);
    req.response().setStatusCode(status).putHeader("content-type", "application/json").putHeader("connection", "close")
        .end(Json.compact(o));
  }

  /** A derivation's outcome as its job's result: the stored feature's description and what this run did. */
  private static ObjectNode derived(Derivations.Derived d) {
    return d.meta().toJson().put("cached", d.cached()).put("source", d.source()).put("seconds", d.seconds()).put("cpuSeconds", d.cpuSeconds())
        .put("placeCpuSeconds", d.placeCpuSeconds()).put("segmentsWritten", d.segmentsWritten());
  }

  static String clip(String s) {
    return s.length() > 80 ? s.substring(0, 80) + "..." : s;
  }

  private void authorize(RoutingContext ctx) {
    HttpMethod m = ctx.request().method();
    boolean mutating = m.equals(HttpMethod.POST) || m.equals(HttpMethod.PUT) || m.equals(HttpMethod.DELETE) || m.equals(HttpMethod.PATCH);
    if (mutating && config.token() != null) {
      String h = ctx.request().getHeader("Authorization");
      if (h == null || !constantTimeEquals(h, "Bearer " + config.token())) {
        error(ctx, 401, "this node requires 'Authorization: Bearer <token>' for " + m + " requests");
        return;
      }
    }
    ctx.next();
  }

  /** Whether a peer request may go on: a clustered node, the cluster's token; else answered here. */
  private boolean peerAuthorized(RoutingContext ctx) {
    String h = ctx.request().getHeader("Authorization");
    if (config.cluster() == null || config.token() == null) {
      error(ctx, 404, "this node is not in a cluster: it serves nothing to peers");
      return false;
    }
    if (h == null || !constantTimeEquals(h, "Bearer " + config.token())) {
      error(ctx, 401, "peer reads require 'Authorization: Bearer <cluster token>'");
      return false;
    }
    return true;
  }

  /** {@code GET /v1/peer/derived?dataset&version&spec[&chunk]}: a derived feature's description, or one chunk's stored form. */
  private void peerDerived(RoutingContext ctx) {
    if (!peerAuthorized(ctx)) {
      return;
    }
    workers.executeBlocking(() -> {
      String ds = ctx.request().getParam("dataset");
      String version = ctx.request().getParam("version");
      String spec = ctx.request().getParam("spec");
      String chunk = ctx.request().getParam("chunk");
      if (ds == null || version == null || spec == null) {
        throw NodeException.badRequest("a peer read of a derived feature names 'dataset', 'version' and 'spec'");
      }
      if (chunk != null && !chunk.matches("\\d{1,9}")) {
        throw NodeException.badRequest("'chunk' must be a non-negative integer");
      }
      return tiers.derivations().servePeer(ds, version, spec, chunk == null ? null : Integer.valueOf(chunk));
    }, false).onComplete(ar -> {
      if (ar.failed()) {
        fail(ctx, ar.cause());
        return;
      }
      boolean description = ctx.request().getParam("chunk") == null;
      ctx.response().putHeader("content-type", description ? "application/json" : "application/octet-stream")
          .end(io.vertx.core.buffer.Buffer.buffer(ar.result()));
    });
  }

  private void peerSegment(RoutingContext ctx) {
    if (!peerAuthorized(ctx)) {
      return;
    }
    workers.executeBlocking(() -> {
      String chunk = ctx.request().getParam("chunk");
      if (chunk == null || !chunk.matches("\\d{1,9}")) {
        throw NodeException.badRequest("'chunk' must be a non-negative integer");
      }
      String ds = ctx.request().getParam("dataset");
      String version = ctx.request().getParam("version");
      String feature = ctx.request().getParam("feature");
      if (ds == null || version == null || feature == null) {
        throw NodeException.badRequest("a peer read names 'dataset', 'version', 'feature' and 'chunk'");
      }
      Path p = tiers.peerSegment(ds, version, feature, Integer.parseInt(chunk));
      // Opened here, so that an eviction between the lookup and the send cannot unlink it from under us.
      return new PeerFile(p, Files.size(p));
    }, false).onComplete(ar -> {
      if (ar.failed()) {
        fail(ctx, ar.cause() instanceof NoSuchFileException
            ? NodeException.notFound("the segment was evicted: " + ar.cause().getMessage()) : ar.cause());
        return;
      }
      Path p = ar.result().path();
      long size = ar.result().bytes();
      ctx.response().putHeader("content-type", "application/vnd.apache.arrow.file").sendFile(p.toString())
          .onComplete(sent -> {
            if (sent.succeeded()) {
              tiers.servedToPeer(size);
            } else if (!ctx.response().headWritten()) {
              error(ctx, 404, "the segment was evicted: " + sent.cause().getMessage());
            }
          });
    });
  }

  private static boolean constantTimeEquals(String a, String b) {
    return MessageDigest.isEqual(a.getBytes(StandardCharsets.UTF_8),
        b.getBytes(StandardCharsets.UTF_8));
  }

  private void run(RoutingContext ctx, Callable<Object> work) {
    run(ctx, work, 200);
  }

  private void run(RoutingContext ctx, Callable<Object> work, String contentType) {
    Future<Object> f = workers.executeBlocking(work, false);
    f.onComplete(ar -> {
      if (ar.succeeded()) {
        ctx.response().putHeader("content-type", contentType).end(String.valueOf(ar.result()));
      } else {
        fail(ctx, ar.cause());
      }
    });
  }

  private void run(RoutingContext ctx, Callable<Object> work, int status) {
    run(workers, ctx, work, status);
  }

  private void run(WorkerExecutor pool, RoutingContext ctx, Callable<Object> work, int status) {
    Future<Object> f = pool.executeBlocking(work, false);
    f.onComplete(ar -> {
      if (ar.succeeded()) {
        Object v = ar.result();
        String body = Json.compact(v instanceof JsonNode n ? n : Json.MAPPER.valueToTree(v));
        ctx.response().setStatusCode(status).putHeader("content-type", "application/json").end(body);
      } else {
        fail(ctx, ar.cause());
      }
    });
  }

  /** The HTTP status of a refusal of {@code kind}. */
  static int status(NodeException.Kind kind) {
    return switch (kind) {
      case INVALID -> 400;
      case FORBIDDEN -> 403;
      case NOT_FOUND -> 404;
      case CONFLICT -> 409;
      case BUSY -> 429;
      case UNAVAILABLE -> 503;
    };
  }

  private static void fail(RoutingContext ctx, Throwable t) {
    if (t instanceof NodeException n) {
      error(ctx, status(n.kind()), n.getMessage());
    } else if (t instanceof IllegalArgumentException) {
      error(ctx, 400, t.getMessage());
    } else if (t instanceof AccessDeniedException || t.getCause() instanceof AccessDeniedException) {
      error(ctx, 403, (t instanceof AccessDeniedException ? t : t.getCause()).getMessage());
    } else if (t instanceof IOException || t instanceof UncheckedIOException) {
      error(ctx, 500, "I/O error: " + t.getMessage());
    } else {
      // A fault of the node's own: the whole trace goes to its log, the answer names no class.
      LOG.log(System.Logger.Level.ERROR, "internal error answering " + ctx.request().method() + " " + ctx.request().path(), t);
      error(ctx, 500, "internal error (the node's log has the details)");
    }
  }

  /** What broke in a request body, in the protocol's words (Netty's messages name no class). */
  private static String bodyProblem(Throwable t) {
    String m = t.getMessage();
    if (m == null || m.isBlank() || m.matches(".*\\b[a-z]+(\\.[a-zA-Z_$]+){2,}.*")) {
      return "the connection broke or the body is malformed";
    }
    return m.length() > 120 ? m.substring(0, 120) + "..." : m;
  }

  /**
   * Checks what the router cannot answer in JSON itself: the HTTP version (1.1 and 1.0 are
   * served; an HTTP/2 preface or {@code HTTP/9.9} is refused) and a path that is not valid
   * percent-encoded UTF-8. Answers the refusal (400, JSON, connection closed) and returns false;
   * true when the request may go on to the router.
   */
  static boolean admit(io.vertx.core.http.HttpServerRequest req) {
    String problem = null;
    io.vertx.core.http.HttpVersion v = req.version();
    if (v != io.vertx.core.http.HttpVersion.HTTP_1_1 && v != io.vertx.core.http.HttpVersion.HTTP_1_0) {
      problem = "this node speaks HTTP/1.1 (and 1.0) only, not " + (v == null ? "the version this request names" : v.alpnName());
    } else if (!validPath(req.path())) {
      problem = "the request path is not valid percent-encoded UTF-8";
    } else if (req.query() != null && !req.query().isEmpty() && !validPath(req.query())) {
      problem = "the request's query is not valid percent-encoded UTF-8";
    }
    if (problem == null) {
      return true;
    }
    ObjectNode o = Json.object().put("error", problem).put("status", 400);
    req.response().setStatusCode(400).putHeader("content-type", "application/json").putHeader("connection", "close")
        .end(Json.compact(o)).onComplete(x -> req.connection().close());
    return false;
  }

  /** Whether every {@code %} of {@code path} starts two hex digits and the bytes they give are UTF-8. */
  static boolean validPath(String path) {
    if (path == null || path.isEmpty()) {
      return false;
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(path.length());
    for (int i = 0; i < path.length(); i++) {
      char c = path.charAt(i);
      if (c == '%') {
        if (i + 2 >= path.length() || Character.digit(path.charAt(i + 1), 16) < 0 || Character.digit(path.charAt(i + 2), 16) < 0) {
          return false;
        }
        bytes.write(Character.digit(path.charAt(i + 1), 16) * 16 + Character.digit(path.charAt(i + 2), 16));
        i += 2;
      } else if (c < 0x20 || c == 0x7f) {
        return false;
      } else {
        bytes.writeBytes(String.valueOf(c).getBytes(StandardCharsets.UTF_8));
      }
    }
    try {
      StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes.toByteArray()));
      return true;
    } catch (CharacterCodingException e) {
      return false;
    }
  }

  static void error(RoutingContext ctx, int status, String message) {
    if (ctx.response().ended() || ctx.response().headWritten()) {
      return;
    }
    ObjectNode o = Json.object().put("error", message).put("status", status);
    ctx.response().setStatusCode(status).putHeader("content-type", "application/json").end(Json.compact(o));
  }

  // ---------------------------------------------------------------- request parsing

  /** The recorded trace and how many rows it dropped, taken together. */
  private record TraceExport(String csv, long dropped) {}

  /** A segment a peer asked for, and its size when it was looked up. */
  private record PeerFile(Path path, long bytes) {}
}
