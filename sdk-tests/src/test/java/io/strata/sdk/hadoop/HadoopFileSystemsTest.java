package io.strata.sdk.hadoop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Progress;
import io.strata.sdk.RemoteDatasets;
import io.strata.sdk.files.Locations;
import io.strata.sdk.internal.Confinement;
import io.strata.tools.DatasetGenerator;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.AccessMode;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.ReadOnlyFileSystemException;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.ipc.RemoteException;
import org.apache.hadoop.net.NetUtils;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** hdfs:// paths through java.nio, read-only, against a real HDFS: a NameNode and three DataNodes in this JVM. */
class HadoopFileSystemsTest {
  @TempDir
  static Path base;

  private static MiniDFSCluster cluster;
  private static String root;
  private static byte[] content;

  @BeforeAll
  static void start() throws IOException {
    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.resolve("dfs").toString());
    conf.setLong("dfs.blocksize", 1 << 20); // files of several blocks
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(3).build();
    cluster.waitActive();
    root = "hdfs://localhost:" + cluster.getNameNodePort();
    content = new byte[3 * (1 << 20) + 12_345];
    new Random(7).nextBytes(content);
    org.apache.hadoop.fs.FileSystem fs = cluster.getFileSystem();
    write(fs, "/data/ev/a.bin", content);
    write(fs, "/data/ev/sub/b.txt", "hello".getBytes(StandardCharsets.UTF_8));
    write(fs, "/other/c.bin", new byte[] {1, 2, 3});
  }

  private static void write(org.apache.hadoop.fs.FileSystem fs, String name, byte[] bytes) throws IOException {
    try (OutputStream out = fs.create(new org.apache.hadoop.fs.Path(name), (short) 3)) {
      out.write(bytes);
    }
  }

  @AfterAll
  static void stop() {
    if (cluster != null) {
      cluster.shutdown();
    }
  }

  private static Path path(String p) {
    return HadoopFileSystems.path(URI.create(root + p));
  }

  @Test
  void filesReadAsLocalFilesDo() throws IOException {
    Path a = path("/data/ev/a.bin");
    assertTrue(HadoopFileSystems.isHadoop(a));
    assertTrue(Files.isRegularFile(a));
    assertTrue(Files.isDirectory(a.getParent()));
    assertEquals(content.length, Files.size(a));
    assertArrayEquals(content, Files.readAllBytes(a));
    try (FileChannel ch = FileChannel.open(a, StandardOpenOption.READ)) {
      // A positioned read across a block boundary.
      ByteBuffer b = ByteBuffer.allocateDirect(100_000);
      int at = (1 << 20) - 50_000;
      assertEquals(100_000, ch.read(b, at));
      for (int i = 0; i < 100_000; i++) {
        assertEquals(content[at + i], b.get(i), "byte " + (at + i));
      }
      // Relative reads move the position; the end reads -1.
      ch.position(content.length - 10);
      ByteBuffer tail = ByteBuffer.allocate(64);
      assertEquals(10, ch.read(tail));
      assertEquals(-1, ch.read(tail));
      // Mapping into an arena reads the file into its memory.
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment m = ch.map(FileChannel.MapMode.READ_ONLY, 0, content.length, arena);
        assertArrayEquals(content, m.toArray(ValueLayout.JAVA_BYTE));
        assertTrue(m.isReadOnly());
      }
      assertThrows(UnsupportedOperationException.class, () -> ch.map(FileChannel.MapMode.READ_ONLY, 0, 10));
    }
    TreeSet<String> names = new TreeSet<>();
    try (var list = Files.list(a.getParent())) {
      list.forEach(p -> names.add(p.getFileName().toString()));
    }
    assertEquals(new TreeSet<>(List.of("a.bin", "sub")), names);
    Path missing = path("/data/ev/none.bin");
    assertFalse(Files.exists(missing));
    NoSuchFileException e = assertThrows(NoSuchFileException.class, () -> FileChannel.open(missing, StandardOpenOption.READ));
    assertEquals(root + "/data/ev/none.bin", e.getFile(), "the message names the file by its URI");
    assertThrows(FileSystemException.class, () -> FileChannel.open(a.getParent(), StandardOpenOption.READ));
  }

  @Test
  void pathsAreSyntaxOfOneNameNode() throws IOException {
    Path dir = path("/data/ev");
    assertEquals(root + "/data/ev", dir.toString());
    assertEquals(URI.create(root + "/data/ev"), dir.toUri());
    assertEquals(dir, HadoopFileSystems.path(dir.toUri()));
    assertEquals(dir, dir.getFileSystem().getPath(dir.toString()), "a path's string names it again");
    Path file = dir.resolve("sub/b.txt");
    assertEquals(root + "/data/ev/sub/b.txt", file.toString());
    assertEquals("sub/b.txt", dir.relativize(file).toString());
    assertEquals("b.txt", file.getFileName().toString());
    assertTrue(file.startsWith(dir));
    assertFalse(path("/data/evil").startsWith(dir), "names, not characters");
    assertEquals(path("/other/c.bin"), dir.resolve("../../other/./c.bin").normalize());
    assertEquals(path("/"), path("/..").normalize());
    assertNull(path("/").getParent());
    assertEquals(file, file.toRealPath());
    // No links on HDFS: ".." is taken by name (a missing name before it does not matter), then the result must exist.
    assertEquals(dir, path("/data/x/../ev").toRealPath());
    assertThrows(NoSuchFileException.class, () -> path("/data/ev/../none").toRealPath());
    assertThrows(UnsupportedOperationException.class, file::toFile);
    assertThrows(IllegalArgumentException.class, () -> HadoopFileSystems.path(URI.create("hdfs:///data")), "no name node");
    assertTrue(Files.isHidden(dir.resolve(".staging")));
  }

  @Test
  void aDatasetOnHdfsReadsAsItsLocalCopy() throws IOException {
    Path local = base.resolve("events");
    DatasetGenerator.generate(local, DatasetGenerator.Options.of("events", 30_000, 5).withFeatures(8).withChunking(10_000, 1),
        Progress.NONE);
    cluster.getFileSystem().copyFromLocalFile(false, true, new org.apache.hadoop.fs.Path(local.toUri()),
        new org.apache.hadoop.fs.Path("/datasets/events"));
    Path remote = Locations.dataset(root + "/datasets/events");
    RemoteDatasets.readsAsItsLocalCopy(local, remote, base.resolve("ssd"));
  }

  @Test
  void nothingIsWritten() throws IOException {
    Path a = path("/data/ev/a.bin");
    assertThrows(ReadOnlyFileSystemException.class, () -> Files.write(path("/data/ev/new.bin"), new byte[1]));
    assertThrows(ReadOnlyFileSystemException.class, () -> Files.delete(a));
    assertThrows(ReadOnlyFileSystemException.class, () -> FileChannel.open(a, StandardOpenOption.WRITE));
    assertThrows(ReadOnlyFileSystemException.class, () -> Files.createDirectories(path("/data/ev/d")));
    assertThrows(AccessDeniedException.class, () -> a.getFileSystem().provider().checkAccess(a, AccessMode.WRITE));
    assertFalse(Files.isWritable(a));
    assertTrue(Files.isReadable(a));
    assertArrayEquals(content, Files.readAllBytes(a), "unchanged");
  }

  @Test
  void confinementTakesRootsOfHdfs() throws IOException {
    Confinement c = Confinement.within(List.of(path("/data")), "the node's HDD roots");
    assertArrayEquals("hello".getBytes(StandardCharsets.UTF_8), c.readAllBytes(path("/data/ev/sub/b.txt")));
    AccessDeniedException out = assertThrows(AccessDeniedException.class, () -> c.openRead(path("/other/c.bin")));
    assertTrue(out.getMessage().contains("outside the node's HDD roots"), out.getMessage());
    assertThrows(AccessDeniedException.class, () -> c.openRead(path("/data/../other/c.bin")));
    assertThrows(AccessDeniedException.class, () -> c.openRead(path("/data/ev")), "a directory");
    assertThrows(NoSuchFileException.class, () -> c.openRead(path("/data/none")));
    // A local root does not admit HDFS files, nor the other way round.
    Confinement local = Confinement.within(List.of(base), "a local root");
    assertThrows(AccessDeniedException.class, () -> local.openRead(path("/data/ev/sub/b.txt")));
  }

  @Test
  void readsGoOnWhenADataNodeStops() throws IOException {
    Path a = path("/data/ev/a.bin");
    try (FileChannel ch = FileChannel.open(a, StandardOpenOption.READ)) {
      ByteBuffer first = ByteBuffer.allocate(4096);
      ch.read(first, 0);
      cluster.stopDataNode(0);
      ByteBuffer all = ByteBuffer.allocate(content.length);
      while (all.hasRemaining() && ch.read(all, all.position()) > 0) {
        // the rest, from the replicas on the DataNodes left
      }
      assertArrayEquals(content, all.array());
    }
    assertArrayEquals(content, Files.readAllBytes(a));
  }

  @Test
  void aNameNodeRestartIsWaitedOutOnceItHadAnswered() throws Exception {
    Path a = path("/data/ev/a.bin");
    assertArrayEquals(content, Files.readAllBytes(a)); // the name node has answered this file system
    try (FileChannel open = FileChannel.open(a, StandardOpenOption.READ)) {
      cluster.shutdownNameNode(0);
      Thread restart = new Thread(() -> {
        try {
          Thread.sleep(2000);
          cluster.restartNameNode(0, true);
        } catch (IOException | InterruptedException e) {
          throw new IllegalStateException(e);
        }
      }, "test-namenode-restart");
      restart.start();
      try {
        long t0 = System.nanoTime();
        // A new open, a listing and the attributes need the name node: they wait for it (they failed
        // at once, connection refused, before).
        assertArrayEquals("hello".getBytes(StandardCharsets.UTF_8), Files.readAllBytes(path("/data/ev/sub/b.txt")));
        assertTrue(System.nanoTime() - t0 > 1e9, "read before the name node was back?");
        try (var list = Files.list(path("/data/ev"))) {
          assertEquals(2, list.count());
        }
        // A channel opened before reads on (its blocks' locations known, or asked for again).
        ByteBuffer all = ByteBuffer.allocate(content.length);
        while (all.hasRemaining() && open.read(all, all.position()) > 0) {
          // every byte
        }
        assertArrayEquals(content, all.array());
      } finally {
        restart.join();
      }
    }
    // A name node that never answered is not waited for: its refusal is said at once.
    long t0 = System.nanoTime();
    assertThrows(FileSystemException.class, () -> Files.readAllBytes(HadoopFileSystems.path(URI.create("hdfs://localhost:1/x"))));
    assertTrue(System.nanoTime() - t0 < 10e9, "waited " + (System.nanoTime() - t0) / 1e9 + " s for a name node never seen");
  }

  @Test
  void whatCountsAsANameNodeGoneForNow() {
    // Hadoop's IPC wraps a connection closed mid-call (a name node stopping) as an EOFException
    // naming both ends, as here; a read past a file's end is a bare one.
    IOException cut = NetUtils.wrapException("nn", 8020, "client", 0, new java.io.EOFException());
    assertTrue(HadoopNioFileSystem.nameNodeGone(cut), cut.getMessage());
    assertTrue(HadoopNioFileSystem.nameNodeGone(NetUtils.wrapException("nn", 8020, "client", 0,
        new java.net.ConnectException("Connection refused"))));
    assertTrue(HadoopNioFileSystem.nameNodeGone(
        new RemoteException("org.apache.hadoop.hdfs.server.namenode.SafeModeException", "Name node is in safe mode")));
    assertFalse(HadoopNioFileSystem.nameNodeGone(new java.io.EOFException("Cannot seek after EOF")));
    assertFalse(HadoopNioFileSystem.nameNodeGone(new java.io.FileNotFoundException("File does not exist: /x")));
    assertFalse(HadoopNioFileSystem.nameNodeGone(
        new RemoteException("org.apache.hadoop.security.AccessControlException", "Permission denied")));
  }

  @Test
  void anUnreachableNameNodeIsAClearErrorSoon() {
    HadoopFileSystems.configure(Map.of("ipc.client.connect.max.retries", "0", "ipc.client.connect.timeout", "1000"));
    try {
      long t0 = System.nanoTime();
      Path p = HadoopFileSystems.path(URI.create("hdfs://localhost:1/data/ev"));
      FileSystemException e = assertThrows(FileSystemException.class, () -> Files.readAllBytes(p));
      assertTrue(e.getMessage().startsWith("hdfs://localhost:1/data/ev"), e.getMessage());
      assertTrue(System.nanoTime() - t0 < 30e9, "the settings given reach the client: no ten retries");
    } finally {
      HadoopFileSystems.configure(Map.of());
    }
  }
}
