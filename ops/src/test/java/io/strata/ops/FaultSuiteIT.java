package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.node.CacheNode;
import io.strata.node.NodeConfig;
import io.strata.sdk.format.ResidencyBeacon;
import io.strata.sdk.internal.Json;
import io.strata.sdk.node.NodeClient;
import io.strata.sdk.tiering.SegmentStore;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Faults an operator would try, each against real processes and real files: promotion jobs killed
 * at random points, a full SSD directory (a small tmpfs), an ORC file vanishing or truncated under
 * a running job, segments corrupted or truncated on disk. After every fault: one clear line and a
 * non-zero exit, or the right data; never a partial segment, never a wrong value (every sample is
 * checked against a ground truth computed from ORC alone). Each test prints a {@code FAULTS} line
 * with its counts (docs/RELIABILITY.md).
 */
class FaultSuiteIT {
  @TempDir static Path shared;
  static Path ds;
  static Path truth;

  @BeforeAll
  static void prepare() throws Exception {
    ds = shared.resolve("hdd/events");
    assertEquals(0, Cli.run("dataset", "generate", "--out", ds.toString(), "--rows", "200000", "--rows-per-chunk", "12500",
        "--chunks-per-file", "2", "--seed", "9", "--mean-sample-length", "100").code());
    truth = shared.resolve("truth.bin");
    assertEquals(0, Cli.run("dataset", "truth", ds.toString(), "-o", truth.toString()).code());
  }

  /** Exit 1 and one error line naming the problem (progress lines of long work may precede it). */
  private static void assertOneCleanLine(Cli.Result r, String mustContain) {
    String err = r.err().strip();
    assertEquals(1, r.code(), "exit code; stderr: " + err);
    assertFalse(err.contains("\tat ") || err.contains("Exception in thread"), "a stack trace: " + err);
    List<String> errors = err.lines().filter(l -> l.startsWith("strata: ")).toList();
    assertEquals(1, errors.size(), "one error line: " + err);
    assertTrue(errors.getFirst().contains(mustContain), "names the problem (" + mustContain + "): " + err);
  }

