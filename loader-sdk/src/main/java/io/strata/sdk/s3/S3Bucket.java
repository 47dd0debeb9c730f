package io.strata.sdk.s3;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.strata.sdk.remote.RemoteFileSystem;
import io.strata.sdk.remote.RemotePath;
import io.strata.sdk.remote.RemoteStatus;
import java.io.IOException;
import java.net.ConnectException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CommonPrefix;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * One bucket of an object store that speaks S3, seen through {@code java.nio} as a read-only file
 * system: an object is a file ({@code s3://bucket/data/ev/part-0.parquet}), a key prefix ending at
 * a {@code /} a directory. A file's status is a HEAD of its object (size, ETag); a directory's a
 * listing of its prefix; a file is read by range GETs ({@link S3Channel}), each pinned to the ETag
 * the object had when opened, so an object replaced mid-read fails its read rather than mixing
 * two versions.
 *
 * <p>Failures: the SDK retries 503 SlowDown, 500s and throttling itself (standard mode: backoff
 * with jitter); a store that answered this bucket before and then refuses connections or keeps
 * failing (a restart) is waited out here, each call tried again every half second for up to
 * {@link RemoteFileSystem#GRACE_NANOS}; one that never answered fails at once. Every failure is one line naming
 * the bucket and key and what went wrong in the store's terms (no bucket, no object, access
 * denied, an unknown access key, a secret that does not match, expired credentials, the bucket's
 * region).
 *
 * <p>Threads: every method may be called from any thread; the client is made under this object's
 * monitor and is itself thread-safe; the parts of long reads run on {@code strata-s3-<bucket>-N}
 * threads (daemons, as many as the settings' connections, ended after 30 s unused).
 */
final class S3Bucket extends RemoteFileSystem {
  private final S3Provider provider;
  private final String bucket;
  @GuardedBy("this")
  private S3Client client;
  @GuardedBy("this")
  private S3Settings clientSettings;
  @GuardedBy("this")
  private ThreadPoolExecutor parts;
  /** What a request here costs, learned from this process's GETs. */
  final StoreModel model = new StoreModel();

  /** A call of the store. */
  interface Call<T> {
    T run(S3Client c) throws IOException;
  }

  S3Bucket(S3Provider provider, URI root) {
    super(provider, root);
    this.provider = provider;
    this.bucket = root.getAuthority();
  }

  @Override
  public String kind() {
    return "an S3 bucket";
  }

  String bucket() {
    return bucket;
  }

  /** The settings the client was made with (made now if it was not). */
  synchronized S3Settings settings() throws IOException {
    client();
    return clientSettings;
  }

  /** The client, made at the first call with the settings then in force. */
  synchronized S3Client client() throws IOException {
    ensureOpen();
    if (client == null) {
      S3Settings s = provider.settings();
      client = S3Provider.client(s, rootString());
      clientSettings = s;
    }
    return client;
  }

  /** The threads long reads' parts run on. */
  synchronized ExecutorService parts() throws IOException {
    ensureOpen();
    if (parts == null) {
      int n = settings().connections();
      AtomicInteger i = new AtomicInteger();
      parts = new ThreadPoolExecutor(n, n, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
          r -> Thread.ofPlatform().name("strata-s3-" + bucket + "-" + i.incrementAndGet()).daemon(true).unstarted(r));
      parts.allowCoreThreadTimeOut(true);
    }
    return parts;
  }

  /** The settings whose figures the model starts from: the client's, or those in force where none was made yet. */
  synchronized S3Settings prior() {
    return clientSettings != null ? clientSettings : provider.settings();
  }

  /** The gap a read of this bucket reads through ({@link StoreModel}). */
  long gapBytes() {
    return model.gapBytes(prior());
  }

  /** The key of {@code p}'s object: its names after the bucket, joined by {@code /}. */
  static String key(RemotePath p) {
    return ((RemotePath) p.toAbsolutePath().normalize()).relativeString();
  }

  @Override
  public RemoteStatus status(RemotePath p) throws IOException {
    String key = key(p);
    if (key.isEmpty()) {
      call(p, c -> c.headBucket(b -> b.bucket(bucket)));
      return RemoteStatus.directory(0);
    }
    try {
      HeadObjectResponse h = call(p, c -> c.headObject(b -> b.bucket(bucket).key(key)));
      return new RemoteStatus(h.contentLength(), false, h.lastModified() == null ? 0 : h.lastModified().toEpochMilli(),
          h.versionId() != null && !h.versionId().equals("null") ? h.eTag() + " " + h.versionId() : h.eTag());
    } catch (AccessDeniedException e) {
      if (e.getCause() instanceof S3Exception s && (s.awsErrorDetails() == null || s.awsErrorDetails().errorCode() == null)) {
        // A HEAD's refusal has no body, so no reason: a GET of one byte is refused with one.
        call(p, c -> {
          c.getObject(b -> b.bucket(bucket).key(key).range("bytes=0-0")).close();
          return null;
        });
      }
      throw e;
    } catch (NoSuchFileException e) {
      // no object of that key: a directory if some key lies under it
      ListObjectsV2Response r = call(p, c -> c.listObjectsV2(b -> b.bucket(bucket).prefix(key + "/").maxKeys(1)));
      if (r.keyCount() != null && r.keyCount() > 0) {
        return RemoteStatus.directory(0);
      }
      throw e;
    }
  }

  @Override
  protected List<String> list(RemotePath dir) throws IOException {
    String key = key(dir);
    String prefix = key.isEmpty() ? "" : key + "/";
    List<String> names = new ArrayList<>();
    String token = null;
    do {
      String t = token;
      ListObjectsV2Response r = call(dir, c -> c.listObjectsV2(b -> b.bucket(bucket).prefix(prefix).delimiter("/")
          .continuationToken(t)));
      for (CommonPrefix cp : r.commonPrefixes()) {
        String n = cp.prefix().substring(prefix.length());
        n = n.endsWith("/") ? n.substring(0, n.length() - 1) : n;
        if (!n.isEmpty()) {
          names.add(n);
        }
      }
      for (S3Object o : r.contents()) {
        String n = o.key().substring(prefix.length());
        if (!n.isEmpty()) { // a "directory marker" object (the prefix itself) is no entry
          names.add(n);
        }
      }
      token = Boolean.TRUE.equals(r.isTruncated()) ? r.nextContinuationToken() : null;
    } while (token != null);
    if (names.isEmpty() && !key.isEmpty() && !status(dir).directory()) { // NoSuchFileException when missing
      throw new NotDirectoryException(dir.toString());
    }
    return names;
  }

  @Override
  protected FileChannel open(RemotePath p, RemoteStatus st) throws IOException {
    return new S3Channel(this, p, key(p), st.size(), st.version(), settings());
  }

  @Override
  protected synchronized void closeClient() {
    if (parts != null) {
      parts.shutdownNow();
    }
    if (client != null) {
      client.close();
    }
  }

  /**
   * Runs {@code c} (a call about {@code p}) with this bucket's client, its failure translated
   * ({@link #translate}); a store that answered before and is gone now (its connections refused
   * or reset, or 5xx after the SDK's own retries) is waited for ({@link #withGrace}).
   */
  <T> T call(RemotePath p, Call<T> c) throws IOException {
    return withGrace(p, () -> c.run(client()), failures);
  }

  /** The SDK's failures: an answer below 500 says the store is there; 5xx and lost connections that it is gone for now. */
  private final Failures failures = new Failures() {
    @Override
    public boolean ours(Exception e) {
      return e instanceof SdkException;
    }

    @Override
    public boolean answered(Exception e) {
      return e instanceof S3Exception s && s.statusCode() < 500;
    }

    @Override
    public boolean gone(Exception e) {
      return S3Bucket.gone(e);
    }

    @Override
    public IOException translate(RemotePath p, Exception e) {
      return S3Bucket.this.translate(p, (SdkException) e);
    }
  };

  /** Whether {@code e} says the store (or the connection to it) is gone for now, not that the call was wrong. */
  static boolean gone(Throwable e) {
    if (e instanceof S3Exception s) {
      return s.statusCode() >= 500;
    }
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof ConnectException || t instanceof SocketException || t instanceof java.io.EOFException
          || t.getClass().getSimpleName().equals("NoHttpResponseException")
          // HttpCore's "premature end of Content-Length delimited message body": a body cut off
          // when the store died mid-answer (an IOException, not a SocketException).
          || t.getClass().getSimpleName().equals("ConnectionClosedException")) {
        return true;
      }
    }
    return false;
  }

  /** The SDK's exception as java.nio's, naming the object (or bucket) and the problem in the store's terms. */
  IOException translate(RemotePath p, SdkException e) {
    String what = p.toString();
    String reason;
    if (e instanceof S3Exception s) {
      String code = s.awsErrorDetails() == null ? null : s.awsErrorDetails().errorCode();
      int status = s.statusCode();
      code = code == null ? "" : code;
      switch (code) {
        case "NoSuchBucket" -> {
          return wrap(new NoSuchFileException(what, null, "no bucket '" + bucket + "' at " + endpointName()), e);
        }
        case "NoSuchKey" -> {
          return wrap(new NoSuchFileException(what), e);
        }
        case "InvalidAccessKeyId" -> {
          return wrap(new AccessDeniedException(what, null, "the store does not know the access key in use"
              + " (check AWS_ACCESS_KEY_ID, the profile, or the node's s3 section)"), e);
        }
        case "SignatureDoesNotMatch" -> {
          return wrap(new AccessDeniedException(what, null, "the secret key in use does not match its access key"), e);
        }
        case "ExpiredToken", "TokenRefreshRequired", "RequestExpired" -> {
          return wrap(new AccessDeniedException(what, null, "the credentials in use have expired; renew them"), e);
        }
        case "AccessDenied", "AllAccessDisabled" -> {
          return wrap(new AccessDeniedException(what, null, "access denied by the store: the credentials in use may not read"
              + " bucket '" + bucket + "'"), e);
        }
        case "PreconditionFailed" -> {
          return wrap(new FileSystemException(what, null, "the object was replaced since it was opened (its ETag changed);"
              + " read the dataset again"), e);
        }
        default -> {
          // HEAD answers carry no body, so no code: the status says it
        }
      }
      if (status == 301 || code.equals("PermanentRedirect") || code.equals("AuthorizationHeaderMalformed")) {
        String right = s.awsErrorDetails() == null || s.awsErrorDetails().sdkHttpResponse() == null ? null
            : s.awsErrorDetails().sdkHttpResponse().firstMatchingHeader("x-amz-bucket-region").orElse(null);
        return wrap(new FileSystemException(what, null, "bucket '" + bucket + "' is in " + (right == null ? "another region"
            : "region " + right) + ", not the one in use (set AWS_REGION or the node's s3.region)"), e);
      }
      if (status == 404) {
        return wrap(new NoSuchFileException(what), e);
      }
      if (status == 403) {
        return wrap(new AccessDeniedException(what, null, "access denied by the store (403): the credentials in use may not read"
            + " bucket '" + bucket + "'"), e);
      }
      if (status == 412) {
        return wrap(new FileSystemException(what, null, "the object was replaced since it was opened (its ETag changed);"
            + " read the dataset again"), e);
      }
      reason = "the store answered " + status + (code.isEmpty() ? "" : " " + code);
    } else {
      reason = clientReason(e);
    }
    if (reason.startsWith("no AWS credentials")) {
      return wrap(new AccessDeniedException(what, null, reason), e);
    }
    return wrap(new FileSystemException(what, null, reason), e);
  }

  /** What went wrong on this side of the store: its address, the connection, the credentials. */
  private String clientReason(SdkException e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof UnknownHostException) {
        return "unknown host " + t.getMessage() + " (is the endpoint " + endpointName() + " right?)";
      }
      if (t instanceof ConnectException) {
        return "the store at " + endpointName() + " refuses connections (is it running, and is this its address?)";
      }
      if (t instanceof SocketTimeoutException) {
        return "the store at " + endpointName() + " did not answer in time";
      }
    }
    String m = String.valueOf(e.getMessage());
    if (m.contains("Unable to load credentials")) {
      return "no AWS credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, or the node's s3 section)";
    }
    int cut = m.indexOf(" (Service:");
    return cut > 0 ? m.substring(0, cut) : m.lines().findFirst().orElse(m);
  }

  /** The endpoint in use, for messages. */
  private String endpointName() {
    URI e = S3Provider.endpoint(provider.settings());
    return e == null ? "AWS S3" : e.toString();
  }

  private static IOException wrap(FileSystemException f, Throwable cause) {
    f.initCause(cause);
    return f;
  }
}
