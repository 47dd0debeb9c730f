package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the libraries of a killed Strata process unpacked (RocksDB's JNI library, brotli4j's, Vert.x's
 * cache) lies in that process's own temporary directory, and the next Strata process to start
 * removes it; nothing is unpacked straight into the temporary directory.
 */
class ProcessTempIT {
  @TempDir Path tmp;

  @Test
  void aKilledNodesUnpackedLibrariesGoWhenTheNextStrataProcessStarts() throws Exception {
    Path t = Files.createDirectories(tmp.resolve("tmp"));
    Path home = tmp.resolve("node");
    NodeCommand.Child node =
        NodeCommand.startChild(List.of("-Xmx256m", "-Djava.io.tmpdir=" + t), home, List.of("--port", "0"), home.resolve("node.log"));
    Process p = node.process();
    Path own;
    try {
      // A compressed answer: Netty's compressor loads brotli4j's library too.
      HttpResponse<byte[]> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(node.url() + "/v1/tiers"))
          .header("Accept-Encoding", "gzip").build(), HttpResponse.BodyHandlers.ofByteArray());
      assertEquals(200, r.statusCode());
      Path root = t.resolve("strata-" + System.getProperty("user.name"));
      List<Path> mine = list(root).stream().filter(d -> d.getFileName().toString().startsWith(p.pid() + "-")).toList();
      assertEquals(1, mine.size(), "the node's own directory: " + list(root));
      own = mine.get(0);
      assertTrue(list(own).stream().anyMatch(f -> f.getFileName().toString().startsWith("librocksdbjni")),
          "RocksDB unpacked into the node's directory: " + list(own));
      assertEquals(List.of(root), list(t), "nothing beside the per-user directory");
    } finally {
      p.destroyForcibly();
      assertTrue(p.waitFor(30, TimeUnit.SECONDS));
    }
    assertTrue(Files.exists(own), "a killed process cannot remove its files");
    Process next = Processes.spawn(List.of("-Djava.io.tmpdir=" + t), List.of("--version"), null);
    assertTrue(next.waitFor(60, TimeUnit.SECONDS));
    assertEquals(0, next.exitValue());
    assertFalse(Files.exists(own), "the next Strata process removed the killed one's directory");
    assertEquals(List.of(), list(own.getParent()), "and its own went when it exited");
  }

  private static List<Path> list(Path dir) throws Exception {
    try (Stream<Path> s = Files.list(dir)) {
      return s.sorted().toList();
    }
  }
}
