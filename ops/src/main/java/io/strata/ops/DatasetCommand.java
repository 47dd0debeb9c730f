package io.strata.ops;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.FeatureInfo;
import io.strata.tools.DatasetImporter;
import io.strata.sdk.files.Locations;
import io.strata.sdk.files.Manifest;
import io.strata.tools.Relayout;
import io.strata.sdk.format.Columns;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.Json;
import io.strata.sdk.tiering.SegmentRef;
import io.strata.sdk.tiering.SegmentStore;
import java.io.File;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code strata dataset ...}: import, describe and verify datasets ({@code generate}: {@link GenerateCommand}). */
@Command(
    name = "dataset",
    mixinStandardHelpOptions = true,
    description = "Dataset tools: generate, import, register, list, describe, verify, truth, relayout, rollback.",
    subcommands = {
      GenerateCommand.class,
      DatasetCommand.Import.class,
      DatasetCommand.Register.class,
      DatasetCommand.ListCmd.class,
      DatasetCommand.Describe.class,
      DatasetCommand.Verify.class,
      DatasetCommand.Truth.class,
      RelayoutCommand.class,
      DatasetCommand.Rollback.class
    })
final class DatasetCommand implements Runnable {
  @Spec CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  @Command(name = "import", mixinStandardHelpOptions = true,
      description = "Register ORC or Parquet files written elsewhere as a dataset (files stay where they are).")
  static final class Import implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = {"-o", "--out"}, description = "Dataset directory (holds the manifest); a local or mounted directory.")
    Path out;

    @Option(names = "--in-place", description = "Make the dataset where its files are: the manifest, sample index and"
        + " checksums beside them (one local input directory), or, for s3:// and hdfs:// inputs, in the local directory -o"
        + " names. Files are never copied; each object's version (ETag) is recorded, so one replaced later is refused.")
    boolean inPlace;

    @Option(names = "--name", description = "Dataset name (default: the directory's name).")
    String name;

    @Option(names = "--sample-column", description = "Integer column identifying samples; builds the sample index.")
    String sampleColumn;

    @Option(names = "--no-verify", description = "Skip decoding every stripe during import.")
    boolean noVerify;

    @Option(names = "--replace", description = "Replace an existing manifest.")
    boolean replace;

    @Parameters(arity = "1..*", paramLabel = "FILE", converter = DatasetPath.class,
        description = "ORC or Parquet files, or directories of them (one format a dataset); paths, hdfs:// or s3:// URIs.")
    List<Path> inputs;

    @Option(names = "--json", description = "Print the result as JSON.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      if (out == null) {
        if (!inPlace) {
          throw new ParameterException(spec.commandLine(), "give -o DIR (where the manifest goes), or --in-place");
        }
        if (inputs.size() != 1 || Locations.remote(inputs.getFirst()) || !Files.isDirectory(inputs.getFirst())) {
          throw new ParameterException(spec.commandLine(), "--in-place without -o takes one local directory of ORC or"
              + " Parquet files (Strata writes nothing to hdfs:// or s3://: give -o, a local directory for the manifest)");
        }
        out = inputs.getFirst();
      }
      String n = name != null ? name : out.toAbsolutePath().normalize().getFileName().toString();
      Terminal.Bar bar = new Terminal.Bar("import", spec.commandLine().getErr());
      Manifest m = DatasetImporter.importFiles(new DatasetImporter.Options(n, inputs, out, sampleColumn, !noVerify, replace), bar);
      bar.done();
      PrintWriter w = spec.commandLine().getOut();
      if (json) {
        ObjectNode j = Json.object().put("dataset", m.name()).put("directory", out.toAbsolutePath().toString())
            .put("version", m.version()).put("rows", m.rows()).put("files", m.files().size()).put("chunks", m.chunks().size());
        ArrayNode un = j.putArray("unsupported");
        m.features().stream().filter(f -> !f.supported())
            .forEach(f -> un.addObject().put("column", f.name()).put("orcType", f.orcType()).put("reason", f.unsupportedReason()));
        w.println(Json.pretty(j));
        return 0;
      }
      w.printf("imported %s (%s): %s rows in %d files, %d chunks%n", m.name(), m.version(), Terminal.count(m.rows()),
          m.files().size(), m.chunks().size());
      for (FeatureInfo f : m.features()) {
        if (!f.supported()) {
          w.printf("  unsupported column %s (%s): %s%n", f.name(), f.orcType(), f.unsupportedReason());
        }
      }
      return 0;
    }
  }

  @Command(name = "register", mixinStandardHelpOptions = true,
      description = "Register a dataset directory with the node (it must lie inside one of the node's HDD roots).")
  static final class Register implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Parameters(paramLabel = "DIR", converter = DatasetPath.class, description = "Dataset directory (or hdfs:// URI).")
    Path dir;

    @Mixin NodeOptions node;

    @Option(names = "--json", description = "Print the node's answer as JSON.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      JsonNode d = node.client().registerDataset(dir.toAbsolutePath().normalize());
      PrintWriter w = spec.commandLine().getOut();
      if (json) {
        w.println(Json.compact(d));
      } else {
        w.printf("registered %s (%s): %s rows, %d chunks, %d features%n", d.path("name").asText(), d.path("version").asText(),
            Terminal.count(d.path("rows").asLong()), d.path("chunks").asInt(), d.path("features").size());
      }
      return 0;
    }
  }

  @Command(name = "list", mixinStandardHelpOptions = true, description = "The datasets registered with the node.")
  static final class ListCmd implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Mixin NodeOptions node;

    @Option(names = "--json", description = "Print the node's answer as JSON.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      JsonNode all = node.client().datasets();
      PrintWriter w = spec.commandLine().getOut();
      if (json) {
        w.println(Json.compact(all));
        return 0;
      }
      Terminal.Table t = new Terminal.Table("dataset", "version", "rows", "chunks", "features", "ORC", "SSD", "path");
      List<String> refused = new ArrayList<>();
      for (JsonNode d : all) {
        if (d.has("refused")) {
          t.row(d.path("name").asText(), "refused", "-", "-", "-", "-", "-", d.path("path").asText());
          refused.add(d.path("name").asText() + ": " + d.path("refused").asText());
          continue;
        }
        t.row(d.path("name").asText(), d.path("version").asText(), Terminal.count(d.path("rows").asLong()), d.path("chunks").asInt(),
            d.path("features").size(), Terminal.bytes(d.path("orcBytes").asLong()), Terminal.bytes(d.path("ssdBytes").asLong()),
            d.path("path").asText());
      }
      t.print(w);
      for (String r : refused) {
        w.println("refused " + r);
      }
      return 0;
    }
  }

  @Command(name = "describe", mixinStandardHelpOptions = true,
      description = "Show a dataset's columns, files and chunks: a local directory, or a dataset registered with the node.")
  static final class Describe implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Parameters(paramLabel = "DATASET", description = "Dataset directory, or the name of a dataset registered with the node (a bare name that is not a directory here).")
    String target;

    @Mixin NodeOptions node;

    @Option(names = "--json", description = "Print as JSON.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      Path dir = Locations.dataset(target);
      // A path (an existing directory, or anything with a separator) is read locally; a bare name is asked of the node.
      if (!Files.isDirectory(dir) && !target.contains(File.separator)) {
        return onNode();
      }
      return local(dir);
    }

    private int onNode() throws Exception {
      JsonNode d = node.client().dataset(target);
      PrintWriter w = spec.commandLine().getOut();
      if (json) {
        w.println(Json.pretty(d));
        return 0;
      }
      w.printf("dataset %s  version %s  (registered with %s from %s)%n", d.path("name").asText(), d.path("version").asText(),
          node.client().url(), d.path("path").asText());
      w.printf("%s rows, %d chunks, %s of ORC; %s on the SSD tier%s%n", Terminal.count(d.path("rows").asLong()),
          d.path("chunks").asInt(), Terminal.bytes(d.path("orcBytes").asLong()), Terminal.bytes(d.path("ssdBytes").asLong()),
          d.has("quotaBytes") ? " (quota " + Terminal.bytes(d.path("quotaBytes").asLong()) + ")" : "");
      Terminal.Table t = new Terminal.Table("column", "type", "status");
      for (JsonNode f : d.path("features")) {
        t.row(f.path("name").asText(), f.path("type").asText("-"),
            f.has("unsupported") ? "unsupported: " + f.path("unsupported").asText() : "served");
      }
      t.print(w);
      return 0;
    }

    private int local(Path dir) throws Exception {
      Manifest m = Manifest.read(dir);
      PrintWriter w = spec.commandLine().getOut();
      long bytes = m.fileBytes();
      if (json) {
        ObjectNode j = Json.object();
        j.put("name", m.name()).put("version", m.version()).put("rows", m.rows()).put("bytes", bytes);
        j.put("format", m.fileFormat().text()).put("files", m.files().size()).put("chunks", m.chunks().size());
        ArrayNode cols = j.putArray("columns");
        for (FeatureInfo f : m.features()) {
          ObjectNode c = cols.addObject();
          c.put("name", f.name()).put("orcType", f.orcType());
          if (f.supported()) {
            c.put("type", f.type().toString());
          } else {
            c.put("unsupported", f.unsupportedReason());
          }
        }
        if (m.sampleIndex() != null) {
          j.putObject("sampleIndex").put("column", m.sampleIndex().column()).put("samples", m.sampleIndex().samples());
        }
        w.println(Json.pretty(j));
        return 0;
      }
      w.printf("dataset %s  version %s%n", m.name(), m.version());
      w.printf("%s rows, %d %s files (%s), %d chunks%n", Terminal.count(m.rows()), m.files().size(),
          m.fileFormat() == Manifest.FileFormat.PARQUET ? "Parquet" : "ORC", Terminal.bytes(bytes), m.chunks().size());
      if (m.sampleIndex() != null) {
        w.printf("sample index on %s: %s samples, mean %.1f rows%n", m.sampleIndex().column(),
            Terminal.count(m.sampleIndex().samples()), (double) m.rows() / Math.max(1, m.sampleIndex().samples()));
      }
      Terminal.Table t = new Terminal.Table("column", "type", "status");
      for (FeatureInfo f : m.features()) {
        t.row(f.name(), f.supported() ? f.type() : f.orcType(), f.supported() ? "served" : "unsupported: " + f.unsupportedReason());
      }
      t.print(w);
      return 0;
    }
  }

  @Command(name = "rollback", mixinStandardHelpOptions = true,
      description = "Make the version before the last relayout in place the dataset again (a second rollback goes forward).")
  static final class Rollback implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Parameters(paramLabel = "DIR", description = "Dataset directory.")
    Path dir;

    @Option(names = "--json", description = "Print the result as JSON.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      Relayout.Rollback r = Relayout.rollback(dir);
      PrintWriter w = spec.commandLine().getOut();
      if (json) {
        w.println(Json.compact(Json.object().put("dataset", dir.toAbsolutePath().normalize().toString())
            .put("fromVersion", r.fromVersion()).put("version", r.toVersion())));
      } else {
        w.println(dir + ": version " + r.toVersion() + " again (was " + r.fromVersion()
            + "; 'strata dataset rollback' again goes back to it)");
      }
      return 0;
    }
  }

  @Command(name = "verify", mixinStandardHelpOptions = true,
      description = "Check a dataset's ORC or Parquet files against the checksums recorded when they were written (every byte: each"
          + " file's CRC32C, and every stream's where the dataset records them), and with --ssd every segment of it on the"
          + " SSD tier against ORC, value by value.")
  static final class Verify implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Parameters(paramLabel = "DIR", converter = DatasetPath.class, description = "Dataset directory (or hdfs:// URI).")
    Path dir;

    @Option(names = "--ssd", description = "SSD tier directory (segment store) whose segments of the dataset are checked too.")
    Path ssd;

    @Option(names = "--json", description = "Print the result as JSON.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      PrintWriter w = spec.commandLine().getOut();
      long rows = 0;
      long bytes = 0;
      int segments = 0;
      long start = System.nanoTime();
      long orcBytes;
      boolean streamSums;
      String format;
      try (Dataset ds = Dataset.open(dir)) {
        format = ds.manifest().fileFormat() == Manifest.FileFormat.PARQUET ? "Parquet" : "ORC";
        orcBytes = ds.table().verifyChecksums();
        streamSums = ds.manifest().streamChecksums() != null;
      }
      if (ssd != null) {
        try (Dataset ds = Dataset.open(dir); SegmentStore store = SegmentStore.open(ssd, false, SegmentFile.Verify.ALWAYS)) {
          List<SegmentRef> refs = store.segments().stream()
              .filter(r -> r.info().dataset().equals(ds.name()) && r.info().datasetVersion().equals(ds.version()))
              .sorted((a, b) -> Integer.compare(a.info().chunk(), b.info().chunk()))
              .toList();
          if (refs.isEmpty() && ds.rows() > 0) {
            throw new IllegalArgumentException("no segments of " + ds.name() + " " + ds.version() + " in " + ssd);
          }
          Terminal.Bar bar = new Terminal.Bar("verify", spec.commandLine().getErr());
          for (SegmentRef ref : refs) {
            try (SegmentStore.Lease lease = store.map(ref); Arena arena = Arena.ofConfined()) {
              Map<String, Column> orc = ds.readChunk(ref.info().chunk(), ref.info().columns(), arena);
              for (String f : ref.info().columns()) {
                Column fromSegment = lease.column(f);
                Column fromOrc = orc.get(f);
                int diff = Columns.firstDifference(fromOrc, fromSegment);
                if (diff >= 0) {
                  throw new IllegalStateException(
                      "segment " + ref.path() + " differs from the dataset's files in column " + f + " at chunk row " + diff
                          + ": files " + (diff < fromOrc.length() ? fromOrc.getObject(diff) : "<end>")
                          + ", segment " + (diff < fromSegment.length() ? fromSegment.getObject(diff) : "<end>"));
                }
                bytes += Columns.dataBytes(fromSegment);
              }
              rows += ref.info().rows();
              segments++;
            }
            store.trim();
            bar.update(segments, refs.size(), "segments");
          }
          bar.done();
        }
      }
      if (json) {
        w.println(Json.compact(Json.object().put("orcBytes", orcBytes).put("streamChecksums", streamSums)
            .put("segments", segments).put("rows", rows).put("bytes", bytes).put("identical", true)
            .put("seconds", (System.nanoTime() - start) / 1e9)));
        return 0;
      }
      w.printf("%s files: %s checked, every byte as recorded (%s)%n", format, Terminal.bytes(orcBytes),
          streamSums ? "each file's CRC32C and every stream's" : format.equals("Parquet")
              ? "each file's CRC32C; page checksums where the writer wrote them, when a file differs"
              : "each file's CRC32C; no stream checksums recorded: a relayout or a new import records them");
      if (ssd != null) {
        w.printf("verified %d segments, %s rows, %s of column data: identical to the dataset's files (%s, heap max %s)%n", segments,
            Terminal.count(rows), Terminal.bytes(bytes), Terminal.seconds((System.nanoTime() - start) / 1e9),
            Terminal.bytes(Runtime.getRuntime().maxMemory()));
      }
      return 0;
    }
  }

  @Command(name = "truth", mixinStandardHelpOptions = true,
      description = "Compute the checksum of every sample of every feature from the dataset's files (orc-core or parquet-java only, no cache), for 'loader run --verify-against'.")
  static final class Truth implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Parameters(paramLabel = "DIR", converter = DatasetPath.class, description = "Dataset directory (or hdfs:// URI).")
    Path dir;

    @Option(names = {"-o", "--out"}, required = true, description = "Ground-truth file to write.")
    Path outFile;

    @Option(names = "--json", description = "Print the result as JSON.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      PrintWriter w = spec.commandLine().getOut();
      long start = System.nanoTime();
      GroundTruth t;
      try (Dataset ds = Dataset.open(dir)) {
        t = GroundTruth.compute(ds);
      }
      t.write(outFile);
      double seconds = (System.nanoTime() - start) / 1e9;
      if (json) {
        w.println(Json.compact(Json.object().put("file", outFile.toString()).put("samples", t.samples)
            .put("features", t.features.size()).put("seconds", seconds)));
      } else {
        w.printf("ground truth of %s: %s samples x %d features from the dataset's files in %s -> %s%n", t.dataset, Terminal.count(t.samples),
            t.features.size(), Terminal.seconds(seconds), outFile);
      }
      return 0;
    }
  }
}
