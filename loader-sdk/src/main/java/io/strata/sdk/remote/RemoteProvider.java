package io.strata.sdk.remote;

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

/**
 * A read-only remote scheme for {@code java.nio.file} ({@code hdfs}, {@code s3}): file systems,
 * one per authority (a name node, a bucket), made when a path of one is first asked for.
 * Everything that would write is refused ({@link ReadOnlyFileSystemException}); files are read
 * through the channels their file systems open. Thread-safe.
 */
public abstract class RemoteProvider extends FileSystemProvider {
  private final Map<String, RemoteFileSystem> systems = new ConcurrentHashMap<>();

  /**
   * The key of the file system {@code uri} is in ({@code scheme://authority}, lower case), after
   * checking the URI: an IllegalArgumentException names what is wrong with it.
   */
  protected abstract String key(URI uri);

  /** A new file system whose root is {@code key/}. */
  protected abstract RemoteFileSystem open(String key);

  /** The key a URI of this scheme has: {@code scheme://authority}, the authority lower case; what is missing named. */
  protected final String checkedKey(URI uri, String missing) {
    if (uri.getScheme() == null || !uri.getScheme().equalsIgnoreCase(getScheme())) {
      throw new IllegalArgumentException("'" + uri + "' is not an " + getScheme() + ":// URI");
    }
    if (uri.getAuthority() == null || uri.getAuthority().isEmpty()) {
      throw new IllegalArgumentException("'" + uri + "' names no " + missing);
    }
    return getScheme() + "://" + uri.getAuthority().toLowerCase(Locale.ROOT);
  }

  @Override
  public RemoteFileSystem newFileSystem(URI uri, Map<String, ?> env) {
    String k = key(uri);
    RemoteFileSystem fs = open(k);
    if (systems.putIfAbsent(k, fs) != null) {
      throw new FileSystemAlreadyExistsException(k);
    }
    return fs;
  }

  @Override
  public RemoteFileSystem getFileSystem(URI uri) {
    String k = key(uri);
    RemoteFileSystem fs = systems.get(k);
    if (fs == null) {
      throw new FileSystemNotFoundException(k);
    }
    return fs;
  }

  /** The path {@code uri} names, its file system opened if it is not yet. */
  @Override
  public RemotePath getPath(URI uri) {
    RemoteFileSystem fs = systems.computeIfAbsent(key(uri), this::open);
    String p = uri.getPath();
    return fs.getPath(p == null || p.isEmpty() ? "/" : p);
  }

  void forget(RemoteFileSystem fs) {
    systems.values().remove(fs);
  }

  private RemotePath of(Path p) {
    if (!(p instanceof RemotePath h) || h.getFileSystem().provider() != this) {
      throw new ProviderMismatchException(p + " is not a path of an " + getScheme() + ":// file system");
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
    RemotePath p = of(path);
    for (OpenOption o : options) {
      if (o != StandardOpenOption.READ && o != LinkOption.NOFOLLOW_LINKS) {
        throw new ReadOnlyFileSystemException();
      }
    }
    RemoteStatus st = p.getFileSystem().status(p);
    if (st.directory()) {
      throw new FileSystemException(p.toString(), null, "is a directory");
    }
    return p.getFileSystem().open(p, st);
  }

  @Override
  public DirectoryStream<Path> newDirectoryStream(Path dir, DirectoryStream.Filter<? super Path> filter) throws IOException {
    RemotePath d = of(dir);
    List<Path> children = new ArrayList<>();
    for (String name : d.getFileSystem().list(d)) {
      Path child = d.resolve(name);
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
    if (!(a instanceof RemotePath) || !(b instanceof RemotePath)) {
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
    RemotePath p = of(path);
    p.getFileSystem().status(p);
    for (AccessMode m : modes) {
      if (m == AccessMode.WRITE) {
        throw new AccessDeniedException(p.toString(), null, "Strata reads " + getScheme() + ":// file systems only");
      }
    }
  }

  @Override
  @SuppressWarnings("unchecked")
  public <V extends FileAttributeView> V getFileAttributeView(Path path, Class<V> type, LinkOption... options) {
    RemotePath p = of(path);
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
        return RemoteProvider.this.readAttributes(p, BasicFileAttributes.class);
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
      throw new UnsupportedOperationException("only basic attributes on " + getScheme() + ":// file systems, not " + type.getSimpleName());
    }
    RemotePath p = of(path);
    return (A) new Attributes(p.getFileSystem().status(p));
  }

  @Override
  public Map<String, Object> readAttributes(Path path, String attributes, LinkOption... options) throws IOException {
    String names = attributes.startsWith("basic:") ? attributes.substring(6) : attributes;
    if (names.contains(":")) {
      throw new UnsupportedOperationException("only basic attributes on " + getScheme() + ":// file systems: " + attributes);
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

  /** A file's status as basic attributes; the file key is its version (an S3 object's ETag), where the store keeps one. */
  private record Attributes(RemoteStatus status) implements BasicFileAttributes {
    @Override
    public FileTime lastModifiedTime() {
      return FileTime.fromMillis(status.modifiedMillis());
    }

    @Override
    public FileTime lastAccessTime() {
      return lastModifiedTime();
    }

    @Override
    public FileTime creationTime() {
      return lastModifiedTime();
    }

    @Override
    public boolean isRegularFile() {
      return !status.directory();
    }

    @Override
    public boolean isDirectory() {
      return status.directory();
    }

    @Override
    public boolean isSymbolicLink() {
      return false;
    }

    @Override
    public boolean isOther() {
      return false;
    }

    @Override
    public long size() {
      return status.size();
    }

    @Override
    public Object fileKey() {
      return status.version();
    }
  }
}
