package io.strata.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.format.ArrowCExport;
import io.strata.sdk.loader.ArrowCDevice;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.Loader;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.tiering.Promoter;
import io.strata.sdk.tiering.SegmentStore;
import java.util.List;
import java.io.IOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.Map;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * GPU shipping. Without a GPU (this CI), only the detection test runs and the shipping test is
 * skipped with the reason; on a GPU machine the shipping tests copy real batches (packed, and
 * straight from pinned memory with copies overlapping) and check the device bytes.
 */
class GpuShipperTest {
  @TempDir Path tmp;

  @Test
  void withoutAGpuTheReasonIsGivenOnceAndOpeningFailsClearly() {
    assumeFalse(GpuShipper.available(), "a GPU is present: the no-GPU path does not apply");
    String reason = GpuShipper.unavailableReason();
    assertNotNull(reason);
    assertSame(reason, GpuShipper.unavailableReason(), "probed once");
    IOException e = assertThrows(IOException.class, () -> GpuShipper.open(0, 1 << 20));
    assertTrue(e.getMessage().startsWith("no GPU: "), e.getMessage());
  }

  /** Runs without a GPU: the bare pointers every copy and free is given hold their address. */
  @Test
  void aBarePointerHoldsTheAddressItIsGiven() {
    assertEquals(0x7f12_3456_7800L, Cuda.at(0x7f12_3456_7800L).address());
    assertEquals(0, Cuda.at(0).address());
  }

