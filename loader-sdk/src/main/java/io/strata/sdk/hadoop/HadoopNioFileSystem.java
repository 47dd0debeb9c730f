package io.strata.sdk.hadoop;

import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.strata.sdk.remote.RemoteFileSystem;
import io.strata.sdk.remote.RemotePath;
import io.strata.sdk.remote.RemoteStatus;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.ipc.RemoteException;
import org.apache.hadoop.security.AccessControlException;

/**
 * One Hadoop file system (one name node, {@code hdfs://host:port}) seen through {@code java.nio}:
 * read-only. Holds its own Hadoop client (not the process-wide cache's, so closing this closes
 * only it), made at the first read. Thread-safe: the client is made under this object's monitor,
 * and the Hadoop client itself is thread-safe.
 */
final class HadoopNioFileSystem extends RemoteFileSystem {
  private final HadoopProvider provider;
  /** The Hadoop client, made at the first read (with the settings then in force); guarded by this. */
  @GuardedBy("this")
  private org.apache.hadoop.fs.FileSystem hadoop;

  /** A call of the Hadoop client. */
  interface Call<T> {
    T run() throws IOException;
  }

  HadoopNioFileSystem(HadoopProvider provider, URI root) {
    super(provider, root);
    this.provider = provider;
  }

  @Override
  public String kind() {
    return "a Hadoop file system";
  }

  /** The Hadoop client; made at the first call, so that paths are syntax until something is read. */
  synchronized org.apache.hadoop.fs.FileSystem hadoop() throws IOException {
    ensureOpen();
    if (hadoop == null) {
      hadoop = provider.client(root());
    }
    return hadoop;
  }

  /** The Hadoop path of {@code p}, absolute and qualified by this file system's scheme and authority. */
  static org.apache.hadoop.fs.Path hadoopPath(RemotePath p) {
    return new org.apache.hadoop.fs.Path(p.toUri());
  }

  @Override
  public RemoteStatus status(RemotePath p) throws IOException {
    FileStatus st = nameNode(p, () -> hadoop().getFileStatus(hadoopPath(p)));
    return new RemoteStatus(st.isDirectory() ? 0 : st.getLen(), st.isDirectory(), st.getModificationTime(), null);
  }

  @Override
  protected List<String> list(RemotePath dir) throws IOException {
    FileStatus[] list = nameNode(dir, () -> hadoop().listStatus(hadoopPath(dir)));
    List<String> names = new ArrayList<>(list.length);
    for (FileStatus s : list) {
      names.add(s.getPath().getName());
    }
    return names;
  }

  @Override
  protected FileChannel open(RemotePath p, RemoteStatus st) throws IOException {
    FSDataInputStream in = nameNode(p, () -> hadoop().open(hadoopPath(p)));
    return new HadoopChannel(in, st.size(), p, this);
  }

  /**
   * How long one call of the name node may take: {@code strata.hdfs.callSeconds} (a system
   * property; 10 s by default). A name node that accepts connections and never answers would
   * otherwise hold the caller for minutes (Hadoop's RPC timeout is two minutes, its retries more).
   */
  static long callTimeoutNanos() {
    return TimeUnit.MILLISECONDS.toNanos((long) (1000 * Double.parseDouble(System.getProperty("strata.hdfs.callSeconds", "10"))));
  }

  /** Calls of the name node waiting at once on their own threads, at most; more fail at once. */
  static final int MAX_CALLS_IN_FLIGHT = 16;

  /**
   * The threads calls of the name node run on ({@code strata-hdfs-<authority>-N}, daemons, ended
   * after 30 s unused), so that their callers wait with a deadline and a call stuck on a silent
   * name node holds one of these threads, not the caller's (a node's API worker).
   */
  private final ThreadPoolExecutor calls = new ThreadPoolExecutor(0, MAX_CALLS_IN_FLIGHT, 30, TimeUnit.SECONDS,
      new SynchronousQueue<>(), namedThreads());
  /** Until when (nanoTime) calls fail at once because the last one found the name node silent; 0: none. */
  private volatile long silentUntil;
  /** When each call of the name node now waiting started (nanoTime), by call. */
  private final java.util.Map<Object, Long> waiting = new java.util.concurrent.ConcurrentHashMap<>();
  /** A call unanswered for this long makes further calls fail at once until it ends: one caller waits out a silent name node, not all. */
  static final long STUCK_NANOS = TimeUnit.SECONDS.toNanos(3);

  private ThreadFactory namedThreads() {
    AtomicInteger n = new AtomicInteger();
    return r -> Thread.ofPlatform().name("strata-hdfs-" + root().getAuthority() + "-" + n.incrementAndGet()).daemon(true).unstarted(r);
  }

