package io.strata.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.sdk.tier.Tier;
import io.strata.sdk.tier.TierStats;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.derive.Derivation;
import io.strata.sdk.derive.DerivedStore;
import io.strata.sdk.derive.Spec;
import io.strata.sdk.format.Columns;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.Loader;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.RocksDB;

class FeatureStoreTest {
  @TempDir static Path tmp;
  static Dataset ds;
  static final String EXPENSIVE = "zscore(seq_mean(log1p(amount), last=16))";

  @BeforeAll
  static void setUp() throws IOException {
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(dir,
        DatasetGenerator.Options.of("events", 60_000, 8).withFeatures(14).withChunking(10_000, 3).withMeanSampleLength(40),
        Progress.NONE);
    ds = Dataset.open(dir);
  }

  @AfterAll
  static void tearDown() throws IOException {
    ds.close();
  }

  static Derivation.SourceReader orc(AtomicInteger reads) {
    return (features, first, count, arena) -> {
      reads.incrementAndGet();
      return ds.table().readRows(first, count, features, arena);
    };
  }

  /** Checksums of every chunk computed directly (no store). */
  static List<Long> direct(String spec) throws IOException {
    Derivation d = Derivation.of(Spec.parse(spec), ds);
    Derivation.SourceReader r = orc(new AtomicInteger());
    Derivation.Statistics s = d.statistics(r);
    List<Long> out = new ArrayList<>();
    for (int c = 0; c < ds.chunks().size(); c++) {
      try (Arena arena = Arena.ofConfined()) {
        out.add(Columns.checksum(d.computeChunk(c, s, r, arena)));
      }
    }
    return out;
  }

  static List<Long> stored(FeatureStore store, String fp) throws IOException {
    List<Long> out = new ArrayList<>();
    for (int c = 0; c < ds.chunks().size(); c++) {
      try (Arena arena = Arena.ofConfined()) {
        out.add(Columns.checksum(store.chunk(fp, c, arena)));
      }
    }
    return out;
  }

