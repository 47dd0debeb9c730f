package io.strata.ops;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.Json;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What several commands share about other processes and files: starting {@code strata} as a new
 * JVM of this build, reading the JSON result it printed, the Python of this checkout and the
 * environment its client needs, and deleting a directory tree. Stateless.
 */
public final class Processes {
  private Processes() {}

  /**
   * This process's code as a class path for a child JVM: its module path (when it runs on one,
   * as the unit tests do) and its class path. Children run on the class path, as the launcher does.
   */
  public static String classPath() {
    String modules = System.getProperty("jdk.module.path");
    String classes = System.getProperty("java.class.path", "");
    if (modules == null || modules.isEmpty()) {
      return classes;
    }
    return classes.isEmpty() ? modules : modules + File.pathSeparator + classes;
  }

  /** Starts {@code strata args...} as a new JVM with this process's class path. */
  public static Process spawn(List<String> jvmArgs, List<String> args, Path stdout) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(List.of("--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"));
    cmd.addAll(jvmArgs);
    cmd.addAll(List.of("-cp", classPath(), Main.class.getName()));
    cmd.addAll(args);
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.redirectOutput(stdout == null ? ProcessBuilder.Redirect.DISCARD : ProcessBuilder.Redirect.to(stdout.toFile()));
    return pb.start();
  }

  /** The result a command printed with --json: its last line that is a JSON object, or null. */
  public static JsonNode jsonResult(String output) throws IOException {
    String line = output.lines().filter(l -> l.startsWith("{")).reduce((a, b) -> b).orElse(null);
    return line == null ? null : Json.parse(line);
  }

  /** Deletes {@code p} and everything under it; nothing when it does not exist. */
  public static void deleteTree(Path p) throws IOException {
    AtomicFiles.deleteTree(p);
  }

  /** The checkout this jar was built in (ops/target/...), or null. */
  public static Path checkout() {
    try {
      Path code = Path.of(Processes.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      for (Path p = code; p != null; p = p.getParent()) {
        if (Files.isRegularFile(p.resolve("python/strata/__init__.py"))) {
          return p;
        }
      }
    } catch (Exception ignored) {
      // Not from a checkout.
    }
    return null;
  }

  /** target/pyvenv/bin/python of the checkout when there is one, else python3. */
  public static String defaultPython() {
    Path root = checkout();
    if (root != null && Files.isExecutable(root.resolve("target/pyvenv/bin/python"))) {
      return root.resolve("target/pyvenv/bin/python").toString();
    }
    return "python3";
  }

  /** Why this Python cannot run the client with PyTorch, or null when it can. */
  public static String pythonUnavailable(String py) {
    try {
      Process p = new ProcessBuilder(py, "-c", "import numpy, pyarrow, torch").redirectErrorStream(true).start();
      String o = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      return p.waitFor() == 0 ? null : py + " lacks numpy, pyarrow or torch (" + o.lines().reduce((a, b) -> b).orElse("")
          + "); ./strata bench setup makes target/pyvenv with them";
    } catch (IOException | InterruptedException e) {
      return "no " + py + " (" + e.getMessage() + ")";
    }
  }

  /**
   * Sets up a Python process of the client so that it runs this build: the checkout's python/
   * first on PYTHONPATH, the loader service started with this JVM and class path on {@code
   * socket}, gone {@code idleSeconds} after its last job.
   */
  public static void clientEnvironment(ProcessBuilder pb, Path socket, int idleSeconds) {
    Path root = checkout();
    if (root != null) {
      String pp = System.getenv("PYTHONPATH");
      pb.environment().put("PYTHONPATH", root.resolve("python") + (pp == null ? "" : ":" + pp));
    }
    pb.environment().put("STRATA_JAVA", Path.of(System.getProperty("java.home"), "bin", "java").toString());
    pb.environment().put("STRATA_CLASSPATH", classPath());
    pb.environment().put("STRATA_LOADER_SOCKET", socket.toString());
    pb.environment().put("STRATA_LOADER_IDLE_EXIT", Integer.toString(idleSeconds));
  }
}
