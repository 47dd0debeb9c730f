package io.strata.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Connections the idle timeout cannot bound: headers sent a byte at a time, a kept-alive
 * connection that dribbles, bodies that stall or dribble, more connections than the node holds.
 * (Bounds shortened: headers 1 s, bodies 1 s, idle 3 s, at most 40 connections.)
 */
class ConnectionLimitsTest {
  @TempDir Path home;
  CacheNode node;
  static final ConnectionGuard.Limits LIMITS = new ConnectionGuard.Limits(1_000, 1_000, 3_000, 300_000, 40);

  @BeforeEach
  void start() throws IOException {
    node = CacheNode.start(NodeConfig.embedded(home, 0), Set.of("ssdBudgetBytes"), LIMITS);
  }

  @AfterEach
  void stop() throws IOException {
    node.close();
  }

  private Socket connect() throws IOException {
    Socket s = new Socket(java.net.InetAddress.getLoopbackAddress(), node.port());
    s.setSoTimeout(1);
    return s;
  }

  /** Whether the node closed the socket (a read sees the end of the stream or a reset). */
  private static boolean closedByNode(Socket s) {
    try {
      InputStream in = s.getInputStream();
      while (true) {
        int b = in.read();
        if (b == -1) {
          return true;
        }
      }
    } catch (SocketTimeoutException e) {
      return false;
    } catch (IOException e) {
      return true;
    }
  }

  private int health() throws Exception {
    return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(node.url() + "/health")).build(),
        HttpResponse.BodyHandlers.ofString()).statusCode();
  }

  @Test
  void slowHeadersAreCutOffWhileOthersAreServed() throws Exception {
    List<Socket> slow = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      Socket s = connect();
      s.getOutputStream().write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n".getBytes(StandardCharsets.US_ASCII));
      slow.add(s);
    }
    long t0 = System.nanoTime();
    int closed = 0;
    int line = 0;
    while (closed < slow.size() && System.nanoTime() - t0 < 8e9) {
      Thread.sleep(200);
      closed = 0;
      for (Socket s : slow) {
        if (closedByNode(s)) {
          closed++;
        } else {
          try {
            s.getOutputStream().write(("X-Slow-" + line + ": 1\r\n").getBytes(StandardCharsets.US_ASCII));
          } catch (IOException e) {
            closed++;
          }
        }
      }
      line++;
      if (System.nanoTime() - t0 < 0.7e9) {
        assertEquals(0, closed, "nothing is cut before the header time is up");
        assertEquals(200, health(), "the node serves others meanwhile");
      }
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    assertEquals(slow.size(), closed, "every slow-header connection was closed within " + seconds + " s");
    assertTrue(seconds < 4, "closed within the header time and a sweep: " + seconds + " s");
    for (Socket s : slow) {
      s.close();
    }
    assertEquals(200, health());
  }

  @Test
  void aKeptAliveConnectionWaitsTheIdleTimeNotTheHeaderTime() throws Exception {
    Socket s = connect();
    s.setSoTimeout(5_000);
    s.getOutputStream().write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    byte[] buf = new byte[4096];
    int n = s.getInputStream().read(buf);
    assertTrue(new String(buf, 0, n, StandardCharsets.US_ASCII).startsWith("HTTP/1.1 200"));
    s.setSoTimeout(1);
    Thread.sleep(2_000);
    assertFalse(closedByNode(s), "still open after twice the header time: the first request was whole");
    // Dribbling does not keep it: the next request must come within the idle time.
    long t0 = System.nanoTime();
    boolean closed = false;
    while (!closed && System.nanoTime() - t0 < 6e9) {
      try {
        s.getOutputStream().write("G".getBytes(StandardCharsets.US_ASCII));
      } catch (IOException e) {
        closed = true;
      }
      Thread.sleep(200);
      closed = closed || closedByNode(s);
    }
    assertTrue(closed, "a dribbling kept-alive connection is closed after the idle time");
    s.close();
  }

  @Test
  void idleConnectionsAtTheCapGiveWayToNewOnesOldestFirst() throws Exception {
    List<Socket> many = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      many.add(connect());
      Thread.sleep(2); // arrival order is use order
    }
    Thread.sleep(300); // within the header time: only the cap closes connections yet
    List<Integer> closed = new ArrayList<>();
    for (int i = 0; i < many.size(); i++) {
      if (closedByNode(many.get(i))) {
        closed.add(i);
      }
    }
    assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), closed, "50 idle connections against a cap of 40: the 10 oldest went");
    assertEquals(200, health(), "a caller is served while 40 idle connections are held");
    for (Socket s : many) {
      s.close();
    }
  }

  /** A request whose headers came whole and whose body stalls: {@code Content-Length: 100}, one byte sent. */
  private Socket stalledBody() throws IOException {
    Socket s = connect();
    s.getOutputStream().write(("POST /v1/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + "Content-Length: 100\r\n\r\n{").getBytes(StandardCharsets.US_ASCII));
    return s;
  }

  /** Issue 51: 1,100 connections stalled inside a POST body held /health off for a minute. */
  @Test
  void connectionsStalledInABodyGiveWayAtTheCapAndAreCutAfterTheBodyTime() throws Exception {
    List<Socket> stalled = new ArrayList<>();
    for (int i = 0; i < 45; i++) {
      stalled.add(stalledBody());
      Thread.sleep(2);
    }
    Thread.sleep(300); // within the body time: only the cap closes them yet
    List<Integer> closed = new ArrayList<>();
    for (int i = 0; i < stalled.size(); i++) {
      if (closedByNode(stalled.get(i))) {
        closed.add(i);
      }
    }
    assertEquals(List.of(0, 1, 2, 3, 4), closed, "45 stalled bodies against a cap of 40: the 5 oldest went");
    assertEquals(200, health(), "a caller is served while 40 stalled bodies are held");
    Thread.sleep(1_500);
    for (Socket s : stalled) {
      assertTrue(closedByNode(s), "a body not whole within the body time is cut off");
      s.close();
    }
  }

  @Test
  void aBodyDribbledAByteASecondIsCutOffAndHealthIsAnsweredMeanwhile() throws Exception {
    Socket s = stalledBody();
    int answered = 0;
    boolean cut = false;
    for (int i = 0; i < 12 && !cut; i++) {
      try {
        s.getOutputStream().write(' ');
      } catch (IOException e) {
        cut = true;
      }
      answered += health() == 200 ? 1 : 0;
      Thread.sleep(200);
      cut |= closedByNode(s);
    }
    assertTrue(cut, "a dribbled body is cut off within the body time");
    assertTrue(answered >= 4, "health answered meanwhile: " + answered);
    s.close();
  }
}
