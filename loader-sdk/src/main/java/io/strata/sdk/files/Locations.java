package io.strata.sdk.files;

import java.net.URI;
import java.nio.file.Path;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Where a dataset lives, as given by a user: a path, or a URI of the Hadoop file system that ORC
 * reads through. Today every host reads datasets from a local or mounted directory (the shared
 * HDD tier of a cluster is a mount every host sees), so {@code file://} URIs are accepted as that
 * directory and other schemes are refused by name (docs/SCALE.md says what they need).
 */
public final class Locations {
  private static final Pattern SCHEME = Pattern.compile("^([a-zA-Z][a-zA-Z0-9+.-]*):.*", Pattern.DOTALL);

  private Locations() {}

  /** The local path {@code location} names; IllegalArgumentException, naming the problem, for other file systems. */
  public static Path local(String location) {
    var m = SCHEME.matcher(location);
    if (!m.matches()) {
      return Path.of(location);
    }
    String scheme = m.group(1).toLowerCase(Locale.ROOT);
    if (!scheme.equals("file")) {
      throw new IllegalArgumentException("'" + location + "': datasets are read from local or mounted directories (a path or a"
          + " file:// URI); the " + scheme + ":// file system is not supported");
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
