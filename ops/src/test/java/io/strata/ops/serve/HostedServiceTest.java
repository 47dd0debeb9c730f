package io.strata.ops.serve;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Progress;
import io.strata.sdk.internal.Json;
import io.strata.tools.DatasetGenerator;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 58: a host's node and its Python jobs' loaders in one JVM ({@code node start --loader-socket}). The hosted
 * service serves real sessions over its socket, refuses to start where another service holds the socket, and leaves
 * nothing behind when closed.
 */
class HostedServiceTest {
  @TempDir Path tmp;

  @Test
  void servesSessionsOnItsSocketRefusesASecondAndCleansUp() throws Exception {
    Path ds = tmp.resolve("ds");
    DatasetGenerator.generate(ds, DatasetGenerator.Options.of("ds", 5_000, 3).withFeatures(4).withChunking(2_500, 1)
        .withMeanSampleLength(10), Progress.NONE);
    Path socket = tmp.resolve("svc").resolve("loader.sock");
    String request = Json.compact(Json.object().put("dataset", ds.toString()).put("threads", 1).put("prefetch", 2)
        .put("shmRoot", tmp.resolve("shm").toString()));
    try (LoaderServe.Hosted h = LoaderServe.host(socket)) {
      assertTrue(Files.exists(socket) && Files.exists(LoaderServe.pidFile(socket)));
      assertEquals(Long.toString(ProcessHandle.current().pid()), Files.readString(LoaderServe.pidFile(socket)));
      IllegalStateException second = assertThrows(IllegalStateException.class, () -> LoaderServe.host(socket));
      assertTrue(second.getMessage().contains("already runs on " + socket), second.getMessage());
      assertTrue(Files.exists(socket), "the refused second start left the first's socket alone");
      for (int round = 0; round < 2; round++) { // two jobs one after the other, each a session of its own
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
          ch.connect(UnixDomainSocketAddress.of(socket));
          BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(ch), StandardCharsets.UTF_8));
          PrintStream out = new PrintStream(Channels.newOutputStream(ch), true, StandardCharsets.UTF_8);
          out.print(request + "\n");
          out.flush();
          String ready = in.readLine();
          assertTrue(ready.contains("\"ready\""), ready);
          out.print("next\n");
          out.flush();
          String batch = in.readLine();
          assertTrue(batch.contains("\"batch\""), batch);
          out.print("close\n");
          out.flush();
        }
      }
      long end = System.nanoTime() + 10_000_000_000L;
      while (h.sessions() > 0 && System.nanoTime() < end) {
        Thread.sleep(20);
      }
      assertEquals(0, h.sessions(), "each session ended with its job");
    }
    assertFalse(Files.exists(socket), "closing removed the socket");
    assertFalse(Files.exists(LoaderServe.pidFile(socket)), "and its pid file");
    try (LoaderServe.Hosted again = LoaderServe.host(socket)) { // the lock was let go
      assertEquals(socket, again.socket());
      assertTrue(Files.exists(socket));
    }
  }
}