  @Test
  void aStoreHoldingALinkIsRefusedAtOpen() throws Exception {
    Path dir = tmp.resolve("linked-store");
    FeatureStore.openWriter(dir).close();
    Path outside = Files.writeString(tmp.resolve("elsewhere.log"), "not the store's");
    Files.createSymbolicLink(dir.resolve("rocksdb/LOG.old.1"), outside);
    IOException e = org.junit.jupiter.api.Assertions.assertThrows(IOException.class, () -> FeatureStore.openWriter(dir));
    org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("holds a link") && e.getMessage().contains("LOG.old.1"),
        e.getMessage());
    org.junit.jupiter.api.Assertions.assertEquals("not the store's", Files.readString(outside));
  }

  @Test
  void computedOnceStoredAndServedByteIdentical() throws IOException {
    try (FeatureStore store = FeatureStore.openWriter(tmp.resolve("s1"))) {
      for (String spec : List.of(EXPENSIVE, "ngram_hash(tokens, 3, 100000)", "cross(channel, merchant_category, 5000)",
          "bucketize(score, [0.2, 0.5, 0.8])", "seq_count(score)")) {
        Derivation d = Derivation.of(Spec.parse(spec), ds);
        FeatureMeta m = store.getOrCompute(d, orc(new AtomicInteger()), Progress.NONE);
        assertTrue(m.complete());
        assertEquals(ds.chunks().size(), m.done());
        assertEquals(direct(spec), stored(store, m.fingerprint()), spec);
        // Asking again reuses it: no new computation.
        long before = store.computations();
        assertEquals(m.fingerprint(), store.getOrCompute(d, orc(new AtomicInteger()), Progress.NONE).fingerprint());
        assertEquals(before, store.computations());
        assertEquals(Optional.of(m.fingerprint()), store.lookup(ds.name(), ds.version(), Spec.parse(spec).canonical()));
      }
      assertEquals(5, store.list().size());
    }
  }

  @Test
  void concurrentJobsWaitForOneComputation() throws Exception {
    try (FeatureStore store = FeatureStore.openWriter(tmp.resolve("s2"))) {
      // Source checksums first, so that every thread reaches the computation itself together.
      Derivation d0 = Derivation.of(Spec.parse(EXPENSIVE), ds);
      store.fingerprint(d0, orc(new AtomicInteger()));
      int jobs = 4;
      CountDownLatch go = new CountDownLatch(1);
      ExecutorService pool = Executors.newFixedThreadPool(jobs);
      List<Future<FeatureMeta>> results = new ArrayList<>();
      for (int j = 0; j < jobs; j++) {
        results.add(pool.submit(() -> {
          go.await();
          return store.getOrCompute(Derivation.of(Spec.parse(EXPENSIVE), ds), orc(new AtomicInteger()), Progress.NONE);
        }));
      }
      go.countDown();
      List<String> fps = new ArrayList<>();
      for (Future<FeatureMeta> f : results) {
        fps.add(f.get().fingerprint());
      }
      pool.shutdown();
      assertEquals(1, store.computations(), "computed once for " + jobs + " concurrent jobs");
      assertEquals(1, fps.stream().distinct().count());
      assertEquals(direct(EXPENSIVE), stored(store, fps.getFirst()));
    }
  }

  /**
   * Closing while other threads read and compute: they finish their call or get a message naming
   * the store, never a native crash on freed RocksDB handles.
   */
  @Test
  void closingWhileOthersUseTheStoreFailsTheirLaterCallsCleanly() throws Exception {
    // Several rounds, closing at a different moment each time, so that a close lands inside calls.
    for (int round = 0; round < 8; round++) {
      closeUnderLoad(tmp.resolve("s-close-" + round), 20 + 37 * round);
    }
  }

  private static void closeUnderLoad(Path dir, long closeAfterMillis) throws Exception {
    FeatureStore store = FeatureStore.openWriter(dir);
    Derivation d = Derivation.of(Spec.parse("seq_count(score)"), ds);
    String fp = store.getOrCompute(d, orc(new AtomicInteger()), Progress.NONE).fingerprint();
    int threads = 4;
    CountDownLatch running = new CountDownLatch(threads);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    List<Future<String>> results = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int me = t;
      results.add(pool.submit(() -> {
        running.countDown();
        try {
          for (long i = 0; ; i++) {
            if (me == 0) {
              store.list();
            } else if (me == 1) {
              // New features each time: their chunks are written while the store closes.
              store.getOrCompute(Derivation.of(Spec.parse("bucketize(score, [" + (i + 1) * 1e-3 + "])"), ds),
                  orc(new AtomicInteger()), Progress.NONE);
            } else {
              try (Arena arena = Arena.ofConfined()) {
                store.chunk(fp, (int) (i % ds.chunks().size()), arena);
              }
            }
          }
        } catch (IllegalStateException e) {
          return e.getMessage();
        }
      }));
    }
    running.await();
    Thread.sleep(closeAfterMillis);
    store.close();
    for (Future<String> f : results) {
      String m = f.get(60, TimeUnit.SECONDS);
      assertTrue(m.contains(dir.getFileName().toString()) && m.contains("closed"), m);
    }
    pool.shutdown();
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> store.meta(fp));
    assertTrue(e.getMessage().contains("closed"), e.getMessage());
    store.close();
  }

  @Test
  void readersOpenBesideTheWriterAndSecondWritersAreRefused() throws IOException {
    Path dir = tmp.resolve("s3");
    try (FeatureStore writer = FeatureStore.openWriter(dir)) {
      IOException e = assertThrows(IOException.class, () -> FeatureStore.openWriter(dir));
      assertTrue(e.getMessage().contains("already open for writing"), e.getMessage());
      try (FeatureStore reader = FeatureStore.openReader(dir)) {
        Derivation d = Derivation.of(Spec.parse("log1p(amount)"), ds);
        assertNull(reader.getOrCompute(d, orc(new AtomicInteger())), "a reader does not compute");
        FeatureMeta m = writer.getOrCompute(d, orc(new AtomicInteger()), Progress.NONE);
        long deadline = System.currentTimeMillis() + 5_000;
        String seen = null;
        while (seen == null && System.currentTimeMillis() < deadline) {
          seen = reader.complete(d, orc(new AtomicInteger()));
        }
        assertEquals(m.fingerprint(), seen, "the reader catches up with the writer");
        assertEquals(stored(writer, m.fingerprint()), stored(reader, m.fingerprint()));
        assertThrows(IllegalStateException.class, () -> reader.gc(x -> Optional.empty(), Duration.ZERO, Duration.ZERO));
      }
    }
    assertThrows(NoSuchFileException.class, () -> FeatureStore.openReader(tmp.resolve("nothing-here")));
  }

  @Test
  void anInterruptedComputationIsNeverServedAndResumes() throws IOException {
    Path dir = tmp.resolve("s4");
    Derivation d = Derivation.of(Spec.parse(EXPENSIVE), ds);
    AtomicInteger reads = new AtomicInteger();
    // The statistics pass reads each chunk once, then the computation does; fail on the fourth chunk's read.
    int failAt = ds.chunks().size() + 4;
    Derivation.SourceReader failing = (features, first, count, arena) -> {
      if (reads.incrementAndGet() >= failAt) {
        throw new IOException("simulated crash while reading rows at " + first);
      }
      return ds.table().readRows(first, count, features, arena);
    };
    String fp;
    try (FeatureStore store = FeatureStore.openWriter(dir)) {
      fp = store.fingerprint(d, orc(new AtomicInteger()));
      assertThrows(IOException.class, () -> store.getOrCompute(d, failing, Progress.NONE));
      FeatureMeta partial = store.meta(fp).orElseThrow();
      assertFalse(partial.complete());
      assertTrue(partial.done() >= 2 && partial.done() < ds.chunks().size(), "done " + partial.done());
      IOException e = assertThrows(IOException.class, () -> store.chunk(fp, 0, Arena.ofAuto()));
      assertTrue(e.getMessage().contains("not complete"), e.getMessage());
      assertTrue(store.lookup(ds.name(), ds.version(), d.spec().canonical()).isEmpty());
    }
    try (FeatureStore store = FeatureStore.openWriter(dir)) {
      int doneBefore = store.meta(fp).orElseThrow().done();
      AtomicInteger resumedReads = new AtomicInteger();
      FeatureMeta m = store.getOrCompute(d, orc(resumedReads), Progress.NONE);
      assertTrue(m.complete());
      assertTrue(resumedReads.get() <= ds.chunks().size() - doneBefore + 2L * d.spec().sources().size(),
          "resumed from chunk " + doneBefore + ": " + resumedReads.get() + " reads");
      assertEquals(direct(EXPENSIVE), stored(store, fp), "byte-identical to an uninterrupted computation");
    }
  }

  @Test
  void garbageCollectionDropsStaleVersionsAndAbandonedBuilds() throws IOException {
    try (FeatureStore store = FeatureStore.openWriter(tmp.resolve("s5"))) {
      Derivation d = Derivation.of(Spec.parse("log1p(amount)"), ds);
      FeatureMeta m = store.getOrCompute(d, orc(new AtomicInteger()), Progress.NONE);
      assertEquals(List.of(), store.gc(name -> Optional.of(ds.version()), Duration.ofDays(1), Duration.ofDays(1)));
      assertEquals(List.of(m.fingerprint()), store.gc(name -> Optional.of("v1-newer"), Duration.ofDays(1), Duration.ofDays(1)));
      assertTrue(store.meta(m.fingerprint()).isEmpty());
      assertThrows(IOException.class, () -> store.chunk(m.fingerprint(), 0, Arena.ofAuto()));
    }
  }

  @Test
  void usageLogsSurviveTornLines() throws IOException {
    Path dir = tmp.resolve("s6");
    try (FeatureStore store = FeatureStore.openWriter(dir)) {
      store.recordUsage(new DerivedStore.Usage("events", "/d", "v1", "log1p(amount)", "job-a", 10, 80, 1_000_000, 1));
      store.recordUsage(new DerivedStore.Usage("events", "/d", "v1", "log1p(amount)", "job-b", 10, 80, 2_000_000, 2));
      Files.writeString(dir.resolve("usage/999.jsonl"), "{\"dataset\": \"events\", \"spe");
      List<DerivedStore.Usage> u = store.usage();
      assertEquals(2, u.size());
      assertEquals("job-b", u.get(1).job());
    }
  }

  @Test
  void aDamagedStoredChunkIsAnErrorNotWrongValues() throws Exception {
    Path dir = tmp.resolve("s7");
    String fp;
    try (FeatureStore store = FeatureStore.openWriter(dir)) {
      fp = store.getOrCompute(Derivation.of(Spec.parse("log1p(amount)"), ds), orc(new AtomicInteger()), Progress.NONE).fingerprint();
    }
    // Damage one stored value through RocksDB itself.
    try (var opts = new org.rocksdb.DBOptions();
        var cfo = new org.rocksdb.ColumnFamilyOptions()) {
      List<org.rocksdb.ColumnFamilyHandle> handles = new ArrayList<>();
      List<org.rocksdb.ColumnFamilyDescriptor> cfs = List.of(
          new org.rocksdb.ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, cfo),
          new org.rocksdb.ColumnFamilyDescriptor("meta".getBytes(java.nio.charset.StandardCharsets.UTF_8), cfo),
          new org.rocksdb.ColumnFamilyDescriptor("data".getBytes(java.nio.charset.StandardCharsets.UTF_8), cfo));
      try (RocksDB db = RocksDB.open(opts, dir.resolve("rocksdb").toString(), cfs, handles)) {
        byte[] key = FeatureStore.dataKey(fp, 1).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] v = db.get(handles.get(2), key);
        v[v.length / 2] ^= 0x40;
        db.put(handles.get(2), key, v);
      } finally {
        handles.forEach(org.rocksdb.ColumnFamilyHandle::close);
      }
    }
    try (FeatureStore store = FeatureStore.openWriter(dir)) {
      IOException e = assertThrows(IOException.class, () -> store.chunk(fp, 1, Arena.ofAuto()));
      assertTrue(e.getMessage().contains("checksum"), e.getMessage());
      try (Arena arena = Arena.ofConfined()) {
        assertTrue(store.chunk(fp, 0, arena).length() > 0, "other chunks still serve");
      }
    }
  }

  @Test
  void loadersAskForDerivedFeaturesBesideRawOnes() throws IOException {
    List<String> features = List.of("amount", "log1p(amount)", "seq_mean(score, last=5)", "ngram_hash(tokens, 2, 1000)");
    List<Long> computed = batches(features, null);
    try (FeatureStore writer = FeatureStore.openWriter(tmp.resolve("s8"))) {
      List<Long> fromStore = batches(features, writer);
      assertEquals(computed, fromStore, "stored and computed derived features give the same batches");
      assertEquals(3, writer.list().size(), "the writer store computed and kept the three derived features");
    }
    // A read-only store without the feature: computed here, and the computation recorded.
    try (FeatureStore writer = FeatureStore.openWriter(tmp.resolve("s9"))) {
      try (FeatureStore reader = FeatureStore.openReader(tmp.resolve("s9"))) {
        assertEquals(computed, batches(List.of("amount", "log1p(amount)", "seq_mean(score, last=5)", "ngram_hash(tokens, 2, 1000)"), reader));
      }
      List<DerivedStore.Usage> u = writer.usage();
      assertTrue(u.size() >= 3 * ds.chunks().size(), "usage recorded: " + u.size());
      assertTrue(u.stream().allMatch(x -> x.cpuNanos() > 0 && x.rows() > 0));
    }
  }

  private static List<Long> batches(List<String> features, DerivedStore store) throws IOException {
    List<Long> out = new ArrayList<>();
    try (Loader l = Loader.builder(ds).features(features).sampleBatches(128).seed(3).derivedStore(store).name("t").build()) {
      for (Batch b : l) {
        try (b) {
          long sum = 0;
          for (String f : features) {
            sum = sum * 31 + Columns.checksum(b.column(f));
          }
          out.add(sum);
        }
      }
      if (store instanceof FeatureStore fs && fs.isWriter()) {
        assertTrue(l.tierStats().bytes(Tier.SSD) > 0, "derived features served from the store");
      }
    }
    return out;
  }
}
