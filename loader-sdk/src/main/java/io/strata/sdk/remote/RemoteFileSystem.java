package io.strata.sdk.remote;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.URI;
import java.nio.channels.FileChannel;
import java.nio.file.FileStore;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.nio.file.WatchService;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * One read-only remote file system seen through {@code java.nio} (a name node of HDFS, a bucket
 * of S3), named by its root ({@code scheme://authority/}). What differs between them is how a
 * file's status is asked, a directory listed and a file opened; the rest (paths, attributes,
 * refusals of everything that writes) is here and in {@link RemoteProvider}.
 *
 * <p>Threads: every method may be called from any thread; subclasses make their clients thread-safe.
 */
public abstract class RemoteFileSystem extends FileSystem {
  /** How long a store that answered before may be gone before a call fails: a restart's worth. */
  public static final long GRACE_NANOS = TimeUnit.SECONDS.toNanos(30);
  private static final long RETRY_MILLIS = 500;
  private final RemoteProvider provider;
  private final URI root;
  private volatile boolean open = true;
  /** Whether the store has answered a call of this file system (from then on, its absence is waited out). */
  private volatile boolean answered;

  /** A call of the store. */
  protected interface Attempt<T> {
    T run() throws IOException;
  }

  /** How a scheme's client fails: which failures are its own, which say the store is gone for now, and in what words. */
  protected interface Failures {
    /** Whether {@code e} is a failure of the store's client, to be translated (any other propagates as it is). */
    boolean ours(Exception e);

    /** Whether the store answered, if not as asked (it is there). */
    boolean answered(Exception e);

    /** Whether {@code e} says the store (or the connection to it) is gone for now, not that the call was wrong. */
    boolean gone(Exception e);

    /** {@code e} in java.nio's terms, naming {@code p} and the problem. */
    IOException translate(RemotePath p, Exception e);
  }

  protected RemoteFileSystem(RemoteProvider provider, URI root) {
    this.provider = provider;
    this.root = root;
  }

  /** What this is, for messages: "a Hadoop file system", "an S3 bucket". */
  public abstract String kind();

  /** The status of {@code p}; a missing file is a {@link java.nio.file.NoSuchFileException}, a refusal an {@link java.nio.file.AccessDeniedException}. */
  public abstract RemoteStatus status(RemotePath p) throws IOException;

  /** The names of the entries of directory {@code dir}. */
  protected abstract List<String> list(RemotePath dir) throws IOException;

  /** Opens the file {@code p} whose status is {@code st}, for reading. */
  protected abstract FileChannel open(RemotePath p, RemoteStatus st) throws IOException;

  /** Closes this file system's client, if one was made. */
  protected abstract void closeClient() throws IOException;

  /**
   * Runs {@code a} (a call about {@code p}), its failure translated. A store that has answered this
   * file system before and then is gone ({@code failures.gone}: a connection refused or closed
   * mid-call while it restarts) is waited for, the call tried again every half second for up to
   * {@link #GRACE_NANOS}; one that never answered fails the call at once (a wrong address is said
   * now, not in half a minute).
   */
  protected final <T> T withGrace(RemotePath p, Attempt<T> a, Failures failures) throws IOException {
    long deadline = 0;
    while (true) {
      try {
        T r = a.run();
        answered = true;
        return r;
      } catch (IOException | RuntimeException e) {
        if (!failures.ours(e)) {
          throw e;
        }
        if (failures.answered(e)) {
          answered = true;
        }
        if (!answered || !failures.gone(e)) {
          throw failures.translate(p, e);
        }
        long now = System.nanoTime();
        if (deadline == 0) {
          deadline = now + GRACE_NANOS;
        } else if (now - deadline > 0) {
          throw failures.translate(p, e);
        }
        try {
          Thread.sleep(RETRY_MILLIS);
        } catch (InterruptedException i) {
          Thread.currentThread().interrupt();
          InterruptedIOException x = new InterruptedIOException("interrupted waiting for " + rootString() + " (" + p + ")");
          x.initCause(e);
          throw x;
        }
      }
    }
  }

  /** {@code scheme://authority/}. */
  public URI root() {
    return root;
  }

  /** {@code scheme://authority}, no slash. */
  public String rootString() {
    return root.getScheme() + "://" + root.getAuthority();
  }

  /** Throws {@link java.nio.file.ClosedFileSystemException} once this is closed. */
  protected void ensureOpen() {
    if (!open) {
      throw new java.nio.file.ClosedFileSystemException();
    }
  }

  @Override
  public RemoteProvider provider() {
    return provider;
  }

  @Override
  public synchronized void close() throws IOException {
    if (open) {
      open = false;
      provider.forget(this);
      closeClient();
    }
  }

  @Override
  public boolean isOpen() {
    return open;
  }

  @Override
  public boolean isReadOnly() {
    return true;
  }

  @Override
  public String getSeparator() {
    return "/";
  }

  @Override
  public Iterable<Path> getRootDirectories() {
    return List.of(getPath("/"));
  }

  @Override
  public Iterable<FileStore> getFileStores() {
    return List.of();
  }

  @Override
  public Set<String> supportedFileAttributeViews() {
    return Set.of("basic");
  }

  /** A path of this file system; a first part that starts with this file system's URI ({@code hdfs://nn:8020/...}) is taken as that URI's path. */
  @Override
  public RemotePath getPath(String first, String... more) {
    String r = rootString();
    if (first.regionMatches(true, 0, r, 0, r.length()) && (first.length() == r.length() || first.charAt(r.length()) == '/')) {
      first = first.length() == r.length() ? "/" : first.substring(r.length());
    }
    return RemotePath.parse(this, first, more);
  }

  @Override
  public PathMatcher getPathMatcher(String syntaxAndPattern) {
    PathMatcher m = FileSystems.getDefault().getPathMatcher(syntaxAndPattern);
    return p -> p instanceof RemotePath h && h.getFileSystem() == this && m.matches(Path.of(h.pathString()));
  }

  @Override
  public UserPrincipalLookupService getUserPrincipalLookupService() {
    throw new UnsupportedOperationException("no user principals on " + rootString());
  }

  @Override
  public WatchService newWatchService() {
    throw new UnsupportedOperationException(kind() + " cannot be watched: " + rootString());
  }

  @Override
  public String toString() {
    return rootString();
  }
}
