package io.strata.ops;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.Dataset;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.Json;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.Loader;
import io.strata.sdk.tier.SegmentStore;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code strata bench python}: the Python client against the Java loader it fronts and against the
 * usual PyTorch pipeline (a map-style Dataset over numpy.memmap, one row per item, default
 * collate), on the same segments, features and batch size, one after another in one run; then the
 * private memory a PyTorch job adds when it reads through Strata.
 */
@Command(name = "python", mixinStandardHelpOptions = true,
    description = "Python client vs the Java loader vs a PyTorch Dataset over numpy.memmap (same data, same workers); memory of a Python job.")
final class BenchPython implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--dataset", description = "Dataset directory (default: generate one in the work directory).")
  Path dataset;

  @Option(names = "--ssd", description = "SSD tier with the features promoted (required with --dataset).")
  Path ssd;

  @Option(names = "--rows", defaultValue = "4000000", description = "Rows of the generated dataset; default ${DEFAULT-VALUE}.")
  long rows;

  @Option(names = "--features", split = ",", defaultValue = "amount,merchant_id,quantity,score,sample_id",
      description = "Fixed-width features read; default ${DEFAULT-VALUE}.")
  List<String> features;

  @Option(names = "--batch-rows", defaultValue = "16384", description = "Rows per batch (shuffled rows); default ${DEFAULT-VALUE}.")
  int batchRows;

  @Option(names = "--workers", defaultValue = "2", description = "DataLoader workers of both PyTorch pipelines; default ${DEFAULT-VALUE}.")
  int workers;

  @Option(names = "--memmap-batches", defaultValue = "30", description = "Batches timed for the numpy.memmap Dataset (it is slow); default ${DEFAULT-VALUE}.")
  int memmapBatches;

  @Option(names = "--python", description = "Python with numpy, pyarrow and torch (default: target/pyvenv/bin/python of the checkout, else python3).")
  String python;

  @Option(names = "--work", description = "Work directory (default: a temporary one, removed afterwards).")
  Path work;

  @Option(names = "--quick", description = "Small data (200 k rows): a check that everything runs, not a measurement.")
  boolean quick;

  @Option(names = "--seed", defaultValue = "1")
  long seed;

  @Option(names = "--json", description = "Print the figures as one JSON object.")
  boolean json;

  /** The checkout this jar was built in (ops/target/...), or null. */
  static Path checkout() {
    try {
      Path code = Path.of(BenchPython.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      for (Path p = code; p != null; p = p.getParent()) {
        if (Files.isRegularFile(p.resolve("python/strata/__init__.py"))) {
          return p;
        }
      }
    } catch (Exception ignored) {
      // Not from a checkout.
    }
    return null;
  }

  private String python() {
    if (python != null) {
      return python;
    }
    Path root = checkout();
    if (root != null && Files.isExecutable(root.resolve("target/pyvenv/bin/python"))) {
      return root.resolve("target/pyvenv/bin/python").toString();
    }
    return "python3";
  }

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    if ((dataset == null) != (ssd == null)) {
      throw new IllegalArgumentException("give --dataset and --ssd together, or neither (a dataset is generated)");
    }
    if (quick) {
      rows = Math.min(rows, 200_000);
      memmapBatches = Math.min(memmapBatches, 4);
    }
    boolean ownWork = work == null;
    Path dir = ownWork ? Files.createTempDirectory("strata-bench-python-") : work;
    Files.createDirectories(dir);
    try {
      return run(out, dir);
    } finally {
      if (ownWork) {
        LoaderServe.deleteTree(dir);
      }
    }
  }

  private int run(PrintWriter out, Path dir) throws Exception {
    String py = python();
    Path script = dir.resolve("python_bench.py");
    try (InputStream in = BenchPython.class.getResourceAsStream("python_bench.py")) {
      Files.copy(in, script, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }
    Path ds = dataset;
    Path tier = ssd;
    if (ds == null) {
      ds = dir.resolve("events");
      tier = dir.resolve("ssd");
      step(out, "dataset", "generate", "--out", ds.toString(), "--rows", Long.toString(rows), "--features", "10",
          "--seed", Long.toString(seed), "--rows-per-chunk", Long.toString(Math.max(65536, rows / 16)));
      step(out, "promote", "--dataset", ds.toString(), "--ssd", tier.toString(), "--features", String.join(",", features));
    }
    Path npy = Files.createDirectories(dir.resolve("npy"));
    ObjectNode specJson = Json.object().put("dataset", ds.toAbsolutePath().toString()).put("ssd", tier.toAbsolutePath().toString())
        .put("batchRows", batchRows).put("seed", seed).put("workers", workers).put("npyDir", npy.toString());
    features.forEach(specJson.putArray("features")::add);
    Path specFile = dir.resolve("spec.json");
    Files.writeString(specFile, Json.compact(specJson));

    pythonRun(py, script, specFile, "export");
    ObjectNode result = Json.object();
    result.put("benchmark", "python").put("python", py).put("batchRows", batchRows).put("workers", workers)
        .put("cores", Runtime.getRuntime().availableProcessors());
    features.forEach(result.putArray("features")::add);

    ObjectNode java = javaRate(ds, tier);
    JsonNode strata = pythonRun(py, script, specFile, "strata");
    ObjectNode limited = specJson.deepCopy().put("maxBatches", memmapBatches);
    Path limitedFile = dir.resolve("spec-memmap.json");
    Files.writeString(limitedFile, Json.compact(limited));
    JsonNode torchStrata = pythonRun(py, script, specFile, "torch-strata");
    JsonNode torchMemmap = pythonRun(py, script, limitedFile, "torch-memmap");
    result.set("java", java);
    result.set("python", strata);
    result.set("torchStrata", torchStrata);
    result.set("torchMemmap", torchMemmap);

    ObjectNode memory = result.putObject("memory");
    Map<String, Long> base = holdAndMeasure(py, script, specFile, "baseline", memory.putObject("baseline"));
    Map<String, Long> job = holdAndMeasure(py, script, specFile, "job", memory.putObject("job"));
    long extraPrivate = (job.get("private") - base.get("private")) * 1024;
    memory.put("extraPrivateBytes", extraPrivate);
    memory.put("extraPssBytes", (job.get("pss") - base.get("pss")) * 1024);

    ObjectNode ratios = result.putObject("ratios");
    ratios.put("pythonVsJava", strata.path("batchesPerSecond").asDouble() / java.path("batchesPerSecond").asDouble());
    ratios.put("pythonVsTorchMemmap",
        torchStrata.path("batchesPerSecond").asDouble() / torchMemmap.path("batchesPerSecond").asDouble());

    if (json) {
      out.println(Json.compact(result));
    } else {
      out.printf("shuffled rows, %d per batch, features %s, %d DataLoader workers%n", batchRows, features, workers);
      out.printf("  Java Loader              %8.1f batches/s (%s/s)%n", java.path("batchesPerSecond").asDouble(),
          Terminal.bytes((long) java.path("bytesPerSecond").asDouble()));
      out.printf("  Python strata.Loader     %8.1f batches/s (%.2f x Java)%n", strata.path("batchesPerSecond").asDouble(),
          ratios.path("pythonVsJava").asDouble());
      out.printf("  DataLoader(Strata)       %8.1f batches/s (%.1f x the memmap Dataset)%n",
          torchStrata.path("batchesPerSecond").asDouble(), ratios.path("pythonVsTorchMemmap").asDouble());
      out.printf("  DataLoader(memmap rows)  %8.2f batches/s%n", torchMemmap.path("batchesPerSecond").asDouble());
      out.printf("  private memory a job adds over python+torch: %s (its Java loader %s)%n", Terminal.bytes(extraPrivate),
          Terminal.bytes(memory.path("job").path("javaPrivateBytes").asLong()));
    }
    out.flush();
    return 0;
  }

  private void step(PrintWriter out, String... args) {
    java.io.StringWriter sink = new java.io.StringWriter();
    java.io.StringWriter err = new java.io.StringWriter();
    int code = Main.run(args, new PrintWriter(sink), new PrintWriter(err));
    if (code != 0) {
      throw new IllegalStateException("strata " + args[0] + " failed: " + err.toString().strip());
    }
  }

  /** The Java loader in this process, same settings: rate after its first batch. */
  private ObjectNode javaRate(Path ds, Path tier) throws IOException {
    try (Dataset d = Dataset.open(ds);
        SegmentStore store = SegmentStore.open(tier, false, SegmentFile.Verify.FIRST_OPEN);
        Loader loader = Loader.builder(d).features(features).segments(store).rowBatches(batchRows, true).seed(seed).build()) {
      long t0 = 0;
      long n = 0;
      long bytes = 0;
      for (Batch b : loader) {
        try (b) {
          if (t0 == 0) {
            t0 = System.nanoTime();
          } else {
            n++;
            bytes += b.dataBytes();
          }
        }
      }
      double s = (System.nanoTime() - t0) / 1e9;
      return Json.object().put("batches", n).put("bytes", bytes).put("seconds", s).put("batchesPerSecond", n / s)
          .put("bytesPerSecond", bytes / s);
    }
  }

  private ProcessBuilder pythonProcess(String py, Path script, Path specFile, String mode) {
    ProcessBuilder pb = new ProcessBuilder(py, script.toString(), specFile.toString(), mode);
    Path root = checkout();
    if (root != null) {
      String pp = System.getenv("PYTHONPATH");
      pb.environment().put("PYTHONPATH", root.resolve("python") + (pp == null ? "" : ":" + pp));
    }
    pb.environment().put("STRATA_JAVA", Path.of(System.getProperty("java.home"), "bin", "java").toString());
    pb.environment().put("STRATA_CLASSPATH", System.getProperty("java.class.path"));
    pb.redirectError(ProcessBuilder.Redirect.INHERIT);
    return pb;
  }

  private JsonNode pythonRun(String py, Path script, Path specFile, String mode) throws Exception {
    Process p = pythonProcess(py, script, specFile, mode).start();
    p.getOutputStream().close();
    String outText = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(30, TimeUnit.MINUTES) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IOException("the Python peer (" + mode + ") failed; it needs " + py
          + " with numpy, pyarrow and torch (.ci/run makes target/pyvenv): " + outText.strip());
    }
    JsonNode r = BenchCommand.jsonResult(outText);
    if (r == null) {
      throw new IOException("the Python peer (" + mode + ") printed no result: " + outText.strip());
    }
    return r;
  }

  /** Starts a holding Python process, reads the private memory and PSS of it and its children (kB). */
  private Map<String, Long> holdAndMeasure(String py, Path script, Path specFile, String mode, ObjectNode into)
      throws Exception {
    Process p = pythonProcess(py, script, specFile, mode).start();
    try (Writer stdin = new java.io.OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8)) {
      BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
      String line;
      while ((line = r.readLine()) != null && !line.startsWith("{\"ready\"")) {
        // the job's batch count comes first
      }
      if (line == null) {
        throw new IOException("the Python " + mode + " process ended before it was ready");
      }
      long privateKb = 0;
      long pssKb = 0;
      long javaPrivateKb = 0;
      List<ProcessHandle> all = new ArrayList<>();
      all.add(p.toHandle());
      p.descendants().forEach(all::add);
      for (ProcessHandle h : all) {
        Map<String, Long> m = BenchCommand.smapsRollup(h.pid());
        long priv = m.getOrDefault("Private_Clean", 0L) + m.getOrDefault("Private_Dirty", 0L);
        privateKb += priv;
        pssKb += m.getOrDefault("Pss", 0L);
        if (h.pid() != p.pid()) {
          javaPrivateKb += priv;
        }
      }
      into.put("processes", all.size()).put("privateBytes", privateKb * 1024).put("pssBytes", pssKb * 1024)
          .put("javaPrivateBytes", javaPrivateKb * 1024);
      stdin.write("\n");
      stdin.flush();
      return Map.of("private", privateKb, "pss", pssKb);
    } finally {
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
      }
    }
  }
}
