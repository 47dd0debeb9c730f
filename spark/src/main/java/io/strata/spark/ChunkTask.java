package io.strata.spark;

import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.derive.Derivation;
import io.strata.sdk.derive.Spec;
import io.strata.sdk.files.Locations;
import io.strata.store.Staging;
import java.io.IOException;
import java.io.Serializable;
import java.lang.foreign.Arena;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.Optional;

/**
 * One task of the promotion job: chunk {@code chunk} of one derived feature, computed by the SDK's
 * evaluator from the inputs' one stripe or row group (the columns the spec reads, nothing else) and
 * staged as a file ({@link Staging#writeChunk}: atomic, named by fingerprint and chunk).
 *
 * <p>Idempotent: a chunk already staged whole is not computed again (a retried task, a rerun job),
 * and a chunk computed twice is the same bytes. A dataset whose version is not the one the driver
 * planned with fails the task by name instead of staging a chunk of another version.
 *
 * <p>Threads: a task runs on one executor thread; tasks of one executor share the datasets they
 * opened (a concurrent map of thread-safe datasets), and write distinct files of the staging
 * directory.
 *
 * @param dataset the dataset's location (a directory, {@code hdfs://} or {@code s3://})
 * @param version the dataset version the driver planned with
 * @param spec the derived feature
 * @param fingerprint its fingerprint
 * @param chunk the chunk to compute
 * @param statistics the dataset-wide statistics every chunk uses
 * @param staging the staging directory, on a file system every executor sees
 */
record ChunkTask(String dataset, String version, String spec, String fingerprint, int chunk,
    HashMap<String, double[]> statistics, String staging) implements Serializable {
  private static final long serialVersionUID = 1L;

  /** What a task did: the staged chunk, the CPU seconds computing it took, and whether it computed it. */
  record Done(int chunk, long bytes, int crc32c, double cpuSeconds, boolean computed) implements Serializable {
    private static final long serialVersionUID = 1L;

    Staging.Chunk staged() {
      return new Staging.Chunk(chunk, bytes, crc32c, cpuSeconds);
    }
  }

  /** Runs the task (on an executor). */
  Done run() throws IOException {
    // The task's whole CPU time is counted (opening the dataset, computing, staging), as the
    // chunk's cost; a chunk staged already costs only its check.
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long t0 = threads.getCurrentThreadCpuTime();
    Path dir = Path.of(staging);
    Optional<Staging.Chunk> have = Staging.chunk(dir, fingerprint, chunk);
    if (have.isPresent()) {
      Staging.Chunk c = have.get();
      return new Done(chunk, c.bytes(), c.crc32c(), (threads.getCurrentThreadCpuTime() - t0) / 1e9, false);
    }
    Dataset ds = dataset(dataset, version);
    Derivation d = Derivation.of(Spec.parse(spec), ds);
    try (Arena arena = Arena.ofConfined()) {
      Column column = d.computeChunk(chunk, new Derivation.Statistics(statistics), Derivation.SourceReader.orc(ds), arena);
      byte[] payload = Staging.encode(column);
      double seconds = (threads.getCurrentThreadCpuTime() - t0) / 1e9;
      Staging.Chunk c = Staging.writeChunk(dir, fingerprint, chunk, payload, seconds);
      return new Done(chunk, c.bytes(), c.crc32c(), (threads.getCurrentThreadCpuTime() - t0) / 1e9, true);
    }
  }

  /**
   * Datasets this executor opened, by location: its tasks of one job share one open dataset (a
   * Dataset is thread-safe) instead of reading the manifest and opening the files once per chunk.
   * They stay open for the executor's life, which is the application's.
   */
  private static final ConcurrentHashMap<String, Dataset> OPEN = new ConcurrentHashMap<>();

  /** The dataset at {@code location}, at {@code version} (else the task fails naming both). */
  private static Dataset dataset(String location, String version) throws IOException {
    Dataset ds = OPEN.get(location);
    if (ds == null || !ds.version().equals(version)) {
      Dataset opened = Dataset.open(Locations.dataset(location));
      if (!opened.version().equals(version)) {
        String now = opened.version();
        opened.close();
        throw new IOException("dataset " + location + " is at version " + now + ", the job was planned on " + version
            + ": run the job again");
      }
      // One it replaces may still be read by a running task: it is left open to the executor's end.
      OPEN.put(location, opened);
      ds = opened;
    }
    return ds;
  }
}