  @Test
  void shipsBatchesAndTheDeviceHoldsTheSameBytes() throws IOException {
    assumeTrue(GpuShipper.available(), "no GPU here: " + GpuShipper.unavailableReason());
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("events", 50_000, 3).withMeanSampleLength(50), Progress.NONE);
    try (Dataset ds = Dataset.open(dir);
        GpuShipper gpu = GpuShipper.open(0, 1 << 20);
        Loader loader = Loader.builder(ds).features(FEATURES).sampleBatches(64).build()) {
      int shipped = shipAll(loader, gpu, false);
      assertTrue(shipped > 3);
      assertEquals(0, gpu.shippedDirect(), "host batches in ordinary memory are packed");
      assertEquals(2.0, gpu.copiesPerByte(), 1e-9);
    }
  }

  @Test
  void batchesAssembledInPinnedMemoryAreCopiedOnceAndOverlap() throws IOException {
    assumeTrue(GpuShipper.available(), "no GPU here: " + GpuShipper.unavailableReason());
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("events", 50_000, 3).withMeanSampleLength(50), Progress.NONE);
    try (Dataset ds = Dataset.open(dir); GpuShipper gpu = GpuShipper.open(0, 1 << 20)) {
      try (Loader loader = Loader.builder(ds).features(FEATURES).sampleBatches(64).epochs(4).prefetch(4, 2)
          .batchMemory(gpu.batchMemory()).build()) {
        int shipped = shipAll(loader, gpu, true);
        // The loader's first batches, before it has slabs (one per batch in flight), are packed.
        assertTrue(shipped >= 40 && gpu.shippedDirect() >= shipped - 16,
            gpu.shippedDirect() + " of " + shipped + " straight from pinned slabs");
        assertTrue(gpu.copiesPerByte() < 1.5, "copies per byte: " + gpu.copiesPerByte());
      }
    }
  }

  private static final String[] FEATURES = {"amount", "merchant_category", "embedding", "score"};

  /**
   * The device gather: batches of samples from segments on the SSD tier, the segments' pages
   * registered with the driver and their ranges copied by the kernel, every buffer of every
   * feature (validity, offsets, values, list elements) equal on the device to what a plain
   * loader with the same seed assembles on the host.
   */
  @Test
  void theDeviceGathersSegmentRangesAndTheBatchesEqualTheHostOnes() throws IOException {
    assumeTrue(GpuShipper.available(), "no GPU here: " + GpuShipper.unavailableReason());
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("events", 40_000, 3).withFeatures(10)
        .withChunking(10_000, 1).withMeanSampleLength(50), Progress.NONE);
    try (Dataset ds = Dataset.open(dir);
        SegmentStore store = SegmentStore.open(tmp.resolve("ssd"), false, SegmentFile.Verify.FIRST_OPEN)) {
      List<String> features = ds.featureNames();
      Promoter.promote(ds, store, features, List.of(0, 1, 2, 3), Progress.NONE);
      try (GpuShipper gpu = GpuShipper.open(0, 1 << 20, GpuShipper.DEFAULT_SLOTS, GpuShipper.Gather.DEVICE)) {
        assertTrue(gpu.deviceGather(), "device gather: " + gpu.hostGatherReason());
        int checked = 0;
        try (Loader plain = Loader.builder(ds).features(features).segments(store).sampleBatches(64).seed(3).build();
            Loader device = Loader.builder(ds).features(features).segments(store).sampleBatches(64).seed(3)
                .prefetch(4, 2).batchMemory(gpu.batchMemory()).build()) {
          while (true) {
            try (Batch want = plain.next()) {
              Batch got = device.next();
              if (want == null) {
                assertEquals(null, got);
                break;
              }
              DeviceBatch d = gpu.ship(got);
              d.await();
              for (String f : features) {
                checkAll(d.buffers(f), want.column(f), f + " of batch " + checked);
              }
              d.close();
              checked++;
            }
          }
        }
        assertTrue(checked > 10, checked + " batches");
        assertTrue(gpu.deviceGatheredBytes() > 0, "the device gathered segment ranges");
        assertTrue(gpu.gatherLaunches() >= checked - 16, gpu.gatherLaunches() + " gathers of " + checked);
        assertTrue(gpu.registeredAndRefusedBytes()[0] > 0, "segments registered");
      }
    }
  }

  /** Every buffer of {@code want} equals the device's at {@code b}. */
  private static void checkAll(DeviceBatch.Buffers b, Column want, String what) {
    int n = want.length();
    if (want.nullCount() > 0) {
      same(b.validity(), want.validity().asSlice(0, (n + 7L) / 8), what + " validity");
    }
    if (want.type().isFixedWidth()) {
      int w = want.type().kind().width();
      same(b.values(), want.values().asSlice(0, w == 0 ? (n + 7L) / 8 : (long) n * w), what + " values");
      return;
    }
    same(b.offsets(), want.offsets().asSlice(0, 4L * (n + 1)), what + " offsets");
    if (want.type().isVariableWidth()) {
      same(b.values(), want.values().asSlice(0, n == 0 ? 0 : want.end(n - 1)), what + " bytes");
      return;
    }
    Column e = want.child();
    int m = e.length();
    if (e.nullCount() > 0) {
      same(b.childValidity(), e.validity().asSlice(0, (m + 7L) / 8), what + " element validity");
    }
    if (e.type().isFixedWidth()) {
      int w = e.type().kind().width();
      same(b.values(), e.values().asSlice(0, w == 0 ? (m + 7L) / 8 : (long) m * w), what + " elements");
    } else {
      same(b.childOffsets(), e.offsets().asSlice(0, 4L * (m + 1)), what + " element offsets");
      same(b.values(), e.values().asSlice(0, m == 0 ? 0 : e.end(m - 1)), what + " element bytes");
    }
  }

  private static void same(long device, MemorySegment want, String what) {
    if (want.byteSize() == 0) {
      return;
    }
    assertTrue(device > 0, what + " on the device");
    byte[] back = new byte[(int) want.byteSize()];
    try (BytePointer dst = new BytePointer(back.length)) {
      assertEquals(cudart.cudaSuccess, cudart.cudaMemcpy(dst, Cuda.at(device), back.length, cudart.cudaMemcpyDeviceToHost));
      dst.get(back);
    }
    assertArrayEquals(want.toArray(ValueLayout.JAVA_BYTE), back, what);
  }

  /**
   * Ships every batch of {@code loader}; each batch's host bytes are kept before it is shipped (the
   * shipper takes it) and compared with the device's. With {@code overlap}, batches are released
   * on a consumer stream and checked {@code DEFAULT_SLOTS - 1} ships later, while newer copies run.
   */
  private static int shipAll(Loader loader, GpuShipper gpu, boolean overlap) throws IOException {
    CUstream_st consumer = new CUstream_st();
    assertEquals(cudart.cudaSuccess, cudart.cudaStreamCreate(consumer));
    ArrayDeque<Map.Entry<DeviceBatch, Map<String, byte[]>>> pending = new ArrayDeque<>();
    int shipped = 0;
    try {
      for (Batch b : loader) {
        Map<String, byte[]> host = new LinkedHashMap<>();
        for (String f : b.featureNames()) {
          host.put(f, firstBuffer(b.column(f)).toArray(ValueLayout.JAVA_BYTE));
        }
        DeviceBatch d = gpu.ship(b);
        if (shipped == 0) {
          checkExport(d, host.keySet().iterator().next());
        }
        d.streamWait(consumer);
        pending.addLast(Map.entry(d, host));
        if (!overlap || pending.size() >= GpuShipper.DEFAULT_SLOTS - 1) {
          var e = pending.pollFirst();
          e.getKey().await();
          check(e.getKey(), e.getValue());
          e.getKey().release(consumer);
        }
        shipped++;
      }
      while (!pending.isEmpty()) {
        var e = pending.pollFirst();
        e.getKey().await();
        check(e.getKey(), e.getValue());
        e.getKey().close();
      }
      assertEquals(cudart.cudaSuccess, cudart.cudaStreamSynchronize(consumer));
    } finally {
      cudart.cudaStreamDestroy(consumer);
    }
    return shipped;
  }

  /**
   * The batch's Arrow C Device export: a struct array on CUDA device 0 over the slot's buffers,
   * its sync event the copy's; both release callbacks free it.
   */
  @SuppressWarnings("restricted")
  private static void checkExport(DeviceBatch d, String feature) {
    int live = ArrowCExport.live();
    ArrowCDevice e = d.exportArrowDevice();
    MemorySegment dev = MemorySegment.ofAddress(e.deviceArray()).reinterpret(128);
    assertEquals(ArrowCExport.DEVICE_CUDA, dev.get(ValueLayout.JAVA_INT, 88), "device_type");
    assertEquals(0, dev.get(ValueLayout.JAVA_LONG, 80), "device_id");
    assertTrue(dev.get(ValueLayout.ADDRESS, 96).address() != 0, "sync_event");
    assertEquals(d.featureNames().size(), dev.get(ValueLayout.JAVA_LONG, 32), "one child per feature");
    MemorySegment first = dev.get(ValueLayout.ADDRESS, 48).reinterpret(8).get(ValueLayout.ADDRESS, 0).reinterpret(80);
    MemorySegment bufs = first.get(ValueLayout.ADDRESS, 40).reinterpret(8 * first.get(ValueLayout.JAVA_LONG, 24));
    DeviceBatch.Buffers b = d.buffers(feature);
    assertEquals(b.offsets() >= 0 ? b.offsets() : b.values(), bufs.getAtIndex(ValueLayout.JAVA_LONG, 1), "device address");
    Linker linker = Linker.nativeLinker();
    FunctionDescriptor release = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS);
    MemorySegment schema = MemorySegment.ofAddress(e.schema()).reinterpret(72);
    try {
      linker.downcallHandle(dev.get(ValueLayout.ADDRESS, 64), release).invokeExact(dev);
      linker.downcallHandle(schema.get(ValueLayout.ADDRESS, 56), release).invokeExact(schema);
    } catch (Throwable t) {
      throw new AssertionError(t);
    }
    assertEquals(live, ArrowCExport.live(), "released");
  }

  private static MemorySegment firstBuffer(Column c) {
    return c.type().isFixedWidth() ? c.values().asSlice(0, (long) c.length() * c.type().kind().width())
        : c.offsets().asSlice(0, 4L * (c.length() + 1));
  }

  private static void check(DeviceBatch d, Map<String, byte[]> host) {
    for (Map.Entry<String, byte[]> e : host.entrySet()) {
      DeviceBatch.Buffers buf = d.buffers(e.getKey());
      long devAddr = buf.values() >= 0 && buf.offsets() < 0 ? buf.values() : buf.offsets();
      byte[] back = new byte[e.getValue().length];
      BytePointer dst = new BytePointer(back.length);
      Pointer src = Cuda.at(devAddr);
      assertEquals(cudart.cudaSuccess, cudart.cudaMemcpy(dst, src, back.length, cudart.cudaMemcpyDeviceToHost));
      dst.get(back);
      dst.close();
      assertArrayEquals(e.getValue(), back, e.getKey());
    }
  }
}
