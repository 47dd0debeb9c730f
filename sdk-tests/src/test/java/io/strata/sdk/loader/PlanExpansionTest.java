package io.strata.sdk.loader;

import io.strata.sdk.SegmentLease;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.tier.SegmentSource;
import io.strata.sdk.tier.Tier;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.tools.DatasetGenerator;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The node's expansion of a plan program equals, read for read, what the loader then reads: for
 * every batch, the set of (feature, chunk) reads it makes, in every batching mode, shuffled and
 * not, sharded, resumed mid-epoch, with several prefetch threads.
 */
class PlanExpansionTest {
  @TempDir static Path tmp;
  static Dataset dataset;
  static final List<String> FEATURES = List.of("amount", "embedding", "score");

  @BeforeAll
  static void generate() throws IOException {
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(dir,
        DatasetGenerator.Options.of("events", 20_000, 5).withFeatures(12).withChunking(3_000, 2).withMeanSampleLength(20),
        Progress.NONE);
    dataset = Dataset.open(dir);
  }

  @AfterAll
  static void close() throws IOException {
    dataset.close();
  }

  /** Records which feature chunks each batch reads; nothing is resident (every read is ORC). */
  static final class Recorder implements SegmentSource {
    final Map<Long, Set<String>> reads = new ConcurrentHashMap<>();
    private final ThreadLocal<Long> current = new ThreadLocal<>();

    @Override
    public SegmentLease lease(Dataset ds, String feature, int chunk) {
      return null;
    }

    @Override
    public long generation() {
      return 0;
    }

    @Override
    public void step(long step) {
      current.set(step);
      reads.computeIfAbsent(step, s -> ConcurrentHashMap.newKeySet());
    }

    @Override
    public void read(Dataset ds, String feature, int chunk, long bytes, Tier tier) {
      reads.get(current.get()).add(feature + "/" + chunk);
    }
  }

  private static LoaderBuilder base(Recorder r) {
    return Loader.builder(dataset).features(FEATURES).segments(r).prefetch(3, 2).epochs(2);
  }

  /** Runs {@code loader} to its end and checks its reads against its own program's expansion. */
  private static int check(String name, LoaderBuilder builder, Recorder r) throws IOException {
    PlanProgram program;
    try (Loader loader = builder.build()) {
      program = loader.planProgram();
      for (Batch b : loader) {
        b.close();
      }
    }
    int[][] steps = program.expand(dataset, Long.MAX_VALUE);
    Map<Long, Set<String>> expected = new TreeMap<>();
    for (int i = 0; i < steps.length; i++) {
      Set<String> s = new TreeSet<>();
      for (int c : steps[i]) {
        for (String f : FEATURES) {
          s.add(f + "/" + c);
        }
      }
      expected.put(program.startStep() + i, s);
    }
    Map<Long, Set<String>> actual = new TreeMap<>();
    r.reads.forEach((k, v) -> actual.put(k, new TreeSet<>(v)));
    assertEquals(expected.keySet(), actual.keySet(), name + ": the steps read");
    for (Long g : expected.keySet()) {
      assertEquals(expected.get(g), actual.get(g), name + ": the feature chunks of step " + g);
    }
    return steps.length;
  }

