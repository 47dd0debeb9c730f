package io.strata.sdk.hadoop;

import io.strata.sdk.remote.RemotePath;
import java.net.URI;
import java.nio.file.Path;
import java.util.Map;

/**
 * Files of a Hadoop file system ({@code hdfs://name-node:port/...}) as {@code java.nio.file}
 * paths, read-only: {@code Files}, {@code FileChannel.open} and the SDK's own opens work on them
 * as on local files, so a dataset's readers need not know where it lives. A file of HDFS cannot be
 * mapped; mapping it into an arena reads it into memory of that arena instead.
 *
 * <p>The Hadoop client is configured here, from the node's configuration (its {@code hadoop}
 * section: core-site keys such as {@code dfs.client.socket-timeout}), never from the
 * environment or a {@code core-site.xml} that happens to be on the class path: a name node's
 * client is made at the first read of one of its files, with the settings {@link #configure} gave
 * last; it keeps them.
 *
 * <p>Threads: every method may be called from any thread.
 */
public final class HadoopFileSystems {
  private static final HadoopProvider PROVIDER = new HadoopProvider();

  private HadoopFileSystems() {}

  /** The URI schemes read through Hadoop. */
  public static boolean handles(String scheme) {
    return scheme != null && scheme.equalsIgnoreCase(HadoopProvider.SCHEME);
  }

  /** Sets the Hadoop client settings of the file systems opened from now on. */
  public static void configure(Map<String, String> coreSiteKeys) {
    PROVIDER.configure(coreSiteKeys);
  }

  /**
   * The path {@code uri} ({@code hdfs://host:port/path}) names (nothing is read: a name node that
   * cannot be reached is found at the first read). An {@link IllegalArgumentException} names what
   * is wrong with the URI.
   */
  public static Path path(URI uri) {
    return PROVIDER.getPath(uri);
  }

  /** Whether {@code p} is a path of a Hadoop file system. */
  public static boolean isHadoop(Path p) {
    return p instanceof RemotePath r && r.getFileSystem() instanceof HadoopNioFileSystem;
  }
}
