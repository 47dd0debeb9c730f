package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.internal.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/** What every remote file system's commands tests check of a dataset read by its URI against its local copy. */
final class RemoteDatasetChecks {
  private RemoteDatasetChecks() {}

  /**
   * {@code describe}, {@code verify} and {@code truth} take the dataset at {@code remote}, its
   * values those of the local copy ({@code truth}); a job reads every sample of an epoch from it
   * checked against that truth; then promoted from it to a local SSD tier under {@code tmp} and
   * read from there.
   */
  static void readingCommandsTake(String remote, long rows, Path truth, Path tmp) throws Exception {
    Cli.Result d = Cli.run("dataset", "describe", remote, "--json");
    assertEquals(0, d.code(), d.err());
    JsonNode j = Json.parse(d.out());
    assertEquals(rows, j.path("rows").asLong());
    assertEquals("events", j.path("name").asText());
    Cli.Result v = Cli.run("dataset", "verify", remote, "--json");
    assertEquals(0, v.code(), v.out() + v.err());
    Path remoteTruth = tmp.resolve("truth-remote.bin");
    assertEquals(0, Cli.run("dataset", "truth", remote, "-o", remoteTruth.toString()).code());
    assertArrayEquals(Files.readAllBytes(truth), Files.readAllBytes(remoteTruth), "the same values as the local copy");
    Cli.Result run = Cli.run("loader", "run", "--dataset", remote, "--batch", "256", "--verify-against", truth.toString(), "--json");
    assertEquals(0, run.code(), run.out() + run.err());
    Path ssd = tmp.resolve("ssd");
    Files.createDirectories(ssd);
    Cli.Result p = Cli.run("promote", "--dataset", remote, "--ssd", ssd.toString());
    assertEquals(0, p.code(), p.out() + p.err());
    Cli.Result fromSsd = Cli.run("loader", "run", "--dataset", remote, "--ssd", ssd.toString(), "--batch", "256",
        "--verify-against", truth.toString(), "--json");
    assertEquals(0, fromSsd.code(), fromSsd.out() + fromSsd.err());
  }

  /**
   * The Python client (its loader service of this build, with {@code env} added) reads the dataset
   * by its URI: every batch of two shuffled epochs equal to the same batch read from the local copy.
   */
  static void pythonClientReadsAsTheLocalCopy(String remote, Path local, Path tmp, Map<String, String> env) throws Exception {
    String py = PythonClientIT.pythonOrSkip();
    String script = String.join("\n",
        "import itertools, sys, strata",
        "remote, local = sys.argv[1], sys.argv[2]",
        "n = 0",
        "for a, b in itertools.zip_longest(strata.Loader(remote, batch_samples=300, seed=9, epochs=2),",
        "                                  strata.Loader(local, batch_samples=300, seed=9, epochs=2)):",
        "    assert a is not None and b is not None, 'a different number of batches'",
        "    assert a.equals(b), 'batch %d differs' % n",
        "    n += 1",
        "print('batches', n)");
    ProcessBuilder pb = new ProcessBuilder(py, "-c", script, remote, local.toString());
    Processes.clientEnvironment(pb, tmp.resolve("py/loader.sock"), 5);
    pb.environment().putAll(env);
    pb.environment().put("PYTHONDONTWRITEBYTECODE", "1");
    pb.redirectErrorStream(true);
    Process p = pb.start();
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    assertTrue(p.waitFor(5, java.util.concurrent.TimeUnit.MINUTES), out);
    assertEquals(0, p.exitValue(), out);
    assertTrue(out.lines().anyMatch(l -> l.matches("batches [1-9]\\d*")), out);
  }
}
