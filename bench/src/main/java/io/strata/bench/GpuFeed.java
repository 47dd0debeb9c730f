package io.strata.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.gpu.DeviceBatch;
import io.strata.gpu.GpuShipper;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.Json;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.Loader;
import io.strata.sdk.tiering.SegmentStore;
import java.io.IOException;
import java.nio.file.Path;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.Pointer;

/**
 * The GPU part of {@code strata bench gpu}: a synthetic training loop fed by a real loader through
 * {@link GpuShipper}, on the one-copy path (batches assembled by the loader's prefetch threads
 * straight into the shipper's pinned memory, shipped on the copy stream, consumed on a compute
 * stream that waits for each copy's event).
 *
 * <p>Three figures in one run, side by side: end-to-end GB/s with no step (the loop ships as fast
 * as batches come), the pinned {@code cudaMemcpyAsync} peak at the same size, and the GPU's idle
 * fraction with a fixed step per batch (an asynchronous memset of device memory, calibrated to
 * the step's length, measured with events). One thread, the caller's; CUDA calls are
 * thread-safe.
 */
final class GpuFeed {
  private GpuFeed() {}

  static ObjectNode measure(Path dataset, Path ssd, int batches, double stepMs, int threads) throws IOException {
    if (batches < 10) {
      throw new IllegalArgumentException("--batches must be at least 10 on a GPU, got " + batches);
    }
    if (stepMs < 0) {
      throw new IllegalArgumentException("--step-ms must not be negative, got " + stepMs);
    }
    ObjectNode res = Json.object();
    try (Dataset ds = Dataset.open(dataset);
        SegmentStore store = ssd == null ? null : SegmentStore.open(ssd, false, SegmentFile.Verify.NEVER)) {
      int warm = 2 * GpuShipper.DEFAULT_SLOTS + 2 * threads; // the loader's first batches are not yet in pinned slabs
      // Both gathers, one after the other on the same data: the host's (every byte assembled into
      // pinned memory, one DMA copy a batch) and the device's (segment pages registered, ranges
      // copied by a kernel); the default one also runs the training loop with a step.
      for (GpuShipper.Gather mode : GpuShipper.Gather.values()) {
        ObjectNode m = res.putObject(mode == GpuShipper.Gather.HOST ? "hostGather" : "deviceGather");
        try (GpuShipper shipper = GpuShipper.open(0, 64L << 20, GpuShipper.DEFAULT_SLOTS, mode)) {
          m.put("deviceGather", shipper.deviceGather());
          if (mode == GpuShipper.Gather.DEVICE && !shipper.deviceGather()) {
            m.put("hostGatherReason", shipper.hostGatherReason());
          }
          try (Loader l = loader(ds, store, shipper, threads)) {
            endToEnd(l, shipper, warm, batches, threads, m);
          }
          if (mode == GpuShipper.DEFAULT_GATHER) {
            try (Loader l = loader(ds, store, shipper, threads)) {
              stepLoop(l, shipper, warm, batches, stepMs, res);
            }
          }
          long[] pages = shipper.registeredAndRefusedBytes();
          m.put("batchesShipped", shipper.shipped()).put("batchesDirect", shipper.shippedDirect())
              .put("copiesPerByte", shipper.copiesPerByte()).put("deliveredBytes", shipper.deliveredBytes())
              .put("packedBytes", shipper.packedBytes()).put("dmaBytes", shipper.dmaBytes())
              .put("deviceGatheredBytes", shipper.deviceGatheredBytes()).put("gatherLaunches", shipper.gatherLaunches())
              .put("registeredBytes", pages[0]).put("refusedBytes", pages[1]);
        }
      }
      ObjectNode def = (ObjectNode) res.get(GpuShipper.DEFAULT_GATHER == GpuShipper.Gather.HOST ? "hostGather" : "deviceGather");
      res.put("gather", GpuShipper.DEFAULT_GATHER.name().toLowerCase(java.util.Locale.ROOT));
      res.put("endToEndGBps", def.path("endToEndGBps").asDouble()).put("batchBytes", def.path("batchBytes").asLong())
          .put("assemblyThreads", threads);
      res.put("pinnedPeakGBps", pinnedPeak(def.path("batchBytes").asLong()));
      for (String k : new String[] {"batchesShipped", "batchesDirect", "copiesPerByte", "deliveredBytes", "packedBytes",
          "dmaBytes", "deviceGatheredBytes"}) {
        res.set(k, def.get(k));
      }
    }
    return res;
  }

