package io.strata.sdk.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.ArrowJs;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.sdk.Reference;
import io.strata.sdk.TestData;
import io.strata.sdk.tier.Tier;
import io.strata.sdk.tier.TierStats;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.files.SampleIndex;
import io.strata.sdk.format.Columns;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.tiering.Promoter;
import io.strata.sdk.tiering.SegmentStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LoaderTest {
  @TempDir static Path tmp;
  static Dataset dataset;
  static Reference reference;
  static SegmentStore store;
  static final List<String> FEATURES =
      List.of("sample_id", "event_time", "amount", "merchant_category", "is_online", "embedding", "balance", "score",
          "device_hash", "tokens", "event_date", "channel");
  static final List<String> PROMOTED = List.of("amount", "merchant_category", "embedding", "score", "tokens");

  @BeforeAll
  static void generate() throws IOException {
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(
        dir,
        DatasetGenerator.Options.of("events", 40_000, 9).withFeatures(16).withChunking(6_000, 2).withMeanSampleLength(30),
        Progress.NONE);
    dataset = Dataset.open(dir);
    reference = new Reference(dir);
    store = SegmentStore.open(tmp.resolve("ssd"), false, SegmentFile.Verify.FIRST_OPEN);
    // Half the features of most chunks on the SSD tier: batches mix both tiers.
    Promoter.promote(dataset, store, PROMOTED, List.of(0, 1, 2, 4, 5), Progress.NONE);
  }

  @AfterAll
  static void close() throws IOException {
    store.close();
    dataset.close();
  }

  private static LoaderBuilder base() {
    return Loader.builder(dataset).features(FEATURES).segments(store).prefetch(3, 2);
  }

  /** Every value of every row of the batch equals the reference rows of its units. */
  private static void assertBatchMatchesReference(Batch b, List<long[]> unitRows) {
    assertBatchMatchesReference(b, unitRows, FEATURES);
  }

  private static void assertBatchMatchesReference(Batch b, List<long[]> unitRows, List<String> features) {
    int row = 0;
    assertEquals(unitRows.size(), b.units());
    for (int k = 0; k < unitRows.size(); k++) {
      long start = unitRows.get(k)[0];
      long count = unitRows.get(k)[1];
      assertEquals(row, b.unitStart(k), "unit " + k + " offset");
      for (String f : features) {
        Column c = b.column(f);
        for (int r = 0; r < count; r++) {
          Object want = reference.get(f, start + r);
          Object got = c.getObject(row + r);
          if (!TestData.same(want, got)) {
            throw new AssertionError("batch " + b.epoch() + "/" + b.step() + " unit " + k + " feature " + f + " row "
                + (start + r) + ": expected " + want + " got " + got);
          }
        }
      }
      row += (int) count;
    }
    assertEquals(row, b.rows());
  }

  /** Sample rows by id, computed from the reference's sample_id column (not from the index). */
  private static Map<Long, long[]> samplesFromReference() {
    Map<Long, long[]> out = new HashMap<>();
    List<Object> ids = reference.column("sample_id");
    for (int r = 0; r < ids.size(); r++) {
      long id = (Long) ids.get(r);
      long[] range = out.computeIfAbsent(id, k -> new long[] {-1, 0});
      if (range[0] < 0) {
        range[0] = r;
      }
      range[1]++;
    }
    return out;
  }

  @Test
  void sampleBatchesHoldEveryRowOfTheirSamplesAndShardsPartitionEachEpoch() throws IOException {
    Map<Long, long[]> samples = samplesFromReference();
    int world = 3;
    for (int epoch = 0; epoch < 2; epoch++) {
      Set<Long> seen = new HashSet<>();
      for (int rank = 0; rank < world; rank++) {
        try (Loader loader = base().sampleBatches(50).seed(3).shard(rank, world).epochs(2).build()) {
          for (Batch b : loader) {
            try (b) {
              if (b.epoch() != epoch) {
                continue;
              }
              List<long[]> units = new ArrayList<>();
              for (int k = 0; k < b.units(); k++) {
                long id = b.unitId(k);
                assertTrue(seen.add(id), "sample " + id + " read twice in epoch " + epoch);
                long[] range = samples.get(id);
                units.add(new long[] {range[0], range[1]});
              }
              assertBatchMatchesReference(b, units);
            }
          }
        }
      }
      assertEquals(samples.keySet(), seen, "the ranks together cover every sample in epoch " + epoch);
    }
  }

  private static List<List<Long>> unitSequence(LoaderBuilder builder) throws IOException {
    List<List<Long>> out = new ArrayList<>();
    try (Loader loader = builder.build()) {
      for (Batch b : loader) {
        try (b) {
          List<Long> ids = new ArrayList<>();
          for (int k = 0; k < b.units(); k++) {
            ids.add(b.unitId(k));
          }
          out.add(ids);
        }
      }
    }
    return out;
  }

  private static List<Long> sums(Batch b) {
    List<Long> out = new ArrayList<>();
    for (Column c : b.columns().values()) {
      out.add(Columns.checksum(c));
    }
    return out;
  }

  /** The share of a step's rows that lie in chunks whose promoted features the SSD tier holds. */
  private static double residentShare(Plan p, long g, long spe) {
    EpochOrder o = p.order((int) (g / spe));
    long rows = 0;
    long resident = 0;
    for (int k = 0; k < p.unitsInStep(g % spe); k++) {
      long u = p.unit(o, g % spe, k);
      int r = p.unitRows(u);
      rows += r;
      if (List.of(0, 1, 2, 4, 5).contains(dataset.chunkOf(p.unitStart(u)))) {
        resident += r;
      }
    }
    return rows == 0 ? 0 : (double) resident / rows;
  }

  @Test
  void substitutableReadsDeliverEveryStepOnceResidentFirstAndResumeExactly() throws IOException {
    Supplier<LoaderBuilder> builder = () -> base().rowBatches(1000, true).shuffleBlock(500).seed(4).epochs(2);
    Map<Long, List<Long>> byStep = new HashMap<>();
    List<Long> plain = new ArrayList<>();
    long spe;
    try (Loader l = builder.get().build()) {
      spe = l.stepsPerEpoch();
      for (Batch b : l) {
        try (b) {
          long g = b.epoch() * spe + b.step();
          plain.add(g);
          byStep.put(g, sums(b));
        }
      }
    }
    List<Long> substituted = new ArrayList<>();
    try (Loader l = builder.get().substitutable(true).build()) {
      for (Batch b : l) {
        try (b) {
          long g = b.epoch() * spe + b.step();
          substituted.add(g);
          assertEquals(byStep.get(g), sums(b), "batch of step " + g + " holds what the plan's order gives it");
        }
      }
    }
    assertEquals(plain.size(), substituted.size());
    for (int e = 0; e < 2; e++) {
      List<Long> epoch = new ArrayList<>(substituted.subList((int) (e * spe), (int) ((e + 1) * spe)));
      Collections.sort(epoch);
      for (int s = 0; s < spe; s++) {
        assertEquals(e * spe + s, (long) epoch.get(s), "every step of epoch " + e + " exactly once, within the epoch");
      }
    }
    assertNotEquals(plain, substituted, "some steps were taken out of the plan's order");
    Plan p = builder.get().plan();
    double plainFirst = 0;
    double substitutedFirst = 0;
    for (int e = 0; e < 2; e++) {
      for (long i = e * spe; i < e * spe + spe / 2; i++) {
        plainFirst += residentShare(p, plain.get((int) i), spe);
        substitutedFirst += residentShare(p, substituted.get((int) i), spe);
      }
    }
    assertTrue(substitutedFirst > plainFirst, "the first half of each epoch reads more from the SSD tier: " + substitutedFirst
        + " vs " + plainFirst);

    // Resume from a checkpoint taken mid-epoch: the rest of the run, each remaining step once.
    List<Long> before = new ArrayList<>();
    Checkpoint cp;
    try (Loader l = builder.get().substitutable(true).build()) {
      for (int i = 0; i < spe / 2 + 3; i++) {
        try (Batch b = l.next()) {
          before.add(b.epoch() * spe + b.step());
          assertEquals(l.position(), b.checkpoint());
        }
      }
      cp = l.position();
    }
    byte[] bytes = cp.toBytes();
    assertNotEquals(0, cp.ahead(), "steps were delivered ahead of the first one missing: " + before);
    assertEquals(Checkpoint.BYTES_AHEAD, bytes.length);
    List<Long> after = new ArrayList<>();
    try (Loader l = builder.get().substitutable(true).resumeFrom(Checkpoint.parse(bytes)).build()) {
      for (Batch b : l) {
        try (b) {
          long g = b.epoch() * spe + b.step();
          after.add(g);
          assertEquals(byStep.get(g), sums(b));
        }
      }
    }
    List<Long> all = new ArrayList<>(before);
    all.addAll(after);
    Collections.sort(all);
    List<Long> every = new ArrayList<>();
    for (long g = 0; g < 2 * spe; g++) {
      every.add(g);
    }
    assertEquals(every, all, "before and after the checkpoint: every step of both epochs exactly once");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> builder.get().resumeFrom(Checkpoint.parse(bytes)).build().close());
    assertTrue(e.getMessage().contains("substitutable"), e.getMessage());
  }

  /** Checksums of every column of every batch, in order. */
  private static List<List<Long>> checksums(LoaderBuilder builder) throws IOException {
    List<List<Long>> out = new ArrayList<>();
    try (Loader l = builder.build()) {
      for (Batch b : l) {
        try (b) {
          out.add(sums(b));
        }
      }
    }
    return out;
  }

  @Test
  void batchesAssembledOnSeveralThreadsAtOnceAreTheSame() throws IOException {
    // Samples (ranges and, for fixed widths, gathers), shuffled rows, both tiers mixed.
    for (Supplier<LoaderBuilder> mode : List.<Supplier<LoaderBuilder>>of(
        () -> base().sampleBatches(64).seed(5).epochs(2),
        () -> base().rowBatches(700, true).seed(9),
        () -> base().features("amount", "score", "channel", "is_online").rowBatches(512, true).seed(3))) {
      List<List<Long>> one = checksums(mode.get());
      List<List<Long>> three = checksums(mode.get().assemblyThreads(3));
      List<List<Long>> many = checksums(mode.get().assemblyThreads(64));
      assertTrue(one.size() > 10, "batches: " + one.size());
      assertEquals(one, three, "3 assembly threads");
      assertEquals(one, many, "more assembly threads than features");
      assertEquals(one, checksums(mode.get().assemblyThreads(LoaderBuilder.AUTO)), "as many as the loader chooses");
    }
    assertThrows(IllegalArgumentException.class, () -> Loader.builder(dataset).assemblyThreads(-1));
    assertThrows(IllegalArgumentException.class, () -> Loader.builder(dataset).assemblyThreads(257));
  }

  @Test
  void shuffledRowsOrderedAheadOnAThreadOfTheirOwnAreTheSameBatches() throws IOException {
    record Mode(int threads, Supplier<LoaderBuilder> builder) {}
    for (Mode mode : List.of(new Mode(1, () -> base().rowBatches(700, true).seed(9).epochs(2).prefetch(3, 1)),
        new Mode(2, () -> base().rowBatches(512, true).seed(3).epochs(2).prefetch(3, 2)), // two threads taking turns
        new Mode(1, () -> base().rowBatches(600, true).seed(4).shard(1, 3).prefetch(2, 1).assemblyThreads(3)))) { // a rank, parts
      List<List<Long>> inline = withPlanAhead("false", mode.builder());
      long taken = PlanAhead.taken();
      List<List<Long>> ahead = withPlanAhead("true", mode.builder());
      taken = PlanAhead.taken() - taken;
      assertTrue(inline.size() > 20, "batches: " + inline.size());
      assertEquals(inline.size(), ahead.size(), "batches");
      for (int i = 0; i < inline.size(); i++) {
        // The same ids and values whether the batch's order was worked out ahead or not.
        assertTrue(inline.get(i).equals(ahead.get(i)), "batch " + i + " planned ahead differs from the one ordered inline");
      }
      // Every batch but each thread's first was planned: the prefetch threads take their steps in
      // turns, so the step planned is the one the thread makes next, however fast each thread is.
      assertTrue(taken >= ahead.size() - mode.threads() && taken <= ahead.size(),
          mode.threads() + " thread(s): " + taken + " plans taken for " + ahead.size() + " batches");
    }
    try {
      System.setProperty("strata.loader.planAhead", "true");
      try (Loader l = base().rowBatches(700, true).build(); Loader samples = base().sampleBatches(40).build();
          Loader subst = base().rowBatches(700, true).substitutable(true).build()) {
        assertTrue(l.plansAhead());
        assertFalse(samples.plansAhead(), "only single rows are planned ahead");
        assertFalse(subst.plansAhead(), "substitutable reads choose their steps as batches are claimed");
      }
      System.setProperty("strata.loader.planAhead", "false");
      try (Loader l = base().rowBatches(700, true).build()) {
        assertFalse(l.plansAhead());
      }
      System.setProperty("strata.loader.planAhead", "sometimes");
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> base().rowBatches(700, true).build());
      assertTrue(e.getMessage().contains("strata.loader.planAhead must be auto, true or false, got 'sometimes'"), e.getMessage());
    } finally {
      System.clearProperty("strata.loader.planAhead");
    }
  }

  /** Every batch's unit ids and column checksums from {@code mode}'s loader, planning ahead as {@code setting} says. */
  private static List<List<Long>> withPlanAhead(String setting, Supplier<LoaderBuilder> mode) throws IOException {
    System.setProperty("strata.loader.planAhead", setting);
    try (Loader l = mode.get().build()) {
      assertEquals(setting.equals("true"), l.plansAhead());
      List<List<Long>> out = new ArrayList<>();
      for (Batch b : l) {
        try (b) {
          List<Long> x = new ArrayList<>(sums(b));
          for (int k = 0; k < b.units(); k++) {
            x.add(b.unitId(k));
          }
          out.add(x);
        }
      }
      return out;
    } finally {
      System.clearProperty("strata.loader.planAhead");
    }
  }

  @Test
  void shufflesAreDeterministicPerSeedAndDifferPerEpochAndSeed() throws IOException {
    List<List<Long>> a = unitSequence(base().sampleBatches(40).seed(11).epochs(2));
    List<List<Long>> b = unitSequence(base().sampleBatches(40).seed(11).epochs(2).prefetch(1, 1));
    List<List<Long>> c = unitSequence(base().sampleBatches(40).seed(12).epochs(2));
    assertEquals(a, b, "same seed, same batches, whatever the prefetch");
    assertNotEquals(a, c, "another seed, another order");
    int half = a.size() / 2;
    assertNotEquals(a.subList(0, half), a.subList(half, a.size()), "epochs are shuffled differently");
    List<List<Long>> ordered = unitSequence(base().sampleBatches(40).shuffle(false));
    long previous = Long.MIN_VALUE;
    for (List<Long> ids : ordered) {
      for (long id : ids) {
        assertTrue(id > previous, "unshuffled samples come in dataset order");
        previous = id;
      }
    }
  }

  @Test
  void rowBatchesSequentialAndShuffledCoverEveryRowOnce() throws IOException {
    long rows = dataset.rows();
    // Sequential, 2 ranks: rank r reads blocks r, r+2, ... of 1,000 rows.
    for (int rank = 0; rank < 2; rank++) {
      try (Loader loader = base().rowBatches(1_000, false).shard(rank, 2).build()) {
        long expectedStart = rank * 1_000L;
        for (Batch b : loader) {
          try (b) {
            int count = (int) Math.min(1_000, rows - expectedStart);
            assertBatchMatchesReference(b, List.<long[]>of(new long[] {expectedStart, count}));
            expectedStart += 2_000;
          }
        }
        assertTrue(expectedStart >= rows);
      }
    }
    // Shuffled single rows, 4 ranks: a partition of all rows.
    boolean[] seen = new boolean[(int) rows];
    for (int rank = 0; rank < 4; rank++) {
      try (Loader loader = base().rowBatches(512, true).seed(5).shard(rank, 4).build()) {
        for (Batch b : loader) {
          try (b) {
            List<long[]> units = new ArrayList<>();
            for (int k = 0; k < b.units(); k++) {
              long row = b.unitId(k);
              assertFalse(seen[(int) row], "row " + row + " twice");
              seen[(int) row] = true;
              units.add(new long[] {row, 1});
            }
            assertBatchMatchesReference(b, units);
          }
        }
      }
    }
    for (int r = 0; r < rows; r++) {
      assertTrue(seen[r], "row " + r + " never read");
    }
  }

  @Test
  void aBatchNeverClosedIsReportedWhenCollected() throws Exception {
    long before = Batch.unclosedBatches();
    try (Loader loader = base().rowBatches(1_000, false).build()) {
      loader.next().close();
      loader.next(); // dropped without close()
      long deadline = System.nanoTime() + 20_000_000_000L;
      while (Batch.unclosedBatches() == before && System.nanoTime() < deadline) {
        System.gc();
        Thread.sleep(20);
      }
    }
    assertTrue(Batch.unclosedBatches() > before, "the unclosed batch was reported");
  }

  @Test
  void shuffledSingleRowsOfResidentFixedWidthFeaturesAreGatheredExactly() throws IOException {
    // Every fixed-width type, nulls (score) and bit-packed bools included, resident in every chunk:
    // the loader gathers each feature's rows in one pass (ColumnBuilder.appendGathered).
    gatheredExactly(List.of("sample_id", "event_time", "amount", "is_online", "balance", "score", "event_date", "channel"),
        8 + 8 + 8 + 1 + 16 + 4 + 4 + 1, "ssd-fixed");
  }

  @Test
  void shuffledSingleRowsOfFeaturesOfOneToEightBytesAreGatheredInOnePassExactly() throws IOException {
    // Only values of 8 and 4 bytes (nulls in score): one loop copies every feature of a run (FusedGather).
    gatheredExactly(List.of("sample_id", "event_time", "amount", "score", "event_date"), 8 + 8 + 8 + 4 + 4, "ssd-fused");
  }

  private void gatheredExactly(List<String> fixed, int widths, String ssd) throws IOException {
    try (SegmentStore full = SegmentStore.open(tmp.resolve(ssd), false, SegmentFile.Verify.FIRST_OPEN)) {
      Promoter.promote(dataset, full, fixed, null, Progress.NONE);
      long nulls = 0;
      long rows = 0;
      try (Loader loader = Loader.builder(dataset).features(fixed).segments(full).rowBatches(777, true).seed(3)
          .prefetch(2, 2).build()) {
        for (Batch b : loader) {
          try (b) {
            List<long[]> units = new ArrayList<>();
            for (int k = 0; k < b.units(); k++) {
              units.add(new long[] {b.unitId(k), 1});
            }
            assertBatchMatchesReference(b, units, fixed);
            nulls += b.column("score").nullCount();
            rows += b.rows();
          }
        }
        assertEquals(dataset.rows(), rows);
        assertTrue(nulls > 0, "the test data has nulls in score");
        assertEquals(0, loader.tierStats().bytes(Tier.HDD));
        assertEquals(rows * widths, loader.tierStats().bytes(Tier.SSD));
      }
    }
  }

  @Test
  void windowsStayInsideTheirEntityAndCoverEveryValidStart() throws IOException {
    int length = 8;
    int lookahead = 2;
    int stride = 3;
    SampleIndex index = dataset.sampleIndex().orElseThrow();
    // Reference: every window start, enumerated entity by entity from the reference's sample ids.
    Map<Long, long[]> samples = samplesFromReference();
    Set<Long> expectedStarts = new HashSet<>();
    for (long[] range : samples.values()) {
      for (long s = range[0]; s + length + lookahead <= range[0] + range[1]; s += stride) {
        expectedStarts.add(s);
      }
    }
    Set<Long> starts = new HashSet<>();
    try (Loader loader = base().windows(length, lookahead, stride, 64).seed(2).build()) {
      for (Batch b : loader) {
        try (b) {
          assertEquals(length, b.windowLength());
          assertEquals(lookahead, b.lookahead());
          Column ids = b.column("sample_id");
          List<long[]> units = new ArrayList<>();
          for (int k = 0; k < b.units(); k++) {
            int at = b.unitStart(k);
            long entity = ids.getLong(at);
            for (int r = 0; r < length + lookahead; r++) {
              assertEquals(entity, ids.getLong(at + r), "a window never crosses its entity");
            }
            long start = index.start(index.find(entity)) + 0L;
            long[] range = samples.get(entity);
            assertEquals(range[0], start);
            // The window's first row: locate it in the reference by event_time within the entity.
            Object firstTime = b.column("event_time").getObject(at);
            long row = -1;
            for (long r = range[0]; r < range[0] + range[1]; r++) {
              if (reference.get("event_time", r).equals(firstTime)) {
                row = r;
              }
            }
            assertTrue(row >= 0);
            assertTrue(starts.add(row), "window starting at row " + row + " read twice");
            assertEquals(0, (row - range[0]) % stride, "windows start every " + stride + " rows");
            assertTrue(row + length + lookahead <= range[0] + range[1], "lookahead stays inside the entity");
            units.add(new long[] {row, length + lookahead});
          }
          assertBatchMatchesReference(b, units);
        }
      }
    }
    assertEquals(expectedStarts, starts);
  }

  @Test
  void resumingFromAnyCheckpointContinuesWithTheNextBatch() throws IOException {
    List<List<Long>> full = unitSequence(base().sampleBatches(64).seed(21).epochs(2));
    int[] cuts = {0, 1, full.size() / 2, full.size() - 1, full.size()};
    for (int cut : cuts) {
      Checkpoint cp;
      try (Loader loader = base().sampleBatches(64).seed(21).epochs(2).build()) {
        cp = loader.position();
        for (int i = 0; i < cut; i++) {
          try (Batch b = loader.next()) {
            cp = b.checkpoint();
          }
        }
      }
      Checkpoint restored = Checkpoint.parse(cp.toBytes());
      assertEquals(cp, restored);
      List<List<Long>> rest = unitSequence(base().sampleBatches(64).seed(21).epochs(2).resumeFrom(restored));
      assertEquals(full.subList(cut, full.size()), rest, "resume after " + cut + " batches");
    }
    Checkpoint other;
    try (Loader loader = base().sampleBatches(64).seed(22).build()) {
      other = loader.position();
    }
    assertThrows(IllegalArgumentException.class, () -> base().sampleBatches(64).seed(21).resumeFrom(other).build());
    assertThrows(IllegalArgumentException.class, () -> Checkpoint.parse(new byte[5]));
  }

  @Test
  void aRestartedLoaderServesCachedBatchesFirstAndTheyAreIdentical() throws IOException {
    Path cacheRoot = tmp.resolve("batch-cache");
    List<Map<String, List<Object>>> original = new ArrayList<>();
    Checkpoint cp;
    try (Loader loader = base().sampleBatches(32).seed(8).batchCache(cacheRoot).prefetch(4, 1).build()) {
      for (int i = 0; i < 3; i++) {
        try (Batch b = loader.next()) {
          cp = b.checkpoint();
        }
      }
      // Let the prefetcher fill the cache ahead of the consumer.
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (loader.batchesAssembled() < 7 && System.nanoTime() < deadline) {
        Thread.onSpinWait();
      }
      cp = loader.position();
    }
    // The uninterrupted sequence, without any cache.
    try (Loader loader = base().sampleBatches(32).seed(8).resumeFrom(cp).build()) {
      for (int i = 0; i < 4; i++) {
        try (Batch b = loader.next()) {
          original.add(values(b));
        }
      }
    }
    try (Loader loader = base().sampleBatches(32).seed(8).batchCache(cacheRoot).resumeFrom(cp).build()) {
      for (int i = 0; i < 4; i++) {
        try (Batch b = loader.next()) {
          assertEquals(Batch.Source.CACHE, b.source(), "batch " + i + " comes from the cache");
          assertEquals(original.get(i).keySet(), values(b).keySet());
          for (String f : FEATURES) {
            List<Object> want = original.get(i).get(f);
            List<Object> got = values(b).get(f);
            for (int r = 0; r < want.size(); r++) {
              assertTrue(TestData.same(want.get(r), got.get(r)), f + " row " + r);
            }
          }
        }
      }
      assertEquals(4, loader.batchesFromCache());
    }
  }

  @Test
  void damagedOrForeignCacheFilesAreIgnoredAndCleaned() throws IOException {
    Path cacheRoot = tmp.resolve("batch-cache-2");
    Checkpoint start;
    Path dir;
    try (Loader loader = base().sampleBatches(32).seed(4).batchCache(cacheRoot).prefetch(3, 1).build()) {
      start = loader.position();
      dir = loader.batchCacheDirectory();
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (loader.batchesAssembled() < 3 && System.nanoTime() < deadline) {
        Thread.onSpinWait();
      }
    }
    List<Path> files;
    try (Stream<Path> s = Files.list(dir)) {
      files = s.sorted().toList();
    }
    assertTrue(files.size() >= 2, "cached: " + files);
    byte[] bytes = Files.readAllBytes(files.getFirst());
    bytes[bytes.length / 2] ^= 1;
    Files.write(files.getFirst(), bytes);
    Files.writeString(dir.resolve("not-a-batch.txt"), "junk");
    Path stale = Files.createDirectories(cacheRoot.resolve("otherjob"));
    Files.writeString(stale.resolve("b000000000000.arrow"), "old");
    Files.setLastModifiedTime(stale, FileTime.fromMillis(0));
    // A link planted as another job's stale directory, naming a directory older than a day: its
    // files are never deleted (only the link goes).
    Path victim = Files.createDirectories(tmp.resolve("victim"));
    Files.writeString(victim.resolve("precious"), "keep");
    Files.setLastModifiedTime(victim, FileTime.fromMillis(0));
    Path planted = Files.createSymbolicLink(cacheRoot.resolve("plantedjob"), victim);
    List<List<Long>> expected = unitSequence(base().sampleBatches(32).seed(4).resumeFrom(start));
    List<List<Long>> got = new ArrayList<>();
    try (Loader loader = base().sampleBatches(32).seed(4).batchCache(cacheRoot).resumeFrom(start)
        .batchCacheLimits(1L << 30, 2, Duration.ofHours(1)).build()) {
      for (Batch b : loader) {
        try (b) {
          if (got.isEmpty()) {
            assertEquals(Batch.Source.ASSEMBLED, b.source(), "the damaged first batch is re-assembled");
          }
          List<Long> ids = new ArrayList<>();
          for (int k = 0; k < b.units(); k++) {
            ids.add(b.unitId(k));
          }
          got.add(ids);
        }
      }
    }
    assertEquals(expected, got);
    assertFalse(Files.exists(dir.resolve("not-a-batch.txt")));
    assertFalse(Files.exists(stale), "another job's stale directory is cleaned");
    assertEquals("keep", Files.readString(victim.resolve("precious")), "the clean-up never follows a link");
    assertTrue(Files.isSymbolicLink(planted) || !Files.exists(planted, LinkOption.NOFOLLOW_LINKS));
  }

  @Test
  void aBatchCacheRootOthersCanWriteIsRefusedAndNothingInItTouched() throws IOException {
    Path open = Files.createDirectories(tmp.resolve("world-writable-cache"));
    Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rwxrwxrwx"));
    Path old = Files.createDirectories(open.resolve("someone-elses"));
    Files.writeString(old.resolve("b000000000000.arrow"), "theirs");
    Files.setLastModifiedTime(old, FileTime.fromMillis(0));
    IOException e = assertThrows(IOException.class, () -> base().sampleBatches(32).seed(4).batchCache(open).build());
    assertTrue(e.getMessage().contains("refusing " + open + ": it is writable by others"), e.getMessage());
    assertEquals("theirs", Files.readString(old.resolve("b000000000000.arrow")));
  }

  @Test
  void prefetchIsBoundedAndRunsOnNamedThreads() throws Exception {
    try (Loader loader = base().sampleBatches(16).prefetch(2, 2).name("bounded").build()) {
      Thread.sleep(500);
      assertTrue(loader.batchesAssembled() <= 2, "at most the prefetch depth ahead: " + loader.batchesAssembled());
      boolean named = Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().startsWith("strata-prefetch-bounded-"));
      assertTrue(named);
      try (Batch b = loader.next()) {
        assertEquals(0, b.step());
      }
    }
  }

  @Test
  void everyReadIsCountedPerTier() throws IOException {
    try (Loader loader = base().sampleBatches(64).seed(1).build()) {
      for (Batch b : loader) {
        b.close();
      }
      TierStats s = loader.tierStats();
      assertTrue(s.bytes(Tier.SSD) > 0 && s.bytes(Tier.HDD) > 0, s.toString());
      assertTrue(s.reads(Tier.SSD) > 0 && s.nanos(Tier.HDD) > 0);
    }
  }

  @Test
  void aClosedBatchRefusesAccess() throws IOException {
    try (Loader loader = base().sampleBatches(8).build()) {
      Batch b = loader.next();
      Column c = b.column("amount");
      b.close();
      assertThrows(IllegalStateException.class, () -> c.getDouble(0));
      assertThrows(IllegalStateException.class, c::values); // at once, though its memory is freed a few batches later
      assertThrows(IllegalStateException.class, () -> c.slice(0, 1));
      assertThrows(IllegalStateException.class, () -> b.column("amount"));
      Batch next = loader.next();
      assertEquals(1, next.step());
      next.close();
    }
  }

  @Test
  void badConfigurationsAreRejectedClearly() throws IOException {
    assertThrows(IllegalArgumentException.class, () -> base().sampleBatches(0).build());
    assertThrows(IllegalArgumentException.class, () -> base().shard(3, 3).build());
    assertThrows(IllegalArgumentException.class, () -> base().features("nope").build());
    assertThrows(IllegalArgumentException.class, () -> base().rowBatches(100, true).shuffleBlock(30).build());
    assertThrows(IllegalArgumentException.class, () -> base().epochs(0));
    try (Loader loader = base().sampleBatches(1_000_000).dropLast(true).build()) {
      assertNull(loader.next(), "no full batch: nothing to read");
    }
  }

  @Test
  void aBatchIsAnArrowFileThatArrowJsReads() throws Exception {
    Path file = tmp.resolve("batch.arrow");
    Map<String, List<Object>> want;
    try (Loader loader = base().sampleBatches(20).seed(6).build(); Batch b = loader.next()) {
      b.writeArrowFile(file, dataset.name(), dataset.version());
      want = values(b);
    }
    var doc = ArrowJs.read(List.of(file)).getFirst();
    assertEquals("0", doc.get("metadata").get("strata.batch.epoch").asText());
    for (String f : FEATURES) {
      ArrowJs.assertValues(dataset.feature(f).type(), want.get(f), doc.get("columns").get(f).get("values"), f);
    }
  }

  private static Map<String, List<Object>> values(Batch b) {
    Map<String, List<Object>> out = new HashMap<>();
    for (String f : b.featureNames()) {
      Column c = b.column(f);
      List<Object> v = new ArrayList<>();
      for (int r = 0; r < c.length(); r++) {
        v.add(c.getObject(r));
      }
      out.put(f, v);
    }
    return out;
  }
}
