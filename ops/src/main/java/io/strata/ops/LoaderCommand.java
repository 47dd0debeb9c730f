package io.strata.ops;

import io.strata.sdk.internal.SafePaths;
import io.strata.sdk.loader.LoaderBuilder;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.gpu.DeviceBatch;
import io.strata.gpu.GpuShipper;
import io.strata.ops.serve.LoaderServe;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.tier.Tier;
import io.strata.sdk.tier.TierStats;
import io.strata.sdk.files.OrcReads;
import io.strata.sdk.format.Columns;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.Json;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.BatchMode;
import io.strata.sdk.loader.Checkpoint;
import io.strata.sdk.loader.Loader;
import io.strata.sdk.node.NodeClient;
import io.strata.sdk.tiering.SegmentStore;
import io.strata.store.FeatureStore;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine;

/** {@code strata loader run}: run a loader the way a training job would, and report. */
@Command(name = "loader", mixinStandardHelpOptions = true, description = "Run the loader SDK from the command line.",
    subcommands = {LoaderCommand.Run.class, LoaderCommand.Serve.class})
final class LoaderCommand implements Runnable {
  @Spec CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /**
   * How lists of features split: at commas outside parentheses, so that a derived spec such as
   * {@code ngram_hash(tokens, 2, 1000)} stays whole. ';' is still read, as earlier versions wrote it.
   */
  static final String FEATURE_LIST = ";|,(?![^(]*\\))";

  /** {@code --mode}: a {@link BatchMode} by its name. */
  static final class ModeConverter implements picocli.CommandLine.ITypeConverter<BatchMode> {
    @Override
    public BatchMode convert(String value) {
      try {
        return BatchMode.parse(value);
      } catch (IllegalArgumentException e) {
        throw new picocli.CommandLine.TypeConversionException(e.getMessage());
      }
    }
  }

