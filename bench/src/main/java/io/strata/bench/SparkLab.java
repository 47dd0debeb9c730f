package io.strata.bench;

import io.strata.ops.SparkLaunch;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A Spark standalone cluster in a {@link ClusterLab}: a Master as a process of one host and a
 * Worker (one core, its own work directory) as a process of each of the others, on the Spark jars
 * of this build ({@link SparkLaunch}). Every Spark process of a host binds that host's address
 * ({@code SPARK_LOCAL_IP}). One fault on command: a Worker's executor killed (SIGKILL) while it runs
 * tasks, as a lost machine or an OOM kill would end it.
 *
 * <p>Threads: one thread (the harness) calls it.
 */
final class SparkLab implements AutoCloseable {
  static final int MASTER_PORT = 7077;
  private final ClusterLab lab;
  private final int masterHost;
  private final List<Process> workers = new ArrayList<>();
  private Process master;

  private SparkLab(ClusterLab lab, int masterHost) {
    this.lab = lab;
    this.masterHost = masterHost;
  }

  /** Why a Spark cluster cannot be started from here, or null. */
  static String unavailable() {
    return SparkLaunch.unavailable();
  }

  /** The environment of a Spark process of host {@code h}. */
  Map<String, String> environment(int h) throws IOException {
    Map<String, String> env = new HashMap<>(SparkLaunch.environment());
    env.put("SPARK_LOCAL_IP", lab.address(h));
    env.put("SPARK_LOCAL_HOSTNAME", lab.address(h));
    return env;
  }

  /** Starts the Master on {@code masterHost} and a Worker on each of {@code workerHosts}; waits until they registered. */
  static SparkLab start(ClusterLab lab, int masterHost, List<Integer> workerHosts, Path dir) throws IOException, InterruptedException {
    SparkLab s = new SparkLab(lab, masterHost);
    boolean ok = false;
    try {
      Files.createDirectories(dir);
      String addr = lab.address(masterHost);
      List<String> m = new ArrayList<>(SparkLaunch.java(List.of("-Xmx256m"), "org.apache.spark.deploy.master.Master"));
      m.addAll(List.of("--host", addr, "--port", Integer.toString(MASTER_PORT), "--webui-port", "8080"));
      s.master = lab.start(masterHost, m, s.environment(masterHost), dir.resolve("master.log"));
      long deadline = System.nanoTime() + 120_000_000_000L;
      while (!reachable(addr, MASTER_PORT)) {
        if (!s.master.isAlive() || System.nanoTime() > deadline) {
          throw new IOException("the Spark Master did not start on " + addr + ": " + tail(dir.resolve("master.log")));
        }
        Thread.sleep(100);
      }
      List<Path> logs = new ArrayList<>();
      for (int h : workerHosts) {
        Path work = dir.resolve("worker-" + h);
        Files.createDirectories(work);
        List<String> w = new ArrayList<>(SparkLaunch.java(List.of("-Xmx256m"), "org.apache.spark.deploy.worker.Worker"));
        w.addAll(List.of("--host", lab.address(h), "--cores", "1", "--memory", "1g", "--work-dir", work.toString(),
            "--webui-port", "8081", s.masterUrl()));
        Path log = dir.resolve("worker-" + h + ".log");
        logs.add(log);
        s.workers.add(lab.start(h, w, s.environment(h), log));
      }
      for (int i = 0; i < logs.size(); i++) {
        while (!Files.readString(logs.get(i)).contains("Successfully registered with master")) {
          if (!s.workers.get(i).isAlive() || System.nanoTime() > deadline) {
            throw new IOException("a Spark Worker did not register: " + tail(logs.get(i)));
          }
          Thread.sleep(100);
        }
      }
      ok = true;
      return s;
    } finally {
      if (!ok) {
        s.close();
      }
    }
  }

  /** The Master's URL. */
  String masterUrl() {
    return "spark://" + lab.address(masterHost) + ":" + MASTER_PORT;
  }

  /** The executor a Worker runs now (a child process of it), if any. */
  Optional<ProcessHandle> executor(int worker) {
    return workers.get(worker).descendants()
        .filter(p -> p.info().arguments().map(a -> String.join(" ", a).contains("CoarseGrainedExecutorBackend")).orElse(false))
        .findFirst();
  }

  /** Kills worker {@code worker}'s executor (SIGKILL); whether there was one. */
  boolean killExecutor(int worker) {
    Optional<ProcessHandle> e = executor(worker);
    e.ifPresent(ProcessHandle::destroyForcibly);
    return e.isPresent();
  }

  /**
   * CPU seconds the cluster's processes used so far: the Master, the Workers, and their executors
   * (those that ended and were reaped by their Worker, and those running).
   */
  double cpuSeconds() {
    double sum = 0;
    List<Process> all = new ArrayList<>(workers);
    if (master != null) {
      all.add(master);
    }
    for (Process p : all) {
      sum += ProcCpu.seconds(p.pid(), true);
      sum += p.descendants().mapToDouble(d -> ProcCpu.seconds(d.pid(), true)).sum();
    }
    return sum;
  }

  private static String tail(Path log) {
    try {
      List<String> lines = Files.readAllLines(log);
      return String.join(" | ", lines.subList(Math.max(0, lines.size() - 5), lines.size()));
    } catch (IOException e) {
      return "(no log: " + e.getMessage() + ")";
    }
  }

  @Override
  public void close() {
    for (Process w : workers) {
      w.descendants().forEach(ProcessHandle::destroyForcibly);
      w.destroyForcibly();
    }
    if (master != null) {
      master.destroyForcibly();
    }
  }

  static boolean reachable(String host, int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(host, port), 500);
      return true;
    } catch (IOException e) {
      return false;
    }
  }
}
