package io.strata.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.ops.serve.LoaderServe;
import io.strata.ops.Processes;
import io.strata.ops.Terminal;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.Json;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.Loader;
import io.strata.sdk.tiering.SegmentStore;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

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

  @Option(names = "--epochs", defaultValue = "3",
      description = "Epochs read by the Java loader and the Strata pipelines (steady state, as in training); default ${DEFAULT-VALUE}.")
  int epochs;

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

  private String python() {
    return python != null ? python : Processes.defaultPython();
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
        Processes.deleteTree(dir);
      }
    }
  }

  /** This run's own loader service (a fresh one, of this build). */
  private Path serviceSocket;

  private int run(PrintWriter out, Path dir) throws Exception {
    String py = python();
    String why = Processes.pythonUnavailable(py);
    if (why != null) {
      return BenchPeers.notMeasured(out, json, "python", why);
    }
    serviceSocket = dir.resolve("service/loader.sock");
    Path script = dir.resolve("python_bench.py");
    try (InputStream in = BenchPython.class.getResourceAsStream("python_bench.py")) {
      Files.copy(in, script, StandardCopyOption.REPLACE_EXISTING);
    }
    Path ds = dataset;
    Path tier = ssd;
    if (ds == null) {
      Path data = dir.resolve("data");
      BenchAll.prepare(data, rows, spec.commandLine().getErr());
      ds = data.resolve("hdd");
      tier = data.resolve("ssd");
    }
    Path npy = Files.createDirectories(dir.resolve("npy"));
    ObjectNode specJson = Json.object().put("dataset", ds.toAbsolutePath().toString()).put("ssd", tier.toAbsolutePath().toString())
        .put("batchRows", batchRows).put("seed", seed).put("workers", workers).put("npyDir", npy.toString())
        .put("epochs", epochs);
    features.forEach(specJson.putArray("features")::add);
    Path specFile = dir.resolve("spec.json");
    Files.writeString(specFile, Json.compact(specJson));

    pythonRun(py, script, specFile, "export");
    ObjectNode result = Json.object();
    result.put("benchmark", "python").put("available", true).put("interpreter", py).put("batchRows", batchRows).put("workers", workers)
        .put("epochs", epochs)
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
    // The marginal cost of a job. Python side: three jobs against three interpreter-and-torch
    // baselines, each three at once (library pages are shared alike). Java side: the one loader
    // service of the host, with one job and then with three.
    long[] service = new long[1];
    long base = mean(holdAndMeasure(py, script, specFile, "baseline", 1 + EXTRA_JOBS, null));
    holdAndMeasure(py, script, specFile, "job", 1, service);
    long serviceOne = service[0];
    long jobs = mean(holdAndMeasure(py, script, specFile, "job", 1 + EXTRA_JOBS, service));
    long serviceThree = service[0];
    long perJob = (jobs - base) + (serviceThree - serviceOne) / EXTRA_JOBS;
    memory.put("baselinePrivateBytes", base).put("jobPythonPrivateBytes", jobs)
        .put("servicePrivateBytesOneJob", serviceOne).put("servicePrivateBytesThreeJobs", serviceThree)
        .put("extraPrivateBytesPerJob", perJob);
    long extraPrivate = perJob;

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
      out.printf("  private memory each extra job adds over python+torch: %s (the host's loader service: %s with one job)%n",
          Terminal.bytes(extraPrivate), Terminal.bytes(memory.path("servicePrivateBytesOneJob").asLong()));
    }
    out.flush();
    return 0;
  }

  /** The Java loader in this process, same settings: rate after its first batch. */
  private ObjectNode javaRate(Path ds, Path tier) throws IOException {
    try (Dataset d = Dataset.open(ds);
        SegmentStore store = SegmentStore.open(tier, false, SegmentFile.Verify.FIRST_OPEN);
        Loader loader = Loader.builder(d).features(features).segments(store).rowBatches(batchRows, true).seed(seed)
            .epochs(epochs).build()) {
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
    Processes.clientEnvironment(pb, serviceSocket, 10);
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
          + " with numpy, pyarrow and torch (./strata bench setup makes target/pyvenv): " + outText.strip());
    }
    JsonNode r = Processes.jsonResult(outText);
    if (r == null) {
      throw new IOException("the Python peer (" + mode + ") printed no result: " + outText.strip());
    }
    return r;
  }

  static final int EXTRA_JOBS = 2;

  private static long mean(List<Long> values) {
    return values.stream().mapToLong(Long::longValue).sum() / values.size();
  }

  /** Private bytes (clean and dirty) of a process, from smaps_rollup. */
  private static long privateBytes(long pid) throws IOException {
    Map<String, Long> m = BenchCommand.smapsRollup(pid);
    return (m.getOrDefault("Private_Clean", 0L) + m.getOrDefault("Private_Dirty", 0L)) * 1024;
  }

  /** Private bytes of this run's loader service (its pid is in a file beside its socket). */
  private long servicePrivate() throws IOException {
    Path pid = LoaderServe.pidFile(serviceSocket);
    if (!Files.exists(pid)) {
      throw new IOException("the loader service on " + serviceSocket + " is not running (no " + pid + ")");
    }
    return privateBytes(Long.parseLong(Files.readString(pid).strip()));
  }

  /**
   * Starts {@code count} holding Python processes at once and, when all are ready, returns each
   * one's private bytes; with {@code service} given, also the loader service's (a separate process
   * the jobs share) while they hold.
   */
  private List<Long> holdAndMeasure(String py, Path script, Path specFile, String mode, int count, long[] service)
      throws Exception {
    List<Process> procs = new ArrayList<>();
    List<Long> out = new ArrayList<>();
    try {
      for (int i = 0; i < count; i++) {
        procs.add(pythonProcess(py, script, specFile, mode).start());
      }
      for (Process p : procs) {
        BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line;
        while ((line = r.readLine()) != null && !line.startsWith("{\"ready\"")) {
          // the job's batch count comes first
        }
        if (line == null) {
          throw new IOException("the Python " + mode + " process ended before it was ready");
        }
      }
      for (Process p : procs) {
        out.add(privateBytes(p.pid()));
      }
      if (service != null) {
        service[0] = servicePrivate();
      }
      return out;
    } finally {
      for (Process p : procs) {
        try (Writer stdin = new OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8)) {
          stdin.write("\n");
        } catch (IOException ignored) {
          // It ended already.
        }
      }
      for (Process p : procs) {
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
          p.destroyForcibly();
        }
      }
    }
  }
}
