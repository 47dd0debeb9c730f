package io.strata.gpu;

import io.strata.sdk.Column;
import io.strata.sdk.format.DeviceCopies;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.BatchMemory;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Predicate;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.cudart;

/**
 * Ships batches to a CUDA device with one copy per byte: the loader assembles each batch
 * straight into pinned memory ({@link #batchMemory()}, slabs from {@code cudaHostAlloc}), and
 * the shipper starts one {@code cudaMemcpyAsync} of the batch's part of its slab into a device
 * slot, on its own stream, and returns.
 *
 * <p><b>The device gather</b> ({@link Gather#DEVICE}, the default). The segment files this process
 * maps are registered with the driver ({@link MappedPages}, read-only, within a budget), the
 * loader leaves the copies from them to the device ({@code BatchMemory.deviceReads}: the batch
 * lists them, holding the segments mapped, and its values buffers stay empty on the host), and
 * {@code ship} writes a table of ranges (those copies, and the buffers the host assembled in the
 * slab) into the slot's pinned table and launches the gather kernel ({@link GatherKernel}) on the
 * stream instead of the DMA copy: the device reads every byte over the bus once and the host
 * copies only offsets and validity. The events below work the same for both.
 *
 * <p><b>Slots and events.</b> At least three device slots are used in turn, so that while batch
 * {@code n} is copied and batch {@code n-1} is consumed by the job's kernels, the loader's
 * prefetch threads assemble batch {@code n+1}. Nothing on the host waits for the device on that
 * path: a slot's next copy is queued behind the event its consumer recorded when it let go of
 * the batch ({@link DeviceBatch#release}), and the host batch (its pinned slab) goes back to the
 * loader once the event of its copy has completed ({@code cudaEventQuery}, polled at each ship).
 * A batch that is not in pinned memory (the loader's first batches, before it knows their size,
 * or batches read from the batch cache) is packed into the slot's pinned staging buffer first: a
 * second host copy, counted in {@link #copiesPerByte()}; packing waits for that staging buffer's
 * previous copy.
 *
 * <p><b>Threads.</b> {@link #ship} and the {@link DeviceBatch} methods are meant for the job's
 * thread; they hold the shipper's monitor. Pinned slabs are allocated and freed by the loader's
 * prefetch threads and the job's thread: the registry of pinned slabs is a concurrent map by
 * address. Segments are registered and unregistered by whichever thread maps or unmaps them
 * (under {@code SegmentFile}'s observer lock), and asked about by the assembly threads, against
 * {@link MappedPages}' concurrent map. CUDA calls are thread-safe.
 *
 * <p>{@link #available()} says whether a GPU is usable; without one, {@link #open} fails with the
 * reason and the job keeps using host batches.
 */
public final class GpuShipper implements AutoCloseable {
  static final long ALIGN = 64;
  /** Device slots used in turn: copy, consume and assemble overlap with three. */
  public static final int DEFAULT_SLOTS = 3;

  private final int device;
  private final long initialBytes;
  private final CUstream_st stream = new CUstream_st();
  private final DeviceSlot[] slots;
  /** Pinned slabs handed to loaders. */
  private final PinnedSlabs pinned = new PinnedSlabs();
  /** The device gather (null: batches are assembled whole on the host and copied by DMA). */
  private final GatherKernel gather;
  private final MappedPages pages;
  private final String hostGatherReason;
  private long deviceGatheredBytes;
  private long gatherLaunches;
  private DeviceSlot lastGather;
  private int lastGatherRanges;
  private long lastGatherBytes;
  /** Shipped batches whose host memory is still held, oldest first. */
  private final ArrayDeque<DeviceBatch> holding = new ArrayDeque<>();
  private long shipped;
  private long shippedDirect;
  private long deliveredBytes;
  private long packedBytes;
  private long dmaBytes;
  private boolean closed;

