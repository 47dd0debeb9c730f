package io.strata.gpu;

import io.strata.sdk.Column;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.BatchMemory;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.Pointer;

/**
 * Ships batches to a CUDA device with one host copy per byte: the loader assembles each batch
 * straight into pinned memory ({@link #batchMemory()}, slabs from {@code cudaHostAlloc}), and
 * the shipper starts one {@code cudaMemcpyAsync} of the batch's part of its slab into a device
 * slot, on its own stream, and returns.
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
 * address. CUDA calls are thread-safe.
 *
 * <p>{@link #available()} says whether a GPU is usable; without one, {@link #open} fails with the
 * reason and the job keeps using host batches.
 */
public final class GpuShipper implements AutoCloseable {
  private static final long ALIGN = 64;
  /** Device slots used in turn: copy, consume and assemble overlap with three. */
  public static final int DEFAULT_SLOTS = 3;

  /** One device buffer, the staging buffer for batches not in pinned memory, and their events. */
  static final class Slot {
    long device;
    long deviceBytes;
    long staging;
    long stagingBytes;
    final CUevent_st copied = new CUevent_st();
    final CUevent_st released = new CUevent_st();
    /** The token of the batch last copied into this slot, or -1. */
    long lastCopy = -1;
    boolean releaseRecorded;
    boolean stagingInFlight;

    Slot(long bytes) throws IOException {
      Cuda.check(cudart.cudaEventCreateWithFlags(copied, cudart.cudaEventDisableTiming), "cudaEventCreate");
      Cuda.check(cudart.cudaEventCreateWithFlags(released, cudart.cudaEventDisableTiming), "cudaEventCreate");
      growDevice(bytes);
    }

    void growDevice(long bytes) throws IOException {
      if (device != 0) {
        cudart.cudaFree(Cuda.at(device)); // synchronizes with the device: nothing in flight uses it
        device = 0;
      }
      Pointer d = new Pointer();
      Cuda.check(cudart.cudaMalloc(d, bytes), "cudaMalloc(" + bytes + ")");
      device = d.address();
      deviceBytes = bytes;
    }

    void growStaging(long bytes) throws IOException {
      if (staging != 0) {
        cudart.cudaFreeHost(Cuda.at(staging));
        staging = 0;
      }
      Pointer h = new Pointer();
      Cuda.check(cudart.cudaHostAlloc(h, bytes, cudart.cudaHostAllocDefault), "cudaHostAlloc(" + bytes + ")");
      staging = h.address();
      stagingBytes = bytes;
    }

    void free() {
      cudart.cudaEventDestroy(copied);
      cudart.cudaEventDestroy(released);
      if (device != 0) {
        cudart.cudaFree(Cuda.at(device));
      }
      if (staging != 0) {
        cudart.cudaFreeHost(Cuda.at(staging));
      }
    }
  }

  private final int device;
  private final long initialBytes;
  private final CUstream_st stream = new CUstream_st();
  private final Slot[] slots;
  /** Pinned slabs handed to loaders: base address to size. */
  private final ConcurrentSkipListMap<Long, Long> pinned = new ConcurrentSkipListMap<>();
  /** Shipped batches whose host memory is still held, oldest first. */
  private final ArrayDeque<DeviceBatch> holding = new ArrayDeque<>();
  private long shipped;
  private long shippedDirect;
  private long deliveredBytes;
  private long packedBytes;
  private long dmaBytes;
  private boolean closed;

