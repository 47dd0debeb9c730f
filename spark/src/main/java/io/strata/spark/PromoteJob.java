package io.strata.spark;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.derive.Derivation;
import io.strata.sdk.derive.Spec;
import io.strata.sdk.files.Locations;
import io.strata.sdk.internal.Json;
import io.strata.store.Staging;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The feature-promotion batch job on Spark: materializes derived features as staged chunks on a
 * file system every host sees, for the nodes' feature stores to ingest ({@link Staging}).
 *
 * <p>The driver plans: for each feature it opens the dataset, takes the fingerprint it was given
 * (or computes it from the source columns' checksums), stops at once if the feature is staged
 * complete, computes the dataset-wide statistics once (or reads the ones a killed run staged) and
 * keeps every chunk already staged whole. Each remaining chunk is one task ({@link ChunkTask}),
 * retried by Spark where an executor dies; the feature's {@code feature.json} is written only when
 * every chunk is there, so a feature half staged is never ingested, and a rerun computes only what
 * is missing.
 *
 * <p>Run it with {@code spark-submit --class io.strata.spark.PromoteJob strata-spark.jar --staging
 * DIR --feature DATASET SPEC FINGERPRINT|- ...}, or through {@code strata features promote
 * --spark MASTER}. It prints one JSON line per feature on standard output (Spark logs on standard
 * error).
 *
 * <p>Threads: the driver plans and waits on its calling thread; Spark runs the tasks.
 */
public final class PromoteJob {
  private PromoteJob() {}

  /** A feature to promote: the dataset's location, the spec, and the fingerprint when the caller knows it (else null). */
  public record Request(String dataset, String spec, String fingerprint) {}

  /**
   * What the job did for one feature.
   *
   * @param computed chunks computed by this run's tasks
   * @param skipped chunks found staged whole already (by an earlier run, or a retried task)
   * @param taskCpuSeconds CPU seconds the tasks spent computing chunks
   * @param driverCpuSeconds CPU seconds the driver spent on checksums and statistics
   */
  public record Outcome(String fingerprint, String spec, String dataset, int chunks, int computed, int skipped,
      boolean alreadyStaged, double taskCpuSeconds, double driverCpuSeconds, long bytes) {
    ObjectNode toJson() {
      return Json.object().put("fingerprint", fingerprint).put("spec", spec).put("dataset", dataset).put("chunks", chunks)
          .put("computed", computed).put("skipped", skipped).put("alreadyStaged", alreadyStaged)
          .put("taskCpuSeconds", taskCpuSeconds).put("driverCpuSeconds", driverCpuSeconds).put("bytes", bytes);
    }
  }

  /**
   * Promotes {@code features} into {@code staging} (a directory every host mounts; a URI such as
   * {@code hdfs://} or {@code s3://} is refused: Strata only reads those) on {@code sc}'s cluster.
   */
  public static List<Outcome> run(JavaSparkContext sc, String staging, List<Request> features) throws IOException {
    if (staging.matches("^[a-zA-Z][a-zA-Z0-9+.-]*://.*")) {
      throw new IllegalArgumentException("staging " + staging + ": Strata stages on a file system every host mounts, "
          + "not at a URI (it only reads from hdfs:// and s3://)");
    }
    Path root = Path.of(staging).toAbsolutePath();
    Files.createDirectories(root);
    List<Outcome> out = new ArrayList<>();
    for (Request r : features) {
      out.add(promote(sc, root, r));
    }
    return out;
  }

  private static Outcome promote(JavaSparkContext sc, Path staging, Request r) throws IOException {
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long t0 = threads.getCurrentThreadCpuTime();
    try (Dataset ds = Dataset.open(Locations.dataset(r.dataset()))) {
      Derivation d = Derivation.of(Spec.parse(r.spec()), ds);
      Derivation.SourceReader reader = Derivation.SourceReader.orc(ds);
      String fp = r.fingerprint();
      if (fp == null) {
        Map<String, Long> sums = new HashMap<>();
        for (String s : d.spec().sources()) {
          sums.put(s, Derivation.columnChecksum(ds, s, reader));
        }
        fp = d.fingerprint(sums);
      }
      int chunks = ds.chunks().size();
      Optional<Staging.Feature> staged = Staging.feature(staging, fp);
      if (staged.isPresent()) {
        return new Outcome(fp, d.spec().canonical(), ds.name(), chunks, 0, chunks, true, 0,
            (threads.getCurrentThreadCpuTime() - t0) / 1e9, staged.get().bytes());
      }
      Map<String, double[]> stats = Staging.statistics(staging, fp).orElse(null);
      if (stats == null) {
        stats = d.statistics(reader).values();
        Staging.writeStatistics(staging, fp, stats);
      }
      List<ChunkTask.Done> done = new ArrayList<>();
      List<ChunkTask> tasks = new ArrayList<>();
      for (int c = 0; c < chunks; c++) {
        Optional<Staging.Chunk> have = Staging.chunk(staging, fp, c);
        if (have.isPresent()) {
          Staging.Chunk h = have.get();
          done.add(new ChunkTask.Done(c, h.bytes(), h.crc32c(), 0, false));
        } else {
          tasks.add(new ChunkTask(r.dataset(), ds.version(), d.spec().canonical(), fp, c, new HashMap<>(stats),
              staging.toString()));
        }
      }
      double driverSeconds = (threads.getCurrentThreadCpuTime() - t0) / 1e9;
      if (!tasks.isEmpty()) {
        sc.setJobDescription("strata: " + d.spec().canonical() + " of " + ds.name() + " (" + tasks.size() + " chunks)");
        done.addAll(sc.parallelize(tasks, tasks.size()).map(ChunkTask::run).collect());
      }
      done.sort(Comparator.comparingInt(ChunkTask.Done::chunk));
      List<Staging.Chunk> list = new ArrayList<>();
      for (ChunkTask.Done x : done) {
        if (x.chunk() != list.size()) {
          throw new IOException("feature " + fp + ": chunk " + list.size() + " was not staged");
        }
        list.add(x.staged());
      }
      Staging.Feature f = new Staging.Feature(fp, d.spec().canonical(), ds.name(), ds.directory().toString(), ds.version(),
          d.type().toString(), stats, list);
      Staging.complete(staging, f);
      int computed = (int) done.stream().filter(ChunkTask.Done::computed).count();
      return new Outcome(fp, d.spec().canonical(), ds.name(), chunks, computed, chunks - computed, false,
          done.stream().mapToDouble(ChunkTask.Done::cpuSeconds).sum(), driverSeconds, f.bytes());
    }
  }

  /** Parses {@code --staging DIR --feature DATASET SPEC FINGERPRINT|- ...}; null after printing a usage error. */
  static List<Request> parse(String[] args, String[] staging, PrintStream err) {
    List<Request> features = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--staging") && i + 1 < args.length) {
        staging[0] = args[++i];
      } else if (args[i].equals("--feature") && i + 3 < args.length) {
        String fp = args[i + 3].equals("-") ? null : args[i + 3];
        features.add(new Request(args[i + 1], args[i + 2], fp));
        i += 3;
      } else {
        err.println("strata-spark: unexpected argument \"" + args[i] + "\"; usage: --staging DIR --feature DATASET SPEC "
            + "FINGERPRINT|- [--feature ...]");
        return null;
      }
    }
    if (staging[0] == null || features.isEmpty()) {
      err.println("strata-spark: usage: --staging DIR --feature DATASET SPEC FINGERPRINT|- [--feature ...]");
      return null;
    }
    return features;
  }

  /** The entry point spark-submit calls; exit 2 for usage errors, 1 for failures. */
  public static void main(String[] args) {
    String[] staging = new String[1];
    List<Request> features = parse(args, staging, System.err);
    if (features == null) {
      System.exit(2);
    }
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    int code = 0;
    SparkConf conf = new SparkConf().setAppName("strata-promote");
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      for (Outcome o : run(sc, staging[0], features)) {
        out.println(Json.compact(o.toJson()));
      }
    } catch (IllegalArgumentException e) {
      System.err.println("strata-spark: " + e.getMessage());
      code = 2;
    } catch (Exception e) {
      System.err.println("strata-spark: " + e);
      code = 1;
    }
    System.exit(code);
  }
}
