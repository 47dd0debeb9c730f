package io.strata.ops;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.FeatureInfo;
import io.strata.tools.CoAccessOrder;
import io.strata.sdk.files.Manifest;
import io.strata.tools.Relayout;
import io.strata.sdk.internal.Json;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code strata dataset relayout DIR}: learns which features jobs read together (from a recorded
 * trace, a file or the node's) and rewrites the dataset with those features adjacent in every
 * stripe ({@link CoAccessOrder}, {@link Relayout}).
 */
@Command(name = "relayout", mixinStandardHelpOptions = true,
    description = "Reorder a dataset's ORC columns so that features read together are stored together: learned from a"
        + " trace (--from FILE, the CSV of 'strata node trace') or from the node's (--from-node); a new version, verified"
        + " value for value before it replaces the old one (or, with --out, written as a new directory).")
public final class RelayoutCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Parameters(paramLabel = "DIR", description = "Dataset directory.")
  Path dir;

  static final class Source {
    @Option(names = "--from", paramLabel = "TRACE", description = "A trace CSV (time,job,dataset,feature,chunk,bytes[,tier]).")
    Path trace;

    @Option(names = "--from-node", description = "The node's recorded trace; the node is told of the new version after.")
    boolean fromNode;
  }

  @ArgGroup(exclusive = true, multiplicity = "1")
  Source source;

  @Mixin NodeOptions node;

  @Option(names = "--out", paramLabel = "DIR2",
      description = "Write the new version as a new dataset directory DIR2 (which must not exist) and leave DIR as it is.")
  Path outDir;

  @Option(names = "--register", description = "Register the new version with the node (implied by --from-node).")
  boolean register;

  @Option(names = "--replicas", paramLabel = "PCT", defaultValue = "0%",
      description = "Store features twice where that saves read requests, up to this share of the dataset's ORC bytes"
          + " (e.g. 10%%); default ${DEFAULT-VALUE}: every feature once.")
  String replicas;

  @Option(names = "--stripe-mib", paramLabel = "MIB", defaultValue = "" + Relayout.DEFAULT_STRIPE_MIB,
      description = "Merge consecutive stripes (chunks) of a file into one while the new stripe, second copies included,"
          + " stays within this many MiB (on a disk that seeks, a column's part of a small stripe is not worth a seek of"
          + " its own); 0 keeps every stripe; default ${DEFAULT-VALUE}, the largest stripe the ORC reader reads ahead.")
  int stripeMib;

  @Option(names = "--dry-run", description = "Print the order and the expected saving; change nothing.")
  boolean dryRun;

  @Option(names = "--json", description = "Print the result as one JSON object.")
  boolean json;

  @Override
  public Integer call() throws Exception {
    PrintWriter w = spec.commandLine().getOut();
    double share = replicaShare(replicas);
    long stripeBytes = stripeBytes(stripeMib);
    if (!Files.isRegularFile(dir.resolve(Manifest.FILE_NAME))) {
      throw new NoSuchFileException(dir.toString(), null, "not a dataset directory (no manifest.json)");
    }
    Manifest m = Manifest.read(dir);
    String csv;
    if (source.fromNode) {
      csv = node.client().trace().csv();
    } else {
      if (!Files.isRegularFile(source.trace)) {
        throw new NoSuchFileException(source.trace.toString(), null, "no such trace file");
      }
      csv = Files.readString(source.trace, StandardCharsets.UTF_8);
    }
    Map<String, Map<String, Long>> reads = CoAccessOrder.readsFromTrace(csv, m.name(), source.fromNode ? "the node's trace" : source.trace.toString());
    if (reads.isEmpty()) {
      throw new IllegalArgumentException("the trace has no reads of dataset " + m.name() + ": nothing to learn from");
    }
    List<String> columns = m.features().stream().map(FeatureInfo::name).toList();
    long datasetBytes = m.fileBytes();
    CoAccessOrder.Plan plan = plan(dir, columns, reads, share, datasetBytes);
    // Before: the dataset's present layout, second copies included.
    double before = CoAccessOrder.runs(m.layout(), columns, reads);
    ObjectNode out = Json.object();
    out.put("dataset", m.name()).put("previousVersion", m.version()).put("jobs", plan.jobs()).put("groups", plan.groups());
    out.put("runsPerStripeBefore", before).put("runsPerStripeAfter", plan.runsAfter());
    long mergeBytes = Relayout.mergeBytes(stripeBytes, datasetBytes, plan.replicaBytes());
    int chunksAfter = Relayout.chunksAfter(m, mergeBytes);
    int chunksBefore = m.chunks().size();
    out.put("chunksBefore", chunksBefore).put("chunksAfter", chunksAfter);
    // What a job reading every stripe issues an epoch, data reads alone: stripes x runs per stripe.
    out.put("readsPerEpochBefore", before * chunksBefore).put("readsPerEpochAfter", plan.runsAfter() * chunksAfter);
    String stripes = chunksAfter == chunksBefore ? ""
        : String.format("; %d stripes merged into %d (up to %d MiB each): a whole epoch's data reads %s -> %s a job",
            chunksBefore, chunksAfter, stripeMib, f2(before * chunksBefore), f2(plan.runsAfter() * chunksAfter));
    double[] held = heldOut(dir, m.layout(), columns, reads, share, datasetBytes);
    String heldText = "";
    if (held != null) {
      out.putObject("heldOut").put("runsPerStripeBefore", held[0]).put("runsPerStripeAfter", held[1])
          .put("readsPerEpochBefore", held[0] * chunksBefore).put("readsPerEpochAfter", held[1] * chunksAfter)
          .put("what", "two-fold cross-validation over the trace's jobs: each half's relayout on the other half's reads");
      heldText = String.format("; jobs it did not learn from: %s -> %s (%s -> %s an epoch; estimated by cross-validation)",
          f2(held[0]), f2(held[1]), f2(held[0] * chunksBefore), f2(held[1] * chunksAfter));
    }
    out.set("order", Json.MAPPER.valueToTree(plan.order()));
    out.set("replicated", Json.MAPPER.valueToTree(plan.replicated()));
    out.put("replicaBytes", plan.replicaBytes()).put("datasetBytes", datasetBytes);
    String copies = plan.replicated().isEmpty() ? ""
        : String.format("; %d features stored twice (%s, %.1f%% of the dataset)", plan.replicated().size(),
            Terminal.bytes(plan.replicaBytes()), 100.0 * plan.replicaBytes() / Math.max(1, datasetBytes));
    if (plan.layout().equals(m.layout()) && chunksAfter == m.chunks().size()) {
      out.put("changed", false);
      print(w, out, "the columns of " + m.name() + " are already in the learned order (" + f2(before)
          + " reads per stripe per job) and no stripes merge; nothing to do");
      return 0;
    }
    if (dryRun) {
      out.put("changed", false);
      print(w, out, String.format("%s: %s -> %s reads per stripe per job (%d jobs)%s%s%s; order: %s", m.name(),
          f2(before), f2(plan.runsAfter()), plan.jobs(), copies, stripes, heldText, String.join(",", plan.layout())));
      return 0;
    }
    Terminal.Bar bar = new Terminal.Bar("relayout", spec.commandLine().getErr());
    Relayout.Result r = outDir == null ? Relayout.rewrite(dir, plan.layout(), mergeBytes, bar)
        : Relayout.rewriteTo(dir, outDir, plan.layout(), mergeBytes, bar);
    bar.done();
    Path result = (outDir == null ? dir : outDir).toAbsolutePath().normalize();
    out.put("changed", true).put("version", r.manifest().version()).put("bytes", r.bytes()).put("seconds", r.seconds())
        .put("directory", result.toString());
    if (register || source.fromNode) {
      JsonNode d = node.client().registerDataset(result);
      out.put("registered", d.path("version").asText());
    }
    print(w, out, String.format("%s: version %s %s %s, verified value for value (%s written in %s); %s -> %s reads"
        + " per stripe per job%s%s", m.name(), r.manifest().version(), outDir == null ? "replaces" : "written to " + result + " beside",
        r.previousVersion(), Terminal.bytes(r.bytes()), Terminal.seconds(r.seconds()), f2(before), f2(plan.runsAfter()),
        copies + stripes + heldText, out.has("registered") ? "; the node serves it now" : ""));
    return 0;
  }

  /** {@code --stripe-mib} in bytes: 0 (keep the stripes) to 1 TiB, else a usage error naming the option. */
  public static long stripeBytes(int mib) {
    if (mib < 0 || mib > 1 << 20) {
      throw new IllegalArgumentException("--stripe-mib is 0 (keep the stripes) to 1048576, not " + mib);
    }
    return (long) mib << 20;
  }

  /**
   * The relayout of the dataset in {@code dir} for {@code reads}: with copies within {@code share}
   * percent of its {@code datasetBytes} (each column's bytes read from its ORC files only then), or
   * every feature once for a share of 0.
   */
  public static CoAccessOrder.Plan plan(Path dir, List<String> columns, Map<String, Map<String, Long>> reads, double share,
      long datasetBytes) throws IOException {
    return share > 0
        ? CoAccessOrder.plan(columns, reads, Relayout.columnBytes(dir), (long) (share / 100 * datasetBytes))
        : CoAccessOrder.plan(columns, reads);
  }

  /**
   * What jobs the relayout did not learn from can expect, estimated from the trace itself by
   * two-fold cross-validation: the jobs (by name, alternately) split in two halves; each half's
   * relayout judged on the other half's reads, before and after (the runs per stripe read, as
   * {@link CoAccessOrder#runs}); the two folds' means. Null with fewer than 4 jobs.
   */
  public static double[] heldOut(Path dir, List<String> layout, List<String> columns, Map<String, Map<String, Long>> reads,
      double share, long datasetBytes) throws IOException {
    if (reads.size() < 4) {
      return null;
    }
    List<String> names = new ArrayList<>(reads.keySet());
    Collections.sort(names);
    Map<String, Map<String, Long>> a = new LinkedHashMap<>();
    Map<String, Map<String, Long>> b = new LinkedHashMap<>();
    for (int i = 0; i < names.size(); i++) {
      (i % 2 == 0 ? a : b).put(names.get(i), reads.get(names.get(i)));
    }
    double before = 0;
    double after = 0;
    for (int fold = 0; fold < 2; fold++) {
      Map<String, Map<String, Long>> learn = fold == 0 ? a : b;
      Map<String, Map<String, Long>> judge = fold == 0 ? b : a;
      List<String> learned = plan(dir, columns, learn, share, datasetBytes).layout();
      before += CoAccessOrder.runs(layout, columns, judge) / 2;
      after += CoAccessOrder.runs(learned, columns, judge) / 2;
    }
    return new double[] {before, after};
  }

  /** A share of the dataset's bytes, in percent: "10%" or "10", 0 to 100. */
  public static double replicaShare(String v) {
    String t = v.strip();
    if (t.endsWith("%")) {
      t = t.substring(0, t.length() - 1).strip();
    }
    double share;
    try {
      share = Double.parseDouble(t);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("bad --replicas '" + v + "' (examples: 10%, 0%)");
    }
    if (!(share >= 0 && share <= 100)) {
      throw new IllegalArgumentException("--replicas must be between 0% and 100% of the dataset's bytes, got " + v);
    }
    return share;
  }

  private void print(PrintWriter w, ObjectNode out, String text) {
    w.println(json ? Json.compact(out) : text);
  }

  private static String f2(double v) {
    return String.format(Locale.ROOT, "%.2f", v);
  }
}
