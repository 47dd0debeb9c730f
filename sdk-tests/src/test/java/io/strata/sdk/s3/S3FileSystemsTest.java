package io.strata.sdk.s3;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Progress;
import io.strata.sdk.RemoteDatasets;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.files.Locations;
import io.strata.sdk.format.Columns;
import io.strata.sdk.internal.Confinement;
import io.strata.sdk.Column;
import io.strata.sdk.files.Manifest;
import io.strata.tools.DatasetGenerator;
import io.strata.tools.DatasetImporter;
import io.strata.tools.ParquetExport;
import java.lang.foreign.Arena;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.ReadOnlyFileSystemException;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * s3:// paths through java.nio, read-only, against a real S3 server: S3Proxy over a directory,
 * in a process of its own, killed and restarted where a test says so.
 */
class S3FileSystemsTest {
  @TempDir
  static Path base;

  private static S3ProxyServer server;
  private static S3Client client;
  private static byte[] content;

  @BeforeAll
  static void start() throws Exception {
    server = S3ProxyServer.start(base.resolve("s3proxy"));
    S3FileSystems.configure(server.settings());
    client = S3FileSystems.newClient(server.settings());
    client.createBucket(b -> b.bucket("data"));
    client.createBucket(b -> b.bucket("other"));
    content = new byte[5 * (1 << 20) + 12_345];
    new Random(7).nextBytes(content);
    put("data", "ev/a.bin", content);
    put("data", "ev/sub/b.txt", "hello".getBytes(StandardCharsets.UTF_8));
    put("other", "c.bin", new byte[] {1, 2, 3});
    put("data", "outside/y.bin", new byte[] {4, 5});
  }

  private static void put(String bucket, String key, byte[] bytes) {
    client.putObject(b -> b.bucket(bucket).key(key), RequestBody.fromBytes(bytes));
  }

  /** The test's settings back, and every bucket's client made again with them at its next read. */
  @AfterEach
  void settingsBack() throws IOException {
    S3FileSystems.configure(server.settings());
    for (String b : List.of("data", "other", "no-such-bucket")) {
      path("s3://" + b + "/").getFileSystem().close();
    }
  }

