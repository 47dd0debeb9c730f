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
import java.nio.file.StandardCopyOption;
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
            boolean accepted = acceptAll(server, active, counter);
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

  /**
   * Accepts every connection waiting on {@code server}, each served by a session thread of its own
   * ({@code active} counts them, {@code counter} names them); returns whether any came.
   */
  private static boolean acceptAll(ServerSocketChannel server, AtomicInteger active, AtomicInteger counter) throws IOException {
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
          BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(conn), StandardCharsets.UTF_8));
          PrintStream out = new PrintStream(Channels.newOutputStream(conn), false, StandardCharsets.UTF_8);
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
    return accepted;
  }

  /**
   * The loader service hosted by another command's JVM ({@code strata node start --loader-socket}):
   * the same sessions as {@link #service}, on {@code socket}, for as long as the host runs instead of
   * until idle, so a host's node and its Python jobs' loaders share one JVM (one runtime, one heap)
   * instead of two. Throws {@link IllegalStateException} when another service holds the socket's
   * lock: the caller learns it at start, not from a log.
   *
   * <p>Threads: one accepting thread, {@code strata-loader-service}, and a session thread per job as
   * in {@link #service}; {@link Hosted#close} stops accepting, removes the socket and its pid file
   * and lets the lock go (sessions still running end with their jobs).
   */
  public static Hosted host(Path socket) throws IOException {
    Path dir = PrivateDirs.ensure(socket.toAbsolutePath().getParent());
    Path lockFile = dir.resolve(socket.getFileName() + ".lock");
    FileChannel lockChannel = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
    boolean success = false;
    try {
      FileLock lock;
      try {
        lock = lockChannel.tryLock();
      } catch (java.nio.channels.OverlappingFileLockException e) {
        lock = null; // held by this JVM already
      }
      if (lock == null) {
        throw new IllegalStateException("a loader service already runs on " + socket + " (pid file "
            + pidFile(socket) + "); stop it or give another --loader-socket");
      }
      ServerSocketChannel server = listen(socket);
      try {
        Hosted h = new Hosted(socket, lockChannel, server);
        h.thread.start();
        success = true;
        return h;
      } finally {
        if (!success) {
          server.close();
          Files.deleteIfExists(socket);
          Files.deleteIfExists(pidFile(socket));
        }
      }
    } finally {
      if (!success) {
        lockChannel.close(); // lets the lock go too
      }
    }
  }

  /** A loader service running in this JVM (see {@link #host}); closing it stops it. */
  public static final class Hosted implements AutoCloseable {
    private final Path socket;
    private final FileChannel lockChannel;
    private final ServerSocketChannel server;
    private final Selector selector;
    private final Thread thread;
    private final AtomicInteger active = new AtomicInteger();
    private volatile boolean stopping;

    private Hosted(Path socket, FileChannel lockChannel, ServerSocketChannel server) throws IOException {
      this.socket = socket;
      this.lockChannel = lockChannel;
      this.server = server;
      this.selector = Selector.open();
      server.register(selector, SelectionKey.OP_ACCEPT);
      AtomicInteger counter = new AtomicInteger();
      this.thread = Thread.ofPlatform().name("strata-loader-service").daemon().unstarted(() -> {
        try {
          while (!stopping) {
            selector.select(1000);
            selector.selectedKeys().clear();
            acceptAll(server, active, counter);
          }
        } catch (IOException | RuntimeException e) {
          if (!stopping) {
            System.err.println("strata: the loader service on " + socket + " stopped: " + Messages.describe(e));
          }
        }
      });
    }

    /** The socket the jobs connect to. */
    public Path socket() {
      return socket;
    }

    /** Sessions open now. */
    public int sessions() {
      return active.get();
    }

    @Override
    public void close() throws IOException {
      stopping = true;
      selector.wakeup();
      try {
        thread.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      try (lockChannel; selector; server) {
        Files.deleteIfExists(socket);
        Files.deleteIfExists(pidFile(socket));
      }
    }
  }

  /**
   * A non-blocking server socket bound to {@code socket} (a stale file there removed), its pid file
   * written first: a job can connect as soon as the socket is bound, and reads the pid file then
   * (written whole, by a rename, so it never reads half of it).
   */
  private static ServerSocketChannel listen(Path socket) throws IOException {
    Files.deleteIfExists(socket);
    Path pid = pidFile(socket);
    Path partial = pid.resolveSibling(pid.getFileName() + ".partial");
    Files.writeString(partial, Long.toString(ProcessHandle.current().pid()));
    Files.move(partial, pid, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    ServerSocketChannel server =
        ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    boolean success = false;
    try {
      server.bind(UnixDomainSocketAddress.of(socket));
      server.configureBlocking(false);
      success = true;
      return server;
    } finally {
      if (!success) {
        server.close();
        Files.deleteIfExists(pid);
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
