package io.strata.ops;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.files.Manifest;
import io.strata.tools.ParquetExport;
import io.strata.sdk.internal.Json;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code strata dataset generate}: a realistic event dataset, as ORC or Parquet files. */
@Command(name = "generate", mixinStandardHelpOptions = true,
    description = "Generate a realistic event dataset (rows grouped and sorted by sample) as ORC files, or Parquet files with --format parquet.")
final class GenerateCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = {"-o", "--out"}, required = true, description = "Dataset directory to create.")
  Path out;

  @Option(names = "--name", description = "Dataset name (default: the directory's name).")
  String name;

  @Option(names = "--rows", defaultValue = "1000000", description = "Rows (events); default ${DEFAULT-VALUE}.")
  long rows;

  @Option(names = "--features", defaultValue = "10", description = "Columns including sample_id and event_time; default ${DEFAULT-VALUE}.")
  int features;

  @Option(names = "--seed", defaultValue = "1", description = "Random seed; the same seed gives identical bytes.")
  long seed;

  @Option(names = "--mean-sample-length", defaultValue = "400", description = "Mean rows per sample (Zipf-distributed); default ${DEFAULT-VALUE}.")
  int meanSampleLength;

  @Option(names = "--rows-per-chunk", defaultValue = "1048576", description = "Rows per ORC stripe (chunk); default ${DEFAULT-VALUE}.")
  int rowsPerChunk;

  @Option(names = "--chunks-per-file", defaultValue = "4", description = "Stripes per ORC file; default ${DEFAULT-VALUE}.")
  int chunksPerFile;

  @Option(names = "--embedding-dim", defaultValue = "8", description = "Length of the embedding feature; default ${DEFAULT-VALUE}.")
  int embeddingDim;

  @Option(names = "--threads", description = "Files written in parallel (default: the number of cores).")
  Integer threads;

  @Option(names = "--replace", description = "Replace an existing dataset in the directory.")
  boolean replace;

  @Option(names = "--json", description = "Print the result as JSON.")
  boolean json;

  @Option(names = "--format", defaultValue = "orc", description = "orc, or parquet (the ORC dataset written first, then"
      + " its rows as Parquet: one file of one row group per chunk, snappy, page checksums); default ${DEFAULT-VALUE}.")
  String format;

  @Override
  public Integer call() throws Exception {
    Manifest.FileFormat ff;
    try {
      ff = Manifest.FileFormat.of(format);
    } catch (IllegalArgumentException e) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--format: " + e.getMessage());
    }
    if (ff == Manifest.FileFormat.PARQUET) {
      return parquet();
    }
    String n = name != null ? name : out.toAbsolutePath().normalize().getFileName().toString();
    DatasetGenerator.Options o =
        new DatasetGenerator.Options(n, rows, features, seed, meanSampleLength, rowsPerChunk, chunksPerFile, embeddingDim,
            threads != null ? threads : Runtime.getRuntime().availableProcessors(), replace);
    PrintWriter w = spec.commandLine().getOut();
    Terminal.Bar bar = new Terminal.Bar("generate", spec.commandLine().getErr());
    DatasetGenerator.Report r = DatasetGenerator.generate(out, o, bar);
    bar.done();
    if (json) {
      ObjectNode j = Json.object();
      j.put("dataset", n).put("directory", out.toAbsolutePath().toString()).put("version", r.manifest().version());
      j.put("rows", r.manifest().rows()).put("features", features).put("chunks", r.manifest().chunks().size());
      j.put("bytes", r.bytes()).put("seconds", r.seconds()).put("rowsPerSecond", r.rowsPerSecond()).put("megabytesPerSecond", r.megabytesPerSecond());
      w.println(Json.pretty(j));
    } else {
      w.printf("generated %s (%s): %s rows, %d columns, %d chunks, %s of ORC in %s%n",
          n, r.manifest().version(), Terminal.count(r.manifest().rows()), features, r.manifest().chunks().size(),
          Terminal.bytes(r.bytes()), Terminal.seconds(r.seconds()));
      w.printf("write rate: %s rows/s, %.1f MB/s%n", Terminal.count(r.rowsPerSecond()), r.megabytesPerSecond());
    }
    return 0;
  }

  /** The ORC dataset in a directory of its own inside {@code out}, its rows written as Parquet into {@code out}, the ORC removed. */
  private int parquet() throws Exception {
    io.strata.sdk.internal.SafePaths.trusted(out); // no link another user planted on the way to what is written
    if (Files.exists(out.resolve(Manifest.FILE_NAME))) {
      if (!replace) {
        throw new java.nio.file.FileAlreadyExistsException(
            out.resolve(Manifest.FILE_NAME).toString(), null, "a dataset already exists there (use --replace)");
      }
      Files.delete(out.resolve(Manifest.FILE_NAME));
    }
    String n = name != null ? name : out.toAbsolutePath().normalize().getFileName().toString();
    Path orc = out.resolve(".orc-source-" + ProcessHandle.current().pid());
    boolean created = !Files.exists(out);
    boolean ok = false;
    long t0 = System.nanoTime();
    try {
      DatasetGenerator.generate(orc, new DatasetGenerator.Options(n, rows, features, seed, meanSampleLength, rowsPerChunk,
          chunksPerFile, embeddingDim, threads != null ? threads : Runtime.getRuntime().availableProcessors(), true), Progress.NONE);
      Terminal.Bar bar = new Terminal.Bar("generate", spec.commandLine().getErr());
      Manifest m;
      try (Dataset src = Dataset.open(orc)) {
        m = ParquetExport.export(src.directory(), src.manifest(), src.table(), out, n, bar);
      }
      bar.done();
      long bytes = m.fileBytes();
      double secs = (System.nanoTime() - t0) / 1e9;
      PrintWriter w = spec.commandLine().getOut();
      if (json) {
        w.println(Json.pretty(Json.object().put("dataset", n).put("directory", out.toAbsolutePath().toString())
            .put("format", "parquet").put("version", m.version()).put("rows", m.rows()).put("features", features)
            .put("chunks", m.chunks().size()).put("bytes", bytes).put("seconds", secs)));
      } else {
        w.printf("generated %s (%s): %s rows, %d columns, %d chunks, %s of Parquet in %s%n", n, m.version(),
            Terminal.count(m.rows()), features, m.chunks().size(), Terminal.bytes(bytes), Terminal.seconds(secs));
      }
      ok = true;
      return 0;
    } finally {
      // A failed run leaves nothing behind: the ORC source always goes, the directory too when this run made it.
      io.strata.sdk.internal.AtomicFiles.deleteTree(!ok && created ? out : orc);
    }
  }
}
