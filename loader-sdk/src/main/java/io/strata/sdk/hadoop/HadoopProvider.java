package io.strata.sdk.hadoop;

import java.io.IOException;
import java.net.URI;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.AccessMode;
import java.nio.file.CopyOption;
import java.nio.file.DirectoryStream;
import java.nio.file.FileStore;
import java.nio.file.FileSystemAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.FileSystemNotFoundException;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.ProviderMismatchException;
import java.nio.file.ReadOnlyFileSystemException;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.FileAttributeView;
import java.nio.file.attribute.FileTime;
import java.nio.file.spi.FileSystemProvider;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;

/**
 * The {@code hdfs} scheme for {@code java.nio.file}: read-only file systems, one per name node,
 * whose Hadoop client is made at the first read with the settings {@link HadoopFileSystems#configure}
 * gave.
 * Everything that would write is refused ({@link ReadOnlyFileSystemException}); files are read
 * through {@link HadoopChannel}. Thread-safe.
 */
final class HadoopProvider extends FileSystemProvider {
  static final String SCHEME = "hdfs";
  private final Map<String, HadoopNioFileSystem> systems = new ConcurrentHashMap<>();
  private volatile Map<String, String> settings = Map.of();

  void configure(Map<String, String> keys) {
    settings = Map.copyOf(keys);
  }

  @Override
  public String getScheme() {
    return SCHEME;
  }

  private static String key(URI uri) {
    if (uri.getScheme() == null || !uri.getScheme().equalsIgnoreCase(SCHEME)) {
      throw new IllegalArgumentException("'" + uri + "' is not an " + SCHEME + ":// URI");
    }
    if (uri.getAuthority() == null || uri.getAuthority().isEmpty()) {
      throw new IllegalArgumentException("'" + uri + "' names no name node (hdfs://host:port/path)");
    }
    return SCHEME + "://" + uri.getAuthority().toLowerCase(Locale.ROOT);
  }

  /** The Hadoop client of the file system at {@code root}, with the settings in force now. */
  org.apache.hadoop.fs.FileSystem client(URI root) throws IOException {
    Configuration conf = new Configuration();
    // A call's own bound (the caller waits at most callTimeoutNanos in any case; these end the
    // call's thread too): no minutes-long RPC timeout, no ten connection retries. The node's
    // 'hadoop' settings override them.
    conf.set("ipc.client.rpc-timeout.ms", "20000");
    conf.set("ipc.client.connect.timeout", "5000");
    conf.set("ipc.client.connect.max.retries.on.timeouts", "1");
    settings.forEach(conf::set);
    try {
      return org.apache.hadoop.fs.FileSystem.newInstance(root, conf);
    } catch (IOException | IllegalArgumentException e) { // an unknown host comes as IllegalArgumentException
      String r = root.toString();
      FileSystemException f = new FileSystemException(r.substring(0, r.length() - 1), null,
          "cannot open the Hadoop file system: " + HadoopNioFileSystem.reason(e));
      f.initCause(e);
      throw f;
    }
  }

  private HadoopNioFileSystem open(String key) {
    return new HadoopNioFileSystem(this, URI.create(key + "/"));
  }

  @Override
  public HadoopNioFileSystem newFileSystem(URI uri, Map<String, ?> env) {
    String k = key(uri);
    HadoopNioFileSystem fs = open(k);
    if (systems.putIfAbsent(k, fs) != null) {
      throw new FileSystemAlreadyExistsException(k);
    }
    return fs;
  }

  @Override
  public HadoopNioFileSystem getFileSystem(URI uri) {
    String k = key(uri);
    HadoopNioFileSystem fs = systems.get(k);
    if (fs == null) {
      throw new FileSystemNotFoundException(k);
    }
    return fs;
  }

  /** The path {@code uri} names, its file system opened if it is not yet. */
  @Override
  public HadoopPath getPath(URI uri) {
    HadoopNioFileSystem fs = systems.computeIfAbsent(key(uri), this::open);
    String p = uri.getPath();
    return fs.getPath(p == null || p.isEmpty() ? "/" : p);
  }

  void forget(HadoopNioFileSystem fs) {
    systems.values().remove(fs);
  }

  private static HadoopPath of(Path p) {
    if (!(p instanceof HadoopPath h)) {
      throw new ProviderMismatchException(p + " is not a path of an " + SCHEME + ":// file system");
    }
    return h;
  }

  @Override
  public SeekableByteChannel newByteChannel(Path path, Set<? extends OpenOption> options, FileAttribute<?>... attrs)
      throws IOException {
    return newFileChannel(path, options, attrs);
  }

  @Override
  public FileChannel newFileChannel(Path path, Set<? extends OpenOption> options, FileAttribute<?>... attrs) throws IOException {
    HadoopPath p = of(path);
    for (OpenOption o : options) {
      if (o != StandardOpenOption.READ && o != LinkOption.NOFOLLOW_LINKS) {
        throw new ReadOnlyFileSystemException();
      }
    }
    FileStatus st = p.getFileSystem().status(p);
    if (st.isDirectory()) {
      throw new FileSystemException(p.toString(), null, "is a directory");
    }
    HadoopNioFileSystem fs = p.getFileSystem();
    FSDataInputStream in = fs.nameNode(p, () -> fs.hadoop().open(p.hadoop()));
    return new HadoopChannel(in, st.getLen(), p);
  }

