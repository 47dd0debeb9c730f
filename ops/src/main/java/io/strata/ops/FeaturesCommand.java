package io.strata.ops;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.node.Sizes;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.files.Manifest;
import io.strata.sdk.derive.Derivation;
import io.strata.sdk.derive.DerivedStore;
import io.strata.sdk.derive.Spec;
import io.strata.sdk.files.Locations;
import io.strata.sdk.Progress;
import io.strata.store.Staging;
import io.strata.sdk.format.Columns;
import io.strata.sdk.internal.Json;
import io.strata.store.FeatureMeta;
import io.strata.store.FeatureStore;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/** {@code strata features ...}: derived features in a feature store. */
@Command(name = "features", mixinStandardHelpOptions = true, description = "Derived features: derive, list, promote, gc.",
    subcommands = {FeaturesCommand.Derive.class, FeaturesCommand.ListCmd.class, FeaturesCommand.Promote.class,
        FeaturesCommand.Gc.class})
final class FeaturesCommand implements Runnable {
  @picocli.CommandLine.Spec CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  @Command(name = "derive", mixinStandardHelpOptions = true,
      description = {"Compute a derived feature once and keep it (resumes an interrupted computation).",
          "With --store, in that local store (DATASET is a directory); otherwise on the node, which also puts it on the SSD tier."})
  static final class Derive implements Callable<Integer> {
    @picocli.CommandLine.Spec CommandSpec spec;

    @Option(names = "--dataset", required = true, paramLabel = "DATASET", description = "Registered dataset name, or a directory with --store.")
    String dataset;

    @Option(names = "--spec", required = true, description = "Derived feature, for example \"zscore(log1p(amount))\".")
    String derived;

    @Option(names = "--store", description = "Local feature store directory (opened for writing) instead of the node's.")
    Path store;

    @Mixin NodeOptions node;

    @Option(names = "--json", description = "Print the result as JSON.")
    boolean json;

    @Option(names = "--checksum", description = "Then fetch every chunk from the store and print a checksum of the values.")
    boolean checksum;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      if (store == null) {
        if (checksum) {
          throw new IllegalArgumentException("--checksum needs --store (a local store)");
        }
        JsonNode r = node.client().derive(dataset, derived);
        if (json) {
          out.println(Json.compact(r));
        } else {
          out.printf("%s %s (%s) on %s: %s, %d chunks, %s stored, %d segments written to the SSD tier, in %s%n",
              r.path("cached").asBoolean() ? "already stored" : "computed", r.path("spec").asText(), r.path("fingerprint").asText(),
              node.client().url(), r.path("type").asText(), r.path("chunks").asInt(), Terminal.bytes(r.path("bytes").asLong()),
              r.path("segmentsWritten").asInt(), Terminal.seconds(r.path("seconds").asDouble()));
        }
        return 0;
      }
      // The dataset and the spec are checked before the store is opened (or created).
      try (Dataset ds = Dataset.open(Path.of(dataset))) {
        Derivation d = Derivation.of(Spec.parse(derived), ds);
        return deriveInto(ds, d, out);
      }
    }

    private int deriveInto(Dataset ds, Derivation d, PrintWriter out) throws IOException {
      try (FeatureStore fs = FeatureStore.openWriter(store)) {
        String fp = fs.fingerprint(d, Derivation.SourceReader.orc(ds));
        Optional<FeatureMeta> before = fs.meta(fp);
        Terminal.Bar bar = new Terminal.Bar("derive", spec.commandLine().getErr());
        long t0 = System.nanoTime();
        FeatureMeta m = fs.getOrCompute(d, Derivation.SourceReader.orc(ds), bar);
        long sum = 0;
        if (checksum) {
          for (int c = 0; c < m.chunks(); c++) {
            try (Arena arena = Arena.ofConfined()) {
              sum = sum * 31 + Columns.checksum(fs.chunk(m.fingerprint(), c, arena));
            }
          }
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        bar.done();
        String state = before.map(b -> b.complete() ? "already stored" : "resumed at chunk " + b.done()).orElse("computed");
        if (json) {
          ObjectNode o = m.toJson();
          o.remove("statistics");
          o.put("state", state).put("seconds", seconds);
          if (checksum) {
            o.put("checksum", Long.toHexString(sum));
          }
          out.println(Json.compact(o));
        } else {
          out.printf("%s %s (%s): %s, %d chunks, %s stored in %s%n", state, m.spec(), m.fingerprint(), m.type(), m.chunks(),
              Terminal.bytes(m.bytes()), Terminal.seconds(seconds));
        }
      }
      return 0;
    }
  }

