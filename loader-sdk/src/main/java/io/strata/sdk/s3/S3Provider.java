package io.strata.sdk.s3;

import io.strata.sdk.remote.RemoteProvider;
import java.net.URI;
import java.nio.file.FileSystemException;
import java.time.Duration;
import java.util.regex.Pattern;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.ProfileCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.retry.RetryMode;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.regions.providers.AwsProfileRegionProvider;
import software.amazon.awssdk.regions.providers.AwsRegionProviderChain;
import software.amazon.awssdk.regions.providers.DefaultAwsRegionProviderChain;
import software.amazon.awssdk.regions.providers.SystemSettingsRegionProvider;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The {@code s3} scheme for {@code java.nio.file}: one read-only file system per bucket ({@link
 * S3Bucket}), its client made at the first read with the settings {@link S3FileSystems#configure}
 * gave last. Thread-safe.
 */
final class S3Provider extends RemoteProvider {
  static final String SCHEME = "s3";
  /** S3's rules for a bucket's name: 3-63 characters, lower-case letters, digits, dots and hyphens, a letter or digit at each end. */
  private static final Pattern BUCKET = Pattern.compile("[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]");
  private volatile S3Settings settings = S3Settings.DEFAULT;

  void configure(S3Settings s) {
    settings = s;
  }

  S3Settings settings() {
    return settings;
  }

  @Override
  public String getScheme() {
    return SCHEME;
  }

  @Override
  protected String key(URI uri) {
    String k = checkedKey(uri, "bucket (s3://bucket/prefix)");
    String bucket = k.substring(SCHEME.length() + 3);
    if (!bucket.equals(uri.getAuthority()) || !BUCKET.matcher(bucket).matches()) {
      throw new IllegalArgumentException("'" + uri + "': '" + uri.getAuthority() + "' is not a bucket's name (3-63 lower-case"
          + " letters, digits, dots and hyphens)");
    }
    return k;
  }

  @Override
  protected S3Bucket open(String key) {
    return new S3Bucket(this, URI.create(key + "/"));
  }

  /** The endpoint in force: the settings', else the environment's as the AWS SDK reads it; null: AWS's own. */
  static URI endpoint(S3Settings s) {
    if (s.endpoint() != null) {
      return s.endpoint();
    }
    for (String var : new String[] {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
      String v = System.getenv(var);
      if (v != null && !v.isBlank()) {
        try {
          return URI.create(v.strip());
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException(var + " is not a URL: '" + v + "'", e);
        }
      }
    }
    return null;
  }

  /** A client of the store with {@code s}: the bucket is named in messages. */
  static S3Client client(S3Settings s, String what) throws FileSystemException {
    URI endpoint = endpoint(s);
    Region region;
    if (s.region() != null) {
      region = Region.of(s.region());
    } else {
      try {
        // With an endpoint given (an S3-compatible store) no instance's metadata is asked: the
        // environment or a profile names the region, or the default does; on AWS, the whole chain.
        region = (endpoint != null ? new AwsRegionProviderChain(new SystemSettingsRegionProvider(), new AwsProfileRegionProvider())
            : new DefaultAwsRegionProviderChain()).getRegion();
      } catch (SdkClientException e) {
        if (endpoint == null) {
          throw new FileSystemException(what, null, "no AWS region is set (set AWS_REGION, a profile's region, or the"
              + " node's s3.region)");
        }
        region = Region.US_EAST_1; // an S3-compatible store: the region only enters the signature
      }
    }
    AwsCredentialsProvider credentials;
    if (s.accessKeyId() != null) {
      credentials = StaticCredentialsProvider.create(s.sessionToken() != null
          ? AwsSessionCredentials.create(s.accessKeyId(), s.secretAccessKey(), s.sessionToken())
          : AwsBasicCredentials.create(s.accessKeyId(), s.secretAccessKey()));
    } else if (s.profile() != null) {
      credentials = ProfileCredentialsProvider.builder().profileName(s.profile()).build();
    } else {
      credentials = DefaultCredentialsProvider.builder().build();
    }
    var b = S3Client.builder()
        .region(region)
        .credentialsProvider(credentials)
        .forcePathStyle(s.pathStyle() != null ? s.pathStyle() : endpoint != null)
        // Reads of ranges carry no whole-object checksum, and many S3-compatible stores refuse
        // the SDK's default trailing checksums: checksums only where an operation requires them.
        .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
        .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
        .httpClientBuilder(Apache5HttpClient.builder()
            .maxConnections(s.connections() * 2)
            .connectionTimeout(Duration.ofSeconds(5))
            .socketTimeout(Duration.ofSeconds(20)))
        // The SDK's standard retries: 503 SlowDown, 500s and throttling, 3 attempts with
        // exponential backoff and full jitter; a store gone for longer is S3Bucket.call's.
        .overrideConfiguration(o -> o.retryStrategy(RetryMode.STANDARD));
    if (endpoint != null) {
      b.endpointOverride(endpoint);
    }
    return b.build();
  }
}