  private GpuShipper(int device, long initialBytes, int slotCount, Gather mode) throws IOException {
    this.device = device;
    this.initialBytes = initialBytes;
    this.slots = new DeviceSlot[slotCount];
    Cuda.check(cudart.cudaSetDevice(device), "cudaSetDevice(" + device + ")");
    Cuda.check(cudart.cudaStreamCreateWithFlags(stream, cudart.cudaStreamNonBlocking), "cudaStreamCreate");
    boolean ok = false;
    GatherKernel kernel = null;
    MappedPages mapped = null;
    String why = mode == Gather.HOST ? "asked for host gather" : null;
    try {
      for (int i = 0; i < slotCount; i++) {
        slots[i] = new DeviceSlot(initialBytes);
      }
      if (why == null) {
        why = deviceGatherMissing(device);
      }
      if (why == null) {
        try {
          kernel = new GatherKernel();
          mapped = new MappedPages(device, MappedPages.defaultBudget());
          SegmentFile.observe(mapped);
        } catch (IOException | LinkageError e) {
          if (kernel != null) {
            kernel.close();
            kernel = null;
          }
          mapped = null;
          why = "the device gather does not load: " + e.getMessage();
        }
      }
      if (why != null && mode == Gather.DEVICE) {
        System.getLogger("io.strata.gpu").log(System.Logger.Level.WARNING,
            "strata: no device gather (" + why + "); batches are assembled on the host");
      }
      ok = true;
    } finally {
      this.gather = kernel;
      this.pages = mapped;
      this.hostGatherReason = why;
      if (!ok) {
        close();
      }
    }
  }

  /** Why device {@code device} cannot gather from registered host pages, or null when it can. */
  private static String deviceGatherMissing(int device) {
    int[] v = new int[1];
    if (cudart.cudaDeviceGetAttribute(v, cudart.cudaDevAttrHostRegisterSupported, device) != cudart.cudaSuccess || v[0] == 0) {
      return "device " + device + " cannot register host memory";
    }
    if (cudart.cudaDeviceGetAttribute(v, cudart.cudaDevAttrHostRegisterReadOnlySupported, device) != cudart.cudaSuccess
        || v[0] == 0) {
      return "device " + device + " cannot register read-only host memory (mapped segments are read-only)";
    }
    return null;
  }

  /**
   * Where a batch's bytes are gathered. {@link #DEVICE}: the GPU copies the ranges of mapped
   * segments itself (their pages registered with the driver, read over the bus by a kernel), and
   * the host assembles only what does not come straight from a segment (offsets, validity); {@link
   * #HOST}: the loader assembles every byte into pinned memory and one DMA copy moves the batch.
   */
  public enum Gather {
    HOST,
    DEVICE
  }

  /** Whether this shipper's GPU gathers from registered segment pages ({@link Gather#DEVICE} in effect). */
  public boolean deviceGather() {
    return gather != null;
  }

  /** Why batches are gathered on the host, or null when the device gathers. */
  public String hostGatherReason() {
    return hostGatherReason;
  }

  /**
   * A diagnostic for benchmarks: launches the last batch's device gather again {@code repeats}
   * times back to back on the copy stream, timed with events, and returns the GB/s of segment
   * bytes it copied: the gather's speed with no host work in the way. Call it right after {@link
   * #ship} of a gathered batch, before anything else is shipped (its slab and segments are held
   * then); the slot's device memory is rewritten with the same bytes. 0 when nothing was gathered.
   */
  public synchronized double replayLastGather(int repeats) throws IOException {
    if (lastGather == null || repeats <= 0) {
      return 0;
    }
    CUevent_st a = new CUevent_st();
    CUevent_st b = new CUevent_st();
    Cuda.check(cudart.cudaEventCreate(a), "cudaEventCreate");
    Cuda.check(cudart.cudaEventCreate(b), "cudaEventCreate");
    try {
      Cuda.check(cudart.cudaEventRecord(a, stream), "cudaEventRecord");
      for (int r = 0; r < repeats; r++) {
        gather.launch(lastGather.rangesHost, lastGatherRanges, stream);
      }
      Cuda.check(cudart.cudaEventRecord(b, stream), "cudaEventRecord");
      Cuda.check(cudart.cudaEventSynchronize(b), "cudaEventSynchronize");
      float[] ms = new float[1];
      Cuda.check(cudart.cudaEventElapsedTime(ms, a, b), "cudaEventElapsedTime");
      return (double) lastGatherBytes * repeats / 1e9 / (ms[0] / 1e3);
    } finally {
      cudart.cudaEventDestroy(a);
      cudart.cudaEventDestroy(b);
    }
  }