  /** Ships {@code batches} batches after {@code warm} as fast as they come; puts GB/s and the batch size in {@code m}. */
  private static void endToEnd(Loader l, GpuShipper shipper, int warm, int batches, int threads, ObjectNode m)
      throws IOException {
    long bytes = 0;
    long t0 = 0;
    long waited = 0;
    for (int i = 0; i < warm + batches; i++) {
      long w0 = System.nanoTime();
      Batch b = next(l);
      if (i == warm) {
        check(cudart.cudaStreamSynchronize(shipper.stream()), "cudaStreamSynchronize");
        t0 = System.nanoTime();
      } else if (i > warm) {
        waited += System.nanoTime() - w0;
      }
      DeviceBatch d = shipper.ship(b);
      d.release(shipper.stream()); // nothing consumes it in this phase
      if (i >= warm) {
        bytes += d.bytes();
      }
    }
    check(cudart.cudaStreamSynchronize(shipper.stream()), "cudaStreamSynchronize");
    long elapsed = System.nanoTime() - t0;
    double seconds = elapsed / 1e9;
    // Where the loop's time went: waiting for the loader's next batch (the host is the limit) or
    // shipping, which blocks only when every slot's copy is still in flight (the device is).
    m.put("endToEndGBps", bytes / 1e9 / seconds).put("batchBytes", bytes / batches).put("assemblyThreads", threads)
        .put("loaderWaitFraction", (double) waited / elapsed);
    if (shipper.deviceGather()) {
      try {
        for (String line : java.nio.file.Files.readAllLines(Path.of("/proc/meminfo"))) {
          if (line.startsWith("FilePmdMapped:") || line.startsWith("FileHugePages:")) {
            m.put(line.substring(0, line.indexOf(':')) + "KiB", Long.parseLong(line.replaceAll("[^0-9]", "")));
          }
        }
      } catch (IOException | RuntimeException e) {
        // not Linux: left out
      }
      DeviceBatch d = shipper.ship(next(l));
      m.put("gatherAloneGBps", shipper.replayLastGather(20));
      d.close();
    }
  }

  private static Loader loader(Dataset ds, SegmentStore store, GpuShipper shipper, int threads) throws IOException {
    return Loader.builder(ds).features(ds.featureNames()).segments(store).sampleBatches(512).epochs(1000)
        .prefetch(2 * threads, threads).batchMemory(shipper.batchMemory()).name("bench-gpu").build();
  }

  private static Batch next(Loader l) throws IOException {
    Batch b = l.next();
    if (b == null) {
      throw new IOException("the loader ran out of batches");
    }
    return b;
  }

  /**
   * Ships batches to a compute stream that runs a step of {@code stepMs} per batch; puts the
   * measured step and the GPU's idle fraction between the first and last measured step.
   */
  private static void stepLoop(Loader l, GpuShipper shipper, int warm, int batches, double stepMs, ObjectNode res)
      throws IOException {
    CUstream_st compute = new CUstream_st();
    check(cudart.cudaStreamCreateWithFlags(compute, cudart.cudaStreamNonBlocking), "cudaStreamCreate");
    long scratchBytes = 1L << 30;
    Pointer scratch = new Pointer();
    check(cudart.cudaMalloc(scratch, scratchBytes), "cudaMalloc(" + scratchBytes + ")");
    CUevent_st[] start = new CUevent_st[batches];
    CUevent_st[] end = new CUevent_st[batches];
    try {
      for (int i = 0; i < batches; i++) {
        start[i] = new CUevent_st();
        end[i] = new CUevent_st();
        check(cudart.cudaEventCreate(start[i]), "cudaEventCreate");
        check(cudart.cudaEventCreate(end[i]), "cudaEventCreate");
      }
      long stepBytes = calibrate(compute, scratch, scratchBytes, stepMs, start[0], end[0]);
      for (int i = 0; i < warm + batches; i++) {
        DeviceBatch d = shipper.ship(next(l));
        d.streamWait(compute);
        int m = i - warm;
        if (m >= 0) {
          check(cudart.cudaEventRecord(start[m], compute), "cudaEventRecord");
        }
        step(compute, scratch, scratchBytes, stepBytes);
        if (m >= 0) {
          check(cudart.cudaEventRecord(end[m], compute), "cudaEventRecord");
        }
        d.release(compute);
      }
      check(cudart.cudaStreamSynchronize(compute), "cudaStreamSynchronize");
      float[] ms = new float[1];
      double busy = 0;
      for (int i = 0; i < batches; i++) {
        check(cudart.cudaEventElapsedTime(ms, start[i], end[i]), "cudaEventElapsedTime");
        busy += ms[0];
      }
      check(cudart.cudaEventElapsedTime(ms, start[0], end[batches - 1]), "cudaEventElapsedTime");
      double wall = ms[0];
      res.put("stepMs", busy / batches).put("stepMsAsked", stepMs).put("stepLoopMs", wall)
          .put("gpuIdleFraction", wall <= 0 ? 0 : Math.max(0, 1 - busy / wall));
    } finally {
      for (int i = 0; i < batches; i++) {
        if (start[i] != null) {
          cudart.cudaEventDestroy(start[i]);
        }
        if (end[i] != null) {
          cudart.cudaEventDestroy(end[i]);
        }
      }
      cudart.cudaFree(scratch);
      cudart.cudaStreamDestroy(compute);
    }
  }