  @Override
  public DirectoryStream<Path> newDirectoryStream(Path dir, DirectoryStream.Filter<? super Path> filter) throws IOException {
    HadoopPath d = of(dir);
    HadoopNioFileSystem fs = d.getFileSystem();
    FileStatus[] list = fs.nameNode(d, () -> fs.hadoop().listStatus(d.hadoop()));
    List<Path> children = new ArrayList<>();
    for (FileStatus s : list) {
      Path child = d.resolve(s.getPath().getName());
      if (filter.accept(child)) {
        children.add(child);
      }
    }
    return new DirectoryStream<>() {
      private boolean iterated;

      @Override
      public Iterator<Path> iterator() {
        if (iterated) {
          throw new IllegalStateException("a directory stream is iterated once");
        }
        iterated = true;
        return children.iterator();
      }

      @Override
      public void close() {
        // listed at once: nothing held open
      }
    };
  }

  @Override
  public void createDirectory(Path dir, FileAttribute<?>... attrs) {
    throw new ReadOnlyFileSystemException();
  }

  @Override
  public void delete(Path path) {
    throw new ReadOnlyFileSystemException();
  }

  @Override
  public void copy(Path source, Path target, CopyOption... options) {
    throw new ReadOnlyFileSystemException();
  }

  @Override
  public void move(Path source, Path target, CopyOption... options) {
    throw new ReadOnlyFileSystemException();
  }

  @Override
  public boolean isSameFile(Path a, Path b) throws IOException {
    if (a.equals(b)) {
      return true;
    }
    if (!(a instanceof HadoopPath) || !(b instanceof HadoopPath)) {
      return false;
    }
    return a.toRealPath().equals(b.toRealPath());
  }

  @Override
  public boolean isHidden(Path path) {
    Path name = of(path).getFileName();
    return name != null && name.toString().startsWith(".");
  }

  @Override
  public FileStore getFileStore(Path path) {
    throw new UnsupportedOperationException("no file store for " + path);
  }

  @Override
  public void checkAccess(Path path, AccessMode... modes) throws IOException {
    HadoopPath p = of(path);
    p.getFileSystem().status(p);
    for (AccessMode m : modes) {
      if (m == AccessMode.WRITE) {
        throw new AccessDeniedException(p.toString(), null, "Strata reads " + SCHEME + ":// file systems only");
      }
    }
  }

  @Override
  @SuppressWarnings("unchecked")
  public <V extends FileAttributeView> V getFileAttributeView(Path path, Class<V> type, LinkOption... options) {
    HadoopPath p = of(path);
    if (type != BasicFileAttributeView.class) {
      return null;
    }
    return (V) new BasicFileAttributeView() {
      @Override
      public String name() {
        return "basic";
      }

      @Override
      public BasicFileAttributes readAttributes() throws IOException {
        return HadoopProvider.this.readAttributes(p, BasicFileAttributes.class);
      }

      @Override
      public void setTimes(FileTime lastModifiedTime, FileTime lastAccessTime, FileTime createTime) {
        throw new ReadOnlyFileSystemException();
      }
    };
  }

  @Override
  @SuppressWarnings("unchecked")
  public <A extends BasicFileAttributes> A readAttributes(Path path, Class<A> type, LinkOption... options) throws IOException {
    if (type != BasicFileAttributes.class) {
      throw new UnsupportedOperationException("only basic attributes on " + SCHEME + ":// file systems, not " + type.getSimpleName());
    }
    HadoopPath p = of(path);
    return (A) new Attributes(p.getFileSystem().status(p));
  }

  @Override
  public Map<String, Object> readAttributes(Path path, String attributes, LinkOption... options) throws IOException {
    String names = attributes.startsWith("basic:") ? attributes.substring(6) : attributes;
    if (names.contains(":")) {
      throw new UnsupportedOperationException("only basic attributes on " + SCHEME + ":// file systems: " + attributes);
    }
    BasicFileAttributes a = readAttributes(path, BasicFileAttributes.class, options);
    Map<String, Object> all = new LinkedHashMap<>();
    all.put("size", a.size());
    all.put("lastModifiedTime", a.lastModifiedTime());
    all.put("lastAccessTime", a.lastAccessTime());
    all.put("creationTime", a.creationTime());
    all.put("isRegularFile", a.isRegularFile());
    all.put("isDirectory", a.isDirectory());
    all.put("isSymbolicLink", a.isSymbolicLink());
    all.put("isOther", a.isOther());
    all.put("fileKey", a.fileKey());
    if (names.equals("*")) {
      return all;
    }
    Map<String, Object> out = new LinkedHashMap<>();
    for (String n : names.split(",")) {
      if (!all.containsKey(n)) {
        throw new IllegalArgumentException("no attribute '" + n + "'");
      }
      out.put(n, all.get(n));
    }
    return out;
  }

  @Override
  public void setAttribute(Path path, String attribute, Object value, LinkOption... options) {
    throw new ReadOnlyFileSystemException();
  }

  /** A file's status as basic attributes. */
  private record Attributes(FileStatus status) implements BasicFileAttributes {
    @Override
    public FileTime lastModifiedTime() {
      return FileTime.fromMillis(status.getModificationTime());
    }

    @Override
    public FileTime lastAccessTime() {
      return FileTime.fromMillis(status.getAccessTime());
    }

    @Override
    public FileTime creationTime() {
      return lastModifiedTime();
    }

    @Override
    public boolean isRegularFile() {
      return status.isFile();
    }

    @Override
    public boolean isDirectory() {
      return status.isDirectory();
    }

    @Override
    public boolean isSymbolicLink() {
      return status.isSymlink();
    }

    @Override
    public boolean isOther() {
      return false;
    }

    @Override
    public long size() {
      return status.getLen();
    }

    @Override
    public Object fileKey() {
      return null;
    }
  }
}
