package io.strata.bench;

import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.tools.DatasetImporter;
import io.strata.sdk.files.Manifest;
import io.strata.sdk.format.Columns;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A Parquet copy of a dataset for the benchmarks' HDD-tier peer: written by pyarrow (what a user
 * holding Parquet would have: its defaults — snappy, dictionary where it pays, data page v1 —
 * with a row group per ORC stripe and its page index on, {@code write_page_index=True}, without
 * which a read of a few rows decodes the whole row group), imported as a Strata dataset, and
 * checked value for value against the ORC one before it is timed.
 */
final class ParquetCopy {
  private ParquetCopy() {}

  private static final String CONVERT = String.join("\n",
      "import sys, pyarrow.orc as po, pyarrow.parquet as pq",
      "for src, dst in zip(sys.argv[1::2], sys.argv[2::2]):",
      "    f = po.ORCFile(src)",
      "    with pq.ParquetWriter(dst, f.schema, write_page_index=True) as w:",
      "        for s in range(f.nstripes):",
      "            w.write_batch(f.read_stripe(s))",
      "");

  /** Why {@code python} cannot write the copy (no pyarrow with ORC and Parquet), or null when it can. */
  static String unavailable(String python) {
    try {
      Process p = new ProcessBuilder(python, "-c", "import pyarrow.orc, pyarrow.parquet").redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      return p.waitFor() == 0 ? null : python + " has no pyarrow with ORC and Parquet: " + out.lines().reduce((a, b) -> b).orElse("");
    } catch (IOException e) {
      return "no " + python + ": " + e.getMessage();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
  }

  /** The Parquet copy of {@code ds} in {@code dir}, made there first when the directory holds no dataset. */
  static Dataset open(Dataset ds, Path dir, String python, PrintWriter log) throws IOException, InterruptedException {
    if (!Files.exists(dir.resolve(Manifest.FILE_NAME))) {
      Path files = Files.createDirectories(dir.resolve("files"));
      List<String> cmd = new ArrayList<>(List.of(python, "-c", CONVERT));
      for (int i = 0; i < ds.manifest().files().size(); i++) {
        Path orc = ds.table().filePath(i);
        cmd.add(orc.toString());
        cmd.add(files.resolve(orc.getFileName().toString().replaceFirst("\\.orc$", "") + ".parquet").toString());
      }
      log.printf("writing a Parquet copy of %s with pyarrow in %s%n", ds.name(), files);
      log.flush();
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (p.waitFor() != 0) {
        throw new IOException("pyarrow could not write the Parquet copy (" + python + "): " + out.strip());
      }
      DatasetImporter.importFiles(new DatasetImporter.Options(ds.name() + "-parquet", List.of(files), dir, null, false, false),
          Progress.NONE);
    }
    return Dataset.open(dir);
  }

  /** Refuses a copy that does not hold the same rows and values of {@code features} as {@code ds}. */
  static void checkSame(Dataset ds, Dataset copy, List<String> features) throws IOException {
    if (copy.rows() != ds.rows()) {
      throw new IllegalStateException("the Parquet copy holds " + copy.rows() + " rows, the dataset " + ds.rows());
    }
    long row = 0;
    for (ChunkInfo c : ds.chunks()) {
      try (Arena a = Arena.ofConfined()) {
        Map<String, Column> orc = ds.readChunk(c.index(), features, a);
        Map<String, Column> pq = copy.table().readRows(row, (int) c.rows(), features, a);
        for (String f : features) {
          int d = Columns.firstDifference(orc.get(f), pq.get(f));
          if (d >= 0) {
            throw new IllegalStateException("the Parquet copy differs from the dataset in " + f + " at row " + (row + d));
          }
        }
      }
      row += c.rows();
    }
  }
}
