package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The soak's machinery, short: ground truth from ORC, checked jobs, churn, leak checks; and that a wrong value is caught. */
class SoakTest {
  @TempDir Path tmp;

  @Test
  void aShortSoakChecksEveryBatchAndFindsNoMismatchOrLeak() throws Exception {
    Cli.Result r = Cli.run("soak", "--minutes", "0.5", "--jobs", "3", "--rows", "80000", "--rows-per-chunk", "8192",
        "--churn-seconds", "1", "--kill-share", "0.3", "--work", tmp.resolve("soak").toString(), "--json");
    assertEquals(0, r.code(), r.out() + r.err());
    JsonNode s = r.json();
    assertTrue(s.path("ok").asBoolean(), s.toString());
    assertEquals(0, s.path("mismatches").asLong());
    assertTrue(s.path("sampleValuesChecked").asLong() > 1000, s.toString());
    assertTrue(s.path("jobRuns").asLong() >= 3, s.toString());
    assertTrue(s.path("nodePromotions").asLong() + s.path("forcedEvictions").asLong() > 0, "churn happened: " + s);
    assertEquals(0, s.path("nodeIdleAtEnd").path("deletedSegmentMappings").asInt());
  }

  @Test
  void aWrongValueIsCaughtByTheGroundTruthCheck() throws Exception {
    Path ds = tmp.resolve("hdd/events");
    assertEquals(0, Cli.run("dataset", "generate", "--out", ds.toString(), "--rows", "40000", "--rows-per-chunk", "10000",
        "--mean-sample-length", "50", "--seed", "3").code());
    Path truth = tmp.resolve("truth.bin");
    assertEquals(0, Cli.run("dataset", "truth", ds.toString(), "-o", truth.toString()).code());
    // Slow enough (100 ms a batch) for the two-second progress lines: on standard error, so that --json prints one object.
    Cli.Result clean = Cli.run("loader", "run", "--dataset", ds.toString(), "--verify-against", truth.toString(), "--json",
        "--step-ms", "100", "--max-batches", "30", "--batch", "16");
    assertEquals(0, clean.code(), clean.err());
    assertEquals(1, clean.out().strip().lines().count(), "--json prints one line: " + clean.out());
    assertTrue(clean.err().contains("verified "), "the progress went to standard error: " + clean.err());
    JsonNode c = clean.json();
    assertEquals(0, c.path("mismatches").asLong());
    assertTrue(c.path("verifiedValues").asLong() > 0);
    // Change the expected checksum of one sample of one feature: every read of that sample must be flagged.
    try (RandomAccessFile f = new RandomAccessFile(truth.toFile(), "rw")) {
      ByteBuffer h = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
      f.getChannel().read(h, 0);
      long at = 4 + h.getInt(0) + 8L * 37;
      f.seek(at);
      long v = f.readLong();
      f.seek(at);
      f.writeLong(v ^ 1);
    }
    Cli.Result bad = Cli.run("loader", "run", "--dataset", ds.toString(), "--verify-against", truth.toString(), "--epochs", "2",
        "--json");
    assertEquals(1, bad.code(), bad.out() + bad.err());
    JsonNode b = bad.json();
    assertTrue(b.path("mismatches").asLong() >= 1 && b.path("mismatches").asLong() <= 2, "the sample is read at most once per epoch: " + b);
    assertTrue(b.path("firstMismatches").get(0).asText().contains("feature"), b.toString());
    // A damaged ground-truth file and a mode without samples get one clear line.
    Files.write(truth, new byte[] {1, 2, 3});
    Cli.Result damaged = Cli.run("loader", "run", "--dataset", ds.toString(), "--verify-against", truth.toString());
    assertNotEquals(0, damaged.code());
    assertTrue(damaged.err().strip().startsWith("strata: ") && damaged.err().contains("damaged"), damaged.err());
    Cli.Result rows = Cli.run("loader", "run", "--dataset", ds.toString(), "--mode", "rows", "--verify-against", truth.toString());
    assertNotEquals(0, rows.code());
    assertTrue(rows.err().contains("--mode samples"), rows.err());
  }
}
