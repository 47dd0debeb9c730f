package io.strata.gpu;

import io.strata.sdk.Column;
import io.strata.sdk.loader.Batch;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.Map;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;

/**
 * Ships batches to a CUDA device through pinned host memory.
 *
 * <p>Two slots, each a pinned host staging buffer ({@code cudaHostAlloc}) and a device buffer
 * ({@code cudaMalloc}) allocated once and reused, alternate: {@link #ship} packs batch {@code n}
 * into one slot's staging buffer and starts an asynchronous copy ({@code cudaMemcpyAsync}) on a
 * dedicated stream, then returns, so that the job assembles batch {@code n+1} while batch {@code
 * n} is in flight. Shipping into a slot first waits for that slot's previous copy (recorded with
 * an event). Nothing is allocated per batch.
 *
 * <p>{@link #available()} says whether a GPU is usable; without one, {@link #open} fails with the
 * reason and the job keeps using host batches.
 */
public final class GpuShipper implements AutoCloseable {
  private static final long ALIGN = 64;

  /** One staging buffer, one device buffer and the event of the last copy. */
  static final class Slot {
    final BytePointer host;
    final MemorySegment hostSegment;
    final BytePointer device;
    final CUevent_st done = new CUevent_st();
    long inFlight = -1;

    // The pinned host buffer comes from cudaHostAlloc as a bare address: giving it its size is the
    // one unchecked step, and the size is the one just allocated.
    @SuppressWarnings("restricted")
    Slot(long bytes) throws IOException {
      Pointer h = new Pointer();
      Cuda.check(cudart.cudaHostAlloc(h, bytes, cudart.cudaHostAllocDefault), "cudaHostAlloc(" + bytes + ")");
      host = new BytePointer(h).capacity(bytes);
      hostSegment = MemorySegment.ofAddress(h.address()).reinterpret(bytes);
      Pointer d = new Pointer();
      int rc = cudart.cudaMalloc(d, bytes);
      if (rc != cudart.cudaSuccess) {
        cudart.cudaFreeHost(h);
        Cuda.check(rc, "cudaMalloc(" + bytes + ")");
      }
      device = new BytePointer(d).capacity(bytes);
      Cuda.check(cudart.cudaEventCreate(done), "cudaEventCreate");
    }

    synchronized void await(long token) throws IOException {
      if (inFlight == token) {
        Cuda.check(cudart.cudaEventSynchronize(done), "cudaEventSynchronize");
      }
    }

    void free() {
      cudart.cudaEventDestroy(done);
      cudart.cudaFree(device);
      cudart.cudaFreeHost(host);
    }
  }

  private final int device;
  private final long capacity;
  private final CUstream_st stream = new CUstream_st();
  private final Slot[] slots = new Slot[2];
  private long shipped;
  private boolean closed;

  private GpuShipper(int device, long capacity) throws IOException {
    this.device = device;
    this.capacity = capacity;
    Cuda.check(cudart.cudaSetDevice(device), "cudaSetDevice(" + device + ")");
    Cuda.check(cudart.cudaStreamCreate(stream), "cudaStreamCreate");
    boolean ok = false;
    try {
      slots[0] = new Slot(capacity);
      slots[1] = new Slot(capacity);
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
   * A shipper to device {@code device} for batches of at most {@code maxBatchBytes} bytes of
   * column data (plus alignment). Fails with an {@link IOException} naming the reason when no
   * GPU is usable.
   */
  public static GpuShipper open(int device, long maxBatchBytes) throws IOException {
    String why = Cuda.unavailableReason();
    if (why != null) {
      throw new IOException("no GPU: " + why);
    }
    if (maxBatchBytes <= 0) {
      throw new IllegalArgumentException("maximum batch bytes must be positive, got " + maxBatchBytes);
    }
    return new GpuShipper(device, maxBatchBytes + 64 * ALIGN);
  }

  public int device() {
    return device;
  }

  /**
   * Packs {@code batch} into the next slot's pinned buffer and starts copying it to the device.
   * Returns at once; {@link DeviceBatch#await()} waits for the copy. The device memory of the
   * batch shipped two calls earlier is reused here.
   */
  public DeviceBatch ship(Batch batch) throws IOException {
    if (closed) {
      throw new IllegalStateException("the GPU shipper is already closed");
    }
    Slot slot = slots[(int) (shipped & 1)];
    synchronized (slot) {
      if (slot.inFlight >= 0) {
        Cuda.check(cudart.cudaEventSynchronize(slot.done), "cudaEventSynchronize");
      }
      long at = 0;
      Map<String, DeviceBatch.Buffers> buffers = new LinkedHashMap<>();
      long base = slot.device.address();
      for (Map.Entry<String, Column> e : batch.columns().entrySet()) {
        Column c = e.getValue();
        long[] place = new long[4];
        MemorySegment[] parts = parts(c);
        for (int i = 0; i < 4; i++) {
          MemorySegment p = parts[i];
          if (p == null || p.byteSize() == 0) {
            place[i] = -1;
            continue;
          }
          at = (at + ALIGN - 1) & -ALIGN;
          if (at + p.byteSize() > capacity) {
            throw new IllegalArgumentException("batch of more than " + capacity + " bytes does not fit the shipper's buffers");
          }
          MemorySegment.copy(p, 0, slot.hostSegment, at, p.byteSize());
          place[i] = base + at;
          at += p.byteSize();
        }
        buffers.put(e.getKey(), new DeviceBatch.Buffers(place[0], place[1], place[2], place[3], c.length()));
      }
      Cuda.check(cudart.cudaMemcpyAsync(slot.device, slot.host, at, cudart.cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
      Cuda.check(cudart.cudaEventRecord(slot.done, stream), "cudaEventRecord");
      slot.inFlight = shipped;
      return new DeviceBatch(slot, shipped++, buffers, at);
    }
  }

  /** The buffers of a column in device order: validity, offsets, values, child offsets (normalized to row 0). */
  private static MemorySegment[] parts(Column c) {
    if (c.offset() != 0 || (c.child() != null && c.child().offset() != 0)) {
      throw new IllegalArgumentException("only unsliced columns (as in batches) can be shipped");
    }
    int n = c.length();
    MemorySegment validity = c.hasNulls() ? c.validity().asSlice(0, (n + 7L) / 8) : null;
    int width = c.type().kind().width();
    if (c.type().isFixedWidth()) {
      MemorySegment values = width == 0 ? c.values().asSlice(0, (n + 7L) / 8) : c.values().asSlice(0, (long) n * width);
      return new MemorySegment[] {validity, null, values, null};
    }
    MemorySegment offsets = c.offsets().asSlice(0, 4L * (n + 1));
    if (c.type().isVariableWidth()) {
      return new MemorySegment[] {validity, offsets, c.values(), null};
    }
    Column child = c.child();
    int w = child.type().kind().width();
    if (w > 0) {
      return new MemorySegment[] {validity, offsets, child.values().asSlice(0, (long) child.length() * w), null};
    }
    if (child.type().isVariableWidth()) {
      return new MemorySegment[] {validity, offsets, child.values(), child.offsets()};
    }
    return new MemorySegment[] {validity, offsets, child.values().asSlice(0, (child.length() + 7L) / 8), null};
  }

  /** Waits for every copy in flight, then frees the pinned and device buffers and the stream. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    cudart.cudaStreamSynchronize(stream);
    for (Slot s : slots) {
      if (s != null) {
        s.free();
      }
    }
    cudart.cudaStreamDestroy(stream);
  }
}
