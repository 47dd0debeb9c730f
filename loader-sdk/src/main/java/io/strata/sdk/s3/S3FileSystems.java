package io.strata.sdk.s3;

import io.strata.sdk.remote.RemotePath;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Map;

/**
 * Objects of a store that speaks S3 ({@code s3://bucket/prefix/...}: AWS S3, or any store with
 * its protocol at a configured endpoint) as {@code java.nio.file} paths, read-only, as {@link
 * io.strata.sdk.hadoop.HadoopFileSystems} gives HDFS: {@code Files}, {@code FileChannel.open} and
 * the SDK's own opens work on them as on local files.
 *
 * <p>The client is configured here ({@link #configure}: a node's {@code s3} section; {@link
 * S3Settings} says what each key does and what the SDK's chains supply when it is silent): a
 * bucket's client is made at the first read of one of its objects, with the settings then in
 * force, and keeps them.
 *
 * <p>Threads: every method may be called from any thread.
 */
public final class S3FileSystems {
  private static final S3Provider PROVIDER = new S3Provider();

  private S3FileSystems() {}

  /** Whether {@code scheme} is read through S3. */
  public static boolean handles(String scheme) {
    return scheme != null && scheme.equalsIgnoreCase(S3Provider.SCHEME);
  }

  /** Sets the client settings of the buckets opened from now on; an IllegalArgumentException names a bad key or value. */
  public static void configure(Map<String, String> keys) {
    PROVIDER.configure(S3Settings.of(keys));
  }

  /** The settings in force for buckets opened from now on. */
  public static S3Settings settings() {
    return PROVIDER.settings();
  }

  /**
   * The path {@code uri} ({@code s3://bucket/key}) names (nothing is read: a bucket that is not
   * there is found at the first read). An {@link IllegalArgumentException} names what is wrong.
   */
  public static Path path(URI uri) {
    return PROVIDER.getPath(uri);
  }

  /** Whether {@code p} is a path of an S3 bucket. */
  public static boolean isS3(Path p) {
    return p instanceof RemotePath r && r.getFileSystem() instanceof S3Bucket;
  }

  /**
   * The version of the object {@code p} as the store says it now: its ETag (quoted, as S3 sends
   * it), then its version id after a space in a versioned bucket. What an in-place dataset records
   * of each object, so that one replaced later is refused.
   */
  public static String version(Path p) throws IOException {
    return (String) Files.readAttributes(p, BasicFileAttributes.class).fileKey();
  }

  /**
   * The gap a read of {@code file} (a path of an S3 bucket) reads through rather than asking
   * twice: its bucket's time to a first byte at one connection's rate, as this process has
   * measured them (the settings' figures until it has).
   */
  public static long gapBytes(Path file) {
    return ((S3Bucket) ((RemotePath) file).getFileSystem()).gapBytes();
  }

  /** The model of {@code file}'s bucket in force now: {@code [first byte seconds, bytes per second per connection]}. */
  public static double[] model(Path file) {
    S3Bucket b = (S3Bucket) ((RemotePath) file).getFileSystem();
    S3Settings s = b.prior();
    return new double[] {b.model.firstByteSeconds(s), b.model.bytesPerSecond(s)};
  }

  /**
   * A new client of the store {@code keys} name (the keys of a node's {@code s3} section), made as
   * Strata's own buckets make theirs: for tools and tests that put objects there (Strata itself
   * only reads). The caller closes it.
   */
  public static software.amazon.awssdk.services.s3.S3Client newClient(Map<String, String> keys) throws IOException {
    return S3Provider.client(S3Settings.of(keys), "a client of " + keys.getOrDefault("endpoint", "AWS S3"));
  }

  /** Range GETs made by this process's reads of S3 objects, and the bytes they returned: {@code [gets, bytes]}. */
  public static long[] requests() {
    return new long[] {S3Channel.GETS.get(), S3Channel.BYTES.get()};
  }
}
