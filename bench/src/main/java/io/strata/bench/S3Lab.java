package io.strata.bench;

import io.strata.sdk.s3.S3FileSystems;
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
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * A real S3 server for the benchmarks in a host of a {@link ClusterLab}, or on this host's
 * loopback for tests ({@link #startLocal}): S3Proxy (its filesystem
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
  /** The lab the server runs in; null: this host, on loopback. */
  private final ClusterLab lab;
  private final int host;
  private final String address;
  private final int port;
  private final Path base;
  /** The directory the server's buckets are (its filesystem backend's base directory). */
  private final Path objects;
  /** How a command of this host is wrapped (cgroups) before it starts. */
  private final java.util.function.UnaryOperator<List<String>> wrap;
  private Process server;

  private S3Lab(ClusterLab lab, int host, String address, int port, Path base, Path objects,
      java.util.function.UnaryOperator<List<String>> wrap) {
    this.lab = lab;
    this.host = host;
    this.address = address;
    this.port = port;
    this.base = base;
    this.objects = objects;
    this.wrap = wrap;
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
    S3Lab s3 = new S3Lab(lab, host, lab.address(host), PORT, base, base.resolve("data"), c -> c);
    boolean ok = false;
    try {
      s3.configureAndStart();
      s3.createBucket(bucket);
      s3.upload(put, bucket, prefix);
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

  /** Starts S3Proxy on this host's loopback (a free port), its objects under {@code base}: for tests. */
  public static S3Lab startLocal(Path base) throws IOException {
    return startLocal(base, base.resolve("data"), c -> c);
  }

  /**
   * Starts S3Proxy on this host's loopback (a free port), its log and configuration in {@code
   * base}, serving the directories of {@code objects} as buckets (their files as objects, as they
   * are: no upload), its command wrapped by {@code wrap} (a cgroup: its page cache and disk reads
   * bounded as a store's own machine would be).
   */
  public static S3Lab startLocal(Path base, Path objects, java.util.function.UnaryOperator<List<String>> wrap)
      throws IOException {
    if (jar() == null) {
      throw new IOException(unavailable());
    }
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    S3Lab s3 = new S3Lab(null, 0, "127.0.0.1", port, base, objects, wrap);
    boolean ok = false;
    try {
      s3.configureAndStart();
      ok = true;
      return s3;
    } finally {
      if (!ok) {
        s3.close();
      }
    }
  }

  private void configureAndStart() throws IOException {
    Files.createDirectories(base);
    Files.createDirectories(objects);
    Files.writeString(base.resolve("s3proxy.conf"), String.join("\n",
        "s3proxy.endpoint=" + endpoint(),
        "s3proxy.authorization=aws-v2-or-v4",
        "s3proxy.identity=" + IDENTITY,
        "s3proxy.credential=" + CREDENTIAL,
        "jclouds.provider=filesystem",
        "jclouds.filesystem.basedir=" + objects) + "\n");
    startServer();
  }

  /** Creates {@code bucket}. */
  public void createBucket(String bucket) throws IOException {
    try (S3Client c = client()) {
      c.createBucket(b -> b.bucket(bucket));
    }
  }

  /** Uploads every file under {@code put} to {@code s3://bucket/prefix/...} (PUTs: each object gets its ETag). */
  public void upload(Path put, String bucket, String prefix) throws IOException {
    try (S3Client c = client(); Stream<Path> files = Files.walk(put)) {
      for (Path f : files.filter(Files::isRegularFile).sorted().toList()) {
        String rel = put.relativize(f).toString().replace(File.separatorChar, '/');
        String key = rel.isEmpty() ? prefix : prefix + "/" + rel;
        c.putObject(b -> b.bucket(bucket).key(key), RequestBody.fromFile(f));
      }
    }
  }

  /** Uploads {@code bytes} as the object {@code s3://bucket/key}, replacing any. */
  public void put(String bucket, String key, byte[] bytes) throws IOException {
    try (S3Client c = client()) {
      c.putObject(b -> b.bucket(bucket).key(key), RequestBody.fromBytes(bytes));
    }
  }

  /** The server's endpoint, as every host reaches it. */
  public URI endpoint() {
    return URI.create("http://" + address + ":" + port);
  }

  /**
   * The environment a process that reads the store gets: the AWS SDKs' own variables (every SDK
   * reads them: Java's, and the C++ one under pyarrow), with checksums only where an operation
   * requires them, AWS's documented setting for stores without the integrity checksums its SDKs
   * send by default since 2025 (S3Proxy answers 501 to pyarrow's GETs otherwise; Strata's client
   * sets the same itself).
   */
  public Map<String, String> environment() {
    return Map.of("AWS_ENDPOINT_URL", endpoint().toString(), "AWS_REGION", "us-east-1", "AWS_ACCESS_KEY_ID", IDENTITY,
        "AWS_SECRET_ACCESS_KEY", CREDENTIAL, "AWS_REQUEST_CHECKSUM_CALCULATION", "when_required",
        "AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required");
  }

  /** A node's (or this process's) s3 settings for the store. */
  public Map<String, String> settings() {
    return Map.of("endpoint", endpoint().toString(), "region", "us-east-1", "accessKeyId", IDENTITY,
        "secretAccessKey", CREDENTIAL);
  }

  private S3Client client() throws IOException {
    return S3FileSystems.newClient(settings());
  }

  private void startServer() throws IOException {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    List<String> cmd = List.of(java.toString(), "-Xmx512m", "-jar", jar().toString(), "--properties",
        base.resolve("s3proxy.conf").toString());
    server = lab != null ? lab.start(host, cmd, Map.of(), base.resolve("s3proxy.log"))
        : new ProcessBuilder(wrap.apply(cmd)).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(base.resolve("s3proxy.log").toFile())).start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (System.nanoTime() < deadline) {
      if (!server.isAlive()) {
        throw new IOException("S3Proxy exited with " + server.exitValue() + " (see " + base.resolve("s3proxy.log") + ")");
      }
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(endpoint().getHost(), port), 200);
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
