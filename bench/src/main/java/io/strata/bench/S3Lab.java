package io.strata.bench;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * A real S3 server for the benchmarks in a host of a {@link ClusterLab}: S3Proxy (its filesystem
 * backend: objects are files under a directory of this machine) as a process of that host, a
 * local directory uploaded into a bucket (real PUTs, so every object has its ETag), its link
 * optionally shaped ({@code tc tbf}: the rate a host's connection to the store has), and one
 * fault on command: the server killed (SIGKILL) and started again on the same address and data.
 *
 * <p>S3Proxy's jar is not on the command's class path: the build copies it to {@code
 * ops/target/s3proxy}, beside the command's libraries, and only its own process loads it.
 *
 * <p>Threads: one thread (the harness) calls it.
 */
public final class S3Lab implements AutoCloseable {
  static final String IDENTITY = "strata-bench-identity";
  static final String CREDENTIAL = "strata-bench-credential";
  static final int PORT = 9000;
  private final ClusterLab lab;
  private final int host;
  private final Path base;
  private Process server;

  private S3Lab(ClusterLab lab, int host, Path base) {
    this.lab = lab;
    this.host = host;
    this.base = base;
  }

  /** Why an S3 server cannot be started from here (S3Proxy's jar is missing), or null. */
  public static String unavailable() {
    return jar() == null ? "S3Proxy's jar is missing (ops/target/s3proxy: './mvnw -B package -pl bench -am' copies it)" : null;
  }

  /**
   * Starts S3Proxy in host {@code host} of {@code lab} (its objects under {@code base}), its
   * outgoing link shaped to {@code bytesPerSecond} (0: not shaped), and uploads every file under
   * {@code put} to {@code s3://bucket/prefix/...}; returns once the upload is done.
   */
  public static S3Lab start(ClusterLab lab, int host, Path base, long bytesPerSecond, Path put, String bucket, String prefix)
      throws IOException {
    if (jar() == null) {
      throw new IOException(unavailable());
    }
    S3Lab s3 = new S3Lab(lab, host, base);
    boolean ok = false;
    try {
      Files.createDirectories(base.resolve("data"));
      Files.writeString(base.resolve("s3proxy.conf"), String.join("\n",
          "s3proxy.endpoint=" + s3.endpoint(),
          "s3proxy.authorization=aws-v2-or-v4",
          "s3proxy.identity=" + IDENTITY,
          "s3proxy.credential=" + CREDENTIAL,
          "jclouds.provider=filesystem",
          "jclouds.filesystem.basedir=" + base.resolve("data")) + "\n");
      s3.startServer();
      try (S3Client c = s3.client()) {
        c.createBucket(b -> b.bucket(bucket));
        try (Stream<Path> files = Files.walk(put)) {
          for (Path f : files.filter(Files::isRegularFile).sorted().toList()) {
            String key = prefix + "/" + put.relativize(f).toString().replace(File.separatorChar, '/');
            c.putObject(b -> b.bucket(bucket).key(key), RequestBody.fromFile(f));
          }
        }
      }
      if (bytesPerSecond > 0) {
        lab.shape(host, bytesPerSecond);
      }
      ok = true;
      return s3;
    } finally {
      if (!ok) {
        s3.close();
      }
    }
  }

  /** The server's endpoint, as every host reaches it. */
  public URI endpoint() {
    return URI.create("http://" + lab.address(host) + ":" + PORT);
  }

  /** The environment a process that reads the store gets: the AWS SDK's own variables. */
  public Map<String, String> environment() {
    return Map.of("AWS_ENDPOINT_URL", endpoint().toString(), "AWS_REGION", "us-east-1", "AWS_ACCESS_KEY_ID", IDENTITY,
        "AWS_SECRET_ACCESS_KEY", CREDENTIAL);
  }

  /** A node's (or this process's) s3 settings for the store. */
  public Map<String, String> settings() {
    return Map.of("endpoint", endpoint().toString(), "region", "us-east-1", "accessKeyId", IDENTITY,
        "secretAccessKey", CREDENTIAL);
  }

  private S3Client client() {
    return S3Client.builder().endpointOverride(endpoint()).region(Region.US_EAST_1).forcePathStyle(true)
        .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(IDENTITY, CREDENTIAL)))
        .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
        .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
        .httpClientBuilder(Apache5HttpClient.builder()).build();
  }

  private void startServer() throws IOException {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    server = lab.start(host, List.of(java.toString(), "-Xmx512m", "-jar", jar().toString(), "--properties",
        base.resolve("s3proxy.conf").toString()), Map.of(), base.resolve("s3proxy.log"));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (System.nanoTime() < deadline) {
      if (!server.isAlive()) {
        throw new IOException("S3Proxy exited with " + server.exitValue() + " (see " + base.resolve("s3proxy.log") + ")");
      }
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(endpoint().getHost(), PORT), 200);
        return;
      } catch (IOException e) {
        try {
          Thread.sleep(100);
        } catch (InterruptedException i) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted waiting for S3Proxy", i);
        }
      }
    }
    throw new IOException("S3Proxy did not listen on " + endpoint() + " within 90 s (see " + base.resolve("s3proxy.log") + ")");
  }

  /** Kills the server (SIGKILL) and starts it again on the same address and objects; the seconds it was gone. */
  public double restart() throws IOException {
    long t0 = System.nanoTime();
    server.destroyForcibly();
    try {
      if (!server.waitFor(30, TimeUnit.SECONDS)) {
        throw new IOException("S3Proxy did not die within 30 s of SIGKILL");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted killing S3Proxy", e);
    }
    startServer();
    return (System.nanoTime() - t0) / 1e9;
  }

  /** S3Proxy's jar beside the command's libraries ({@code ops/target/s3proxy/s3proxy.jar}), or null. */
  private static Path jar() {
    try {
      Path self = Path.of(S3Lab.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      for (Path d = self.getParent(); d != null; d = d.getParent()) {
        Path j = d.resolve("ops/target/s3proxy/s3proxy.jar");
        if (Files.isRegularFile(j)) {
          return j;
        }
        Path sibling = d.resolve("s3proxy/s3proxy.jar");
        if (Files.isRegularFile(sibling)) {
          return sibling;
        }
      }
    } catch (URISyntaxException | RuntimeException e) {
      // no code source: no S3 server
    }
    return null;
  }

  /** Kills the server. */
  @Override
  public void close() {
    if (server != null) {
      server.destroyForcibly();
      try {
        server.waitFor(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
