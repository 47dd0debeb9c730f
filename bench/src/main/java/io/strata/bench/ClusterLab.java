package io.strata.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Hosts on one machine: Linux network namespaces, each with a veth pair into a private bridge and
 * an address of a /24 of its own (10.213.X.0/24, X random), loopback up. The bridge has the
 * last address of the /24 so that this process (the harness) can reach the hosts' nodes; nothing
 * else is routed. Needs root and iproute2 ({@link #unavailable} says what is missing).
 * {@link #close} kills what it started and deletes the namespaces, links and bridge.
 *
 * <p>Threads: used by one thread (the harness); processes are started with {@code ip netns exec}.
 */
public final class ClusterLab implements AutoCloseable {
  private final String prefix;
  private final int subnet;
  private final int hosts;
  private final List<Process> started = new ArrayList<>();
  private boolean bridge;
  private int namespaces;

  private ClusterLab(String prefix, int subnet, int hosts) {
    this.prefix = prefix;
    this.subnet = subnet;
    this.hosts = hosts;
  }

  /** Why namespaces cannot be made here, or null when they can. */
  public static String unavailable() {
    if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")) {
      return "network namespaces need Linux";
    }
    String name = "stchk" + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 16));
    try {
      String add = run(List.of("ip", "netns", "add", name));
      if (add != null) {
        return "cannot create a network namespace (root and iproute2 are needed): " + add;
      }
      run(List.of("ip", "netns", "del", name));
      return null;
    } catch (IOException e) {
      return "cannot run 'ip' (iproute2): " + e.getMessage();
    }
  }

  /** Creates {@code hosts} namespaces on a new bridge; everything is removed again if a step fails. */
  public static ClusterLab create(int hosts) throws IOException {
    String prefix = "st" + Integer.toHexString(0x1000 + ThreadLocalRandom.current().nextInt(0xefff));
    ClusterLab lab = new ClusterLab(prefix, ThreadLocalRandom.current().nextInt(1, 255), hosts);
    boolean ok = false;
    try {
      lab.ip("link", "add", lab.bridgeName(), "type", "bridge");
      lab.bridge = true;
      lab.ip("addr", "add", lab.address(hosts + 1) + "/24", "dev", lab.bridgeName());
      lab.ip("link", "set", lab.bridgeName(), "up");
      for (int h = 1; h <= hosts; h++) {
        String ns = lab.namespace(h);
        lab.ip("netns", "add", ns);
        lab.namespaces = h;
        String outside = prefix + "o" + h;
        String inside = prefix + "i" + h;
        lab.ip("link", "add", outside, "type", "veth", "peer", "name", inside);
        lab.ip("link", "set", inside, "netns", ns);
        lab.ip("link", "set", outside, "master", lab.bridgeName());
        lab.ip("link", "set", outside, "up");
        lab.ip("-n", ns, "addr", "add", lab.address(h) + "/24", "dev", inside);
        lab.ip("-n", ns, "link", "set", inside, "up");
        lab.ip("-n", ns, "link", "set", "lo", "up");
      }
      ok = true;
      return lab;
    } finally {
      if (!ok) {
        lab.close();
      }
    }
  }

  private String bridgeName() {
    return prefix + "br";
  }

  /** The namespace of host {@code h} (1-based). */
  public String namespace(int h) {
    return prefix + "h" + h;
  }

  /** Host {@code h}'s address (1-based; hosts + 1 is the harness's, on the bridge). */
  public String address(int h) {
    if (h < 1 || h > 254) {
      throw new IllegalArgumentException("no host " + h);
    }
    return h == hosts + 1 ? "10.213." + subnet + ".254" : "10.213." + subnet + "." + h;
  }

  /**
   * Starts {@code command} inside host {@code h} with {@code env} added to this process's
   * environment, its output (both streams) to {@code log}. {@code ip netns exec} execs the command,
   * so the process is the command itself (a kill reaches it).
   */
  public Process start(int h, List<String> command, Map<String, String> env, Path log) throws IOException {
    List<String> cmd = new ArrayList<>(exec(h));
    cmd.addAll(command);
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
    pb.environment().putAll(env);
    Process p = pb.start();
    started.add(p);
    return p;
  }

  /** The command prefix that runs a command inside host {@code h} ({@code ip netns exec}, which execs it). */
  public List<String> exec(int h) {
    return List.of("ip", "netns", "exec", namespace(h));
  }

  /**
   * Shapes what host {@code h} sends to {@code bytesPerSecond} ({@code tc tbf} on its end of its
   * link): the rate a store's connection to the hosts has. The burst is a 250th of a second's
   * bytes (what the kernel's timer needs to reach the rate at all, and no more: a larger bucket,
   * refilled while a request waits for its first byte, lets a whole range through at the bridge's
   * speed).
   */
  public void shape(int h, long bytesPerSecond) throws IOException {
    long burst = Math.max(16 << 10, bytesPerSecond / 250);
    String err = run(List.of("ip", "netns", "exec", namespace(h), "tc", "qdisc", "add", "dev", prefix + "i" + h, "root", "tbf",
        "rate", (bytesPerSecond * 8) + "bit", "burst", Long.toString(burst), "latency", "200ms"));
    if (err != null) {
      throw new IOException("cannot shape host " + h + "'s link with tc tbf: " + err);
    }
  }

  /** Cuts host {@code h} off the network (its link on the bridge goes down): a partition, no process dies. */
  public void partition(int h) throws IOException {
    ip("link", "set", prefix + "o" + h, "down");
  }

  private void ip(String... args) throws IOException {
    List<String> cmd = new ArrayList<>(List.of("ip"));
    cmd.addAll(List.of(args));
    String err = run(cmd);
    if (err != null) {
      throw new IOException("'" + String.join(" ", cmd) + "' failed: " + err);
    }
  }

  /** Runs a command; null on success, else its output (or exit status). */
  private static String run(List<String> cmd) throws IOException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    try {
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return "timed out";
      }
      return p.exitValue() == 0 ? null : out.isEmpty() ? "exit " + p.exitValue() : out;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroyForcibly();
      throw new IOException("interrupted running " + cmd.getFirst(), e);
    }
  }

  /** Kills every process started here, then deletes the namespaces (with their veths) and the bridge. */
  @Override
  public void close() {
    for (Process p : started) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
    }
    for (Process p : started) {
      try {
        p.waitFor(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    for (int h = 1; h <= namespaces; h++) {
      try {
        run(List.of("ip", "link", "del", prefix + "o" + h));
        run(List.of("ip", "netns", "del", namespace(h)));
      } catch (IOException ignored) {
        // Best effort: the namespace goes with its last process anyway.
      }
    }
    if (bridge) {
      try {
        run(List.of("ip", "link", "del", bridgeName()));
      } catch (IOException ignored) {
        // Best effort.
      }
    }
  }
}