  /**
   * {@link #call} for a call of the name node (status, listing, opening): each attempt waits at
   * most {@link #callTimeoutNanos()} on a thread of its own. A name node that let one attempt run
   * out of time is not asked again for as long (calls meanwhile fail at once, naming it), so a
   * silent name node fails its own files' calls in seconds and never holds anyone else's caller.
   */
  <T> T nameNode(RemotePath p, Call<T> c) throws IOException {
    return call(p, () -> {
      long timeout = callTimeoutNanos();
      long quiet = silentUntil;
      if (quiet != 0 && System.nanoTime() - quiet < 0) {
        throw new FileSystemException(p.toString(), null, "the name node " + rootString() + " did not answer within "
            + seconds(timeout) + " s a moment ago; it is asked again " + seconds(quiet - System.nanoTime()) + " s from now");
      }
      long now = System.nanoTime();
      for (long since : waiting.values()) {
        if (now - since > STUCK_NANOS) {
          throw new FileSystemException(p.toString(), null, "the name node " + rootString() + " has not answered a call for "
              + seconds(now - since) + " s; try again later");
        }
      }
      Future<T> f;
      Object key = new Object();
      waiting.put(key, now);
      try {
        f = calls.submit(c::run);
      } catch (RejectedExecutionException e) {
        waiting.remove(key);
        throw new FileSystemException(p.toString(), null, MAX_CALLS_IN_FLIGHT + " calls wait on the name node "
            + rootString() + " already; try again later");
      }
      try {
        T r = f.get(timeout, TimeUnit.NANOSECONDS);
        silentUntil = 0;
        return r;
      } catch (TimeoutException e) {
        f.cancel(true);
        silentUntil = System.nanoTime() + timeout;
        throw new FileSystemException(p.toString(), null, "the name node " + rootString() + " did not answer within "
            + seconds(timeout) + " s");
      } catch (InterruptedException e) {
        f.cancel(true);
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted waiting for the name node of " + p);
      } catch (ExecutionException e) {
        if (e.getCause() instanceof IOException io) {
          throw io;
        }
        if (e.getCause() instanceof RuntimeException r) {
          throw r;
        }
        throw new IOException(e.getCause());
      } finally {
        waiting.remove(key);
      }
    });
  }

  private static String seconds(long nanos) {
    return String.format(java.util.Locale.ROOT, "%.0f", Math.max(0, nanos) / 1e9);
  }

  /**
   * Runs {@code c} (a call about {@code p}), its failure translated. A name node that has answered
   * this file system before and then stops answering (its connection closed mid-call or refused while
   * it restarts, or it answers that it is starting: safe mode, "retry") is waited for, the call tried
   * again every half second for up to {@link RemoteFileSystem#GRACE_NANOS} ({@link #withGrace}); one that never answered fails
   * the call at once (a wrong address is said now, not in half a minute). Hadoop's own retry policy
   * is left off: it nests a connection's retries inside a call's and took minutes to say that
   * nothing listens. A DataNode's failure is the Hadoop client's business: a read turns to another
   * replica.
   */
  <T> T call(RemotePath p, Call<T> c) throws IOException {
    return withGrace(p, c::run, FAILURES);
  }

  /** Hadoop's failures: IOExceptions, the name node gone by {@link #nameNodeGone}. */
  private static final Failures FAILURES = new Failures() {
    @Override
    public boolean ours(Exception e) {
      return e instanceof IOException;
    }

    @Override
    public boolean answered(Exception e) {
      return false;
    }

    @Override
    public boolean gone(Exception e) {
      return nameNodeGone(e);
    }

    @Override
    public IOException translate(RemotePath p, Exception e) {
      return HadoopNioFileSystem.translate(p, (IOException) e);
    }
  };

  /** Whether {@code e} says the name node (or the connection to it) is gone for now, not that the call was wrong. */
  static boolean nameNodeGone(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof ConnectException || t instanceof SocketException) {
        return true;
      }
      // Hadoop's IPC wraps a connection closed mid-call as an EOFException naming both ends (its
      // cause the bare one); a read past a file's end is an EOFException of no such words.
      if (t instanceof EOFException && (t.getCause() instanceof EOFException
          || String.valueOf(t.getMessage()).startsWith("End of File Exception between"))) {
        return true;
      }
      if (t instanceof RemoteException r && (r.getClassName().endsWith(".SafeModeException")
          || r.getClassName().endsWith(".RetriableException") || r.getClassName().endsWith(".StandbyException"))) {
        return true;
      }
    }
    return false;
  }

  /** Hadoop's exceptions as java.nio's, naming the file and the problem in Strata's words. */
  static IOException translate(Path p, IOException e) {
    if (e instanceof FileNotFoundException) {
      return new NoSuchFileException(p.toString());
    }
    if (e instanceof AccessControlException) {
      AccessDeniedException d = new AccessDeniedException(p.toString(), null, reason(e));
      d.initCause(e);
      return d;
    }
    if (e instanceof FileSystemException || (e instanceof EOFException && !nameNodeGone(e))) {
      return e; // ours already, or a file that ended early
    }
    FileSystemException f = new FileSystemException(p.toString(), null, reason(e));
    f.initCause(e);
    return f;
  }

  /**
   * What went wrong, without the Java class names and wiki links of Hadoop's messages ("Call From
   * h/127.0.0.1 to nn:1 failed on connection exception: java.net.ConnectException: ...").
   */
  static String reason(Exception e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof ConnectException) {
        return "the name node refuses connections (is it running, and is this its address?)";
      }
      if (t instanceof UnknownHostException) {
        return "unknown host " + stripped(t.getMessage());
      }
      if (t instanceof SocketTimeoutException) {
        return "the name node did not answer in time";
      }
    }
    return stripped(e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
  }

  private static String stripped(String m) {
    return m == null ? "" : m.replaceAll("\\b(?:[a-z][\\w$]*\\.)+[A-Z][\\w$]*(?:Exception|Error): ", "")
        .replaceAll(";?\\s*For more details see:.*$", "").strip();
  }

  @Override
  protected synchronized void closeClient() throws IOException {
    calls.shutdownNow();
    if (hadoop != null) {
      hadoop.close();
    }
  }
}
