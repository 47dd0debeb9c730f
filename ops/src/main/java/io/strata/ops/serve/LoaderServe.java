package io.strata.ops.serve;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.ops.common.Messages;
import io.strata.sdk.internal.Json;
import io.strata.sdk.internal.PrivateDirs;
import io.strata.sdk.loader.Loader;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The back end of the Python client ({@code strata loader serve}): one Java {@link Loader} per
 * Python loader, assembling batches straight into shared-memory files that the Python process
 * maps, so the Python job receives exactly the Java loader's batches without a copy.
 *
 * <p>The protocol (docs/API.md, "The Python client's protocol") is one JSON object a line. The
 * client writes the request as its first line; the server answers {@code ready} (or {@code
 * error}). Then the client writes {@code next} for each batch it wants and {@code release N} when
 * it no longer holds batch {@code N}; each {@code next} gets one line: a batch, {@code end}, or
 * {@code error}. A batch names, for every buffer of every column, the slab file under the shared
 * directory and the offset and length inside it; slabs the loader freed since the last batch are
 * listed as {@code retired}. End of input (the job died) ends the server, which removes its
 * directory.
 *
 * <p>Threads: the loader's prefetch threads allocate slabs; the server's single thread reads
 * requests, answers and closes released batches (which frees or recycles their slabs). The slab
 * registry is a concurrent skip list keyed by address, the retired queue lock-free.
 */
public final class LoaderServe {
  /** Prefix of the shared directories; the owner's pid follows, so stale ones can be found. */
  static final String DIR_PREFIX = "strata-py-";
  /** More batches than this held by the job at once is a leak on its side, not a working set. */
  static final int MAX_HELD = 256;
  /** Sessions one service serves at once (each a thread, a loader and its prefetch threads); more are refused. */
  static final int MAX_SESSIONS = 256;

  private LoaderServe() {}

  /** Runs one session on this process's standard input and output; returns the exit code. */
  public static int run() throws IOException {
    PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
    // Nothing else may write on the protocol stream.
    System.setOut(System.err);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    return session(in, protocol);
  }

  /** One session: the request line, then requests until {@code close} or end of input. */
  static int session(BufferedReader in, PrintStream protocol) throws IOException {
    String first = in.readLine();
    if (first == null) {
      return Messages.USAGE;
    }
    try (Session s = Session.open(first, protocol)) {
      return s.loop(in);
    } catch (IllegalArgumentException e) {
      send(protocol, Json.object().put("error", Messages.describe(e)).put("usage", true));
      return Messages.USAGE;
    } catch (Exception e) {
      send(protocol, Json.object().put("error", Messages.describe(e)));
      return Messages.FAILURE;
    }
  }

  /** The file holding the pid of the service listening on {@code socket}. */
  public static Path pidFile(Path socket) {
    return socket.resolveSibling(socket.getFileName() + ".pid");
  }

