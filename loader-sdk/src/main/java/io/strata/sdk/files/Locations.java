package io.strata.sdk.files;

import io.strata.sdk.hadoop.HadoopFileSystems;
import io.strata.sdk.s3.S3FileSystems;
import java.net.URI;
import java.nio.file.Path;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Where a dataset lives, as given by a user: a path, a {@code file://} URI, an {@code hdfs://}
 * URI or an {@code s3://} URI. A dataset is read from any of them ({@link #dataset}); what Strata writes (generated,
 * imported and relaid-out datasets, segments, stores) goes to local or mounted directories
 * ({@link #local}), and other schemes are refused by name (docs/SCALE.md says what they need).
 */
public final class Locations {
  private static final Pattern SCHEME = Pattern.compile("^([a-zA-Z][a-zA-Z0-9+.-]*):.*", Pattern.DOTALL);

  private Locations() {}

  /**
   * The path of a dataset to read: as {@link #local}, or a path of HDFS for an {@code hdfs://}
   * URI (read-only, {@link HadoopFileSystems}), or of an S3 bucket for an {@code s3://} URI
   * (read-only, {@link S3FileSystems}). IllegalArgumentException, naming the problem, for other
   * schemes.
   */
  public static Path dataset(String location) {
    var m = SCHEME.matcher(location);
    if (m.matches() && remoteScheme(m.group(1))) {
      URI u;
      try {
        u = URI.create(location);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("'" + location + "' is not a valid URI: " + e.getMessage(), e);
      }
      return remote(u);
    }
    return local(location);
  }

  /** Whether {@code scheme} names a remote file system Strata reads ({@code hdfs}, {@code s3}). */
  public static boolean remoteScheme(String scheme) {
    return HadoopFileSystems.handles(scheme) || S3FileSystems.handles(scheme);
  }

  /** Whether {@code p} is a path of a remote file system (HDFS, an S3 bucket): read-only to Strata, never mapped or locked. */
  public static boolean remote(Path p) {
    return HadoopFileSystems.isHadoop(p) || S3FileSystems.isS3(p);
  }

  /** The path a URI of a remote scheme names ({@link #remoteScheme}). */
  static Path remote(URI u) {
    return S3FileSystems.handles(u.getScheme()) ? S3FileSystems.path(u) : HadoopFileSystems.path(u);
  }

  /** The local path {@code location} names; IllegalArgumentException, naming the problem, for other file systems. */
  public static Path local(String location) {
    var m = SCHEME.matcher(location);
    if (!m.matches()) {
      return Path.of(location);
    }
    String scheme = m.group(1).toLowerCase(Locale.ROOT);
    if (remoteScheme(scheme)) {
      throw new IllegalArgumentException("'" + location + "': this needs a local or mounted directory (a path or a file:// URI),"
          + " not " + scheme + ":// (Strata reads datasets on " + (scheme.equals("s3") ? "S3" : "HDFS") + ", never writes them)");
    }
    if (!scheme.equals("file")) {
      throw new IllegalArgumentException("'" + location + "': datasets are read from local or mounted directories (a path or a"
          + " file:// URI), from hdfs:// or from s3://; the " + scheme + ":// file system is not supported");
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
