package io.strata.sdk.hadoop;

import io.strata.sdk.remote.RemoteChannel;
import io.strata.sdk.remote.RemotePath;
import java.io.EOFException;
import java.io.IOException;
import org.apache.hadoop.fs.FSDataInputStream;

/**
 * A file of a Hadoop file system opened for reading: positioned reads are {@code pread}s, which
 * HDFS serves from any replica and retries on another when a DataNode fails.
 *
 * <p>Threads: as {@link RemoteChannel} (Hadoop's positioned reads are thread-safe).
 */
final class HadoopChannel extends RemoteChannel {
  private final FSDataInputStream in;
  private final HadoopNioFileSystem fs;

  HadoopChannel(FSDataInputStream in, long size, RemotePath path, HadoopNioFileSystem fs) {
    super(size, path);
    this.in = in;
    this.fs = fs;
  }

  /** A positioned read of exactly {@code n} bytes, a name node's restart waited out ({@link HadoopNioFileSystem#call}). */
  @Override
  protected void readFully(long at, byte[] b, int off, int n) throws IOException {
    fs.call(path, () -> {
      try {
        in.readFully(at, b, off, n);
      } catch (EOFException e) {
        if (!HadoopNioFileSystem.nameNodeGone(e)) {
          EOFException x = new EOFException(path + " is shorter than the " + size + " bytes it had when opened (read at " + at + ")");
          x.initCause(e);
          throw x;
        }
        throw e;
      }
      return null;
    });
  }

  @Override
  protected void implCloseChannel() throws IOException {
    in.close();
  }
}