  @Command(name = "run", mixinStandardHelpOptions = true,
      description = "Read batches like a training job: resumable from a checkpoint file, with an optional persistent batch cache.")
  static final class Run implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--dataset", required = true, converter = DatasetPath.class, description = "Dataset directory (or hdfs:// URI).")
    Path dataset;

    @Option(names = "--ssd", description = "SSD tier directory with promoted segments.")
    Path ssd;

    @Option(names = "--node", paramLabel = "URL",
        description = "Read through this cache node (declares the plan, maps the segments it names, reports reads); token from $STRATA_TOKEN.")
    String node;

    @Option(names = "--job", description = "Job name reported to the node (default: loader-<pid>).")
    String job;

    @Option(names = "--features", split = FEATURE_LIST,
        description = "Features to read, separated by ',' (commas inside a derived spec's parentheses belong to it): column names or derived specs (default: all served).")
    List<String> features;

    @Option(names = "--feature-store", description = "Feature store for derived features (opened read-only beside its writer).")
    Path featureStore;

    @Option(names = "--mode", defaultValue = "samples", converter = ModeConverter.class,
        description = "samples, rows or windows; default ${DEFAULT-VALUE}.")
    BatchMode mode;

    @Option(names = "--batch", defaultValue = "512", description = "Samples, rows or windows per batch; default ${DEFAULT-VALUE}.")
    int batch;

    @Option(names = "--window", defaultValue = "32", description = "Rows per window (windows mode).")
    int window;

    @Option(names = "--lookahead", defaultValue = "1", description = "Label rows after each window (windows mode).")
    int lookahead;

    @Option(names = "--stride", defaultValue = "1", description = "Rows between window starts (windows mode).")
    int stride;

    @Option(names = "--substitutable",
        description = "Let the loader reorder each epoch's batches so that those whose chunks are on the SSD tier come first (every batch once; checkpoints record it).")
    boolean substitutable;

    @Option(names = "--no-shuffle", description = "Read units in dataset order.")
    boolean noShuffle;

    @Option(names = "--shuffle-block", description = "Shuffle blocks of this many rows (rows mode).")
    Integer shuffleBlock;

    @Option(names = "--shuffle-chunks", paramLabel = "N", defaultValue = "0",
        description = "Shuffle within blocks of N whole chunks taken in a shuffled order (samples and rows): each epoch reads every chunk once, for data larger than memory on slow storage; 0 (default): across the whole epoch.")
    int shuffleChunks;

    @Option(names = "--seed", defaultValue = "0")
    long seed;

    @Option(names = "--epochs", defaultValue = "1")
    int epochs;

    @Option(names = "--rank", defaultValue = "0")
    int rank;

    @Option(names = "--world", defaultValue = "1")
    int world;

    @Option(names = "--prefetch", defaultValue = "4", description = "Batches assembled ahead; default ${DEFAULT-VALUE}.")
    int prefetch;

    @Option(names = "--threads", defaultValue = "1", description = "Prefetch threads; default ${DEFAULT-VALUE}.")
    int threads;

    @Option(names = "--assembly-threads", paramLabel = "N|auto",
        description = "Threads that assemble each batch together, a group of its features each, or auto (the cores shared"
            + " among the jobs the node has plans for); default 1, auto with --gpu.")
    String assemblyThreads;

    private int assemblyThreadsOption() {
      if (assemblyThreads == null) {
        return gpu != null ? LoaderBuilder.AUTO : 1;
      }
      if (assemblyThreads.equals("auto")) {
        return LoaderBuilder.AUTO;
      }
      try {
        int n = Integer.parseInt(assemblyThreads);
        if (n >= 1) {
          return n;
        }
      } catch (NumberFormatException e) {
        // the message below
      }
      throw new CommandLine.ParameterException(spec.commandLine(),
          "--assembly-threads must be a number from 1 to 256 or auto, got '" + assemblyThreads + "'");
    }

    @Option(names = "--checkpoint", description = "Resume from this file if it exists; rewrite it after every batch.")
    Path checkpoint;

    @Option(names = "--batch-cache", arity = "0..1", fallbackValue = "", paramLabel = "DIR",
        description = "Keep batches in a persistent cache (default directory: /dev/shm/strata-UID/batches; a directory you give must be yours alone: it is created 0700, and one that is a link, another user's or writable by others is refused).")
    String batchCache;

    @Option(names = "--max-batches", description = "Stop after this many batches.")
    Long maxBatches;

    @Option(names = "--step-ms", defaultValue = "0", description = "Milliseconds of simulated training work per batch.")
    int stepMs;

    @Option(names = "--print-checksums", description = "Print one line per batch: epoch, step, source, rows, checksum.")
    boolean printChecksums;

    @Option(names = "--hold", defaultValue = "0", description = "Seconds to stay alive after the last batch (memory measurements).")
    int hold;

    @Option(names = "--ready-file", description = "Create this file after the last batch, before holding.")
    Path readyFile;

    @Option(names = "--verify-against", paramLabel = "FILE",
        description = "Check every sample of every batch against this ground-truth file ('strata dataset truth'); samples mode only.")
    Path verifyAgainst;

    @Option(names = "--json", description = "Print the summary as JSON.")
    boolean json;

    @Option(names = "--dump-batches", paramLabel = "DIR",
        description = "Write every batch as an Arrow IPC file DIR/batch-EPOCH-STEP.arrow (to compare other readers' batches).")
    Path dumpBatches;

    @Option(names = "--gpu", arity = "0..1", fallbackValue = "0", paramLabel = "DEVICE",
        description = "Ship every batch to this CUDA device (default 0); without a GPU, say so once and carry on.")
    Integer gpu;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      long started = System.nanoTime();
      if (node != null && ssd != null) {
        throw new IllegalArgumentException("give --node or --ssd, not both: the node owns its SSD tier");
      }
      if (verifyAgainst != null && mode != BatchMode.SAMPLES) {
        throw new IllegalArgumentException("--verify-against checks samples: use it with --mode samples");
      }
      String jobName = job != null ? job : "loader-" + ProcessHandle.current().pid();
      if (ssd != null && !Files.isDirectory(ssd)) {
        throw new NoSuchFileException(ssd.toString(), null, "no SSD tier directory ('strata promote --ssd' makes one)");
      }
      try (Dataset ds = Dataset.open(dataset);
          SegmentStore store = ssd == null ? null : SegmentStore.open(ssd, false, SegmentFile.Verify.FIRST_OPEN);
          FeatureStore fstore = featureStore == null ? null : FeatureStore.openReader(featureStore)) {
        LoaderBuilder b = Loader.builder(ds)
            .derivedStore(fstore)
            .name(jobName)
            .features(features != null ? features : ds.featureNames())
            .segments(store)
            .seed(seed)
            .epochs(epochs)
            .shard(rank, world)
            .prefetch(prefetch, threads)
            .assemblyThreads(assemblyThreadsOption())
            .substitutable(substitutable)
            .shuffle(!noShuffle)
            .shuffleChunks(shuffleChunks);
        boolean nodeReachable = true;
        if (node != null) {
          String token = System.getenv("STRATA_TOKEN");
          NodeClient client = new NodeClient(node, token == null || token.isBlank() ? null : token);
          try {
            client.health();
          } catch (IOException e) {
            nodeReachable = false;
            PrintWriter err = spec.commandLine().getErr();
            err.println("strata: warning: " + Main.describe(e) + "; reading from ORC until the node answers");
            err.flush();
          }
          b.node(client, jobName);
        }
        switch (mode) {
          case SAMPLES -> b.sampleBatches(batch);
          case ROWS -> {
            b.rowBatches(batch, !noShuffle);
            if (shuffleBlock != null) {
              b.shuffleBlock(shuffleBlock);
            }
          }
          case WINDOWS -> b.windows(window, lookahead, stride, batch);
        }
        if (checkpoint != null && Files.exists(checkpoint)) {
          b.resumeFrom(Checkpoint.parse(Files.readAllBytes(checkpoint)));
        }
        if (batchCache != null) {
          b.batchCache(batchCache.isEmpty() ? LoaderBuilder.defaultBatchCacheRoot() : Path.of(batchCache));
        }
        long batches = 0;
        long rows = 0;
        long bytes = 0;
        Checkpoint first;
        HexFormat hex = HexFormat.of();
        GpuShipper shipper = null;
        boolean gpuUsable = gpu != null && GpuShipper.available();
        long shippedBytes = 0;
        long shipNanos = 0;
        com.fasterxml.jackson.databind.node.ArrayNode epochStats = Json.array();
        GroundTruth.Checker checker = verifyAgainst == null ? null : new GroundTruth.Checker(GroundTruth.read(verifyAgainst), ds);
        long lastProgress = System.nanoTime();
        if (gpuUsable) {
          shipper = GpuShipper.open(gpu, 64L << 20);
          b.batchMemory(shipper.batchMemory());
        }
        try (Loader loader = b.build()) {
          first = loader.position();
          EpochMarks marks = new EpochMarks(loader.tierStats(), epochStats);
          for (Batch batchRead : loader) {
            try (batchRead) {
              marks.batch(batchRead.epoch(), batchRead.rows());
              long crc = 0;
              for (Column c : batchRead.columns().values()) {
                crc = crc * 31 + Columns.checksum(c);
              }
              if (checker != null) {
                checker.check(batchRead);
                if (System.nanoTime() - lastProgress > 2_000_000_000L) {
                  // Progress (what a killed job had checked): beside --json's one object, on standard error.
                  PrintWriter progress = json ? spec.commandLine().getErr() : out;
                  progress.printf("verified %d %d %d%n", checker.batches, checker.values, checker.mismatches);
                  progress.flush();
                  lastProgress = System.nanoTime();
                }
              }
              if (dumpBatches != null) {
                SafePaths.trusted(dumpBatches); // no link another user planted on the way
                Files.createDirectories(dumpBatches);
                batchRead.writeArrowFile(dumpBatches.resolve("batch-" + batchRead.epoch() + "-" + batchRead.step() + ".arrow"),
                    ds.name(), ds.version());
              }
              if (checkpoint != null) {
                AtomicFiles.write(checkpoint, batchRead.checkpoint().toBytes());
              }
              if (printChecksums) {
                out.printf("batch %d %d %s %d %s%n", batchRead.epoch(), batchRead.step(), batchRead.source(), batchRead.rows(),
                    hex.toHexDigits(crc));
                out.flush();
              }
              rows += batchRead.rows();
              bytes += batchRead.dataBytes();
              batches++;
              if (shipper != null) {
                // The shipper takes the batch (assembled in its pinned memory) and gives it back
                // to the loader once the copy is done.
                long t = System.nanoTime();
                DeviceBatch d = shipper.ship(batchRead);
                d.await();
                shipNanos += System.nanoTime() - t;
                shippedBytes += d.bytes();
              }
              if (stepMs > 0) {
                Thread.sleep(stepMs);
              }
            }
            if (maxBatches != null && batches >= maxBatches) {
              break;
            }
          }
          marks.close();
          double seconds = (System.nanoTime() - started) / 1e9;
          TierStats s = loader.tierStats();
          ObjectNode j = Json.object();
          j.put("batches", batches).put("rows", rows).put("bytes", bytes).put("seconds", seconds);
          j.put("startEpoch", first.epoch()).put("startStep", first.step());
          j.put("timeToFirstBatchMs", loader.timeToFirstBatchNanos() / 1e6).put("assemblyThreads", loader.assemblyThreads());
          j.put("batchesFromCache", loader.batchesFromCache());
          j.put("derivedChunksComputed", loader.derivedChunksComputed());
          j.put("ssdBytes", s.bytes(Tier.SSD)).put("hddBytes", s.bytes(Tier.HDD))
              .put("orcDecodedBytes", s.orcDecodedBytes())
              .put("orcReadBytes", OrcReads.bytes());
          if (node != null) {
            loader.node().flush();
            j.put("nodeReachableAtStart", nodeReachable).put("nodeConnectedAtEnd", loader.node().connected())
                .put("nodeReadsReported", loader.node().readsReported());
          }
          j.put("ssdSeconds", s.nanos(Tier.SSD) / 1e9).put("hddSeconds", s.nanos(Tier.HDD) / 1e9);
          j.set("epochs", epochStats);
          if (checker != null) {
            j.put("verifiedBatches", checker.batches).put("verifiedUnits", checker.units).put("verifiedValues", checker.values)
                .put("mismatches", checker.mismatches);
            checker.firstMismatches.forEach(j.putArray("firstMismatches")::add);
          }
          if (gpu != null) {
            j.put("gpu", gpuUsable ? "device " + gpu : GpuShipper.unavailableReason());
            j.put("gpuBytes", shippedBytes).put("gpuSeconds", shipNanos / 1e9);
            if (shipper != null) {
              j.put("gpuCopiesPerByte", shipper.copiesPerByte());
            }
          }
          if (json) {
            out.println(Json.compact(j));
          } else {
            out.printf("read %d batches (%s rows, %s) in %s: %.1f batches/s; first batch after %s (%d from the batch cache)%n",
                batches, Terminal.count(rows), Terminal.bytes(bytes), Terminal.seconds(seconds), batches / seconds,
                Terminal.seconds(loader.timeToFirstBatchNanos() / 1e9), loader.batchesFromCache());
            if (gpuUsable) {
              out.printf("GPU %d: shipped %s in %s (%.2f GB/s; %.3f host copies per byte)%n", gpu,
                  Terminal.bytes(shippedBytes), Terminal.seconds(shipNanos / 1e9), shippedBytes / 1e9 / Math.max(1e-9, shipNanos / 1e9),
                  shipper.copiesPerByte());
            }
            if (checker != null) {
              out.printf("checked %s sample values of %d batches against %s: %d mismatches%n", Terminal.count(checker.values),
                  checker.batches, verifyAgainst, checker.mismatches);
              checker.firstMismatches.forEach(m -> out.println("  mismatch: " + m));
            }
            if (node != null && !loader.node().connected()) {
              out.printf("node %s: not reachable at the end of the run; the reads above went to ORC while it was down%n", node);
            }
            out.printf("tiers: SSD %s in %s, HDD %s in %s%n", Terminal.bytes(s.bytes(Tier.SSD)),
                Terminal.seconds(s.nanos(Tier.SSD) / 1e9), Terminal.bytes(s.bytes(Tier.HDD)),
                Terminal.seconds(s.nanos(Tier.HDD) / 1e9));
          }
          out.flush();
          if (checker != null && checker.mismatches > 0) {
            return Main.FAILURE;
          }
          if (readyFile != null) {
            // Atomic, and never through a link another user planted (SafePaths): a plain write would truncate its target.
            AtomicFiles.write(readyFile, Long.toString(ProcessHandle.current().pid()).getBytes(StandardCharsets.UTF_8));
          }
          if (hold > 0) {
            Thread.sleep(hold * 1000L);
          }
        } finally {
          if (shipper != null) {
            shipper.close();
          }
        }
      }
      return 0;
    }
  }

  @Command(name = "serve", mixinStandardHelpOptions = true,
      description = "The Python client's back end: one loader whose batches land in shared memory the Python job maps"
          + " (JSON lines on standard input and output; see docs/API.md).")
  static final class Serve implements Callable<Integer> {
    @Option(names = "--socket", paramLabel = "PATH",
        description = "Serve every job of this user on this host over a Unix domain socket (one JVM for all), instead of one job on standard input and output.")
    Path socket;

    @Option(names = "--idle-exit", defaultValue = "60", paramLabel = "SECONDS",
        description = "With --socket: exit after this many seconds without a job; default ${DEFAULT-VALUE}.")
    int idleExit;

    @Override
    public Integer call() throws Exception {
      if (socket == null) {
        return LoaderServe.run();
      }
      if (idleExit < 1) {
        throw new IllegalArgumentException("--idle-exit must be at least 1 second, got " + idleExit);
      }
      return LoaderServe.service(socket, Duration.ofSeconds(idleExit));
    }
  }

  /**
   * Bytes per tier and time of each epoch, as the consumer sees epochs change. The prefetcher runs
   * ahead by up to its depth, so an epoch's figures include a few batches of the next one.
   */
  private static final class EpochMarks {
    private final TierStats stats;
    private final com.fasterxml.jackson.databind.node.ArrayNode out;
    private int epoch = -1;
    private long ssd0;
    private long hdd0;
    private long t0;
    private long batches;
    private long rows;

    EpochMarks(TierStats stats, com.fasterxml.jackson.databind.node.ArrayNode out) {
      this.stats = stats;
      this.out = out;
    }

    void batch(int e, long batchRows) {
      if (e != epoch) {
        close();
        epoch = e;
        ssd0 = stats.bytes(Tier.SSD);
        hdd0 = stats.bytes(Tier.HDD);
        t0 = System.nanoTime();
      }
      batches++;
      rows += batchRows;
    }

    void close() {
      if (epoch < 0) {
        return;
      }
      long ssd = stats.bytes(Tier.SSD) - ssd0;
      long hdd = stats.bytes(Tier.HDD) - hdd0;
      out.addObject().put("epoch", epoch).put("batches", batches).put("rows", rows).put("ssdBytes", ssd).put("hddBytes", hdd)
          .put("byteHitRatio", ssd + hdd == 0 ? 0 : (double) ssd / (ssd + hdd)).put("seconds", (System.nanoTime() - t0) / 1e9);
      epoch = -1;
      batches = 0;
      rows = 0;
    }
  }
}
