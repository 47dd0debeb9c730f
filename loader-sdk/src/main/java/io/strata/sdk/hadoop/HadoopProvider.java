package io.strata.sdk.hadoop;

import io.strata.sdk.remote.RemoteProvider;
import java.io.IOException;
import java.net.URI;
import java.nio.file.FileSystemException;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;

/**
 * The {@code hdfs} scheme for {@code java.nio.file}: read-only file systems, one per name node,
 * whose Hadoop client is made at the first read with the settings {@link HadoopFileSystems#configure}
 * gave. Files are read through {@link HadoopChannel}. Thread-safe.
 */
final class HadoopProvider extends RemoteProvider {
  static final String SCHEME = "hdfs";
  private volatile Map<String, String> settings = Map.of();

  void configure(Map<String, String> keys) {
    settings = Map.copyOf(keys);
  }

  @Override
  public String getScheme() {
    return SCHEME;
  }

  @Override
  protected String key(URI uri) {
    return checkedKey(uri, "name node (hdfs://host:port/path)");
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

  @Override
  protected HadoopNioFileSystem open(String key) {
    return new HadoopNioFileSystem(this, URI.create(key + "/"));
  }
}
