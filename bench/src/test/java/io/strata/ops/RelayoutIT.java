package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.sdk.files.Manifest;
import io.strata.tools.Relayout;
import io.strata.sdk.files.VersionLeases;
import io.strata.sdk.internal.Json;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code strata dataset relayout}: learned from a trace, it keeps every sample's every value (the
 * ground truth of orc-core alone, per feature), and a SIGKILL in the middle of the rewrite leaves
 * the old version as the dataset, its files untouched; the next run cleans up and completes.
 */
class RelayoutIT {
  @TempDir Path tmp;

  private static String trace(String dataset, List<List<String>> jobs, int chunks) {
    StringBuilder sb = new StringBuilder("time,job,dataset,feature,chunk,bytes\n");
    int t = 0;
    for (int j = 0; j < jobs.size(); j++) {
      for (int c = 0; c < chunks; c++) {
        for (String f : jobs.get(j)) {
          sb.append(t++).append(",job").append(j).append(',').append(dataset).append(',').append(f).append(',').append(c)
              .append(",80000\n");
        }
      }
      sb.append(t++).append(",job").append(j).append(',').append(dataset).append(",@end,0,0\n");
    }
    return sb.toString();
  }

  private static GroundTruth truth(Path ds) throws Exception {
    try (Dataset d = Dataset.open(ds)) {
      return GroundTruth.compute(d);
    }
  }

  /** Every sample of every feature of the dataset in {@code ds} has the checksum it had in {@code truth}. */
  private static void assertSameValues(GroundTruth truth, Path ds) throws Exception {
    GroundTruth again = truth(ds);
    assertEquals(truth.samples, again.samples);
    for (int f = 0; f < truth.features.size(); f++) {
      int g = again.features.indexOf(truth.features.get(f));
      assertTrue(g >= 0, truth.features.get(f));
      for (int s = 0; s < truth.samples; s++) {
        assertEquals(truth.sums[s * truth.features.size() + f], again.sums[s * again.features.size() + g],
            "feature " + truth.features.get(f) + " sample " + s);
      }
    }
  }

