package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.format.Columns;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.derive.Derivation;
import io.strata.sdk.derive.Spec;
import io.strata.store.FeatureMeta;
import io.strata.store.FeatureStore;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The feature-promotion job is killed with SIGKILL while it materializes: the store opens
 * cleanly, the partial feature is never served, and the job resumes where it stopped.
 */
class MaterializeKillIT {
  @TempDir Path tmp;
  static final String SPEC = "zscore(seq_mean(log1p(amount), last=64))";

  @Test
  void killedMaterializationResumesAndNeverServesAPartialFeature() throws Exception {
    Path ds = tmp.resolve("events");
    Path store = tmp.resolve("features");
    assertEquals(0, Cli.run("dataset", "generate", "--out", ds.toString(), "--rows", "3000000", "--features", "10",
        "--rows-per-chunk", "200000", "--seed", "12").code());
    // An empty store (listing one no longer creates it): the jobs record their on-the-fly work there.
    FeatureStore.openWriter(store).close();
    assertEquals(0, Cli.run("features", "list", "--store", store.toString()).code());
    // Two jobs compute the feature on the fly: that is what the promotion job reads.
    for (int j = 0; j < 2; j++) {
      Cli.Result r = Cli.fork("1g", "loader", "run", "--dataset", ds.toString(), "--features", "amount," + SPEC,
          "--feature-store", store.toString(), "--mode", "rows", "--no-shuffle", "--batch", "65536", "--max-batches", "8");
      assertEquals(0, r.code(), r.err());
    }
    Process job = Processes.spawn(List.of("-Xmx1g"),
        List.of("features", "promote", "--store", store.toString(), "--budget", "1g"), tmp.resolve("promote-1.log"));
    int doneAtKill;
    try (FeatureStore reader = FeatureStore.openReader(store)) {
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
      while (true) {
        List<FeatureMeta> all = reader.list();
        if (!all.isEmpty() && all.getFirst().done() >= 3) {
          break;
        }
        assertTrue(job.isAlive(), "the promotion job finished before the kill: " + Files.readString(tmp.resolve("promote-1.log")));
        assertTrue(System.nanoTime() < deadline, "no progress");
        Thread.sleep(20);
      }
    }
    job.destroyForcibly();
    assertTrue(job.waitFor(30, TimeUnit.SECONDS));
    assertEquals(137, job.exitValue());

    String fp;
    try (FeatureStore fs = FeatureStore.openWriter(store); Dataset d = Dataset.open(ds)) {
      FeatureMeta m = fs.list().getFirst();
      fp = m.fingerprint();
      doneAtKill = m.done();
      assertFalse(m.complete(), "killed before the end: " + m.done() + " of " + m.chunks());
      assertTrue(fs.lookup(d.name(), d.version(), Spec.parse(SPEC).canonical()).isEmpty(), "the partial feature is not served");
      IOException e = assertThrows(IOException.class, () -> fs.chunk(fp, 0, Arena.ofAuto()));
      assertTrue(e.getMessage().contains("not complete"), e.getMessage());
    }
    Cli.Result resumed = Cli.fork("1g", "features", "promote", "--store", store.toString(), "--budget", "1g");
    assertEquals(0, resumed.code(), resumed.err());
    assertTrue(resumed.out().contains("resumed at chunk " + doneAtKill), resumed.out());
    // The resumed feature equals a computation that was never interrupted.
    try (FeatureStore fs = FeatureStore.openWriter(store); Dataset d = Dataset.open(ds)) {
      FeatureMeta m = fs.meta(fp).orElseThrow();
      assertTrue(m.complete());
      Derivation der = Derivation.of(Spec.parse(SPEC), d);
      Derivation.SourceReader orc = (features, first, count, arena) -> d.table().readRows(first, count, features, arena);
      Derivation.Statistics stats = der.statistics(orc);
      for (int c = 0; c < m.chunks(); c++) {
        try (Arena arena = Arena.ofConfined()) {
          assertEquals(Columns.checksum(der.computeChunk(c, stats, orc, arena)), Columns.checksum(fs.chunk(fp, c, arena)), "chunk " + c);
        }
      }
      System.out.printf("materialization killed after %d of %d chunks, resumed and completed byte-identical%n", doneAtKill, m.chunks());
    }
  }
}