  /** Bytes of device memset that take {@code stepMs} (timed with events over a few runs). */
  private static long calibrate(CUstream_st s, Pointer scratch, long scratchBytes, double stepMs, CUevent_st a, CUevent_st b)
      throws IOException {
    if (stepMs == 0) {
      return 0;
    }
    step(s, scratch, scratchBytes, scratchBytes); // warm
    float[] ms = new float[1];
    double best = Double.MAX_VALUE;
    for (int r = 0; r < 5; r++) {
      check(cudart.cudaEventRecord(a, s), "cudaEventRecord");
      step(s, scratch, scratchBytes, scratchBytes);
      check(cudart.cudaEventRecord(b, s), "cudaEventRecord");
      check(cudart.cudaEventSynchronize(b), "cudaEventSynchronize");
      check(cudart.cudaEventElapsedTime(ms, a, b), "cudaEventElapsedTime");
      best = Math.min(best, ms[0]);
    }
    return (long) (scratchBytes * (stepMs / best));
  }

  /** The synthetic step: {@code bytes} of memset over the scratch buffer, in as many passes as needed. */
  private static void step(CUstream_st s, Pointer scratch, long scratchBytes, long bytes) throws IOException {
    for (long left = bytes; left > 0; left -= scratchBytes) {
      check(cudart.cudaMemsetAsync(scratch, 1, Math.min(left, scratchBytes), s), "cudaMemsetAsync");
    }
  }

  /** GB/s of {@code bytes}-byte pinned host-to-device copies on one stream (events around 50 of them). */
  private static double pinnedPeak(long bytes) throws IOException {
    Pointer host = new Pointer();
    Pointer dev = new Pointer();
    CUstream_st s = new CUstream_st();
    CUevent_st a = new CUevent_st();
    CUevent_st b = new CUevent_st();
    check(cudart.cudaHostAlloc(host, bytes, cudart.cudaHostAllocDefault), "cudaHostAlloc(" + bytes + ")");
    try {
      check(cudart.cudaMalloc(dev, bytes), "cudaMalloc(" + bytes + ")");
      check(cudart.cudaStreamCreateWithFlags(s, cudart.cudaStreamNonBlocking), "cudaStreamCreate");
      check(cudart.cudaEventCreate(a), "cudaEventCreate");
      check(cudart.cudaEventCreate(b), "cudaEventCreate");
      for (int i = 0; i < 10; i++) {
        check(cudart.cudaMemcpyAsync(dev, host, bytes, cudart.cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
      }
      int n = 50;
      check(cudart.cudaEventRecord(a, s), "cudaEventRecord");
      for (int i = 0; i < n; i++) {
        check(cudart.cudaMemcpyAsync(dev, host, bytes, cudart.cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
      }
      check(cudart.cudaEventRecord(b, s), "cudaEventRecord");
      check(cudart.cudaEventSynchronize(b), "cudaEventSynchronize");
      float[] ms = new float[1];
      check(cudart.cudaEventElapsedTime(ms, a, b), "cudaEventElapsedTime");
      return (double) bytes * n / 1e9 / (ms[0] / 1e3);
    } finally {
      cudart.cudaEventDestroy(a);
      cudart.cudaEventDestroy(b);
      cudart.cudaStreamDestroy(s);
      cudart.cudaFree(dev);
      cudart.cudaFreeHost(host);
    }
  }

  private static void check(int rc, String call) throws IOException {
    if (rc != cudart.cudaSuccess) {
      throw new IOException("CUDA " + call + " failed (" + rc + "): " + cudart.cudaGetErrorString(rc).getString());
    }
  }
}