  @Test
  void everyBatchingModeReadsExactlyWhatItsPlanSays() throws IOException {
    List<Object[]> cases = new ArrayList<>();
    cases.add(new Object[] {"samples shuffled", (UnaryOperator<LoaderBuilder>) b -> b.sampleBatches(32).seed(4)});
    cases.add(new Object[] {"samples in order", (UnaryOperator<LoaderBuilder>) b -> b.sampleBatches(32).shuffle(false)});
    cases.add(new Object[] {"rows shuffled", (UnaryOperator<LoaderBuilder>) b -> b.rowBatches(256, true).seed(9)});
    cases.add(new Object[] {"rows in order", (UnaryOperator<LoaderBuilder>) b -> b.rowBatches(1000, false)});
    cases.add(new Object[] {"row blocks shuffled", (UnaryOperator<LoaderBuilder>) b -> b.rowBatches(500, true).shuffleBlock(100)});
    cases.add(new Object[] {"windows shuffled", (UnaryOperator<LoaderBuilder>) b -> b.windows(8, 2, 4, 64).seed(5)});
    cases.add(new Object[] {"rows shuffled in blocks of 2 chunks",
        (UnaryOperator<LoaderBuilder>) b -> b.rowBatches(256, true).shuffleChunks(2).seed(6)});
    cases.add(new Object[] {"samples shuffled within each chunk, sharded",
        (UnaryOperator<LoaderBuilder>) b -> b.sampleBatches(16).shuffleChunks(1).shard(0, 2).seed(2)});
    cases.add(new Object[] {"samples sharded, last dropped",
        (UnaryOperator<LoaderBuilder>) b -> b.sampleBatches(30).shard(1, 3).dropLast(true).seed(8)});
    for (Object[] c : cases) {
      @SuppressWarnings("unchecked")
      UnaryOperator<LoaderBuilder> how = (UnaryOperator<LoaderBuilder>) c[1];
      Recorder r = new Recorder();
      int steps = check((String) c[0], how.apply(base(r)), r);
      assertTrue(steps > 2, c[0] + ": " + steps + " steps");
    }
  }

  @Test
  void aResumedLoaderDeclaresAndReadsFromItsCheckpoint() throws IOException {
    Checkpoint cp;
    long stepsPerEpoch;
    try (Loader loader = base(new Recorder()).sampleBatches(25).seed(13).build()) {
      stepsPerEpoch = loader.planProgram().stepsPerEpoch(dataset);
      Batch b = null;
      for (int i = 0; i < stepsPerEpoch + stepsPerEpoch / 2; i++) {
        b = loader.next();
        if (i < stepsPerEpoch + stepsPerEpoch / 2 - 1) {
          b.close();
        }
      }
      cp = b.checkpoint();
      b.close();
    }
    Recorder r = new Recorder();
    LoaderBuilder resumed = base(r).sampleBatches(25).seed(13).resumeFrom(cp);
    int steps = check("resumed", resumed, r);
    assertEquals(2 * stepsPerEpoch - (stepsPerEpoch + stepsPerEpoch / 2), steps);
    assertEquals(stepsPerEpoch + stepsPerEpoch / 2, r.reads.keySet().stream().mapToLong(Long::longValue).min().orElseThrow());
  }

  @Test
  void theProgramSurvivesTheWireAndIsSmall() throws IOException {
    try (Loader loader = base(new Recorder()).windows(8, 2, 4, 64).seed(-3).build()) {
      PlanProgram p = loader.planProgram();
      assertEquals(p, PlanProgram.fromJson(p.toJson()));
    }
    try (Loader loader = base(new Recorder()).rowBatches(64, true).shuffleChunks(3).build()) {
      PlanProgram p = loader.planProgram();
      assertEquals(3, p.shuffleChunks());
      assertEquals(p, PlanProgram.fromJson(p.toJson()), "the shuffle's blocks travel with the program");
      assertTrue(p.toJson().toString().length() < 400, p.toJson().toString());
    }
    var bad = new PlanProgram(BatchMode.ROWS, 4, 1, 0, 0, 0, 1, true, 0, 1, false, 1, 0).toJson().put("algorithm", "other-v9");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PlanProgram.fromJson(bad));
    assertTrue(e.getMessage().contains("plan algorithm 'other-v9'"), e.getMessage());
    var noSeed = new PlanProgram(BatchMode.ROWS, 4, 1, 0, 0, 0, 1, true, 0, 1, false, 1, 0).toJson().put("seed", "x");
    assertThrows(IllegalArgumentException.class, () -> PlanProgram.fromJson(noSeed));
    assertThrows(IllegalArgumentException.class, () -> new PlanProgram(BatchMode.ROWS, 4, 1, 0, 0, 0, 1, true, 0, 1, false, 1, 0)
        .expand(dataset, 10));
  }
}
