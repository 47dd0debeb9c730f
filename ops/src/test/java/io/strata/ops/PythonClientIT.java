package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the Python client's pytest suite (python/tests) against this build: byte equality with
 * the Java loader in every mode, resume after SIGKILL, DataLoader workers, derived features, a
 * real node and its fallback. The interpreter is {@code $STRATA_PYTHON}, else the virtual
 * environment {@code .ci/run} makes in target/pyvenv (numpy, pyarrow, pytest, torch CPU). Without
 * one the test is skipped with the reason, except where {@code STRATA_REQUIRE_PYTHON=1} (CI).
 */
class PythonClientIT {
  @TempDir Path tmp;

  static Path projectDir() {
    String p = System.getProperty("strata.project.dir");
    return p != null ? Path.of(p) : Path.of("..").toAbsolutePath().normalize();
  }

  /** The Python that has the client's dependencies, or null with the reason in {@code why[0]}. */
  static String python(String[] why) throws InterruptedException {
    String env = System.getenv("STRATA_PYTHON");
    String py = env != null ? env : Processes.defaultPython();
    try {
      Process p = new ProcessBuilder(py, "-c", "import numpy, pyarrow, pytest, torch").redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      if (p.waitFor() != 0) {
        why[0] = py + " lacks the client's dependencies (" + out.lines().reduce((a, b) -> b).orElse("") + "); "
            + "./strata bench setup makes target/pyvenv with them";
        return null;
      }
      return py;
    } catch (IOException e) {
      why[0] = "no python (" + e.getMessage() + ")";
      return null;
    }
  }

  /**
   * The Python that has the client's dependencies; the calling test is skipped with the reason where
   * there is none, or fails under {@code STRATA_REQUIRE_PYTHON=1} (CI).
   */
  static String pythonOrSkip() throws InterruptedException {
    String[] why = new String[1];
    String py = python(why);
    if (py == null && "1".equals(System.getenv("STRATA_REQUIRE_PYTHON"))) {
      throw new AssertionError("STRATA_REQUIRE_PYTHON=1 but " + why[0]);
    }
    assumeTrue(py != null, () -> why[0]);
    return py;
  }

  @Test
  void pytestSuitePasses() throws Exception {
    String py = pythonOrSkip();
    Path root = projectDir();
    ProcessBuilder pb = new ProcessBuilder(py, "-m", "pytest", "-q", "-p", "no:cacheprovider",
        "--basetemp=" + tmp.resolve("pytest"), root.resolve("python/tests").toString());
    // This build's client and a loader service of this build alone, gone soon after the suite.
    Processes.clientEnvironment(pb, tmp.resolve("svc/loader.sock"), 5);
    pb.environment().put("PYTHONDONTWRITEBYTECODE", "1");
    pb.redirectErrorStream(true);
    Path log = tmp.resolve("pytest.log");
    pb.redirectOutput(log.toFile());
    Process p = pb.start();
    p.getOutputStream().close();
    if (!p.waitFor(20, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      throw new AssertionError("pytest timed out:\n" + Files.readString(log));
    }
    String out = Files.readString(log);
    System.out.println(out);
    assertEquals(0, p.exitValue(), () -> "pytest failed:\n" + out);
    assertTrue(out.lines().anyMatch(l -> l.matches(".*\\d+ passed.*")), () -> "pytest ran no test:\n" + out);
  }
}