  /**
   * The per-host service: sessions over a Unix domain socket, one thread each, in one JVM shared by
   * every Python job of the user on this host (so a job adds its session, not a JVM). A lock file
   * beside the socket makes it the only one; it exits after {@code idle} with no session.
   *
   * <p>Threads: the calling thread accepts (a selector that wakes at least every second, so the
   * idle check runs there too); one {@code strata-py-session-N} thread per connection. The count
   * of open sessions is an atomic.
   */
  public static int service(Path socket, Duration idle) throws IOException, InterruptedException {
    // The socket's directory is this user's alone (created 0700, or refused): another user can
    // neither reach the socket nor plant a lock, pid file or link beside it.
    Path dir = PrivateDirs.ensure(socket.toAbsolutePath().getParent());
    Path lockFile = dir.resolve(socket.getFileName() + ".lock");
    try (FileChannel lockChannel = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock lock = lockChannel.tryLock()) {
      if (lock == null) {
        System.err.println("strata: a loader service already runs on " + socket);
        return 0;
      }
      AtomicInteger active = new AtomicInteger();
      @SuppressWarnings("UnnecessaryAsync") // one accepting thread counts; kept atomic should that change
      AtomicInteger counter = new AtomicInteger();
      ServerSocketChannel server = listen(socket);
      try {
        System.err.println("strata: loader service on " + socket + " (pid " + ProcessHandle.current().pid() + ")");
        long idleSince = System.nanoTime();
        boolean closing = false;
        try (Selector selector = Selector.open()) {
          server.register(selector, SelectionKey.OP_ACCEPT);
          while (true) {
            selector.select(1000);
            selector.selectedKeys().clear();
            SocketChannel ch;
            boolean accepted = false;
            while ((ch = server.accept()) != null) {
              accepted = true;
              ch.configureBlocking(true);
              SocketChannel conn = ch;
              if (active.get() >= MAX_SESSIONS) {
                refuse(conn, "the loader service serves " + MAX_SESSIONS + " jobs already; try again when one has ended");
                continue;
              }
              active.incrementAndGet();
              Thread t = Thread.ofPlatform().name("strata-py-session-" + counter.incrementAndGet()).daemon().unstarted(() -> {
                try (conn) {
                  BufferedReader in = new BufferedReader(new InputStreamReader(
                      Channels.newInputStream(conn), StandardCharsets.UTF_8));
                  PrintStream out = new PrintStream(Channels.newOutputStream(conn), false,
                      StandardCharsets.UTF_8);
                  session(in, out);
                } catch (IOException e) {
                  // The job went away mid-answer; its session is closed.
                } finally {
                  active.decrementAndGet();
                }
              });
              try {
                t.start();
              } catch (OutOfMemoryError e) { // the host gives no more threads
                active.decrementAndGet();
                refuse(conn, "the loader service cannot start a thread for this job: " + e.getMessage());
              }
            }
            if (closing && !accepted) {
              return 0; // nothing connected before the name went, and nothing can connect since
            } else if (closing) {
              // A job connected just before the name went: serve on, under the name again (else
              // the jobs that come while it runs could reach no service until it ends).
              server.close();
              server = listen(socket);
              server.register(selector, SelectionKey.OP_ACCEPT);
              closing = false;
              idleSince = System.nanoTime();
            } else if (active.get() > 0) {
              idleSince = System.nanoTime();
            } else if (System.nanoTime() - idleSince > idle.toNanos()) {
              // Idle: take the name away first, then accept once more. Closing the socket with a
              // job queued on it would reset that job's connection; one connecting from now on
              // finds no service and starts a new one, which takes the lock once this one is gone.
              Files.deleteIfExists(socket);
              Files.deleteIfExists(pidFile(socket));
              closing = true;
            }
          }
        }
      } finally {
        server.close();
        Files.deleteIfExists(socket);
        Files.deleteIfExists(pidFile(socket));
      }
    }
  }

  /** A non-blocking server socket bound to {@code socket} (a stale file there removed), its pid file written. */
  private static ServerSocketChannel listen(Path socket) throws IOException {
    Files.deleteIfExists(socket);
    ServerSocketChannel server =
        ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    boolean success = false;
    try {
      server.bind(UnixDomainSocketAddress.of(socket));
      server.configureBlocking(false);
      Files.writeString(pidFile(socket), Long.toString(ProcessHandle.current().pid()));
      success = true;
      return server;
    } finally {
      if (!success) {
        server.close();
      }
    }
  }

  /** Answers a connection it will not serve with one error line, and closes it. */
  private static void refuse(SocketChannel conn, String why) {
    try (conn) {
      conn.configureBlocking(false); // a client that does not read cannot hold the accepting thread
      conn.write(java.nio.ByteBuffer.wrap((Json.compact(Json.object().put("error", why)) + "\n").getBytes(StandardCharsets.UTF_8)));
    } catch (IOException e) {
      // it went away: nothing to answer
    }
  }

  static void send(PrintStream out, ObjectNode message) {
    out.print(Json.compact(message));
    out.print('\n');
    out.flush();
  }
}
