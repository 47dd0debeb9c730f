package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.loader.Checkpoint;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A loader process killed with SIGKILL mid-epoch and restarted from its checkpoint file delivers
 * exactly the batch sequence of an uninterrupted run; with the persistent batch cache, the first
 * batches after the restart come from the cache.
 */
class LoaderRestartIT {
  @TempDir static Path tmp;
  static Path dataset;
  static Path ssd;

  @BeforeAll
  static void prepare() throws Exception {
    dataset = tmp.resolve("events");
    ssd = tmp.resolve("ssd");
    assertEquals(0, Cli.run("dataset", "generate", "--out", dataset.toString(), "--rows", "400000", "--features", "12",
        "--mean-sample-length", "120", "--rows-per-chunk", "50000", "--seed", "4").code());
    assertEquals(0, Cli.run("promote", "--dataset", dataset.toString(), "--ssd", ssd.toString(),
        "--features", "amount,merchant_category,embedding,score,merchant_id").code());
  }

  private static List<String> args(Path checkpoint, Path cache) {
    List<String> a = new ArrayList<>(List.of("loader", "run", "--dataset", dataset.toString(), "--ssd", ssd.toString(),
        "--batch", "48", "--epochs", "2", "--seed", "17", "--print-checksums", "--json", "--prefetch", "6",
        "--step-ms", "20"));
    if (checkpoint != null) {
      a.addAll(List.of("--checkpoint", checkpoint.toString()));
    }
    if (cache != null) {
      a.addAll(List.of("--batch-cache", cache.toString()));
    }
    return a;
  }

  private static List<String> batchLines(String out) {
    return out.lines().filter(l -> l.startsWith("batch ")).toList();
  }

  /** "batch E S SOURCE ROWS CRC" without the source, which differs between cache and assembly. */
  private static String key(String line) {
    String[] p = line.split(" ");
    return p[1] + " " + p[2] + " " + p[4] + " " + p[5];
  }

  private static Process start(List<String> args) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(List.of("-Xmx256m", "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
        "-cp", Processes.classPath(), Main.class.getName()));
    cmd.addAll(args);
    return new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
  }

  @Test
  void sigkillAndRestartGiveTheUninterruptedSequence() throws Exception {
    Cli.Result full = Cli.fork("256m", args(null, null).toArray(String[]::new));
    assertEquals(0, full.code(), full.err());
    List<String> expected = batchLines(full.out()).stream().map(LoaderRestartIT::key).toList();
    assertTrue(expected.size() > 40, "enough batches: " + expected.size());

    Path checkpoint = tmp.resolve("ckpt");
    Path cache = tmp.resolve("batch-cache");
    List<String> delivered = new ArrayList<>();
    int[] killAfter = {7, 19, 33};
    for (int kill : killAfter) {
      Process p = start(args(checkpoint, cache));
      List<String> seen = new ArrayList<>();
      try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while (seen.size() < kill - delivered.size() && (line = r.readLine()) != null) {
          if (line.startsWith("batch ")) {
            seen.add(line);
          }
        }
      }
      p.destroyForcibly();
      assertTrue(p.waitFor(30, TimeUnit.SECONDS));
      assertEquals(137, p.exitValue(), "killed with SIGKILL");
      // Committed batches: those before the checkpoint the process managed to write.
      Checkpoint cp = Checkpoint.parse(Files.readAllBytes(checkpoint));
      for (String line : seen) {
        String[] f = line.split(" ");
        int epoch = Integer.parseInt(f[1]);
        long step = Long.parseLong(f[2]);
        if (epoch < cp.epoch() || (epoch == cp.epoch() && step < cp.step())) {
          delivered.add(key(line));
        }
      }
      assertEquals(expected.subList(0, delivered.size()), delivered, "prefix before kill " + kill);
    }
    Cli.Result rest = Cli.fork("256m", args(checkpoint, cache).toArray(String[]::new));
    assertEquals(0, rest.code(), rest.err());
    List<String> tail = batchLines(rest.out());
    assertTrue(tail.getFirst().contains("CACHE"), "the first batch after the restart comes from the batch cache: " + tail.getFirst());
    tail.stream().map(LoaderRestartIT::key).forEach(delivered::add);
    assertEquals(expected, delivered, "killed three times, the sequence equals an uninterrupted run's");
    var summary = rest.json();
    System.out.printf("restart: first batch after %.1f ms, %d batches from the cache%n",
        summary.get("timeToFirstBatchMs").asDouble(), summary.get("batchesFromCache").asLong());
  }
}
