package io.strata.sdk.remote;

/**
 * What a remote file system says of one path: its size, whether it is a directory, when it was
 * last modified, and the version of its content where the store keeps one (an S3 object's ETag;
 * null for HDFS and for directories).
 */
public record RemoteStatus(long size, boolean directory, long modifiedMillis, String version) {
  /** A directory's status. */
  public static RemoteStatus directory(long modifiedMillis) {
    return new RemoteStatus(0, true, modifiedMillis, null);
  }
}
