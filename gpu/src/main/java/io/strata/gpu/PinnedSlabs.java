package io.strata.gpu;

import io.strata.sdk.loader.BatchMemory;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.Pointer;

/**
 * The pinned slabs a {@link GpuShipper} hands its loaders ({@code cudaHostAlloc}, portable and
 * mapped, so the device reads a slab at an address of its own): each slab's size and device
 * address by its host base, so that {@code ship} can tell a batch assembled in one slab (copied
 * or gathered straight from it) and where the device reads it.
 *
 * <p>Threads: slabs are allocated and freed by the loaders' prefetch threads and the job's
 * thread, and looked up by the shipping thread: the registry is a concurrent map by address.
 */
final class PinnedSlabs {
  /** Base address to {size, the address the device reads the base at}. */
  private final ConcurrentSkipListMap<Long, long[]> slabs = new ConcurrentSkipListMap<>();

  /** A new pinned slab of {@code bytes}, freed (and forgotten) when the loader frees it. */
  BatchMemory.Slab allocate(long bytes) throws IOException {
    Pointer h = new Pointer();
    Cuda.check(cudart.cudaHostAlloc(h, bytes, cudart.cudaHostAllocPortable | cudart.cudaHostAllocMapped),
        "cudaHostAlloc(" + bytes + ")");
    long base = h.address();
    Pointer d = new Pointer();
    int rc = cudart.cudaHostGetDevicePointer(d, h, 0);
    if (rc != cudart.cudaSuccess) {
      cudart.cudaFreeHost(h);
      Cuda.check(rc, "cudaHostGetDevicePointer");
    }
    slabs.put(base, new long[] {bytes, d.address()});
    return BatchMemory.Slab.of(Cuda.segment(base, bytes), () -> {
      slabs.remove(base);
      cudart.cudaFreeHost(Cuda.at(base));
    });
  }

  /** Whether {@code [lo, hi)} lies in one pinned slab. */
  boolean holds(long lo, long hi) {
    Map.Entry<Long, long[]> slab = slabs.floorEntry(lo);
    return slab != null && hi <= slab.getKey() + slab.getValue()[0];
  }

  /** What to add to a host address in the slab holding {@code lo} to get the device's address of it. */
  long deviceOffset(long lo) {
    Map.Entry<Long, long[]> slab = slabs.floorEntry(lo);
    return slab.getValue()[1] - slab.getKey();
  }
}
