package io.strata.sdk.s3;

import io.strata.sdk.remote.RemoteChannel;
import io.strata.sdk.remote.RemotePath;
import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;

/**
 * An object of an S3 bucket opened for reading: each positioned read is one range GET pinned to
 * the object's ETag as it was opened ({@code If-Match}: an object replaced since fails the read,
 * "replaced since it was opened"), and a read longer than one and a half parts of the settings'
 * {@code partMiB} is fetched as parts on the bucket's part threads at once (AWS's guidance for
 * throughput: 8 or 16 MB byte-range requests on concurrent connections).
 *
 * <p>Threads: as {@link RemoteChannel}; the SDK's client is thread-safe.
 */
final class S3Channel extends RemoteChannel {
  private final S3Bucket bucket;
  private final String key;
  /** The ETag the object had when opened (quoted, as the store sends it), and its version id after a space where versioned; null where the store gave none. */
  private final String version;
  /** The bucket's client's settings: the part size and connections of long reads. */
  private final S3Settings settings;
  /** Range GETs made and bytes they returned, process-wide (what a benchmark reports as requests to the store). */
  static final AtomicLong GETS = new AtomicLong();
  static final AtomicLong BYTES = new AtomicLong();

  S3Channel(S3Bucket bucket, RemotePath path, String key, long size, String version, S3Settings settings) {
    super(size, path);
    this.bucket = bucket;
    this.key = key;
    this.version = version;
    this.settings = settings;
  }

  @Override
  protected void readFully(long at, byte[] b, int off, int n) throws IOException {
    if (n == 0) {
      return;
    }
    bucket.call(path, c -> {
      GetObjectRequest.Builder r = GetObjectRequest.builder().bucket(bucket.bucket()).key(key)
          .range("bytes=" + at + "-" + (at + n - 1));
      if (version != null) {
        int space = version.indexOf(' ');
        if (space > 0) {
          r.versionId(version.substring(space + 1));
        } else {
          r.ifMatch(version);
        }
      }
      long t0 = System.nanoTime();
      try (ResponseInputStream<GetObjectResponse> in = c.getObject(r.build())) {
        long t1 = System.nanoTime();
        int got;
        try {
          got = in.readNBytes(b, off, n);
        } catch (IOException e) {
          // The connection died under the body (a store killed mid-answer): the store's failure, as
          // the SDK's are, so that it is waited out and the range asked again, never decoded as it is.
          throw SdkClientException.create("reading the body of " + path + " at " + at + ": " + e, e);
        }
        bucket.model.firstByte(t1 - t0);
        bucket.model.body(got, System.nanoTime() - t1);
        GETS.incrementAndGet();
        BYTES.addAndGet(got);
        if (got < n) {
          // The ETag pins the object, so a short body is an answer cut off, not a shorter object.
          throw SdkClientException.create(path + " answered " + got + " of " + n + " bytes at " + at,
              new EOFException(path + " is shorter than the " + size + " bytes it had when opened (read at " + at + ")"));
        }
      }
      return null;
    });
  }

  /** A long read as concurrent parts; a short one as one GET. */
  @Override
  public int read(ByteBuffer dst, long at) throws IOException {
    S3Settings s = settings;
    long part = s.partBytes();
    int want = (int) Math.min(dst.remaining(), Math.max(0, size - at));
    if (at < 0 || at >= size || want < part * 3 / 2 || s.connections() == 1) {
      return super.read(dst, at);
    }
    ensureOpen();
    int parts = (int) ((want + part - 1) / part);
    byte[] whole = dst.hasArray() ? null : new byte[want];
    byte[] into = dst.hasArray() ? dst.array() : whole;
    int base = dst.hasArray() ? dst.arrayOffset() + dst.position() : 0;
    List<Future<?>> running = new ArrayList<>(parts);
    try {
      for (int i = 0; i < parts; i++) {
        long from = (long) i * part;
        int n = (int) Math.min(part, want - from);
        running.add(bucket.parts().submit(() -> {
          readFully(at + from, into, base + (int) from, n);
          return null;
        }));
      }
      for (Future<?> f : running) {
        f.get();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted reading " + path);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof IOException io) {
        throw io;
      }
      throw new IOException("reading " + path + ": " + e.getCause(), e.getCause());
    } finally {
      for (Future<?> f : running) {
        f.cancel(true);
      }
    }
    if (whole != null) {
      dst.put(whole);
    } else {
      dst.position(dst.position() + want);
    }
    return want;
  }

  @Override
  protected void implCloseChannel() {
    // each read is its own request: nothing held open
  }
}
