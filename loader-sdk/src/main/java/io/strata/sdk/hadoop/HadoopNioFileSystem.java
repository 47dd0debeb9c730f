package io.strata.sdk.hadoop;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.file.AccessDeniedException;
import java.nio.file.ClosedFileSystemException;
import java.nio.file.FileStore;
import java.nio.file.FileSystem;
import java.nio.file.FileSystemException;
import java.nio.file.FileSystems;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.nio.file.WatchService;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.util.List;
import java.util.Set;
import com.google.errorprone.annotations.concurrent.GuardedBy;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.security.AccessControlException;

/**
 * One Hadoop file system (one name node, {@code hdfs://host:port}) seen through {@code java.nio}:
 * read-only. Holds its own Hadoop client (not the process-wide cache's, so closing this closes
 * only it), made at the first read. Thread-safe: the client is made under this object's monitor,
 * and the Hadoop client itself is thread-safe.
 */
final class HadoopNioFileSystem extends FileSystem {
  private final HadoopProvider provider;
  private final URI root;
  /** The Hadoop client, made at the first read (with the settings then in force); guarded by this. */
  @GuardedBy("this")
  private org.apache.hadoop.fs.FileSystem hadoop;
  private volatile boolean open = true;

  HadoopNioFileSystem(HadoopProvider provider, URI root) {
    this.provider = provider;
    this.root = root;
  }

  /** {@code scheme://authority/}. */
  URI root() {
    return root;
  }

  /** {@code scheme://authority}, no slash. */
  String rootString() {
    return root.getScheme() + "://" + root.getAuthority();
  }

  /** The Hadoop client; made at the first call, so that paths are syntax until something is read. */
  synchronized org.apache.hadoop.fs.FileSystem hadoop() throws IOException {
    if (!open) {
      throw new ClosedFileSystemException();
    }
    if (hadoop == null) {
      hadoop = provider.client(root);
    }
    return hadoop;
  }

  /** The status of {@code p}; a missing file is a {@link NoSuchFileException}, a refusal an {@link AccessDeniedException}. */
  FileStatus status(HadoopPath p) throws IOException {
    try {
      return hadoop().getFileStatus(p.hadoop());
    } catch (IOException e) {
      throw translate(p, e);
    }
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
    if (e instanceof FileSystemException) {
      return e;
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
  public HadoopProvider provider() {
    return provider;
  }

  @Override
  public synchronized void close() throws IOException {
    if (open) {
      open = false;
      provider.forget(this);
      if (hadoop != null) {
        hadoop.close();
      }
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
  public HadoopPath getPath(String first, String... more) {
    String r = rootString();
    if (first.regionMatches(true, 0, r, 0, r.length()) && (first.length() == r.length() || first.charAt(r.length()) == '/')) {
      first = first.length() == r.length() ? "/" : first.substring(r.length());
    }
    return HadoopPath.parse(this, first, more);
  }

  @Override
  public PathMatcher getPathMatcher(String syntaxAndPattern) {
    PathMatcher m = FileSystems.getDefault().getPathMatcher(syntaxAndPattern);
    return p -> p instanceof HadoopPath h && m.matches(Path.of(h.pathString()));
  }

  @Override
  public UserPrincipalLookupService getUserPrincipalLookupService() {
    throw new UnsupportedOperationException("no user principals on " + rootString());
  }

  @Override
  public WatchService newWatchService() {
    throw new UnsupportedOperationException("a Hadoop file system cannot be watched: " + rootString());
  }

  @Override
  public String toString() {
    return rootString();
  }
}
