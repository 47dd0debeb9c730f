package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Progress;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.derive.Derivation;
import io.strata.sdk.derive.Spec;
import io.strata.store.FeatureMeta;
import io.strata.store.FeatureStore;
import io.strata.store.Staging;
import io.strata.tools.DatasetGenerator;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The promotion job on a real Spark ({@code local[2]}), against the local promotion it replaces. */
class PromoteJobTest {
  @TempDir static Path tmp;
  static Path dataset;
  static JavaSparkContext sc;
  static final String EXPENSIVE = "zscore(seq_mean(log1p(amount), last=16))";
  static final String CHEAP = "bucketize(score, [0.2, 0.5, 0.8])";

  @BeforeAll
  static void setUp() throws IOException {
    dataset = tmp.resolve("events");
    DatasetGenerator.generate(dataset,
        DatasetGenerator.Options.of("events", 30_000, 8).withFeatures(14).withChunking(5_000, 3).withMeanSampleLength(40),
        Progress.NONE);
    sc = new JavaSparkContext(new SparkConf().setMaster("local[2]").setAppName("strata-promote-test")
        .set("spark.ui.enabled", "false").set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1"));
  }

  @AfterAll
  static void tearDown() {
    if (sc != null) {
      sc.close();
    }
  }

  /** The fingerprint a local store gives {@code spec}, and the store, computed there (the local promote). */
  static String local(FeatureStore store, String spec) throws IOException {
    try (Dataset ds = Dataset.open(dataset)) {
      Derivation d = Derivation.of(Spec.parse(spec), ds);
      return store.getOrCompute(d, Derivation.SourceReader.orc(ds), Progress.NONE).fingerprint();
    }
  }

  static void assertSameChunks(FeatureStore expected, FeatureStore actual, String fp) throws IOException {
    FeatureMeta m = actual.meta(fp).orElseThrow();
    assertTrue(m.complete(), fp);
    assertEquals(expected.meta(fp).orElseThrow().chunks(), m.chunks());
    for (int c = 0; c < m.chunks(); c++) {
      assertArrayEquals(expected.encodedChunk(fp, c), actual.encodedChunk(fp, c), "chunk " + c + " of " + fp);
    }
  }

  @Test
  void stagedChunksAreByteIdenticalToALocalPromoteAndIngestedVerified() throws IOException {
    Path staging = tmp.resolve("staging1");
    try (FeatureStore localStore = FeatureStore.openWriter(tmp.resolve("local1"));
        FeatureStore ingesting = FeatureStore.openWriter(tmp.resolve("ingest1"))) {
      List<PromoteJob.Outcome> out = PromoteJob.run(sc, staging.toString(),
          List.of(new PromoteJob.Request(dataset.toString(), EXPENSIVE, null), new PromoteJob.Request(dataset.toString(), CHEAP, null)));
      assertEquals(2, out.size());
      for (PromoteJob.Outcome o : out) {
        String spec = o.spec();
        assertEquals(local(localStore, spec), o.fingerprint(), "the job's fingerprint is the store's");
        assertEquals(6, o.chunks());
        assertEquals(6, o.computed());
        assertTrue(o.taskCpuSeconds() > 0, spec);
        Staging.Feature f = Staging.feature(staging, o.fingerprint()).orElseThrow();
        assertEquals(6, f.chunks());
        FeatureMeta m = ingesting.ingest(staging, f, Progress.NONE);
        assertTrue(m.complete());
        assertEquals(f.statistics().keySet(), localStore.meta(o.fingerprint()).orElseThrow().statistics().keySet());
        assertSameChunks(localStore, ingesting, o.fingerprint());
        assertEquals(localStore.lookup("events", m.version(), spec), ingesting.lookup("events", m.version(), spec));
      }
      assertEquals(0, ingesting.computations(), "ingested, not computed");

      // Run again: the features are staged complete, nothing is computed.
      for (PromoteJob.Outcome o : PromoteJob.run(sc, staging.toString(), List.of(new PromoteJob.Request(dataset.toString(), EXPENSIVE, null)))) {
        assertTrue(o.alreadyStaged());
        assertEquals(0, o.computed());
      }
    }
  }

  @Test
  void aRerunAfterAKilledDriverComputesOnlyTheMissingChunks() throws IOException {
    Path staging = tmp.resolve("staging2");
    PromoteJob.Outcome first = PromoteJob.run(sc, staging.toString(), List.of(new PromoteJob.Request(dataset.toString(), EXPENSIVE, null))).getFirst();
    String fp = first.fingerprint();
    Path dir = Staging.dir(staging, fp);
    // As a driver killed before its last tasks ended leaves it: no feature.json, two chunks missing,
    // one torn (a file that is not a whole chunk never lands by name, but a copy could be cut short).
    Files.delete(dir.resolve("feature.json"));
    Files.delete(dir.resolve("chunk-00000001.scol"));
    Files.delete(dir.resolve("chunk-00000004.scol"));
    try (RandomAccessFile f = new RandomAccessFile(dir.resolve("chunk-00000002.scol").toFile(), "rw")) {
      f.setLength(f.length() - 3);
    }
    PromoteJob.Outcome again = PromoteJob.run(sc, staging.toString(), List.of(new PromoteJob.Request(dataset.toString(), EXPENSIVE, fp))).getFirst();
    assertEquals(3, again.computed(), "chunks 1, 2 and 4 alone");
    assertEquals(3, again.skipped());
    assertFalse(again.alreadyStaged());
    try (FeatureStore localStore = FeatureStore.openWriter(tmp.resolve("local2"));
        FeatureStore ingesting = FeatureStore.openWriter(tmp.resolve("ingest2"))) {
      assertEquals(fp, local(localStore, EXPENSIVE));
      ingesting.ingest(staging, Staging.feature(staging, fp).orElseThrow(), Progress.NONE);
      assertSameChunks(localStore, ingesting, fp);
    }
  }

  @Test
  void aStoreTakesAStagedFeatureInsteadOfComputingItAndRefusesADamagedOne() throws IOException {
    Path staging = tmp.resolve("staging3");
    String fp = PromoteJob.run(sc, staging.toString(), List.of(new PromoteJob.Request(dataset.toString(), CHEAP, null))).getFirst().fingerprint();
    try (FeatureStore store = FeatureStore.openWriter(tmp.resolve("node3"))) {
      store.useStaging(staging);
      assertEquals(fp, local(store, CHEAP));
      assertEquals(0, store.computations(), "a job's request found it staged");
      assertEquals(1, store.ingestions());
    }
    // One byte of a chunk flipped after the job: the ingestion stops there, naming the file, and the
    // feature is not served.
    Path chunk = Staging.dir(staging, fp).resolve("chunk-00000003.scol");
    byte[] b = Files.readAllBytes(chunk);
    b[b.length - 5] ^= 0x10;
    Files.write(chunk, b);
    try (FeatureStore store = FeatureStore.openWriter(tmp.resolve("node3b"))) {
      IOException e = assertThrows(IOException.class,
          () -> store.ingest(staging, Staging.feature(staging, fp).orElseThrow(), Progress.NONE));
      assertTrue(e.getMessage().contains("chunk-00000003.scol") && e.getMessage().contains("checksum"), e.getMessage());
      assertTrue(store.meta(fp).isEmpty(), "nothing of the feature is in the store");
      assertTrue(store.lookup("events", Staging.feature(staging, fp).orElseThrow().version(), CHEAP.replace(" ", "")).isEmpty());
      try (Stream<Path> files = Files.list(Staging.dir(staging, fp))) {
        assertEquals(0, files.filter(p -> p.getFileName().toString().startsWith(".tmp-")).count(), "no temporary files left");
      }
      try (Stream<Path> files = Files.list(tmp.resolve("node3b/ingest"))) {
        assertEquals(0, files.count(), "the half-written SST is removed");
      }
    }
  }

  @Test
  void badArgumentsAreRefusedByName() {
    var err = new java.io.ByteArrayOutputStream();
    var ps = new java.io.PrintStream(err, true, java.nio.charset.StandardCharsets.UTF_8);
    assertEquals(null, PromoteJob.parse(new String[] {"--staging", "x", "--bogus"}, new String[1], ps));
    assertTrue(err.toString(java.nio.charset.StandardCharsets.UTF_8).contains("\"--bogus\""));
    assertEquals(null, PromoteJob.parse(new String[] {"--staging", "x"}, new String[1], ps));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> PromoteJob.run(sc, "s3://bucket/stage", List.of()));
    assertTrue(e.getMessage().contains("s3://"), e.getMessage());
  }
}