  private GpuShipper(int device, long initialBytes, int slotCount) throws IOException {
    this.device = device;
    this.initialBytes = initialBytes;
    this.slots = new Slot[slotCount];
    Cuda.check(cudart.cudaSetDevice(device), "cudaSetDevice(" + device + ")");
    Cuda.check(cudart.cudaStreamCreateWithFlags(stream, cudart.cudaStreamNonBlocking), "cudaStreamCreate");
    boolean ok = false;
    try {
      for (int i = 0; i < slotCount; i++) {
        slots[i] = new Slot(initialBytes);
      }
      ok = true;
    } finally {
      if (!ok) {
        close();
      }
    }
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
    return new GpuShipper(device, batchBytes + 64 * ALIGN, slots);
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
    return bytes -> {
      if (closed) {
        throw new IOException("the GPU shipper is closed: no more pinned memory");
      }
      Pointer h = new Pointer();
      Cuda.check(cudart.cudaHostAlloc(h, bytes, cudart.cudaHostAllocPortable), "cudaHostAlloc(" + bytes + ")");
      long base = h.address();
      pinned.put(base, bytes);
      return BatchMemory.Slab.of(Cuda.segment(base, bytes), () -> {
        pinned.remove(base);
        cudart.cudaFreeHost(Cuda.at(base));
      });
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
    Slot slot = slots[(int) (token % slots.length)];
    Map<String, MemorySegment[]> parts = new LinkedHashMap<>();
    long lo = Long.MAX_VALUE;
    long hi = 0;
    long data = 0;
    for (Map.Entry<String, Column> e : batch.columns().entrySet()) {
      MemorySegment[] p = parts(e.getValue());
      parts.put(e.getKey(), p);
      for (MemorySegment s : p) {
        if (s != null && s.byteSize() > 0) {
          lo = Math.min(lo, s.address());
          hi = Math.max(hi, s.address() + s.byteSize());
          data += s.byteSize();
        }
      }
    }
    boolean direct = data > 0 && inOnePinnedSlab(lo, hi);
    long span = direct ? hi - lo : packedSize(parts);
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
      long[] place = new long[PARTS];
      for (int i = 0; i < PARTS; i++) {
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
      buffers.put(e.getKey(), buffers(batch.columns().get(e.getKey()), place));
    }
    if (!direct) {
      span = at;
      packedBytes += data;
      slot.stagingInFlight = true;
    }
    if (span > 0) {
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

  /** Whether every buffer of the batch lies in one pinned slab. */
  private boolean inOnePinnedSlab(long lo, long hi) {
    Map.Entry<Long, Long> slab = pinned.floorEntry(lo);
    return slab != null && hi <= slab.getKey() + slab.getValue();
  }

  private static long packedSize(Map<String, MemorySegment[]> parts) {
    long at = 0;
    for (MemorySegment[] p : parts.values()) {
      for (MemorySegment s : p) {
        if (s != null && s.byteSize() > 0) {
          at = ((at + ALIGN - 1) & -ALIGN) + s.byteSize();
        }
      }
    }
    return at;
  }

  /** Waits on the host until the slot's last copy is done and its consumer has let go. */
  private void waitForSlot(Slot slot) throws IOException {
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

  private static final int PARTS = 5;

  private static DeviceBatch.Buffers buffers(Column c, long[] place) {
    Column child = c.child();
    return new DeviceBatch.Buffers(place[0], place[1], place[2], place[3], c.length(), c.nullCount(), place[4],
        child == null ? 0 : child.length(), child == null ? 0 : child.nullCount());
  }

  /**
   * The buffers of a column in device order: validity, offsets, values (a list's element
   * values), a list's element offsets, a list's element validity.
   */
  private static MemorySegment[] parts(Column c) {
    if (c.offset() != 0 || (c.child() != null && c.child().offset() != 0)) {
      throw new IllegalArgumentException("only unsliced columns (as in batches) can be shipped");
    }
    int n = c.length();
    MemorySegment validity = c.hasNulls() ? c.validity().asSlice(0, (n + 7L) / 8) : null;
    if (c.type().isFixedWidth()) {
      return new MemorySegment[] {validity, null, fixedValues(c), null, null};
    }
    MemorySegment offsets = c.offsets().asSlice(0, 4L * (n + 1));
    if (c.type().isVariableWidth()) {
      return new MemorySegment[] {validity, offsets, usedBytes(c), null, null};
    }
    Column child = c.child();
    MemorySegment childValidity = child.hasNulls() ? child.validity().asSlice(0, (child.length() + 7L) / 8) : null;
    if (child.type().isVariableWidth()) {
      return new MemorySegment[] {validity, offsets, usedBytes(child), child.offsets().asSlice(0, 4L * (child.length() + 1)),
          childValidity};
    }
    return new MemorySegment[] {validity, offsets, fixedValues(child), null, childValidity};
  }

  /** The bytes a string or binary column's rows use (its buffer may be larger: a builder's capacity). */
  private static MemorySegment usedBytes(Column c) {
    return c.values().asSlice(0, c.length() == 0 ? 0 : c.end(c.length() - 1));
  }

  private static MemorySegment fixedValues(Column c) {
    int width = c.type().kind().width();
    return width == 0 ? c.values().asSlice(0, (c.length() + 7L) / 8) : c.values().asSlice(0, (long) c.length() * width);
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
    for (Slot s : slots) {
      if (s != null) {
        s.free();
      }
    }
    cudart.cudaStreamDestroy(stream);
  }
}