  /** Kernel launches of the device gather (one per batch it gathered). */
  public synchronized long gatherLaunches() {
    return gatherLaunches;
  }

  /** Bytes of segment ranges the device copied itself. */
  public synchronized long deviceGatheredBytes() {
    return deviceGatheredBytes;
  }

  /** Bytes of mapped segments registered with the driver now, and refused (over the budget, or by the driver). */
  public long[] registeredAndRefusedBytes() {
    return pages == null ? new long[] {0, 0} : new long[] {pages.registeredBytes(), pages.refusedBytes()};
  }

  /** Whether a CUDA device is usable in this process (probed once). */
  public static boolean available() {
    return Cuda.unavailableReason() == null;
  }

  /** Why no GPU is usable, or null when one is. */
  public static String unavailableReason() {
    return Cuda.unavailableReason();
  }

  /**
   * A shipper to device {@code device} with {@link #DEFAULT_SLOTS} slots sized for batches of
   * about {@code batchBytes} bytes of column data (a slot grows, synchronizing once, when a batch
   * needs more). Fails with an {@link IOException} naming the reason when no GPU is usable.
   */
  public static GpuShipper open(int device, long batchBytes) throws IOException {
    return open(device, batchBytes, DEFAULT_SLOTS);
  }

  /** As {@link #open(int, long)}, with {@code slots} device slots (at least 2). */
  public static GpuShipper open(int device, long batchBytes, int slots) throws IOException {
    return open(device, batchBytes, slots, DEFAULT_GATHER);
  }

  /** Where batches are gathered unless a job says: the one measured faster ({@code BENCHMARKS.md}, GPU). */
  public static final Gather DEFAULT_GATHER = Gather.DEVICE;

  /**
   * As {@link #open(int, long, int)}, gathering where {@code gather} says; {@link Gather#DEVICE}
   * falls back to the host, with the reason in {@link #hostGatherReason()}, where the device cannot.
   */
  public static GpuShipper open(int device, long batchBytes, int slots, Gather gather) throws IOException {
    String why = Cuda.unavailableReason();
    if (why != null) {
      throw new IOException("no GPU: " + why);
    }
    if (batchBytes <= 0) {
      throw new IllegalArgumentException("batch bytes must be positive, got " + batchBytes);
    }
    if (slots < 2) {
      throw new IllegalArgumentException("a shipper needs at least 2 slots, got " + slots);
    }
    return new GpuShipper(device, batchBytes + 64 * ALIGN, slots, gather);
  }

  public int device() {
    return device;
  }

  /** The stream the copies run on. */
  public CUstream_st stream() {
    return stream;
  }

  /**
   * Pinned host memory for a loader's batches ({@code LoaderBuilder.batchMemory}): batches
   * assembled there are copied to the device without another host copy. Slabs are freed when the
   * loader closes them; close the loader before the shipper.
   */
  public BatchMemory batchMemory() {
    return new BatchMemory() {
      @Override
      public Slab allocate(long bytes) throws IOException {
        if (closed) {
          throw new IOException("the GPU shipper is closed: no more pinned memory");
        }
        return pinned.allocate(bytes);
      }

      @Override
      public Predicate<MemorySegment> deviceReads() {
        return pages;
      }
    };
  }

