package io.strata.sdk.files;

import io.strata.sdk.hadoop.HadoopFileSystems;
import java.net.URI;
import java.nio.file.Path;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Where a dataset lives, as given by a user: a path, a {@code file://} URI, or an {@code hdfs://}
 * URI. A dataset is read from any of them ({@link #dataset}); what Strata writes (generated,
 * imported and relaid-out datasets, segments, stores) goes to local or mounted directories
 * ({@link #local}), and other schemes are refused by name (docs/SCALE.md says what they need).
 */
public final class Locations {
  private static final Pattern SCHEME = Pattern.compile("^([a-zA-Z][a-zA-Z0-9+.-]*):.*", Pattern.DOTALL);

  private Locations() {}

  /**
   * The path of a dataset to read: as {@link #local}, or a path of HDFS for an {@code hdfs://}
   * URI (read-only, {@link HadoopFileSystems}). IllegalArgumentException, naming the problem, for
   * other schemes.
   */
  public static Path dataset(String location) {
    var m = SCHEME.matcher(location);
    if (m.matches() && HadoopFileSystems.handles(m.group(1))) {
      URI u;
      try {
        u = URI.create(location);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("'" + location + "' is not a valid URI: " + e.getMessage(), e);
      }
      return HadoopFileSystems.path(u);
    }
    return local(location);
  }

  /** The local path {@code location} names; IllegalArgumentException, naming the problem, for other file systems. */
  public static Path local(String location) {
    var m = SCHEME.matcher(location);
    if (!m.matches()) {
      return Path.of(location);
    }
    String scheme = m.group(1).toLowerCase(Locale.ROOT);
    if (HadoopFileSystems.handles(scheme)) {
      throw new IllegalArgumentException("'" + location + "': this needs a local or mounted directory (a path or a file:// URI),"
          + " not " + scheme + ":// (Strata reads datasets on HDFS, never writes them)");
    }
    if (!scheme.equals("file")) {
      throw new IllegalArgumentException("'" + location + "': datasets are read from local or mounted directories (a path or a"
          + " file:// URI) or from hdfs://; the " + scheme + ":// file system is not supported");
    }
    URI u;
    try {
      u = URI.create(location);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("'" + location + "' is not a valid file:// URI: " + e.getMessage(), e);
    }
    if (u.getAuthority() != null && !u.getAuthority().isEmpty() && !u.getAuthority().equals("localhost")) {
      throw new IllegalArgumentException("'" + location + "' names host '" + u.getAuthority()
          + "': a file:// URI must name this host's file system (file:///path)");
    }
    if (u.getPath() == null || u.getPath().isEmpty()) {
      throw new IllegalArgumentException("'" + location + "' has no path");
    }
    return Path.of(u.getPath());
  }
}
