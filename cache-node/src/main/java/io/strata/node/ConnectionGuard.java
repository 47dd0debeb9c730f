package io.strata.node;

import io.vertx.core.Vertx;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpServerRequest;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Bounds on the node's HTTP connections that Vert.x does not give: a client must complete its
 * request's line and headers within {@link Limits#headerMillis} of connecting (slow-header
 * connections, a byte every few seconds, never reach the idle timeout); a request's body must
 * arrive whole within {@link Limits#bodyMillis} of its headers (a body dribbled a byte a second is
 * cut off like a slow header); a kept-alive connection waits at most {@link Limits#idleMillis} for
 * its next request however it dribbles; a request is answered or its connection closed within
 * {@link Limits#requestMillis}; and at most {@link Limits#maxConnections} connections are open at
 * once: a connection arriving at the cap closes the least recently used one that is idle (waiting
 * for its first request, kept alive after its last answer) or still receiving a body, so that
 * neither idle sockets nor stalled bodies can lock callers out; only when every connection has a
 * whole request being answered is the new one closed on arrival.
 *
 * <p>The node speaks HTTP/1.1 only (no cleartext HTTP/2 upgrade): with the upgrade enabled,
 * Vert.x makes a connection known only once its first request is whole, which is exactly what a
 * slow-header client never sends.
 *
 * <p>Threads and locks: each connection's state is written by its event loop (arrival, request
 * start) and read by the sweeper, a periodic timer on some event loop, through volatile fields
 * in a concurrent map; no lock. A stale read delays a close by one sweep at most.
 */
final class ConnectionGuard {
  /** The bounds; {@link #DEFAULT} for a node. */
  record Limits(long headerMillis, long bodyMillis, long idleMillis, long requestMillis, int maxConnections) {
    static final Limits DEFAULT = new Limits(10_000, 10_000, 60_000, 300_000, 1024);
  }

  private static final class State {
    final long opened = System.nanoTime();
    volatile HttpServerRequest current;
    /** When it opened or its last request started, for choosing the least recently used idle one. */
    volatile long lastUse = opened;
    volatile long requestStarted;
    /** When the last answered request was found answered by a sweep (0: none yet). */
    volatile long answeredAt;
  }

  private final Limits limits;
  private final Map<HttpConnection, State> open = new ConcurrentHashMap<>();

  ConnectionGuard(Limits limits) {
    this.limits = limits;
  }

  /** Registers a new connection, or closes it when the node holds {@code maxConnections} already. */
  void connected(HttpConnection conn) {
    if (open.size() >= limits.maxConnections() && !closeLeastRecentlyUsedIdle()) {
      conn.close();
      return;
    }
    open.put(conn, new State());
    conn.closeHandler(v -> open.remove(conn));
  }

  /** Closes the idle connection used least recently; false when every connection is busy. */
  private boolean closeLeastRecentlyUsedIdle() {
    while (true) {
      HttpConnection oldest = null;
      long oldestUse = Long.MAX_VALUE;
      for (Map.Entry<HttpConnection, State> e : open.entrySet()) {
        State s = e.getValue();
        HttpServerRequest req = s.current;
        boolean reclaimable = req == null || req.response().ended() || !req.isEnded(); // idle, or its body still coming
        if (reclaimable && s.lastUse < oldestUse) {
          oldest = e.getKey();
          oldestUse = s.lastUse;
        }
      }
      if (oldest == null) {
        return false;
      }
      if (open.remove(oldest) != null) { // another arrival may have taken it first: look again
        oldest.close();
        return true;
      }
    }
  }

  /** A request's line and headers arrived on its connection. */
  void requestStarted(HttpServerRequest req) {
    State s = open.get(req.connection());
    if (s != null) {
      s.current = req;
      s.requestStarted = System.nanoTime();
      s.lastUse = s.requestStarted;
      s.answeredAt = 0;
    }
  }

  /** Closes the connections past a bound; run every quarter second. */
  @SuppressWarnings("ModifyCollectionInEnhancedForLoop") // a ConcurrentHashMap: removing while iterating is defined
  void sweep() {
    long now = System.nanoTime();
    for (Map.Entry<HttpConnection, State> e : open.entrySet()) {
      State s = e.getValue();
      HttpServerRequest req = s.current;
      boolean slow;
      if (req == null) {
        slow = now - s.opened > limits.headerMillis() * 1_000_000;
      } else if (!req.isEnded()) {
        slow = now - s.requestStarted > limits.bodyMillis() * 1_000_000; // its body has not come whole in time
      } else if (!req.response().ended()) {
        slow = now - s.requestStarted > limits.requestMillis() * 1_000_000;
      } else {
        if (s.answeredAt == 0) {
          s.answeredAt = now;
        }
        slow = now - s.answeredAt > limits.idleMillis() * 1_000_000;
      }
      if (slow) {
        open.remove(e.getKey());
        e.getKey().close();
      }
    }
  }

  /** Starts the sweeper on {@code vertx}; returns its timer id. */
  long start(Vertx vertx) {
    return vertx.setPeriodic(250, id -> sweep());
  }
}