  /** Refuses a directory that holds no feature store: reading one must not create it. */
  static void requireStore(Path store) throws NoSuchFileException {
    if (!Files.isDirectory(store.resolve("rocksdb"))) {
      throw new NoSuchFileException(store.toString(), null, "no feature store (features derive --store creates one)");
    }
  }

  @Command(name = "list", mixinStandardHelpOptions = true,
      description = "The derived features a store holds: a local store (--store) or the node's.")
  static final class ListCmd implements Callable<Integer> {
    @picocli.CommandLine.Spec CommandSpec spec;

    @Option(names = "--store", description = "Local feature store directory instead of the node's.")
    Path store;

    @Mixin NodeOptions node;

    @Option(names = "--json", description = "Print as JSON.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      JsonNode all;
      if (store == null) {
        all = node.client().derivedFeatures();
      } else {
        requireStore(store);
        try (FeatureStore fs = Files.exists(store.resolve("rocksdb/LOCK")) ? openAny(store) : FeatureStore.openWriter(store)) {
          ArrayNode a = Json.array();
          for (FeatureMeta m : fs.list()) {
            ObjectNode o = m.toJson();
            o.remove("statistics");
            a.add(o);
          }
          all = a;
        }
      }
      if (json) {
        out.println(Json.compact(all));
        return 0;
      }
      Terminal.Table t = new Terminal.Table("fingerprint", "spec", "dataset", "state", "chunks", "bytes", "compute");
      for (JsonNode m : all) {
        t.row(m.path("fingerprint").asText(), m.path("spec").asText(), m.path("dataset").asText() + " " + m.path("version").asText(),
            m.path("complete").asBoolean() ? "complete" : "building", m.path("done").asInt() + "/" + m.path("chunks").asInt(),
            Terminal.bytes(m.path("bytes").asLong()), Terminal.seconds(m.path("computeSeconds").asDouble()));
      }
      t.print(out);
      return 0;
    }

    /** The writer if nobody holds it, else a reader beside the running writer. */
    private static FeatureStore openAny(Path store) throws IOException {
      try {
        return FeatureStore.openWriter(store);
      } catch (IOException e) {
        return FeatureStore.openReader(store);
      }
    }
  }

  /** What jobs spent computing one derived feature on the fly. */
  record Candidate(String dataset, String datasetDir, String spec, Set<String> jobs, long computations, double cpuSeconds,
      long bytes, long rows) {
    /** Bytes of the whole feature, extrapolated from the computed rows. */
    long estimatedBytes(long datasetRows) {
      return rows == 0 ? bytes : (long) ((double) bytes / rows * datasetRows);
    }
  }

  @Command(name = "promote", mixinStandardHelpOptions = true,
      description = {"Materialize the derived features jobs compute on the fly most (CPU time per stored byte), within a budget;"
          + " resumes after a kill.",
          "With --spec (and --dataset), the features named instead. With --spark, on a Spark cluster: chunks staged under"
              + " --staging (a directory every host mounts), then ingested into --store if given; nodes whose featureStaging"
              + " is that directory ingest them instead of computing them."})
  static final class Promote implements Callable<Integer> {
    @picocli.CommandLine.Spec CommandSpec spec;

    @Option(names = "--store", description = "Feature store directory (opened for writing): its jobs' usage ranks the"
        + " candidates, and what is materialized lands there.")
    Path store;

    @Option(names = "--budget", defaultValue = "10g", description = "Bytes of materialized features at most; default ${DEFAULT-VALUE}.")
    String budget;

    @Option(names = "--min-jobs", defaultValue = "1", description = "Only features computed by at least this many jobs.")
    int minJobs;

    @Option(names = "--dataset", paramLabel = "DATASET", converter = DatasetPath.class,
        description = "With --spec: the dataset (a directory, hdfs:// or s3://).")
    Path dataset;

    @Option(names = "--spec", paramLabel = "SPEC", description = "A derived feature to materialize (repeatable), instead of"
        + " ranking what jobs computed.")
    List<String> specs = new ArrayList<>();

    @Option(names = "--spark", paramLabel = "MASTER", description = "Run on Spark: spark://HOST:PORT, local[N], ... (with"
        + " SPARK_HOME set, through its spark-submit; otherwise on the Spark jars of this build).")
    String spark;

    @Option(names = "--staging", paramLabel = "DIR", description = "With --spark: where the job stages chunks, a directory"
        + " every host of the cluster mounts.")
    Path staging;

    @Option(names = "--dry-run", description = "Only show the plan.")
    boolean dryRun;

    @Option(names = "--json", description = "Print the plan and outcome as JSON.")
    boolean json;

    /** One feature of the plan: what it is, what jobs spent on it, its estimated size, and what happens to it. */
    private record Planned(String spec, String dataset, String location, Set<String> jobs, long computations,
        double cpuSeconds, long bytes) {}

