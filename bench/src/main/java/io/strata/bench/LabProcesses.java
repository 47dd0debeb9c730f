package io.strata.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.ops.Processes;
import io.strata.sdk.internal.Json;
import io.strata.sdk.node.NodeClient;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The processes of the benches' labs ({@link ClusterLab}'s hosts, the fleet's side): nodes started
 * from a configuration and waited for, jobs waited for and their JSON results read, conditions
 * polled. Stateless; the caller's thread.
 */
final class LabProcesses {
  private LabProcesses() {}

  /** Waits for a job (at most 10 minutes; then it is killed and counts as failed). */
  static void finish(Process p, String name) throws InterruptedException {
    if (!p.waitFor(10, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      p.waitFor();
      throw new IllegalStateException(name + " did not finish within 10 minutes");
    }
  }

  static ObjectNode jobResult(Path dir, String name, Process p) throws IOException {
    String output = Files.readString(dir.resolve(name + ".log"), StandardCharsets.UTF_8);
    JsonNode j = Processes.jsonResult(output);
    ObjectNode o = j == null ? Json.object().put("error", clip(output)) : (ObjectNode) j.deepCopy();
    o.remove("epochs");
    return o.put("job", name).put("exit", p.exitValue());
  }

  static String clip(String s) {
    return s.length() > 2000 ? s.substring(s.length() - 2000) : s;
  }

  interface Check {
    boolean ok() throws Exception;
  }

  static void await(Check c, int seconds, String what) throws Exception {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (true) {
      try {
        if (c.ok()) {
          return;
        }
      } catch (IOException e) {
        // Not up yet.
      }
      if (System.nanoTime() > end) {
        throw new IllegalStateException("timed out after " + seconds + " s waiting for " + what);
      }
      Thread.sleep(100);
    }
  }

  /**
   * Writes {@code config} as host {@code h}'s node configuration ({@code home/node.conf.json},
   * 0600: it holds the token) and starts {@code strata node start} there with the command {@code
   * java} ends in; its log is {@code home/node.log}.
   */
  static Process startNode(ClusterLab lab, int h, ObjectNode config, Path home, List<String> java, Map<String, String> env)
      throws IOException {
    Path conf = home.resolve("node.conf.json");
    Files.writeString(conf, Json.compact(config), StandardCharsets.UTF_8);
    Files.setPosixFilePermissions(conf, PosixFilePermissions.fromString("rw-------"));
    List<String> cmd = new ArrayList<>(java);
    cmd.addAll(List.of("node", "start", "--config", conf.toString(), "--foreground"));
    return lab.start(h, cmd, env, home.resolve("node.log"));
  }

  /** Waits up to two minutes for the node at {@code c} (process {@code p}, logging to {@code log}) to answer. */
  static void awaitHealth(NodeClient c, Process p, Path log) throws Exception {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (true) {
      try {
        c.health();
        return;
      } catch (IOException e) {
        if (!p.isAlive() || System.nanoTime() > end) {
          String tail = Files.exists(log) ? clip(Files.readString(log, StandardCharsets.UTF_8)) : "";
          throw new IllegalStateException("node at " + c.url() + " did not come up: " + tail);
        }
        Thread.sleep(200);
      }
    }
  }
}
