package io.strata.gpu;

import io.strata.sdk.format.SegmentFile;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.function.Predicate;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.Pointer;

/**
 * The mapped segment files a shipper's GPU reads straight from host memory: each segment this
 * process maps is registered with the driver ({@code cudaHostRegister}, read-only and mapped)
 * while the registered total stays within a budget, and unregistered before it is unmapped.
 * Registration pins the pages (they stay in memory, counted as locked, until unregistered), so
 * the budget bounds what a job pins: by default a quarter of the host's memory, {@code
 * -Dstrata.gpu.registerBytes=N} to change it. Segments beyond the budget, or that the driver
 * refuses, are assembled on the host as before.
 *
 * <p>Threads: {@link SegmentFile}'s observer calls ({@link #mapped}, {@link #unmapping}) come from
 * whatever thread maps or unmaps a segment, one at a time (its lock); {@link #test} (does the device read a buffer) is asked by
 * assembly threads and {@link #deviceAddress} by the shipper's thread, against a concurrent map.
 * A range the device reads stays registered while the batch that reads it holds the segment's
 * lease (until its copy completed), so an unmapping never pulls pages from under a gather.
 */
final class MappedPages implements SegmentFile.MappingObserver, Predicate<MemorySegment> {
  private static final System.Logger LOG = System.getLogger(MappedPages.class.getName());
  private static final long PAGE = 4096;

  /** Registered ranges: host base address to {end, device address of the base}. */
  private final ConcurrentSkipListMap<Long, long[]> ranges = new ConcurrentSkipListMap<>();
  private final int device;
  private final long budget;
  private long registered;
  private long refused;
  private volatile boolean sameAddresses = true;
  private volatile String firstRefusal;

  MappedPages(int device, long budget) {
    this.device = device;
    this.budget = budget;
  }

  /** The default budget: {@code strata.gpu.registerBytes}, else a quarter of the host's memory. */
  static long defaultBudget() {
    Long set = Long.getLong("strata.gpu.registerBytes");
    if (set != null) {
      return Math.max(0, set);
    }
    try {
      for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
        if (line.startsWith("MemTotal:")) {
          return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024 / 4;
        }
      }
    } catch (IOException | RuntimeException e) {
      // Not Linux, or unreadable: the fixed default below.
    }
    return 8L << 30;
  }

  @Override
  public void mapped(Path file, MemorySegment mapping) {
    long base = mapping.address();
    long bytes = (mapping.byteSize() + PAGE - 1) & -PAGE;
    synchronized (this) {
      if (registered + bytes > budget) {
        refused += bytes;
        return;
      }
      registered += bytes; // taken now, so that threads mapping at once stay within the budget
    }
    int rc = cudart.cudaSetDevice(device);
    if (rc == cudart.cudaSuccess) {
      rc = cudart.cudaHostRegister(Cuda.at(base), bytes,
          cudart.cudaHostRegisterPortable | cudart.cudaHostRegisterMapped | cudart.cudaHostRegisterReadOnly);
    }
    if (rc != cudart.cudaSuccess) {
      cudart.cudaGetLastError(); // clears the error, so that the next check of another call does not see it
      synchronized (this) {
        registered -= bytes;
        refused += bytes;
      }
      if (firstRefusal == null) {
        firstRefusal = "cudaHostRegister of " + file + " (" + bytes + " bytes) failed (" + rc + "): "
            + cudart.cudaGetErrorString(rc).getString();
        LOG.log(System.Logger.Level.WARNING, "strata: " + firstRefusal + "; its batches are assembled on the host");
      }
      return;
    }
    Pointer dev = new Pointer();
    rc = cudart.cudaHostGetDevicePointer(dev, Cuda.at(base), 0);
    if (rc != cudart.cudaSuccess) {
      cudart.cudaHostUnregister(Cuda.at(base));
      synchronized (this) {
        registered -= bytes;
        refused += bytes;
      }
      return;
    }
    if (dev.address() != base) {
      sameAddresses = false;
    }
    ranges.put(base, new long[] {base + bytes, dev.address()});
  }

  @Override
  public void unmapping(MemorySegment mapping) {
    long[] r = ranges.remove(mapping.address());
    if (r != null) {
      cudart.cudaHostUnregister(Cuda.at(mapping.address()));
      synchronized (this) {
        registered -= r[0] - mapping.address();
      }
    }
  }

  /** Whether the device reads all of {@code src} itself (it lies in one registered range). */
  @Override
  public boolean test(MemorySegment src) {
    Map.Entry<Long, long[]> e = ranges.floorEntry(src.address());
    return e != null && src.address() + src.byteSize() <= e.getValue()[0];
  }

  /** The address the device reads host address {@code host} at; it must lie in a registered range. */
  long deviceAddress(long host) {
    if (sameAddresses) {
      return host;
    }
    Map.Entry<Long, long[]> e = ranges.floorEntry(host);
    if (e == null || host >= e.getValue()[0]) {
      throw new IllegalStateException("host address 0x" + Long.toHexString(host) + " is not in a registered segment");
    }
    return e.getValue()[1] + (host - e.getKey());
  }

  synchronized long registeredBytes() {
    return registered;
  }

  synchronized long refusedBytes() {
    return refused;
  }

  /** Unregisters every range still registered (the shipper closes; the segments stay mapped). */
  void unregisterAll() {
    for (Long base : ranges.keySet()) {
      if (ranges.remove(base) != null) {
        cudart.cudaHostUnregister(Cuda.at(base));
      }
    }
    synchronized (this) {
      registered = 0;
    }
  }
}
