package io.strata.sdk.remote;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.ProviderMismatchException;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.ArrayList;
import java.util.List;

/**
 * A path of one read-only remote file system (a name node of HDFS, a bucket of S3): a list of
 * names, absolute or not, separated by {@code /}. Pure syntax except {@link #toRealPath}, which asks the file system. Immutable.
 */
public final class RemotePath implements Path {
  private final RemoteFileSystem fs;
  private final boolean absolute;
  private final List<String> names;

  private RemotePath(RemoteFileSystem fs, boolean absolute, List<String> names) {
    this.fs = fs;
    this.absolute = absolute;
    this.names = List.copyOf(names);
  }

  /** The path {@code first}/{@code more}... names, empty names (from {@code //}) dropped. */
  public static RemotePath parse(RemoteFileSystem fs, String first, String... more) {
    StringBuilder joined = new StringBuilder(first);
    for (String m : more) {
      if (!m.isEmpty()) {
        joined.append('/').append(m);
      }
    }
    String s = joined.toString();
    if (s.indexOf('\0') >= 0) {
      throw new InvalidPathException(s, "a NUL character in a path");
    }
    List<String> names = new ArrayList<>();
    for (String n : s.split("/")) {
      if (!n.isEmpty()) {
        names.add(n);
      }
    }
    return new RemotePath(fs, s.startsWith("/"), names);
  }

  @Override
  public RemoteFileSystem getFileSystem() {
    return fs;
  }

  @Override
  public boolean isAbsolute() {
    return absolute;
  }

  @Override
  public Path getRoot() {
    return absolute ? new RemotePath(fs, true, List.of()) : null;
  }

  @Override
  public Path getFileName() {
    return names.isEmpty() ? null : new RemotePath(fs, false, List.of(names.getLast()));
  }

  @Override
  public Path getParent() {
    if (names.isEmpty() || (names.size() == 1 && !absolute)) {
      return null;
    }
    return new RemotePath(fs, absolute, names.subList(0, names.size() - 1));
  }

  @Override
  public int getNameCount() {
    return names.size();
  }

  @Override
  public Path getName(int index) {
    if (index < 0 || index >= names.size()) {
      throw new IllegalArgumentException("no name " + index + " in " + this);
    }
    return new RemotePath(fs, false, List.of(names.get(index)));
  }

  @Override
  public Path subpath(int beginIndex, int endIndex) {
    if (beginIndex < 0 || beginIndex >= endIndex || endIndex > names.size()) {
      throw new IllegalArgumentException("no names [" + beginIndex + ", " + endIndex + ") in " + this);
    }
    return new RemotePath(fs, false, names.subList(beginIndex, endIndex));
  }

  @Override
  public boolean startsWith(Path other) {
    if (!(other instanceof RemotePath o) || !o.fs.equals(fs) || o.absolute != absolute || o.names.size() > names.size()) {
      return false;
    }
    return names.subList(0, o.names.size()).equals(o.names);
  }

  @Override
  public boolean endsWith(Path other) {
    if (!(other instanceof RemotePath o) || !o.fs.equals(fs) || o.names.size() > names.size()) {
      return false;
    }
    if (o.absolute) {
      return equals(o);
    }
    return names.subList(names.size() - o.names.size(), names.size()).equals(o.names);
  }

  @Override
  public Path normalize() {
    List<String> out = new ArrayList<>();
    for (String n : names) {
      if (n.equals(".")) {
        continue;
      }
      if (n.equals("..")) {
        if (!out.isEmpty() && !out.getLast().equals("..")) {
          out.removeLast();
          continue;
        }
        if (absolute) {
          continue; // "/.." is "/"
        }
      }
      out.add(n);
    }
    return new RemotePath(fs, absolute, out);
  }

  @Override
  public Path resolve(Path other) {
    RemotePath o = of(other);
    if (o.absolute) {
      return o;
    }
    if (o.names.isEmpty()) {
      return this;
    }
    List<String> n = new ArrayList<>(names);
    n.addAll(o.names);
    return new RemotePath(fs, absolute, n);
  }

  @Override
  public Path relativize(Path other) {
    RemotePath o = of(other);
    if (o.absolute != absolute) {
      throw new IllegalArgumentException("cannot relativize " + other + " against " + this + ": one is absolute, the other not");
    }
    int common = 0;
    while (common < names.size() && common < o.names.size() && names.get(common).equals(o.names.get(common))) {
      common++;
    }
    List<String> n = new ArrayList<>();
    for (int i = common; i < names.size(); i++) {
      n.add("..");
    }
    n.addAll(o.names.subList(common, o.names.size()));
    return new RemotePath(fs, false, n);
  }

  @Override
  public URI toUri() {
    try {
      URI root = fs.root();
      return new URI(root.getScheme(), root.getAuthority(), toAbsolutePath().pathString(), null, null);
    } catch (URISyntaxException e) {
      throw new IllegalStateException("no URI for " + this + ": " + e.getMessage(), e);
    }
  }

  /** Relative paths are taken from the root (a Hadoop client's working directory is its home; Strata never relies on it; a bucket has none). */
  @Override
  public RemotePath toAbsolutePath() {
    return absolute ? this : new RemotePath(fs, true, names);
  }

  /** The normalized absolute path, after checking that it exists (HDFS's links are off by default, Strata follows none, and S3 has none). */
  @Override
  public Path toRealPath(LinkOption... options) throws IOException {
    RemotePath real = (RemotePath) toAbsolutePath().normalize();
    fs.status(real); // NoSuchFileException when missing
    return real;
  }

  @Override
  public WatchKey register(WatchService watcher, WatchEvent.Kind<?>[] events, WatchEvent.Modifier... modifiers) {
    throw new UnsupportedOperationException(fs.kind() + " cannot be watched: " + this);
  }

  @Override
  public int compareTo(Path other) {
    return toString().compareTo(of(other).toString());
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof RemotePath p && p.fs.equals(fs) && p.absolute == absolute && p.names.equals(names);
  }

  @Override
  public int hashCode() {
    return fs.hashCode() * 31 + toString().hashCode();
  }

  /** An absolute path as its URI says it ({@code hdfs://nn:8020/data/ev}), so that messages name the file system; a relative one as its names. */
  @Override
  public String toString() {
    return absolute ? fs.rootString() + pathString() : pathString();
  }

  /** The path alone: {@code /data/ev}, or {@code data/ev} when relative. */
  public String pathString() {
    return (absolute ? "/" : "") + String.join("/", names);
  }

  /** The names after the root, joined by {@code /} with no leading one: an object key's path part in a bucket ({@code data/ev}). */
  public String relativeString() {
    return String.join("/", names);
  }

  private RemotePath of(Path other) {
    if (!(other instanceof RemotePath o) || !o.fs.equals(fs)) {
      throw new ProviderMismatchException(other + " is not a path of " + fs.root());
    }
    return o;
  }
}
