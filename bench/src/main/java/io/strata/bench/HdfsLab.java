package io.strata.bench;

import io.strata.ops.Processes;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A real HDFS for the benchmarks in a host of a {@link ClusterLab}: a NameNode and DataNodes,
 * each a process of its own ({@link HdfsDaemons}), a dataset copied in (every block on every
 * DataNode) before it is used, and two faults on command: a DataNode killed (SIGKILL), the
 * NameNode restarted.
 *
 * <p>The minicluster's jar (56 MB) is not on the command's class path: the build copies it to
 * {@code ops/target/hdfs-lib}, beside the command's libraries, and only these processes load it (in
 * tests it is on the test class path already).
 *
 * <p>Threads: one thread (the harness) calls it; a daemon thread per process, named {@code
 * strata-hdfs-<role>}, reads that process's answers into a queue.
 */
public final class HdfsLab implements AutoCloseable {
  private static final String MINI = "org.apache.hadoop.hdfs.MiniDFSCluster";
  private Daemon nameNode;
  private final List<Daemon> dataNodes = new ArrayList<>();
  private URI uri;

  private HdfsLab() {}

  /** Why an HDFS cannot be started from here (the minicluster's jars are missing), or null. */
  public static String unavailable() {
    return classPath() == null
        ? "the HDFS minicluster's jars are missing (ops/target/hdfs-lib: './mvnw -B package -pl bench -am' copies them)"
        : null;
  }

  /**
   * Starts a NameNode and {@code dataNodes} DataNodes in host {@code host} of {@code lab}, their
   * files and logs under {@code base}, and copies the local directory {@code put} to {@code
   * hdfsDir}; returns once the copy is there.
   */
  public static HdfsLab start(ClusterLab lab, int host, Path base, int dataNodes, long blockSize, Path put, String hdfsDir)
      throws IOException {
    String cp = classPath();
    if (cp == null) {
      throw new IOException(unavailable());
    }
    HdfsLab dfs = new HdfsLab();
    boolean ok = false;
    try {
      dfs.nameNode = daemon(lab, host, cp, base, "namenode", List.of("--address", lab.address(host),
          "--base", base.resolve("namenode").toString(), "--block-size", Long.toString(blockSize)));
      String ready = dfs.nameNode.answer(180);
      if (!ready.startsWith("ready ")) {
        throw new IOException("the HDFS NameNode did not start: " + ready);
      }
      dfs.uri = new URI(ready.substring("ready ".length()).strip());
      for (int i = 0; i < dataNodes; i++) {
        dfs.dataNodes.add(daemon(lab, host, cp, base, "datanode-" + i,
            List.of("--namenode", dfs.uri.toString(), "--base", base.resolve("datanode-" + i).toString())));
      }
      for (Daemon d : dfs.dataNodes) {
        String a = d.answer(180);
        if (!a.equals("ready")) {
          throw new IOException("an HDFS DataNode did not start: " + a);
        }
      }
      dfs.nameNode.command("await-datanodes " + dataNodes, 180);
      if (put != null) {
        dfs.nameNode.command("put " + put.toAbsolutePath() + " " + hdfsDir, 600);
      }
      ok = true;
      return dfs;
    } catch (URISyntaxException e) {
      throw new IOException("the HDFS NameNode answered a bad URI: " + e.getMessage(), e);
    } finally {
      if (!ok) {
        dfs.close();
      }
    }
  }

  private static Daemon daemon(ClusterLab lab, int host, String cp, Path base, String name, List<String> args) throws IOException {
    Files.createDirectories(base);
    Path log = base.resolve(name + ".log");
    List<String> cmd = new ArrayList<>(lab.exec(host));
    cmd.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow", "-Xmx384m", "-cp", cp,
        HdfsDaemons.class.getName(), name.startsWith("datanode") ? "datanode" : name));
    cmd.addAll(args);
    Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    Daemon d = new Daemon(name, p, log);
    Thread reader = new Thread(d::readAnswers, "strata-hdfs-" + name);
    reader.setDaemon(true);
    reader.start();
    return d;
  }

  /** The name node's URI ({@code hdfs://address:port}). */
  public URI uri() {
    return uri;
  }

  /** Kills DataNode {@code i} (SIGKILL): clients reading from it turn to other replicas. */
  public void killDataNode(int i) throws IOException {
    Process p = dataNodes.get(i).process;
    p.destroyForcibly();
    try {
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        throw new IOException("HDFS DataNode " + i + " did not die within 30 s of SIGKILL");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted killing HDFS DataNode " + i, e);
    }
  }

  /** Stops the NameNode and starts it again on the same port; returns once it is active. */
  public void restartNameNode() throws IOException {
    nameNode.command("restart-namenode", 180);
  }

  /** This process's class path when it holds the minicluster, else it with ops/target/hdfs-lib/*; null if neither. */
  private static String classPath() {
    String own = Processes.classPath();
    try {
      Class.forName(MINI, false, HdfsLab.class.getClassLoader());
      return own;
    } catch (ClassNotFoundException e) {
      // Look beside the command's libraries.
    }
    try {
      Path jar = Path.of(HdfsLab.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      Path lib = jar.getParent().resolveSibling("hdfs-lib");
      if (Files.isDirectory(lib)) {
        return own + File.pathSeparator + lib + File.separator + "*";
      }
    } catch (URISyntaxException | RuntimeException e) {
      // No code source: no HDFS.
    }
    return null;
  }

  /** Ends every daemon (each shuts down when its stdin closes), forcibly after 60 s. */
  @Override
  public void close() {
    List<Daemon> daemons = new ArrayList<>(dataNodes);
    if (nameNode != null) {
      daemons.add(nameNode);
    }
    for (Daemon d : daemons) {
      d.in.close();
    }
    for (Daemon d : daemons) {
      try {
        if (!d.process.waitFor(60, TimeUnit.SECONDS)) {
          d.process.destroyForcibly();
          d.process.waitFor(30, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        d.process.destroyForcibly();
      }
    }
  }

  /** One daemon process: its stdin for commands, its answers, its log (stderr). */
  private static final class Daemon {
    final String name;
    final Process process;
    final PrintStream in;
    final Path log;
    final BlockingQueue<String> answers = new ArrayBlockingQueue<>(64);

    Daemon(String name, Process process, Path log) {
      this.name = name;
      this.process = process;
      this.log = log;
      this.in = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
    }

    void command(String c, int seconds) throws IOException {
      in.println(c);
      String a = answer(seconds);
      if (!a.equals("ok " + c)) {
        throw new IOException("HDFS " + name + " '" + c + "' failed: " + a);
      }
    }

    String answer(int seconds) throws IOException {
      try {
        String a = answers.poll(seconds, TimeUnit.SECONDS);
        if (a == null) {
          throw new IOException("the HDFS " + name + " did not answer within " + seconds + " s (its log: " + log + ")");
        }
        return a;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted waiting for the HDFS " + name, e);
      }
    }

    void readAnswers() {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          if (line.startsWith(HdfsDaemons.PREFIX)) {
            answers.put(line.substring(HdfsDaemons.PREFIX.length()));
          }
        }
      } catch (IOException | InterruptedException e) {
        // The process ended; what it said last is in the queue.
      }
      answers.offer("error the HDFS " + name + " exited (its log: " + log + ")");
    }
  }
}
