package io.strata.node;

import io.strata.sdk.hadoop.HadoopFileSystems;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import java.io.IOException;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A running cache node: the tiers ({@link TierManager}) behind a Vert.x HTTP/JSON API on the
 * configured address. {@link #start} returns once the node listens; {@link #close} stops it and
 * marks the shutdown clean. With a cluster configured ({@link NodeConfig#cluster}), the node first
 * joins it ({@link HazelcastCluster}: its Vert.x is the clustered one), then opens its tiers
 * (verifying every segment), listens, and tells the cluster its URL and what it holds; four
 * times a second it copies from peers the chunks its jobs' plans read next ({@link TierManager#peerPrefetch}).
 */
public final class CacheNode implements AutoCloseable {
  private final Vertx vertx;
  private final HttpServer server;
  private final TierManager tiers;
  private final NodeConfig config;
  private final long sampler;
  private final DeriveJobs derives;
  private final Cluster cluster;

  private CacheNode(Vertx vertx, HttpServer server, TierManager tiers, NodeConfig config, long sampler, DeriveJobs derives,
      Cluster cluster) {
    this.derives = derives;
    this.cluster = cluster;
    this.vertx = vertx;
    this.server = server;
    this.tiers = tiers;
    this.config = config;
    this.sampler = sampler;
  }

  /** Starts a node and waits until it listens (or fails with the reason); every value of {@code config} is taken as given. */
  public static CacheNode start(NodeConfig config) throws IOException {
    return start(config, Setting.startableKeys());
  }

  /**
   * Starts a node whose {@code given} settings ({@code ssdBudgetBytes}, {@code
   * flashWriteBudgetBytesPerHour}, {@code hddRoots}) were given explicitly; for the others the
   * values kept in its home from an earlier run win over {@code config}'s defaults.
   */
  public static CacheNode start(NodeConfig startConfig, Set<String> given) throws IOException {
    return start(startConfig, given, ConnectionGuard.Limits.DEFAULT);
  }

  /** As above, with the connection bounds given (tests shorten them). */
  static CacheNode start(NodeConfig startConfig, Set<String> given, ConnectionGuard.Limits limits) throws IOException {
    HadoopFileSystems.configure(startConfig.hadoop()); // before any file of an hdfs:// root is read
    io.strata.sdk.s3.S3FileSystems.configure(startConfig.s3()); // and of an s3:// one
    // The disks under the HDD roots, as the configuration names them: the gaps their reads read through.
    startConfig.hddGapBytes().forEach(io.strata.sdk.files.OrcReads::setGapBytes);
    VertxOptions options = new VertxOptions().setWorkerPoolSize(8);
    Cluster cluster = startConfig.cluster() == null ? Cluster.ALONE : HazelcastCluster.join(startConfig.cluster(), options);
    TierManager tiers;
    try {
      tiers = new TierManager(startConfig, given, cluster);
    } catch (IOException | RuntimeException e) {
      closeCluster(cluster);
      throw e;
    }
    NodeConfig config = tiers.config();
    Vertx vertx = cluster.clustered() ? cluster.vertx() : Vertx.vertx(options);
    boolean ok = false;
    DeriveJobs derives = new DeriveJobs();
    try {
      NodeApi api = new NodeApi(vertx, tiers, config, derives);
      // Connections idle for a minute are closed, and the guard bounds what idleness does not
      // (slow headers, slow requests, the number of connections); a request line or headers too
      // long get the API's JSON error (414, 431) like every other refusal.
      ConnectionGuard guard = new ConnectionGuard(limits);
      io.vertx.ext.web.Router router = api.router(vertx);
      HttpServer server = vertx.createHttpServer(new HttpServerOptions().setCompressionSupported(true).setIdleTimeout(60)
              .setHttp2ClearTextEnabled(false))
          .connectionHandler(guard::connected)
          .requestHandler(req -> {
            guard.requestStarted(req);
            if (NodeApi.admit(req)) {
              router.handle(req);
            }
          })
          // With a handshake handler set, Vert.x hands requests of any HTTP version to the
          // request handler (which refuses them in JSON) instead of answering 501 itself; the
          // node has no WebSocket endpoint, so an upgrade is refused.
          .webSocketHandshakeHandler(handshake -> handshake.reject(400))
          .invalidRequestHandler(NodeApi::invalidRequest);
      guard.start(vertx);
      try {
        server.listen(config.port(), config.bindHost()).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        throw new IOException("cannot listen on " + config.bindHost() + ":" + config.port() + ": " + e.getCause().getMessage(), e);
      } catch (TimeoutException e) {
        throw new IOException("listening on " + config.bindHost() + ":" + config.port() + " timed out", e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while starting the node", e);
      }
      long sampler = vertx.setPeriodic(1000, id -> vertx.executeBlocking(() -> {
        tiers.sample();
        return null;
      }, false));
      tiers.sample();
      tiers.online(url(config.bindHost(), server.actualPort()));
      if (cluster.clustered()) {
        // Peer prefetch: one pass at a time, four times a second, on a worker (it waits on the cluster).
        AtomicBoolean running = new AtomicBoolean();
        vertx.setPeriodic(250, id -> {
          if (running.compareAndSet(false, true)) {
            vertx.executeBlocking(tiers::peerPrefetch, false).onComplete(x -> running.set(false));
          }
        });
      }
      ok = true;
      return new CacheNode(vertx, server, tiers, config, sampler, derives, cluster);
    } finally {
      if (!ok) {
        derives.close();
        vertx.close();
        closeCluster(cluster);
        tiers.close();
      }
    }
  }

  private static void closeCluster(Cluster cluster) {
    if (cluster.clustered()) {
      try {
        cluster.vertx().close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      } catch (ExecutionException | TimeoutException e) {
        // Leaving anyway: the other members drop this one after their heartbeat timeout.
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    cluster.close();
  }

  private static String url(String bindHost, int port) {
    String host = bindHost.contains(":") ? "[" + bindHost + "]" : bindHost;
    return "http://" + host + ":" + port;
  }

  public int port() {
    return server.actualPort();
  }

  /** The node's base URL, for example {@code http://127.0.0.1:7070}. */
  public String url() {
    return url(config.bindHost(), port());
  }

  public NodeConfig config() {
    return config;
  }

  /** What the node found at start-up (segments dropped, datasets gone). */
  public List<String> startupNotes() {
    return tiers.startupNotes();
  }

  TierManager tiers() {
    return tiers;
  }

  /** Waits until no promotion is in flight. */
  public boolean awaitIdle(long timeoutMillis) throws InterruptedException {
    return tiers.awaitIdle(timeoutMillis);
  }

  @Override
  public void close() throws IOException {
    vertx.cancelTimer(sampler);
    try {
      server.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
      // A clustered Vert.x leaves the cluster as it closes: the members drop this node at once.
      vertx.close().toCompletionStage().toCompletableFuture().get(cluster.clustered() ? 30 : 10, TimeUnit.SECONDS);
    } catch (ExecutionException | TimeoutException e) {
      // Closing anyway.
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    cluster.close();
    derives.close();
    tiers.close();
  }
}