  private static List<Path> files(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return List.of();
    }
    try (Stream<Path> s = Files.walk(dir)) {
      // The owner lock (FORMAT.md 2.5) and a node's residency beacon (2.6) are the directory's own, not left behind.
      return s.filter(Files::isRegularFile).filter(f -> !f.getFileName().toString().equals(SegmentStore.OWNER_LOCK))
          .filter(f -> !f.getFileName().toString().equals(ResidencyBeacon.FILE_NAME)).sorted().toList();
    }
  }

  private static void verifyIdenticalIfAny(Path ssd) throws Exception {
    Cli.Result v = Cli.run("dataset", "verify", ds.toString(), "--ssd", ssd.toString(), "--json");
    if (v.code() != 0) {
      assertTrue(v.err().contains("no segments of"), "segments left behind verify: " + v.err());
    } else {
      assertTrue(Json.parse(v.out()).path("identical").asBoolean(), v.out());
    }
  }

  @Test
  void promotionJobsKilledAtRandomPointsLeaveOnlyWholeSegments(@TempDir Path tmp) throws Exception {
    Path ssd = tmp.resolve("ssd");
    SplittableRandom r = new SplittableRandom(11);
    int kills = 0;
    int segmentsSeen = 0;
    for (int i = 0; i < 8; i++) {
      // Kill when a random number of this run's segments have landed (1 to 15 of 16): a random point mid-way.
      long base = segmentCount(ssd);
      if (base >= 14) {
        Processes.deleteTree(ssd);
        base = 0;
      }
      long target = base + 1 + r.nextInt((int) (15 - base));
      Process p = Processes.spawn(List.of("-Xmx256m"),
          List.of("promote", "--dataset", ds.toString(), "--ssd", ssd.toString()), tmp.resolve("promote.log"));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (p.isAlive() && System.nanoTime() < deadline
          && segmentCount(ssd) < target) {
        Thread.sleep(1);
      }
      if (p.isAlive()) {
        p.destroyForcibly();
        kills++;
      }
      assertTrue(p.waitFor(60, TimeUnit.SECONDS));
      // The next opener drops temporaries; every segment there is whole and equals ORC.
      verifyIdenticalIfAny(ssd);
      for (Path f : files(ssd)) {
        assertTrue(f.getFileName().toString().endsWith(".arrow"), "left behind: " + f);
        segmentsSeen++;
      }
      // Start from scratch half the time, so that kills land early and late in the job.
      if (r.nextBoolean()) {
        Processes.deleteTree(ssd);
      }
    }
    assertEquals(0, Cli.run("promote", "--dataset", ds.toString(), "--ssd", ssd.toString()).code());
    Cli.Result v = Cli.run("dataset", "verify", ds.toString(), "--ssd", ssd.toString(), "--json");
    assertEquals(0, v.code(), v.err());
    assertEquals(16, Json.parse(v.out()).path("segments").asInt(), "one segment per chunk after the last promotion");
    assertTrue(kills >= 6, "most runs were killed mid-way: " + kills);
    System.out.printf("FAULTS promote-kill: %d promotion processes SIGKILLed at random points; %d segments found afterwards, all whole and identical to ORC%n",
        kills, segmentsSeen);
  }

  /** Segment files in a directory a promotion is writing (temporaries come and go while it is listed). */
  private static long segmentCount(Path ssd) throws IOException {
    for (int attempt = 0; ; attempt++) {
      try {
        return files(ssd).stream().filter(f -> f.toString().endsWith(".arrow")).count();
      } catch (UncheckedIOException | NoSuchFileException e) {
        if (attempt > 100) {
          throw e;
        }
      }
    }
  }

  /** Mounts a tmpfs of {@code bytes} at {@code dir}; false where this machine does not allow it. */
  private static boolean mountTmpfs(Path dir, long bytes) throws Exception {
    Files.createDirectories(dir);
    Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=" + bytes, "tmpfs", dir.toString())
        .redirectErrorStream(true).start();
    p.getInputStream().readAllBytes();
    boolean ok = p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
    if (!ok && System.getenv("STRATA_REQUIRE_FAULTS") != null) {
      throw new AssertionError("STRATA_REQUIRE_FAULTS is set but tmpfs cannot be mounted at " + dir);
    }
    return ok;
  }

  private static void umount(Path dir) throws Exception {
    new ProcessBuilder("umount", "-l", dir.toString()).redirectErrorStream(true).start().waitFor(30, TimeUnit.SECONDS);
  }

  @Test
  void aFullSsdDirectoryFailsPromotionCleanlyAndLosesNothing(@TempDir Path tmp) throws Exception {
    Path ssd = tmp.resolve("ssd-full");
    Assumptions.assumeTrue(mountTmpfs(ssd, 3L << 20), "tmpfs cannot be mounted here (needs root)");
    try {
      Cli.Result r = Cli.run("promote", "--dataset", ds.toString(), "--ssd", ssd.toString());
      assertOneCleanLine(r, "space");
      for (Path f : files(ssd)) {
        assertTrue(f.getFileName().toString().endsWith(".arrow"), "a temporary file stays behind: " + f);
      }
      int landed = files(ssd).size();
      verifyIdenticalIfAny(ssd);
      // A node whose SSD directory is full keeps serving from HDD, with the right values.
      umount(ssd);
      Path home = tmp.resolve("node");
      Path hdd = Files.createDirectories(home.resolve("hdd"));
      Path nodeDs = hdd.resolve("events");
      copyTree(ds, nodeDs);
      assertTrue(mountTmpfs(home.resolve("ssd"), 2L << 20));
      try (CacheNode node = CacheNode.start(NodeConfig.embedded(home, 0).withSsdBudget(256L << 20))) {
        NodeClient client = new NodeClient(node.url(), null);
        client.registerDataset(nodeDs);
        client.promote("events", null, null);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        JsonNode t = client.tiers();
        while (t.path("ssd").path("pendingPromotions").asLong() > 0 && System.nanoTime() < deadline) {
          Thread.sleep(100);
          t = client.tiers();
        }
        long failures = t.path("traffic").path("promotionFailures").asLong();
        assertTrue(failures > 0, "promotions into a full SSD directory fail: " + t);
        Cli.Result job = Cli.run("loader", "run", "--dataset", nodeDs.toString(), "--node", node.url(), "--batch", "64",
            "--verify-against", truth.toString(), "--json");
        assertEquals(0, job.code(), job.err());
        JsonNode s = job.json();
        assertEquals(0, s.path("mismatches").asLong());
        assertTrue(s.path("verifiedValues").asLong() > 0);
        assertEquals("ok", client.health().path("status").asText());
        for (Path f : files(home.resolve("ssd"))) {
          assertTrue(f.getFileName().toString().endsWith(".arrow"), "a temporary file stays behind: " + f);
        }
        System.out.printf("FAULTS ssd-full: CLI promotion stopped with one line after %d whole segments; node: %d failed promotions, "
            + "job read %d sample values from HDD with 0 mismatches%n", landed, failures, s.path("verifiedValues").asLong());
      } finally {
        umount(home.resolve("ssd"));
      }
    } finally {
      umount(ssd);
    }
  }

  private static void copyTree(Path from, Path to) throws IOException {
    for (Path f : files(from)) {
      Path dst = to.resolve(from.relativize(f).toString());
      Files.createDirectories(dst.getParent());
      Files.copy(f, dst, StandardCopyOption.REPLACE_EXISTING);
    }
  }

  @Test
  void anOrcFileVanishingOrTruncatedMidReadGivesOneClearLineAndResumes(@TempDir Path tmp) throws Exception {
    int trials = 0;
    for (String fault : List.of("delete", "truncate")) {
      Path copy = tmp.resolve(fault).resolve("events");
      copyTree(ds, copy);
      List<Path> orcs = files(copy).stream().filter(f -> f.toString().endsWith(".orc")).toList();
      Path victim = orcs.getLast();
      Path saved = tmp.resolve(fault + "-saved.orc");
      Files.copy(victim, saved);
      Path ckpt = tmp.resolve(fault + ".ckpt");
      Path log = tmp.resolve(fault + ".log");
      Process p = Processes.spawn(List.of("-Xmx256m"), List.of("loader", "run", "--dataset", copy.toString(), "--mode", "rows",
          "--no-shuffle", "--batch", "5000", "--prefetch", "1", "--step-ms", "100", "--checkpoint", ckpt.toString(),
          "--print-checksums"), log);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (!Files.readString(log).contains("batch 0 2 ") && System.nanoTime() < deadline) {
        assertTrue(p.isAlive(), Files.readString(log));
        Thread.sleep(20);
      }
      if (fault.equals("delete")) {
        Files.delete(victim);
      } else {
        assertTrue(victim.toFile().setWritable(true, true), "segments land read-only; the test damages one on purpose");
        try (RandomAccessFile f = new RandomAccessFile(victim.toFile(), "rw")) {
          f.setLength(f.length() / 2);
        }
      }
      assertTrue(p.waitFor(120, TimeUnit.SECONDS));
      String out = Files.readString(log);
      List<String> errors = out.lines().filter(l -> !l.startsWith("batch ")).toList();
      assertEquals(1, p.exitValue(), out);
      assertEquals(1, errors.size(), "one line: " + errors);
      assertTrue(errors.getFirst().startsWith("strata: ") && errors.getFirst().contains(victim.getFileName().toString()),
          "names the file: " + errors);
      // Put the file back: the job resumes from its checkpoint and finishes the epoch.
      Files.copy(saved, victim, StandardCopyOption.REPLACE_EXISTING);
      long done = out.lines().filter(l -> l.startsWith("batch ")).count();
      Cli.Result resumed = Cli.run("loader", "run", "--dataset", copy.toString(), "--mode", "rows", "--no-shuffle", "--batch",
          "5000", "--checkpoint", ckpt.toString(), "--json");
      assertEquals(0, resumed.code(), resumed.err());
      JsonNode s = resumed.json();
      assertEquals(40, done + s.path("batches").asLong(), "batches before the fault and after the resume make the epoch: " + out);
      trials++;
      System.out.printf("FAULTS orc-%s: %s under a running job after %d batches -> %s; resumed and finished the epoch%n", fault,
          victim.getFileName(), done, errors.getFirst());
    }
    assertEquals(2, trials);
  }

  @Test
  void corruptedAndTruncatedSegmentsAreNeverServed(@TempDir Path tmp) throws Exception {
    SplittableRandom r = new SplittableRandom(5);
    int corrupted = 0;
    long checked = 0;
    for (int trial = 0; trial < 6; trial++) {
      Path ssd = tmp.resolve("ssd-" + trial);
      assertEquals(0, Cli.run("promote", "--dataset", ds.toString(), "--ssd", ssd.toString(), "--features", "amount,score,merchant_category").code());
      List<Path> segs = files(ssd);
      Path victim = segs.get(r.nextInt(segs.size()));
      assertTrue(victim.toFile().setWritable(true, true), "segments land read-only; the test damages one on purpose");
      try (RandomAccessFile f = new RandomAccessFile(victim.toFile(), "rw")) {
        if (trial % 2 == 0) {
          f.setLength(r.nextLong(f.length()));
        } else {
          // Flip bytes in the body (the buffers), where only the checksums can tell.
          for (int k = 0; k < 4; k++) {
            long at = f.length() / 3 + r.nextLong(f.length() / 3);
            f.seek(at);
            int b = f.read();
            f.seek(at);
            f.write(b ^ 0x5a);
          }
        }
      }
      corrupted++;
      // The segment tools see it.
      Cli.Result v = Cli.run("segment", "verify", victim.toString());
      assertEquals(1, v.code(), "segment verify must reject " + victim + ": " + v.out());
      assertTrue((v.out() + v.err()).contains(victim.getFileName().toString()), v.out() + v.err());
      Cli.Result job = Cli.run("loader", "run", "--dataset", ds.toString(), "--ssd", ssd.toString(), "--features",
          "amount,score,merchant_category", "--batch", "64", "--verify-against", truth.toString(), "--json");
      if (job.code() == 0) {
        JsonNode s = job.json();
        assertEquals(0, s.path("mismatches").asLong(), "a corrupted segment was served: " + job.out());
        checked += s.path("verifiedValues").asLong();
      } else {
        assertOneCleanLine(job, victim.getFileName().toString());
      }
    }
    System.out.printf("FAULTS segment-corrupt: %d segments truncated or byte-flipped under a job; %d sample values served, 0 wrong%n",
        corrupted, checked);
  }
}