  private static long leftovers(Path dir) throws Exception {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.getFileName().toString().startsWith(".tmp-relayout-")).count();
    }
  }

  @Test
  void aKilledRelayoutLeavesTheOldVersionAndTheNextOneKeepsEveryValue() throws Exception {
    Path ds = tmp.resolve("events");
    assertEquals(0, Cli.run("dataset", "generate", "--out", ds.toString(), "--rows", "1500000", "--features", "24",
        "--rows-per-chunk", "100000", "--seed", "21").code());
    Manifest before = Manifest.read(ds);
    List<String> names = before.features().stream().map(f -> f.name()).toList();
    Path trace = tmp.resolve("trace.csv");
    Files.writeString(trace, trace(before.name(), List.of(
        List.of(names.get(2), names.get(11), names.get(19), names.get(23)),
        List.of(names.get(2), names.get(11), names.get(5)),
        List.of(names.get(7), names.get(16))), before.chunks().size()), StandardCharsets.UTF_8);
    GroundTruth truth = truth(ds);

    // A dry run changes nothing and says what it would gain.
    Cli.Result dry = Cli.run("dataset", "relayout", ds.toString(), "--from", trace.toString(), "--dry-run", "--json");
    assertEquals(0, dry.code(), dry.err());
    JsonNode plan = Json.MAPPER.readTree(dry.out());
    assertTrue(plan.path("runsPerStripeAfter").asDouble() < plan.path("runsPerStripeBefore").asDouble(), dry.out());
    assertEquals(1.0, plan.path("runsPerStripeAfter").asDouble(), 1e-9, dry.out());
    assertEquals(before.version(), Manifest.read(ds).version());

    // Killed mid-rewrite: the old version is the dataset, its files untouched.
    Process p = Processes.spawn(List.of("-Xmx1g"), List.of("dataset", "relayout", ds.toString(), "--from", trace.toString()),
        tmp.resolve("relayout-1.log"));
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
    while (!rewriting(ds)) {
      assertTrue(p.isAlive(), "the relayout finished before the kill: " + Files.readString(tmp.resolve("relayout-1.log")));
      assertTrue(System.nanoTime() < deadline, "no rewritten file appeared");
      Thread.sleep(5);
    }
    p.destroyForcibly();
    assertTrue(p.waitFor(30, TimeUnit.SECONDS));
    assertEquals(before.version(), Manifest.read(ds).version(), "the old version is still the dataset");
    for (Manifest.OrcFileInfo f : before.files()) {
      assertEquals(f.crc32c(), crc(ds.resolve(f.path())), "old file " + f.path() + " untouched");
    }
    try (Dataset d = Dataset.open(ds)) {
      assertEquals(before.rows(), d.rows());
    }

    // The next run removes the leftovers and completes; every sample's every feature is as before.
    Cli.Result done = Cli.fork("1g", "dataset", "relayout", ds.toString(), "--from", trace.toString(), "--json");
    assertEquals(0, done.code(), done.err());
    JsonNode r = Json.MAPPER.readTree(done.out().strip().lines().reduce((a, b) -> b).orElseThrow());
    assertTrue(r.path("changed").asBoolean(), done.out());
    assertEquals(0, leftovers(ds));
    assertTrue(!Files.exists(ds.resolve("relayout.pending")));
    Manifest after = Manifest.read(ds);
    assertEquals(r.path("version").asText(), after.version());
    assertSameValues(truth, ds);
    System.out.printf("relayout killed mid-rewrite, old version kept; completed next run: %s -> %s, %d samples x %d features"
        + " identical%n", before.version(), after.version(), truth.samples, truth.features.size());
  }

  /**
   * A job in another process reads the dataset while it is relaid out twice: the version it reads
   * keeps its files (its lease is the kernel's lock, seen across processes) until the job dies,
   * and the next clean-up removes them.
   */
  @Test
  void aJobInAnotherProcessKeepsTheVersionItReadsThroughTwoRelayouts() throws Exception {
    Path ds = tmp.resolve("leased");
    assertEquals(0, Cli.run("dataset", "generate", "--out", ds.toString(), "--rows", "60000", "--features", "8",
        "--rows-per-chunk", "10000", "--seed", "5").code());
    Manifest v1 = Manifest.read(ds);
    List<String> n = v1.features().stream().map(f -> f.name()).toList();
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow", "-cp", Processes.classPath(),
        Main.class.getName(), "loader", "run", "--dataset", ds.toString(), "--features", n.get(0), "--batch", "16",
        "--epochs", "50", "--step-ms", "100"));
    Process job = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    try {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (!VersionLeases.inUse(ds, v1.version())) {
        assertTrue(job.isAlive() && System.nanoTime() < deadline, "the job opened the dataset");
        Thread.sleep(50);
      }
      Relayout.rewrite(ds, n.reversed(), Progress.NONE);
      List<String> rotated = new ArrayList<>(n);
      Collections.rotate(rotated, 2);
      Relayout.rewrite(ds, rotated, Progress.NONE);
      for (Manifest.OrcFileInfo f : v1.files()) {
        assertTrue(Files.exists(ds.resolve(f.path())), f.path() + " of the version the job reads");
      }
      assertTrue(job.isAlive(), "the job read on");
    } finally {
      job.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
    }
    Relayout.cleanUp(ds); // what the next relayout or rollback does first
    for (Manifest.OrcFileInfo f : v1.files()) {
      assertTrue(!Files.exists(ds.resolve(f.path())), f.path() + " of a version no process reads");
    }
  }

  @Test
  void replicasWithinTheirBudgetGiveEveryJobOneRunAndKeepEveryValue() throws Exception {
    Path ds = tmp.resolve("small");
    assertEquals(0, Cli.run("dataset", "generate", "--out", ds.toString(), "--rows", "60000", "--features", "8",
        "--rows-per-chunk", "10000", "--seed", "3").code());
    Manifest before = Manifest.read(ds);
    List<String> n = before.features().stream().map(f -> f.name()).toList();
    Path trace = tmp.resolve("trace.csv");
    // A triangle of jobs: no order gives all three one run.
    Files.writeString(trace, trace(before.name(), List.of(List.of(n.get(0), n.get(3)), List.of(n.get(3), n.get(6)),
        List.of(n.get(0), n.get(6))), before.chunks().size()), StandardCharsets.UTF_8);
    GroundTruth truth = truth(ds);
    Cli.Result bad = Cli.run("dataset", "relayout", ds.toString(), "--from", trace.toString(), "--replicas", "120%");
    assertEquals(2, bad.code(), bad.err());
    assertTrue(bad.err().contains("--replicas"), bad.err());
    Cli.Result badStripes = Cli.run("dataset", "relayout", ds.toString(), "--from", trace.toString(), "--stripe-mib", "-1");
    assertEquals(2, badStripes.code(), badStripes.err());
    assertTrue(badStripes.err().contains("--stripe-mib"), badStripes.err());
    Cli.Result plain = Cli.run("dataset", "relayout", ds.toString(), "--from", trace.toString(), "--dry-run", "--json");
    assertEquals(4.0 / 3, Json.MAPPER.readTree(plain.out()).path("runsPerStripeAfter").asDouble(), 1e-9, plain.out());
    // The default stripe size (32 MiB) merges this small dataset's stripes into one a file.
    assertEquals(before.chunks().size(), Json.MAPPER.readTree(plain.out()).path("chunksBefore").asInt(), plain.out());
    assertEquals(before.files().size(), Json.MAPPER.readTree(plain.out()).path("chunksAfter").asInt(), plain.out());
    assertTrue(before.chunks().size() > before.files().size(), plain.out());
    JsonNode planned = Json.MAPPER.readTree(plain.out());
    assertEquals(planned.path("runsPerStripeAfter").asDouble() * before.files().size(),
        planned.path("readsPerEpochAfter").asDouble(), 1e-9, plain.out());
    assertEquals(planned.path("runsPerStripeBefore").asDouble() * before.chunks().size(),
        planned.path("readsPerEpochBefore").asDouble(), 1e-9, plain.out());
    Cli.Result r = Cli.run("dataset", "relayout", ds.toString(), "--from", trace.toString(), "--replicas", "30%", "--json");
    assertEquals(0, r.code(), r.err());
    JsonNode out = Json.MAPPER.readTree(r.out());
    assertEquals(1.0, out.path("runsPerStripeAfter").asDouble(), 1e-9, r.out());
    assertEquals(1, out.path("replicated").size(), r.out());
    assertTrue(out.path("replicaBytes").asLong() <= 0.3 * out.path("datasetBytes").asLong(), r.out());
    Manifest after = Manifest.read(ds);
    assertEquals(1, after.replicas().size());
    assertEquals(before.files().size(), after.chunks().size(), "one stripe a file");
    // The old bytes merged up to leave room for the copies: a new stripe, copies included, within the size.
    assertEquals(0, Relayout.mergeBytes(0, 1000, 300));
    assertEquals(800, Relayout.mergeBytes(1000, 1000, 250));
    assertEquals(1000, Relayout.mergeBytes(1000, 1000, 0));
    assertSameValues(truth, ds);
    // Learned again from the same trace: the dataset is already in that layout.
    Cli.Result same = Cli.run("dataset", "relayout", ds.toString(), "--from", trace.toString(), "--replicas", "30%", "--json");
    assertEquals(0, same.code(), same.err());
    assertTrue(!Json.MAPPER.readTree(same.out()).path("changed").asBoolean(), same.out());
    assertEquals(1.0, Json.MAPPER.readTree(same.out()).path("runsPerStripeBefore").asDouble(), 1e-9, same.out());
    // Back to the version before the relayout, every value as it was; again, forward.
    Cli.Result back = Cli.run("dataset", "rollback", ds.toString(), "--json");
    assertEquals(0, back.code(), back.err());
    assertEquals(before.version(), Json.MAPPER.readTree(back.out()).path("version").asText(), back.out());
    assertEquals(before.version(), Manifest.read(ds).version());
    assertSameValues(truth, ds);
    Cli.Result forward = Cli.run("dataset", "rollback", ds.toString());
    assertEquals(0, forward.code(), forward.err());
    assertEquals(after.version(), Manifest.read(ds).version(), forward.out());
    // Nothing to go back to: a dataset never relaid out.
    Path fresh = tmp.resolve("fresh");
    assertEquals(0, Cli.run("dataset", "generate", "--out", fresh.toString(), "--rows", "2000", "--features", "4").code());
    Cli.Result none = Cli.run("dataset", "rollback", fresh.toString());
    assertEquals(1, none.code(), none.err());
    assertTrue(none.err().contains("no previous version"), none.err());
  }

  @Test
  void benchPlanOnlyPlansTheOrderThenTheCopiesWithinTheirBudget() throws Exception {
    Cli.Result r = Cli.run("bench", "relayout", "--plan-only", "--features", "40", "--jobs", "16", "--rows", "4000",
        "--replicas", "10%", "--work", tmp.resolve("plan-only").toString(), "--json");
    assertEquals(0, r.code(), r.err());
    JsonNode o = Json.MAPPER.readTree(r.out());
    assertEquals(16, o.path("jobs").asInt(), r.out());
    double before = o.path("runsPerStripeBefore").asDouble();
    double order = o.path("runsPerStripeOrder").asDouble();
    double copies = o.path("runsPerStripeWithCopies").asDouble();
    assertTrue(order < before && copies <= order && copies >= 1, r.out());
    assertTrue(o.path("replicas").path("features").asInt() > 0, r.out());
    assertTrue(o.path("replicas").path("bytes").asLong() <= 0.1 * o.path("replicas").path("datasetBytes").asLong(), r.out());
    Cli.Result bad = Cli.run("bench", "relayout", "--plan-only", "--emulate-hdd");
    assertEquals(2, bad.code(), bad.err());
    assertTrue(bad.err().contains("--plan-only"), bad.err());
  }

  /** Whether a relayout's temporary directory holds a file with bytes in it: the rewrite is under way. */
  private static boolean rewriting(Path dir) throws Exception {
    try (Stream<Path> s = Files.list(dir)) {
      for (Path t : s.filter(p -> p.getFileName().toString().startsWith(".tmp-relayout-")).toList()) {
        try (Stream<Path> f = Files.list(t)) {
          if (f.anyMatch(x -> x.toFile().length() > 0)) {
            return true;
          }
        } catch (NoSuchFileException gone) {
          // removed meanwhile
        }
      }
    }
    return false;
  }

  private static String crc(Path file) throws Exception {
    CRC32C c = new CRC32C();
    try (var in = Files.newInputStream(file)) {
      byte[] buf = new byte[1 << 16];
      int n;
      while ((n = in.read(buf)) > 0) {
        c.update(buf, 0, n);
      }
    }
    return String.format("%08x", c.getValue());
  }
}
