package io.strata.bench;

import io.strata.ops.Main;
import io.strata.ops.Processes;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code strata bench setup}: makes the Python environment the benchmarks run their peers in
 * ({@code target/pyvenv} of the checkout): a virtual environment of {@code --python}, the pinned
 * packages of {@code bench/peers/requirements.txt} (the ones {@code .ci/run} installs), then the
 * checkout's client ({@code pip install --no-deps ./python}). pip's own output goes to stderr. A
 * failed setup removes the environment it was making: nothing half-made is left for a benchmark
 * to find. An environment that already imports every package is kept (say {@code --force}).
 */
@Command(name = "setup", mixinStandardHelpOptions = true,
    description = "Makes target/pyvenv with the client and the pinned peers (bench/peers/requirements.txt) the Python benchmarks need.")
final class BenchSetup implements Callable<Integer> {
  /** What the benchmarks import; an environment that imports these is complete. */
  static final String IMPORTS = "import numpy, pyarrow, pytest, torch, duckdb, datasets, lz4, ray.data, pydantic, torchdata, fsspec";

  @Spec CommandSpec spec;

  @Option(names = "--python", defaultValue = "python3", description = "The Python to make it from; default ${DEFAULT-VALUE}.")
  String python;

  @Option(names = "--force", description = "Make it again even if it is complete.")
  boolean force;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    Path root = Processes.checkout();
    if (root == null || !Files.isRegularFile(root.resolve("bench/peers/requirements.txt"))) {
      err.println("strata: bench setup needs the project's checkout (bench/peers/requirements.txt); run it as ./strata from there");
      return Main.FAILURE;
    }
    Path venv = root.resolve("target/pyvenv");
    Path py = venv.resolve("bin/python");
    if (!force && Files.isExecutable(py) && run(List.of(py.toString(), "-c", IMPORTS), false) == 0) {
      out.println("target/pyvenv has every package already (--force makes it again)");
      return 0;
    }
    int can = run(List.of(python, "-c", "import venv, ensurepip"), false);
    if (can != 0) {
      err.println("strata: " + python + (can == 127 ? " cannot be run: no such Python (say --python)"
          : " cannot make a virtual environment (Debian: apt-get install python3-venv)"));
      return Main.FAILURE;
    }
    Processes.deleteTree(venv);
    boolean done = false;
    try {
      err.println("bench setup: making " + venv + " (the pinned peers are some GiB; this takes minutes)");
      if (run(List.of(python, "-m", "venv", venv.toString()), true) != 0) {
        err.println("strata: " + python + " -m venv " + venv + " failed");
        return Main.FAILURE;
      }
      if (run(List.of(py.toString(), "-m", "pip", "install", "-q", "-r", root.resolve("bench/peers/requirements.txt").toString()), true) != 0) {
        err.println("strata: pip could not install bench/peers/requirements.txt (its output is above)");
        return Main.FAILURE;
      }
      if (run(List.of(py.toString(), "-m", "pip", "install", "-q", "--no-deps", root.resolve("python").toString()), true) != 0) {
        err.println("strata: pip could not install the client (./python)");
        return Main.FAILURE;
      }
      done = true;
    } finally {
      if (!done) {
        Processes.deleteTree(venv);
      }
    }
    out.println("made " + venv + ": the benchmarks and the Python client's tests use it");
    return 0;
  }

  /** Runs {@code cmd}; its output to stderr when {@code show}, else discarded. Its exit code (127: it could not start). */
  private static int run(List<String> cmd, boolean show) throws InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(new ArrayList<>(cmd)).redirectInput(ProcessBuilder.Redirect.PIPE);
    if (show) {
      pb.redirectOutput(ProcessBuilder.Redirect.INHERIT).redirectError(ProcessBuilder.Redirect.INHERIT);
    } else {
      pb.redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD);
    }
    try {
      Process p = pb.start();
      p.getOutputStream().close();
      return p.waitFor();
    } catch (IOException e) {
      return 127;
    }
  }
}