    private picocli.CommandLine.ParameterException usage(String message) {
      return new picocli.CommandLine.ParameterException(spec.commandLine(), message);
    }

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      if ((spark == null) != (staging == null)) {
        throw usage(spark == null ? "--staging goes with --spark" : "--spark needs --staging DIR (a directory every host mounts)");
      }
      if (specs.isEmpty() != (dataset == null)) {
        throw usage(dataset == null ? "--spec needs --dataset" : "--dataset goes with --spec");
      }
      if (store == null && (spark == null || specs.isEmpty())) {
        throw usage("--store is needed (without --spec the candidates come from its jobs' usage; without --spark the"
            + " features are computed into it)");
      }
      long limit = Sizes.parse(budget);
      if (store != null && specs.isEmpty()) {
        requireStore(store);
      }
      try (FeatureStore fs = store == null ? null : FeatureStore.openWriter(store)) {
        List<Planned> planned = specs.isEmpty() ? ranked(fs) : named();
        long used = fs == null ? 0 : fs.list().stream().filter(FeatureMeta::complete).mapToLong(FeatureMeta::bytes).sum();
        ObjectNode result = Json.object();
        ArrayNode plan = result.putArray("features");
        Terminal.Table table = new Terminal.Table("spec", "dataset", "jobs", "computed", "CPU spent", "size", "action");
        List<String> jobArgs = new ArrayList<>();
        List<ObjectNode> onSpark = new ArrayList<>();
        int materialized = 0;
        for (Planned p : planned) {
          String action;
          try (Dataset ds = Dataset.open(Locations.dataset(p.location()))) {
            Derivation d = Derivation.of(Spec.parse(p.spec()), ds);
            String fp = fs == null ? null : fs.fingerprint(d, Derivation.SourceReader.orc(ds));
            Optional<FeatureMeta> m = fs == null ? Optional.empty() : fs.meta(fp);
            if (m.isPresent() && m.get().complete()) {
              action = "already stored";
            } else if (specs.isEmpty() && used + p.bytes() > limit) {
              action = "over budget";
            } else if (dryRun) {
              action = spark != null ? "would materialize on Spark" : "would materialize";
              used += p.bytes();
            } else if (spark != null) {
              action = "on Spark";
              jobArgs.addAll(List.of("--feature", p.location(), d.spec().canonical(), fp == null ? "-" : fp));
            } else {
              Terminal.Bar bar = new Terminal.Bar("materialize " + p.spec(), spec.commandLine().getErr());
              FeatureMeta done = fs.getOrCompute(d, Derivation.SourceReader.orc(ds), bar);
              bar.done();
              used += done.bytes();
              materialized++;
              action = m.isPresent() ? "resumed at chunk " + m.get().done() + ", materialized" : "materialized";
            }
          }
          ObjectNode row = plan.addObject().put("spec", p.spec()).put("dataset", p.dataset()).put("jobs", p.jobs().size())
              .put("computations", p.computations()).put("cpuSeconds", p.cpuSeconds()).put("estimatedBytes", p.bytes())
              .put("action", action);
          if (action.equals("on Spark")) {
            onSpark.add(row);
          }
        }
        if (!jobArgs.isEmpty()) {
          Files.createDirectories(staging);
          Path log = staging.resolve("promote-" + System.currentTimeMillis() + ".log");
          spec.commandLine().getErr().printf("strata: running the promotion job on %s (its log: %s) ...%n", spark, log);
          List<String> args = new ArrayList<>(List.of("--staging", staging.toAbsolutePath().toString()));
          args.addAll(jobArgs);
          List<JsonNode> outcomes = SparkLaunch.runJob(spark, args, log);
          ArrayNode jobs = result.putArray("spark");
          for (int i = 0; i < outcomes.size(); i++) {
            JsonNode o = outcomes.get(i);
            jobs.add(o);
            String action = "staged on Spark (" + o.path("computed").asInt() + " of " + o.path("chunks").asInt() + " chunks computed)";
            if (fs != null) {
              Staging.Feature f = Staging.feature(staging, o.path("fingerprint").asText()).orElseThrow(
                  () -> new IOException("the Spark job reported feature " + o.path("fingerprint").asText() + " staged, but "
                      + staging + " has no complete feature of it"));
              FeatureMeta done = fs.ingest(staging, f, Progress.NONE);
              used += done.bytes();
              action += ", ingested";
            }
            materialized++;
            onSpark.get(i).put("action", action).put("fingerprint", o.path("fingerprint").asText());
          }
        }
        for (JsonNode row : plan) {
          table.row(row.path("spec").asText(), row.path("dataset").asText(), row.path("jobs").asInt(),
              row.path("computations").asLong(), Terminal.seconds(row.path("cpuSeconds").asDouble()),
              Terminal.bytes(row.path("estimatedBytes").asLong()), row.path("action").asText());
        }
        result.put("materialized", materialized).put("storedBytes", used).put("budgetBytes", limit);
        if (json) {
          out.println(Json.compact(result));
        } else {
          table.print(out);
          out.printf("%d materialized; %s of %s used%n", materialized, Terminal.bytes(used), Terminal.bytes(limit));
        }
      }
      return 0;
    }