  /**
   * Starts copying {@code batch} to the device and returns at once. The shipper takes the batch:
   * it closes it once the copy has completed (at the latest in {@link DeviceBatch#await()} or
   * {@link DeviceBatch#close()}); a caller that closes it itself must await the copy first. The
   * device batch stays valid until it is released or closed, or until {@code slots} further
   * batches have been shipped, whichever comes first.
   */
  public synchronized DeviceBatch ship(Batch batch) throws IOException {
    if (closed) {
      throw new IllegalStateException("the GPU shipper is already closed");
    }
    giveBackCopied();
    // Bounded: at most one host batch per slot waits for its copy (the loader's slabs are finite).
    while (holding.size() >= slots.length) {
      holding.peekFirst().copyDone(true);
    }
    long token = shipped;
    DeviceSlot slot = slots[(int) (token % slots.length)];
    Map<String, MemorySegment[]> parts = new LinkedHashMap<>();
    long lo = Long.MAX_VALUE;
    long hi = 0;
    long data = 0;
    for (Map.Entry<String, Column> e : batch.columns().entrySet()) {
      MemorySegment[] p = BatchParts.parts(e.getValue());
      parts.put(e.getKey(), p);
      for (MemorySegment s : p) {
        if (s != null && s.byteSize() > 0) {
          lo = Math.min(lo, s.address());
          hi = Math.max(hi, s.address() + s.byteSize());
          data += s.byteSize();
        }
      }
    }
    boolean direct = data > 0 && pinned.holds(lo, hi);
    DeviceCopies deviceCopies = batch.deviceCopies();
    if (deviceCopies != null && (gather == null || !direct)) {
      batch.completeOnHost(); // not in one pinned slab (or no device gather): the host makes the copies
      deviceCopies = null;
    }
    long span = direct ? hi - lo : BatchParts.packedSize(parts);
    if (span > slot.deviceBytes) {
      waitForSlot(slot);
      slot.growDevice(Math.max(span + span / 4, initialBytes));
    }
    // The slot's device memory is reused only after its last consumer let go (on the device).
    if (slot.releaseRecorded) {
      Cuda.check(cudart.cudaStreamWaitEvent(stream, slot.released, 0), "cudaStreamWaitEvent");
      slot.releaseRecorded = false;
    }
    // Direct: the buffers keep their places relative to the batch's first byte in its slab.
    // Packed: they are copied one after another (64-byte aligned) into the slot's staging buffer.
    MemorySegment staging = null;
    if (!direct) {
      if (slot.stagingInFlight) {
        Cuda.check(cudart.cudaEventSynchronize(slot.copied), "cudaEventSynchronize");
        slot.stagingInFlight = false;
      }
      if (span > slot.stagingBytes) {
        slot.growStaging(Math.max(span + span / 4, initialBytes));
      }
      staging = Cuda.segment(slot.staging, slot.stagingBytes);
    }
    Map<String, DeviceBatch.Buffers> buffers = new LinkedHashMap<>();
    long at = 0;
    for (Map.Entry<String, MemorySegment[]> e : parts.entrySet()) {
      MemorySegment[] p = e.getValue();
      long[] place = new long[BatchParts.PARTS];
      for (int i = 0; i < BatchParts.PARTS; i++) {
        if (p[i] == null || p[i].byteSize() == 0) {
          place[i] = -1;
        } else if (direct) {
          place[i] = slot.device + (p[i].address() - lo);
        } else {
          at = (at + ALIGN - 1) & -ALIGN;
          MemorySegment.copy(p[i], 0, staging, at, p[i].byteSize());
          place[i] = slot.device + at;
          at += p[i].byteSize();
        }
      }
      buffers.put(e.getKey(), BatchParts.buffers(batch.columns().get(e.getKey()), place));
    }
    if (!direct) {
      span = at;
      packedBytes += data;
      slot.stagingInFlight = true;
    }
    if (deviceCopies != null) {
      gatherOnDevice(slot, parts, deviceCopies, lo);
      deviceGatheredBytes += deviceCopies.bytes();
      span = data;
    } else if (span > 0) {
      Cuda.check(cudart.cudaMemcpyAsync(Cuda.at(slot.device), Cuda.at(direct ? lo : slot.staging), span,
          cudart.cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
    }
    Cuda.check(cudart.cudaEventRecord(slot.copied, stream), "cudaEventRecord");
    slot.lastCopy = token;
    shipped++;
    shippedDirect += direct ? 1 : 0;
    deliveredBytes += data;
    dmaBytes += span;
    DeviceBatch d = new DeviceBatch(this, slot, token, batch, buffers, data, span, direct);
    holding.addLast(d);
    return d;
  }

  /**
   * Starts the device gather of a batch that lies in one pinned slab (from {@code lo}): the
   * buffers the host assembled are read from the slab, the ranges left to the device from the
   * registered segments, all by one kernel on the copy stream into the slot (the batch's layout
   * relative to {@code lo} kept). The table of ranges is written into the slot's pinned buffer
   * (once the slot's previous gather is done with it), where the kernel reads it.
   */
  private void gatherOnDevice(DeviceSlot slot, Map<String, MemorySegment[]> parts, DeviceCopies copies, long lo)
      throws IOException {
    long slabDevice = pinned.deviceOffset(lo);
    long ranges = BatchParts.ranges(parts, copies);
    if (ranges > Integer.MAX_VALUE / 24) {
      throw new IllegalStateException("a batch of " + ranges + " ranges is too many for one gather");
    }
    long bytes = ranges * 24;
    if (slot.rangesInFlight) {
      Cuda.check(cudart.cudaEventSynchronize(slot.copied), "cudaEventSynchronize");
      slot.rangesInFlight = false;
    }
    if (bytes > slot.rangesBytes) {
      slot.growRanges(Math.max(bytes + bytes / 4, 64 << 10));
    }
    MemorySegment table = Cuda.segment(slot.rangesHost, bytes);
    BatchParts.writeRanges(table, parts, copies, slabDevice, slot.device, lo, pages);
    // The kernel reads the table where it is (pinned, at the same address for the device): a copy
    // of it first would put one more operation a batch in series on the stream (measured slower).
    gather.launch(slot.rangesHost, (int) ranges, stream);
    slot.rangesInFlight = true;
    gatherLaunches++;
    lastGather = slot;
    lastGatherRanges = (int) ranges;
    lastGatherBytes = copies.bytes();
  }

  /** Waits on the host until the slot's last copy is done and its consumer has let go. */
  private void waitForSlot(DeviceSlot slot) throws IOException {
    Cuda.check(cudart.cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    if (slot.releaseRecorded) {
      Cuda.check(cudart.cudaEventSynchronize(slot.released), "cudaEventSynchronize");
    }
  }

  /** Closes the host batches whose copies have completed, oldest first. */
  private void giveBackCopied() throws IOException {
    while (!holding.isEmpty()) {
      if (!holding.peekFirst().copyDone(false)) { // removes it from holding when done
        return;
      }
    }
  }

  /** Called by a device batch once its copy completed and its host batch was closed. */
  synchronized void hostReleased(DeviceBatch d) {
    holding.remove(d);
  }

  /** Batches shipped. */
  public synchronized long shipped() {
    return shipped;
  }

  /** Batches copied straight from the pinned memory they were assembled in. */
  public synchronized long shippedDirect() {
    return shippedDirect;
  }

  /** Bytes of column data shipped. */
  public synchronized long deliveredBytes() {
    return deliveredBytes;
  }

  /** Bytes of column data that were packed into a staging buffer before the copy. */
  public synchronized long packedBytes() {
    return packedBytes;
  }

  /** Bytes copied to the device (the data plus alignment gaps within a slab). */
  public synchronized long dmaBytes() {
    return dmaBytes;
  }

  /**
   * Host copies per byte delivered: one from a segment into the batch's memory, plus one more
   * for the bytes that were packed into a staging buffer.
   */
  public synchronized double copiesPerByte() {
    return deliveredBytes == 0 ? 1.0 : 1.0 + (double) packedBytes / deliveredBytes;
  }

  /**
   * Waits for every copy in flight, closes the host batches still held, then frees the device
   * buffers, staging buffers and the stream. Pinned slabs of loaders are freed by the loaders.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    cudart.cudaStreamSynchronize(stream);
    while (!holding.isEmpty()) {
      holding.pollFirst().closeHost();
    }
    if (pages != null) {
      SegmentFile.unobserve(pages);
      pages.unregisterAll();
    }
    if (gather != null) {
      gather.close();
    }
    for (DeviceSlot s : slots) {
      if (s != null) {
        s.free();
      }
    }
    cudart.cudaStreamDestroy(stream);
  }
}