  @AfterAll
  static void stop() {
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.close();
    }
  }

  private static Path path(String uri) {
    return Locations.dataset(uri);
  }

  @Test
  void objectsReadAsFiles() throws IOException {
    Path a = path("s3://data/ev/a.bin");
    assertTrue(S3FileSystems.isS3(a));
    assertEquals("s3://data/ev/a.bin", a.toString());
    assertEquals(URI.create("s3://data/ev/a.bin"), a.toUri());
    assertTrue(Files.isRegularFile(a));
    assertTrue(Files.isDirectory(path("s3://data/ev")));
    assertTrue(Files.isDirectory(path("s3://data/")));
    assertEquals(content.length, Files.size(a));
    assertArrayEquals(content, Files.readAllBytes(a));
    try (Stream<Path> s = Files.list(path("s3://data/ev"))) {
      assertEquals(new TreeSet<>(List.of("a.bin", "sub")), new TreeSet<>(s.map(p -> p.getFileName().toString()).toList()));
    }
    assertNotNull(S3FileSystems.version(a), "the object's ETag");
  }

  @Test
  void longReadsAreFetchedAsPartsAtOnceAndShortOnesAsOneRange() throws IOException {
    Map<String, String> s = new HashMap<>(server.settings());
    s.put("partMiB", "1");
    s.put("connections", "4");
    S3FileSystems.configure(s);
    Path a = path("s3://data/ev/a.bin"); // its bucket's client was made with the settings of the first read
    a.getFileSystem().close();
    a = path("s3://data/ev/a.bin");
    try (FileChannel ch = FileChannel.open(a, StandardOpenOption.READ)) {
      long[] before = S3FileSystems.requests();
      ByteBuffer all = ByteBuffer.allocateDirect(content.length);
      assertEquals(content.length, ch.read(all, 0));
      long[] after = S3FileSystems.requests();
      assertEquals(6, after[0] - before[0], "5 MiB and a bit in parts of 1 MiB");
      assertEquals(content.length, after[1] - before[1]);
      byte[] got = new byte[content.length];
      all.flip().get(got);
      assertArrayEquals(content, got);
      ByteBuffer some = ByteBuffer.allocate(1000);
      ch.read(some, 4_000_000);
      assertArrayEquals(java.util.Arrays.copyOfRange(content, 4_000_000, 4_001_000), some.array());
      assertEquals(1, S3FileSystems.requests()[0] - after[0], "one range GET");
    } finally {
      a.getFileSystem().close();
    }
  }

  @Test
  void aDatasetOnS3ReadsAsItsLocalCopy() throws IOException {
    Path local = base.resolve("events");
    DatasetGenerator.generate(local, DatasetGenerator.Options.of("events", 30_000, 5).withFeatures(8).withChunking(10_000, 1),
        Progress.NONE);
    try (Stream<Path> files = Files.walk(local)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        put("data", "datasets/events/" + local.relativize(f).toString().replace('\\', '/'), Files.readAllBytes(f));
      }
    }
    RemoteDatasets.readsAsItsLocalCopy(local, Locations.dataset("s3://data/datasets/events"), base.resolve("ssd"));
  }

  @Test
  void parquetObjectsImportedInPlaceReadAsTheirLocalCopyAndAReplacedOneIsRefused() throws IOException {
    Path orcDir = base.resolve("orc-src");
    DatasetGenerator.generate(orcDir, DatasetGenerator.Options.of("events", 12_000, 5).withFeatures(6).withChunking(4_000, 1),
        Progress.NONE);
    Path pq = base.resolve("pq-src");
    try (Dataset orc = Dataset.open(orcDir)) {
      ParquetExport.export(orc.directory(), orc.manifest(), orc.table(), pq, "events-pq", Progress.NONE);
    }
    List<Path> parts;
    try (Stream<Path> files = Files.list(pq)) {
      parts = files.filter(f -> f.getFileName().toString().endsWith(".parquet")).sorted().toList();
    }
    assertTrue(parts.size() >= 2, "several objects");
    for (Path f : parts) {
      put("data", "lake/events/" + f.getFileName(), Files.readAllBytes(f));
    }
    Path local = base.resolve("in-place");
    Manifest m = DatasetImporter.importFiles(new DatasetImporter.Options("events", List.of(path("s3://data/lake/events")), local,
        null, true, false), Progress.NONE);
    assertTrue(m.files().getFirst().path().startsWith("s3://data/lake/events/"), m.files().getFirst().path());
    assertEquals(S3FileSystems.version(path(m.files().getFirst().path())), m.files().getFirst().version(), "the ETag recorded");
    try (Stream<Path> written = Files.walk(local)) {
      assertTrue(written.noneMatch(f -> f.getFileName().toString().endsWith(".parquet")), "no object copied");
    }
    try (Dataset a = Dataset.open(pq); Dataset b = Dataset.open(local); Arena arena = Arena.ofConfined()) {
      Map<String, Column> x = a.table().readRows(0, (int) a.rows(), a.featureNames(), arena);
      Map<String, Column> y = b.table().readRows(0, (int) b.rows(), b.featureNames(), arena);
      for (String f : a.featureNames()) {
        assertEquals(-1, Columns.firstDifference(x.get(f), y.get(f)), f);
      }
    }
    // The same bytes written again: a new object (S3's ETag of a simple upload is its MD5, so the content differs).
    byte[] other = Files.readAllBytes(parts.get(1));
    put("data", "lake/events/" + parts.getFirst().getFileName(), other);
    try (Dataset b = Dataset.open(local); Arena arena = Arena.ofConfined()) {
      FileSystemException e = assertThrows(FileSystemException.class,
          () -> b.table().readRows(0, (int) b.rows(), b.featureNames(), arena));
      assertTrue(e.getMessage().contains("replaced since the dataset was imported"), e.getMessage());
      assertTrue(e.getMessage().contains("s3://data/lake/events/" + parts.getFirst().getFileName()), e.getMessage());
    }
  }

  @Test
  void nothingIsWritten() throws IOException {
    Path a = path("s3://data/ev/a.bin");
    assertThrows(ReadOnlyFileSystemException.class, () -> Files.write(path("s3://data/ev/new.bin"), new byte[1]));
    assertThrows(ReadOnlyFileSystemException.class, () -> Files.delete(a));
    assertThrows(ReadOnlyFileSystemException.class, () -> FileChannel.open(a, StandardOpenOption.WRITE));
    assertFalse(Files.isWritable(a));
    assertThrows(IllegalArgumentException.class, () -> Locations.local("s3://data/ev"));
  }

  @Test
  void confinementTakesBucketPrefixRoots() throws IOException {
    Confinement c = Confinement.within(List.of(path("s3://data/ev")), "the node's HDD roots");
    assertArrayEquals("hello".getBytes(StandardCharsets.UTF_8), c.readAllBytes(path("s3://data/ev/sub/b.txt")));
    AccessDeniedException out = assertThrows(AccessDeniedException.class, () -> c.openRead(path("s3://other/c.bin")));
    assertTrue(out.getMessage().contains("outside the node's HDD roots"), out.getMessage());
    assertThrows(AccessDeniedException.class, () -> c.openRead(path("s3://data/ev/../outside/y.bin")));
    assertThrows(NoSuchFileException.class, () -> c.openRead(path("s3://data/ev/none")));
  }

  @Test
  void failuresNameTheBucketKeyAndProblem() throws IOException {
    NoSuchFileException key = assertThrows(NoSuchFileException.class, () -> Files.size(path("s3://data/ev/none.bin")));
    assertTrue(key.getMessage().contains("s3://data/ev/none.bin"), key.getMessage());
    NoSuchFileException bucket = assertThrows(NoSuchFileException.class,
        () -> Files.readAllBytes(path("s3://no-such-bucket/x.bin")));
    assertTrue(bucket.getMessage().contains("s3://no-such-bucket/x.bin"), bucket.getMessage());
    assertThrows(IllegalArgumentException.class, () -> path("s3://Bad_Bucket/x"));
    assertThrows(IllegalArgumentException.class, () -> S3FileSystems.configure(Map.of("endpont", "http://x")));

    Map<String, String> wrong = new HashMap<>(server.settings());
    wrong.put("secretAccessKey", "not-the-secret");
    S3FileSystems.configure(wrong);
    Path a = path("s3://other/c.bin");
    a.getFileSystem().close();
    AccessDeniedException secret = assertThrows(AccessDeniedException.class, () -> Files.readAllBytes(path("s3://other/c.bin")));
    assertTrue(secret.getMessage().contains("does not match"), secret.getMessage());
    path("s3://other/c.bin").getFileSystem().close();

    wrong.put("accessKeyId", "nobody");
    S3FileSystems.configure(wrong);
    AccessDeniedException id = assertThrows(AccessDeniedException.class, () -> Files.readAllBytes(path("s3://other/c.bin")));
    assertTrue(id.getMessage().contains("access key"), id.getMessage());
    path("s3://other/c.bin").getFileSystem().close();

    Map<String, String> nobody = new HashMap<>(server.settings());
    nobody.put("endpoint", "http://127.0.0.1:1");
    S3FileSystems.configure(nobody);
    FileSystemException refused = assertThrows(FileSystemException.class, () -> Files.size(path("s3://other/c.bin")));
    assertTrue(refused.getMessage().contains("refuses connections"), refused.getMessage());
    assertTrue(refused.getMessage().contains("s3://other/c.bin"), refused.getMessage());
    path("s3://other/c.bin").getFileSystem().close();
  }

  @Test
  void anObjectReplacedMidReadIsRefusedNotMixed() throws IOException {
    byte[] first = "first version of the object".getBytes(StandardCharsets.UTF_8);
    put("data", "replaced/x.bin", first);
    Path x = path("s3://data/replaced/x.bin");
    String v1 = S3FileSystems.version(x);
    try (FileChannel ch = FileChannel.open(x, StandardOpenOption.READ)) {
      ByteBuffer b = ByteBuffer.allocate(5);
      ch.read(b, 0);
      put("data", "replaced/x.bin", "a second, other version".getBytes(StandardCharsets.UTF_8));
      FileSystemException e = assertThrows(FileSystemException.class, () -> ch.read(ByteBuffer.allocate(5), 5));
      assertTrue(e.getMessage().contains("replaced since it was opened"), e.getMessage());
    }
    assertNotEquals(v1, S3FileSystems.version(x));
  }

  @Test
  void readsGoOnWhenTheServerIsKilledAndRestarted() throws Exception {
    Path a = path("s3://data/ev/a.bin");
    try (FileChannel ch = FileChannel.open(a, StandardOpenOption.READ)) {
      ch.read(ByteBuffer.allocate(4096), 0);
      server.kill();
      Thread restart = Thread.ofPlatform().name("s3proxy-restart").start(() -> {
        try {
          Thread.sleep(2000);
          server.startProcess();
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      });
      ByteBuffer all = ByteBuffer.allocate(content.length);
      while (all.hasRemaining() && ch.read(all, all.position()) > 0) {
        // the rest, once the server is back
      }
      restart.join();
      assertArrayEquals(content, all.array());
    }
  }
}