    /** The features named by --spec on --dataset. */
    private List<Planned> named() throws IOException {
      List<Planned> out = new ArrayList<>();
      try (Dataset ds = Dataset.open(dataset)) {
        for (String s : specs) {
          Derivation d;
          try {
            d = Derivation.of(Spec.parse(s), ds);
          } catch (IllegalArgumentException e) {
            throw usage("--spec " + s + ": " + e.getMessage());
          }
          out.add(new Planned(d.spec().canonical(), ds.name(), location(dataset), Set.of(), 0, 0, 0));
        }
      }
      return out;
    }

    /** The features the store's jobs computed, most CPU per stored byte first. */
    private List<Planned> ranked(FeatureStore fs) throws IOException {
      Map<String, Candidate> byKey = new LinkedHashMap<>();
      for (DerivedStore.Usage u : fs.usage()) {
        String key = u.datasetDir() + "\0" + u.spec();
        Candidate c = byKey.get(key);
        Set<String> jobs = c == null ? new HashSet<>() : c.jobs();
        jobs.add(u.job());
        byKey.put(key, c == null
            ? new Candidate(u.dataset(), u.datasetDir(), u.spec(), jobs, 1, u.cpuNanos() / 1e9, u.bytes(), u.rows())
            : new Candidate(u.dataset(), u.datasetDir(), u.spec(), jobs, c.computations() + 1,
                c.cpuSeconds() + u.cpuNanos() / 1e9, c.bytes() + u.bytes(), c.rows() + u.rows()));
      }
      record Ranked(Planned p, double value) {}
      List<Ranked> ranked = new ArrayList<>();
      for (Candidate c : byKey.values()) {
        if (c.jobs().size() < minJobs || !Files.isDirectory(Path.of(c.datasetDir()))) {
          continue;
        }
        long rows = Manifest.read(Path.of(c.datasetDir())).rows();
        long bytes = Math.max(1, c.estimatedBytes(rows));
        ranked.add(new Ranked(new Planned(c.spec(), c.dataset(), c.datasetDir(), c.jobs(), c.computations(), c.cpuSeconds(),
            bytes), c.cpuSeconds() / bytes));
      }
      ranked.sort(Comparator.comparingDouble(Ranked::value).reversed());
      return ranked.stream().map(Ranked::p).toList();
    }

    /** A dataset's location as every host names it: a URI for hdfs:// and s3://, else its absolute path. */
    private static String location(Path p) {
      return Locations.remote(p) ? p.toUri().toString() : p.toAbsolutePath().toString();
    }
  }

  @Command(name = "gc", mixinStandardHelpOptions = true,
      description = "Delete derived features of datasets that changed or are gone, abandoned builds, and features unused for a while.")
  static final class Gc implements Callable<Integer> {
    @picocli.CommandLine.Spec CommandSpec spec;

    @Option(names = "--store", required = true, description = "Feature store directory (opened for writing).")
    Path store;

    @Option(names = "--unused-days", defaultValue = "30", description = "Delete complete features unused this long; default ${DEFAULT-VALUE}.")
    int unusedDays;

    @Option(names = "--json", description = "Print the deleted fingerprints as JSON.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      requireStore(store);
      try (FeatureStore fs = FeatureStore.openWriter(store)) {
        Map<String, String> dirs = new LinkedHashMap<>();
        fs.list().forEach(m -> dirs.put(m.dataset(), m.datasetDir()));
        List<String> deleted = fs.gc(name -> {
          try {
            String dir = dirs.get(name);
            return dir != null && Files.isDirectory(Path.of(dir)) ? Optional.of(Manifest.read(Path.of(dir)).version()) : Optional.empty();
          } catch (IOException e) {
            return Optional.empty();
          }
        }, Duration.ofDays(1), Duration.ofDays(unusedDays));
        if (json) {
          ArrayNode a = Json.array();
          deleted.forEach(a::add);
          spec.commandLine().getOut().println(Json.compact(Json.object().put("deleted", deleted.size()).set("fingerprints", a)));
          return 0;
        }
        spec.commandLine().getOut().printf("deleted %d derived features%s%n", deleted.size(),
            deleted.isEmpty() ? "" : ": " + String.join(", ", deleted));
      }
      return 0;
    }
  }
}
