package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * {@code strata bench setup}: a complete environment is kept as it is, and a Python that cannot
 * make one is named in one line without touching the environment there is. (Making one installs
 * some GiB of pinned packages: .ci/run does that, through the same requirements file.)
 */
class BenchSetupTest {
  @Test
  void aCompleteEnvironmentIsKeptAndABadPythonIsNamed() throws Exception {
    Path root = Processes.checkout();
    assumeTrue(root != null, "not run from the checkout");
    Path venv = root.resolve("target/pyvenv/bin/python");
    boolean required = System.getenv().containsKey("STRATA_REQUIRE_PYTHON");
    assumeTrue(required || Files.isExecutable(venv), "no target/pyvenv here");

    Cli.Result bad = Cli.run("bench", "setup", "--python", "/nonexistent/python3", "--force");
    assertEquals(1, bad.code(), bad.out() + bad.err());
    assertTrue(bad.err().contains("/nonexistent/python3 cannot be run"), bad.err());
    assertEquals(1, bad.err().strip().lines().count(), bad.err());
    assertTrue(Files.isExecutable(venv), "the environment there was is still there");

    if (required) {
      // Only where the environment is known complete (CI made it): elsewhere this would make it.
      Cli.Result kept = Cli.run("bench", "setup");
      assertEquals(0, kept.code(), kept.out() + kept.err());
      assertTrue(kept.out().contains("has every package already"), kept.out());
    }
  }
}
