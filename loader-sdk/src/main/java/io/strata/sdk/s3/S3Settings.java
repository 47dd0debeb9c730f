package io.strata.sdk.s3;

import java.net.URI;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * How Strata reaches an object store that speaks S3, and what a request there costs.
 *
 * <p>Credentials and region come from the AWS SDK's default chains (the environment, {@code
 * ~/.aws/config} and {@code credentials}, a container's or an instance's role) unless set here;
 * the endpoint from {@code AWS_ENDPOINT_URL_S3} or {@code AWS_ENDPOINT_URL} as the SDK reads them,
 * unless set here. Addressing is virtual-hosted on AWS and path-style where an endpoint is given
 * (S3-compatible stores), unless {@code pathStyle} says otherwise.
 *
 * <p>The cost model ({@code firstByteMs}, {@code connectionMBps}, {@code connections}, {@code
 * partMiB}): a request's first byte takes {@code firstByteMs}, after which one connection moves
 * {@code connectionMBps}; so a gap between two wanted ranges shorter than what one connection
 * moves in the time of a first byte is read through rather than asked for separately
 * ({@link S3FileSystems#gapBytes}), and a long range is fetched as parts of {@code partMiB} on up to {@code
 * connections} connections at once (AWS's guidance: byte-range requests of 8 or 16 MB, on
 * concurrent connections). {@code firstByteMs} and {@code connectionMBps} are the prior: once a
 * process has timed enough of its own requests to a bucket, what it measured replaces them
 * ({@code StoreModel}). The defaults are a model's assumptions for S3 in the same region (a
 * first byte in 100 ms, the low end of the 100-200 ms AWS gives for S3's latency; 90 MB/s per
 * connection).
 */
public record S3Settings(URI endpoint, String region, Boolean pathStyle, String accessKeyId, String secretAccessKey,
    String sessionToken, String profile, int connections, double firstByteMs, double connectionMBps, int partMiB) {

  /** The keys a node's {@code s3} section may hold. */
  public static final Set<String> KEYS = Set.of("endpoint", "region", "pathStyle", "accessKeyId", "secretAccessKey",
      "sessionToken", "profile", "connections", "firstByteMs", "connectionMBps", "partMiB");

  /** Nothing set: the SDK's chains and the model's defaults. */
  public static final S3Settings DEFAULT = new S3Settings(null, null, null, null, null, null, null, 16, 100, 90, 8);

  public S3Settings {
    if (endpoint != null && (endpoint.getScheme() == null || !Set.of("http", "https").contains(endpoint.getScheme().toLowerCase(Locale.ROOT))
        || endpoint.getHost() == null)) {
      throw new IllegalArgumentException("s3.endpoint must be an http:// or https:// URL with a host, not '" + endpoint + "'");
    }
    if ((accessKeyId == null) != (secretAccessKey == null)) {
      throw new IllegalArgumentException("s3.accessKeyId and s3.secretAccessKey are set together or not at all");
    }
    if (sessionToken != null && accessKeyId == null) {
      throw new IllegalArgumentException("s3.sessionToken needs s3.accessKeyId and s3.secretAccessKey");
    }
    if (connections < 1 || connections > 256) {
      throw new IllegalArgumentException("s3.connections must be 1 to 256, not " + connections);
    }
    if (!(firstByteMs >= 0 && firstByteMs <= 60_000) || !(connectionMBps > 0 && connectionMBps <= 100_000)) {
      throw new IllegalArgumentException("s3.firstByteMs must be 0 to 60000 and s3.connectionMBps positive");
    }
    if (partMiB < 1 || partMiB > 1024) {
      throw new IllegalArgumentException("s3.partMiB must be 1 to 1024, not " + partMiB);
    }
  }

  /** The settings {@code keys} (a node's {@code s3} section, string values) give; an unknown key or a bad value named. */
  public static S3Settings of(Map<String, String> keys) {
    for (String k : keys.keySet()) {
      if (!KEYS.contains(k)) {
        throw new IllegalArgumentException("s3." + k + " is not a setting (" + String.join(", ", KEYS.stream().sorted().toList()) + ")");
      }
    }
    S3Settings d = DEFAULT;
    String e = keys.get("endpoint");
    URI endpoint;
    try {
      endpoint = e == null ? null : URI.create(e);
    } catch (IllegalArgumentException x) {
      throw new IllegalArgumentException("s3.endpoint is not a URL: '" + e + "'", x);
    }
    String ps = keys.get("pathStyle");
    if (ps != null && !ps.equals("true") && !ps.equals("false")) {
      throw new IllegalArgumentException("s3.pathStyle must be true or false, not '" + ps + "'");
    }
    return new S3Settings(endpoint, keys.get("region"), ps == null ? null : Boolean.valueOf(ps), keys.get("accessKeyId"),
        keys.get("secretAccessKey"), keys.get("sessionToken"), keys.get("profile"),
        (int) number(keys, "connections", d.connections), number(keys, "firstByteMs", d.firstByteMs),
        number(keys, "connectionMBps", d.connectionMBps), (int) number(keys, "partMiB", d.partMiB));
  }

  private static double number(Map<String, String> keys, String k, double dflt) {
    String v = keys.get(k);
    if (v == null) {
      return dflt;
    }
    try {
      return Double.parseDouble(v);
    } catch (NumberFormatException x) {
      throw new IllegalArgumentException("s3." + k + " must be a number, not '" + v + "'", x);
    }
  }

  /** The size of the parts a long range is fetched in. */
  public long partBytes() {
    return (long) partMiB << 20;
  }

  /** Without the secrets: what a message or a status page may show. */
  @Override
  public String toString() {
    return "S3Settings[endpoint=" + endpoint + ", region=" + region + ", pathStyle=" + pathStyle + ", credentials="
        + (accessKeyId != null ? "static" : profile != null ? "profile " + profile : "default chain") + ", connections="
        + connections + ", firstByteMs=" + firstByteMs + ", connectionMBps=" + connectionMBps + ", partMiB=" + partMiB + "]";
  }
}
