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
import io.strata.sdk.Dataset;
import io.strata.sdk.Progress;
import io.strata.sdk.dataset.DatasetGenerator;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.Loader;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * GPU shipping. Without a GPU (this CI), only the detection test runs and the shipping test is
 * skipped with the reason; on a GPU machine the shipping test copies real batches and checks the
 * device bytes.
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

  @Test
  void shipsBatchesDoubleBufferedAndTheDeviceHoldsTheSameBytes() throws IOException {
    assumeTrue(GpuShipper.available(), "no GPU here: " + GpuShipper.unavailableReason());
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("events", 50_000, 3).withMeanSampleLength(50), Progress.NONE);
    try (Dataset ds = Dataset.open(dir);
        Loader loader = Loader.builder(ds).features("amount", "merchant_category", "embedding", "score").sampleBatches(64).build();
        GpuShipper gpu = GpuShipper.open(0, 64 << 20)) {
      int shipped = 0;
      for (Batch b : loader) {
        try (b) {
          DeviceBatch d = gpu.ship(b);
          d.await();
          for (String f : b.featureNames()) {
            Column c = b.column(f);
            MemorySegment host = c.type().isFixedWidth() ? c.values().asSlice(0, (long) c.length() * c.type().kind().width())
                : c.offsets().asSlice(0, 4L * (c.length() + 1));
            long devAddr = c.type().isFixedWidth() ? d.buffers(f).values() : d.buffers(f).offsets();
            byte[] back = new byte[(int) host.byteSize()];
            BytePointer dst = new BytePointer(back.length);
            Pointer src = new Pointer() {
              {
                address = devAddr;
              }
            };
            assertEquals(cudart.cudaSuccess, cudart.cudaMemcpy(dst, src, back.length, cudart.cudaMemcpyDeviceToHost));
            dst.get(back);
            dst.close();
            assertArrayEquals(host.toArray(ValueLayout.JAVA_BYTE), back, f);
          }
          shipped++;
        }
      }
      assertTrue(shipped > 3);
    }
  }
}
