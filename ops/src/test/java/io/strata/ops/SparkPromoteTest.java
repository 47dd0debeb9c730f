package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.internal.Json;
import io.strata.store.FeatureMeta;
import io.strata.store.FeatureStore;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code strata features promote --spark local[2]}: the job runs in a Spark process of its own (the
 * build's Spark jars), stages the features, and the store ingests them; they equal a local promote
 * byte for byte. Usage errors are refused by name.
 */
class SparkPromoteTest {
  @TempDir Path tmp;
  static final String SPEC = "zscore(seq_mean(log1p(amount), last=16))";

  @Test
  void promotedOnSparkEqualsPromotedLocally() throws Exception {
    Assumptions.assumeTrue(SparkLaunch.unavailable() == null, SparkLaunch.unavailable());
    Path ds = tmp.resolve("events");
    assertEquals(0, Cli.run("dataset", "generate", "--out", ds.toString(), "--rows", "40000", "--features", "10",
        "--rows-per-chunk", "10000", "--seed", "7").code());
    Path staging = tmp.resolve("staging");
    Cli.Result spark = Cli.run("features", "promote", "--spark", "local[2]", "--staging", staging.toString(), "--dataset",
        ds.toString(), "--spec", SPEC, "--spec", "bucketize(score, [0.5])", "--store", tmp.resolve("fs-spark").toString(),
        "--json");
    assertEquals(0, spark.code(), spark.err());
    JsonNode r = Json.parse(spark.out().getBytes(StandardCharsets.UTF_8));
    assertEquals(2, r.path("materialized").asInt(), spark.out());
    assertEquals(4, r.path("spark").get(0).path("computed").asInt(), spark.out());
    Cli.Result local = Cli.run("features", "promote", "--dataset", ds.toString(), "--spec", SPEC, "--spec",
        "bucketize(score, [0.5])", "--store", tmp.resolve("fs-local").toString(), "--json");
    assertEquals(0, local.code(), local.err());
    try (FeatureStore a = FeatureStore.openWriter(tmp.resolve("fs-local"));
        FeatureStore b = FeatureStore.openWriter(tmp.resolve("fs-spark"))) {
      assertEquals(2, b.list().size());
      for (FeatureMeta m : a.list()) {
        FeatureMeta n = b.meta(m.fingerprint()).orElseThrow();
        assertTrue(n.complete());
        for (int c = 0; c < m.chunks(); c++) {
          assertArrayEquals(a.encodedChunk(m.fingerprint(), c), b.encodedChunk(m.fingerprint(), c), m.spec() + " chunk " + c);
        }
      }
      assertEquals(0, b.computations(), "the store ingested, it computed nothing");
    }
    // Again into another store: the job finds both staged and computes nothing.
    Cli.Result again = Cli.run("features", "promote", "--spark", "local[2]", "--staging", staging.toString(), "--dataset",
        ds.toString(), "--spec", SPEC, "--store", tmp.resolve("fs-again").toString(), "--json");
    assertEquals(0, again.code(), again.err());
    assertTrue(Json.parse(again.out().getBytes(StandardCharsets.UTF_8)).path("spark").get(0).path("alreadyStaged").asBoolean(),
        again.out());
    try (Stream<Path> files = Files.walk(staging)) {
      assertEquals(0, files.filter(p -> p.getFileName().toString().startsWith(".tmp-")).count(), "no temporary file left");
    }
  }

  @Test
  void usageErrorsAreNamed() {
    Cli.Result r = Cli.run("features", "promote", "--spark", "local[2]", "--store", tmp.resolve("fs").toString());
    assertEquals(2, r.code());
    assertTrue(r.err().contains("--spark needs --staging"), r.err());
    r = Cli.run("features", "promote", "--staging", tmp.toString(), "--store", tmp.resolve("fs").toString());
    assertEquals(2, r.code());
    assertTrue(r.err().contains("--staging goes with --spark"), r.err());
    r = Cli.run("features", "promote", "--spec", "log1p(amount)", "--store", tmp.resolve("fs").toString());
    assertEquals(2, r.code());
    assertTrue(r.err().contains("--spec needs --dataset"), r.err());
    r = Cli.run("features", "promote", "--spark", "local[2]", "--staging", tmp.toString());
    assertEquals(2, r.code());
    assertTrue(r.err().contains("--store is needed"), r.err());
    assertTrue(!Files.exists(tmp.resolve("fs")), "nothing created");
  }
}
