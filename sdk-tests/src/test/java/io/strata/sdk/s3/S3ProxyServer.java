package io.strata.sdk.s3;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A real S3 server for tests: S3Proxy (its filesystem backend, objects as files under a
 * directory) run as its own process from the jar the build copied to {@code target/s3proxy},
 * on a loopback port, with one identity and credential (AWS signature v2 or v4). It can be
 * stopped (killed) and started again on the same port and directory.
 */
final class S3ProxyServer implements AutoCloseable {
  static final String IDENTITY = "strata-test-identity";
  static final String CREDENTIAL = "strata-test-credential";
  private final Path dir;
  private final int port;
  private Process process;

  private S3ProxyServer(Path dir, int port) {
    this.dir = dir;
    this.port = port;
  }

  /** Starts a server whose objects lie under {@code dir/data}. */
  static S3ProxyServer start(Path dir) throws IOException, InterruptedException {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    S3ProxyServer server = new S3ProxyServer(dir, port);
    Files.createDirectories(dir.resolve("data"));
    Files.writeString(dir.resolve("s3proxy.conf"), String.join("\n",
        "s3proxy.endpoint=" + server.endpoint(),
        "s3proxy.authorization=aws-v2-or-v4",
        "s3proxy.identity=" + IDENTITY,
        "s3proxy.credential=" + CREDENTIAL,
        "jclouds.provider=filesystem",
        "jclouds.filesystem.basedir=" + dir.resolve("data")) + "\n");
    server.startProcess();
    return server;
  }

  URI endpoint() {
    return URI.create("http://127.0.0.1:" + port);
  }

  /** The node's (or a test's) s3 settings for this server. */
  Map<String, String> settings() {
    return Map.of("endpoint", endpoint().toString(), "region", "us-east-1", "accessKeyId", IDENTITY,
        "secretAccessKey", CREDENTIAL);
  }

  static Path jar() {
    Path j = Path.of("target", "s3proxy", "s3proxy.jar").toAbsolutePath();
    if (!Files.isRegularFile(j)) {
      throw new IllegalStateException(j + " is missing: the build copies S3Proxy there (mvn process-test-resources)");
    }
    return j;
  }

  void startProcess() throws IOException, InterruptedException {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    process = new ProcessBuilder(List.of(java.toString(), "-Xmx256m", "-jar", jar().toString(), "--properties",
        dir.resolve("s3proxy.conf").toString()))
        .redirectErrorStream(true).redirectOutput(dir.resolve("s3proxy.log").toFile()).start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IOException("S3Proxy exited with " + process.exitValue() + ": " + Files.readString(dir.resolve("s3proxy.log")));
      }
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 200);
        return;
      } catch (IOException e) {
        Thread.sleep(100);
      }
    }
    throw new IOException("S3Proxy did not listen on " + port + " within 60 s");
  }

  /** Kills the server's process (as kill -9 would) and waits for it to end. */
  void kill() throws InterruptedException {
    if (process != null) {
      process.destroyForcibly();
      process.waitFor(30, TimeUnit.SECONDS);
    }
  }

  @Override
  public void close() {
    try {
      kill();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
