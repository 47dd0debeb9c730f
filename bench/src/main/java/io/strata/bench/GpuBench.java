package io.strata.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.gpu.GpuShipper;
import io.strata.ops.Terminal;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.Json;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.Loader;
import io.strata.sdk.tiering.SegmentStore;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "gpu", mixinStandardHelpOptions = true,
    description = "Host-to-device GB/s of batches shipped through pinned memory, where a CUDA GPU is available.")
final class GpuBench implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--dataset", description = "Dataset directory (needed when a GPU is there).")
  Path dataset;

  @Option(names = "--ssd", description = "SSD tier with the features promoted.")
  Path ssd;

  @Option(names = "--batches", defaultValue = "1000", description = "Batches shipped per GPU measurement; default ${DEFAULT-VALUE}.")
  int batches;

  @Option(names = "--threads", description = "Assembly and memcpy threads of the N-thread figures; default: the cores.")
  Integer threads;

  @Option(names = "--seconds", defaultValue = "3", description = "Seconds per CPU measurement; default ${DEFAULT-VALUE}.")
  double seconds;

  @Option(names = "--step-ms", defaultValue = "2", description = "GPU time of the synthetic training step per batch, ms; default ${DEFAULT-VALUE}.")
  double stepMs;

  @Option(names = "--json", description = "Print the figures as one JSON object.")
  boolean json;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    ObjectNode res = Json.object().put("benchmark", "gpu");
    if (dataset != null) {
      ObjectNode cpu = cpuPart();
      res.set("cpu", cpu);
      res.putObject("ratios").put("assemblyVsMemcpy1", cpu.path("assembly1GBps").asDouble() / cpu.path("memcpy1GBps").asDouble())
          .put("assemblyVsMemcpyN", cpu.path("assemblyNGBps").asDouble() / cpu.path("memcpyNGBps").asDouble());
      // Every byte delivered is copied once from a mapped segment into the batch's memory (on the
      // GPU path, pinned memory: the GPU part below counts what the shipper packed besides).
      res.put("copiesPerByte", 1.0);
      if (!json) {
        out.printf("CPU: assembly %.2f GB/s on 1 thread (%.0f %% of memcpy's %.2f GB/s), %.2f GB/s on %d threads (%.0f %% of"
                + " memcpy's %.2f GB/s; %.2f GB/s with each batch split across them); %.1f copies per byte delivered%n",
            cpu.path("assembly1GBps").asDouble(), 100 * res.path("ratios").path("assemblyVsMemcpy1").asDouble(),
            cpu.path("memcpy1GBps").asDouble(), cpu.path("assemblyNGBps").asDouble(), cpu.path("threads").asInt(),
            100 * res.path("ratios").path("assemblyVsMemcpyN").asDouble(), cpu.path("memcpyNGBps").asDouble(),
            cpu.path("assemblySplitNGBps").asDouble(), res.path("copiesPerByte").asDouble());
      }
    }
    if (!GpuShipper.available()) {
      res.put("available", false).put("reason", GpuShipper.unavailableReason());
      if (json) {
        out.println(Json.compact(res));
      } else {
        out.println("no GPU: " + GpuShipper.unavailableReason() + " (nothing shipped)");
      }
      return 0;
    }
    if (dataset == null) {
      throw new IllegalArgumentException("--dataset is required when a GPU is available");
    }
    ObjectNode gpu = GpuFeed.measure(dataset, ssd, batches, stepMs, threads != null ? threads
        : Runtime.getRuntime().availableProcessors());
    res.put("available", true).setAll(gpu);
    double peak = gpu.path("pinnedPeakGBps").asDouble();
    res.withObject("ratios").put("endToEndVsPinnedPeak", gpu.path("endToEndGBps").asDouble() / peak)
        .put("hostGatherVsPinnedPeak", gpu.path("hostGather").path("endToEndGBps").asDouble() / peak)
        .put("deviceGatherVsPinnedPeak", gpu.path("deviceGather").path("endToEndGBps").asDouble() / peak);
    res.put("copiesPerByte", gpu.path("copiesPerByte").asDouble());
    if (json) {
      out.println(Json.compact(res));
    } else {
      out.printf("GPU: end to end %.2f GB/s = %.0f %% of the pinned cudaMemcpyAsync peak (%.2f GB/s) at %s batches;"
              + " with a %.1f ms step per batch the GPU idles %.1f %% of the time; %.3f host copies per byte (%d of %d"
              + " batches straight from pinned memory)%n",
          gpu.path("endToEndGBps").asDouble(), 100 * res.path("ratios").path("endToEndVsPinnedPeak").asDouble(),
          gpu.path("pinnedPeakGBps").asDouble(), Terminal.bytes(gpu.path("batchBytes").asLong()), gpu.path("stepMs").asDouble(),
          100 * gpu.path("gpuIdleFraction").asDouble(), gpu.path("copiesPerByte").asDouble(), gpu.path("batchesDirect").asLong(),
          gpu.path("batchesShipped").asLong());
      out.printf("  (%s gather by default) host gather %.2f GB/s, device gather %.2f GB/s%s%n", gpu.path("gather").asText(),
          gpu.path("hostGather").path("endToEndGBps").asDouble(), gpu.path("deviceGather").path("endToEndGBps").asDouble(),
          gpu.path("deviceGather").path("deviceGather").asBoolean() ? ""
              : " (the host's: " + gpu.path("deviceGather").path("hostGatherReason").asText() + ")");
    }
    return 0;
  }

  /**
   * The CPU side of feeding a GPU, measured on any host: sample batches (512 samples, every
   * feature, from the SSD tier) assembled on 1 and on N threads (N batches at once: the
   * loader's prefetch workers; and one batch at a time split across N threads), next to memcpy of batch-sized off-heap buffers on 1 and N
   * threads (each thread its own buffers, larger than the caches), in GB/s of batch data.
   */
  private ObjectNode cpuPart() throws Exception {
    int n = threads != null ? threads : Runtime.getRuntime().availableProcessors();
    if (n < 1) {
      throw new IllegalArgumentException("--threads must be at least 1");
    }
    ObjectNode cpu = Json.object().put("threads", n).put("secondsPerMeasurement", seconds);
    try (Dataset ds = Dataset.open(dataset);
        SegmentStore store = ssd == null ? null : SegmentStore.open(ssd, false, SegmentFile.Verify.NEVER)) {
      long[] batchBytes = new long[1];
      cpu.put("assembly1GBps", assemble(ds, store, 1, 1, batchBytes));
      cpu.put("assemblyNGBps", assemble(ds, store, n, 1, batchBytes));
      cpu.put("assemblySplitNGBps", assemble(ds, store, 1, n, batchBytes));
      cpu.put("batchBytes", batchBytes[0]);
      long size = Math.max(1 << 20, batchBytes[0]);
      cpu.put("memcpy1GBps", memcpy(size, 1));
      cpu.put("memcpyNGBps", memcpy(size, n));
    }
    return cpu;
  }

  /**
   * GB/s of batch data assembled by one loader on {@code workers} threads (a batch each), each
   * batch split across {@code split} threads, after a warm-up.
   */
  private double assemble(Dataset ds, SegmentStore store, int workers, int split, long[] batchBytes) throws IOException {
    try (Loader l = Loader.builder(ds).features(ds.featureNames()).segments(store).sampleBatches(512).epochs(1000)
        .prefetch(2 * workers, workers).assemblyThreads(split).name("bench-gpu-cpu").build()) {
      long bytes = 0;
      int count = 0;
      long t0 = 0;
      long end = Long.MAX_VALUE;
      for (int i = 0; ; i++) {
        Batch b = l.next();
        if (b == null) {
          break;
        }
        try (b) {
          if (i == 2 * workers) {
            t0 = System.nanoTime();
            end = t0 + (long) (seconds * 1e9);
          } else if (i > 2 * workers) {
            bytes += b.dataBytes();
            count++;
          }
        }
        if (System.nanoTime() > end) {
          break;
        }
      }
      batchBytes[0] = count == 0 ? 0 : bytes / count;
      return bytes / 1e9 / ((System.nanoTime() - t0) / 1e9);
    }
  }

  /** GB/s of {@code size}-byte off-heap copies on {@code n} threads, each with its own source and target. */
  private double memcpy(long size, int n) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(n,
        r -> Thread.ofPlatform().name("bench-memcpy").daemon(true).unstarted(r));
    try {
      CyclicBarrier start = new CyclicBarrier(n);
      List<Future<Long>> done = new ArrayList<>();
      long[] window = new long[2];
      for (int t = 0; t < n; t++) {
        done.add(pool.submit(() -> {
          try (Arena arena = Arena.ofConfined()) {
            MemorySegment from = arena.allocate(size, 64);
            MemorySegment to = arena.allocate(size, 64);
            from.fill((byte) 7);
            MemorySegment.copy(from, 0, to, 0, size); // touch both
            start.await();
            long t0 = System.nanoTime();
            long end = t0 + (long) (seconds * 1e9);
            long copied = 0;
            while (System.nanoTime() < end) {
              MemorySegment.copy(from, 0, to, 0, size);
              copied += size;
            }
            synchronized (window) {
              window[0] = window[0] == 0 ? t0 : Math.min(window[0], t0);
              window[1] = Math.max(window[1], System.nanoTime());
            }
            return copied;
          }
        }));
      }
      long copied = 0;
      for (var f : done) {
        copied += f.get();
      }
      return copied / 1e9 / ((window[1] - window[0]) / 1e9);
    } finally {
      pool.shutdownNow();
    }
  }
}
