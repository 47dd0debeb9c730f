package io.strata.gpu;

import io.strata.sdk.FeatureType;
import io.strata.sdk.format.ArrowCExport;
import io.strata.sdk.loader.ArrowCDevice;
import io.strata.sdk.loader.Batch;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.cudart;

/**
 * A batch copied (or being copied) to the GPU: every buffer of every feature in one device slot,
 * 64-byte aligned, in the batch's Arrow layout (docs/FORMAT.md). Valid until {@link #release} or
 * {@link #close}, or until the shipper has shipped as many further batches as it has slots.
 *
 * <p>A job that reads it on its own stream calls {@link #streamWait} before queueing its kernels
 * and {@link #release} after them: neither blocks the host, and the slot's next copy is queued
 * behind the release on the device. {@link #await} blocks until the copy is done. Meant for the
 * job's thread, as {@link GpuShipper#ship} is.
 */
public final class DeviceBatch implements AutoCloseable {
  /**
   * Where a feature's buffers start in device memory; -1 for an absent buffer.
   *
   * @param validity validity bitmap
   * @param offsets int32 offsets of strings, binaries and lists
   * @param values values (for lists: the elements' values)
   * @param childOffsets offsets of list elements that are strings or binaries
   * @param rows rows of the feature
   * @param nulls null rows
   * @param childValidity validity of list elements
   * @param childRows list elements
   * @param childNulls null list elements
   */
  public record Buffers(long validity, long offsets, long values, long childOffsets, int rows, int nulls, long childValidity,
      int childRows, int childNulls) {}

  private final GpuShipper shipper;
  private final DeviceSlot slot;
  private final long token;
  private final Map<String, Buffers> buffers;
  private final Map<String, FeatureType> types = new HashMap<>();
  private final int rows;
  private final long bytes;
  private final long dmaBytes;
  private final boolean direct;
  private Batch host;
  private boolean released;

  DeviceBatch(GpuShipper shipper, DeviceSlot slot, long token, Batch host, Map<String, Buffers> buffers, long bytes,
      long dmaBytes, boolean direct) {
    this.shipper = shipper;
    this.slot = slot;
    this.token = token;
    this.host = host;
    this.buffers = Collections.unmodifiableMap(new LinkedHashMap<>(buffers));
    host.columns().forEach((name, c) -> types.put(name, c.type()));
    this.rows = host.rows();
    this.bytes = bytes;
    this.dmaBytes = dmaBytes;
    this.direct = direct;
    if (!direct) {
      closeHost(); // packed into the staging buffer: the host batch is no longer needed
    }
  }

  /** Device addresses of {@code feature}'s buffers. */
  public Buffers buffers(String feature) {
    Buffers b = buffers.get(feature);
    if (b == null) {
      throw new IllegalArgumentException("no feature '" + feature + "' in this device batch");
    }
    return b;
  }

  /** The features, in the batch's order. */
  public Set<String> featureNames() {
    return buffers.keySet();
  }

  /** Bytes of column data shipped. */
  public long bytes() {
    return bytes;
  }

  /** Bytes copied to the device (the data and the alignment gaps between its buffers). */
  public long dmaBytes() {
    return dmaBytes;
  }

  /** Whether the batch was copied straight from the pinned memory it was assembled in. */
  public boolean direct() {
    return direct;
  }

  /**
   * This batch through the Arrow C Device Data Interface: an {@code ArrowDeviceArray} on the CUDA
   * device (a struct array, one child per feature, over the slot's device buffers: no copy) whose
   * {@code sync_event} is the copy's event, and its {@code ArrowSchema}. The consumer waits on the
   * event before reading, calls both release callbacks when done, and must be done before this
   * device batch is released or its slot reused; releasing the export does not release the batch.
   */
  public ArrowCDevice exportArrowDevice() {
    List<ArrowCExport.Field> fields = new ArrayList<>();
    for (Map.Entry<String, Buffers> e : buffers.entrySet()) {
      Buffers b = e.getValue();
      fields.add(new ArrowCExport.Field(e.getKey(), types.get(e.getKey()), b.rows(), b.nulls(),
          Math.max(0, b.validity()), Math.max(0, b.offsets()), Math.max(0, b.values()), b.childRows(), b.childNulls(),
          Math.max(0, b.childValidity()), Math.max(0, b.childOffsets())));
    }
    var x = ArrowCExport.export(rows, fields, ArrowCExport.DEVICE_CUDA,
        shipper.device(), slot.copied.address());
    return new ArrowCDevice(x.deviceArray(), x.schema());
  }

  /** Makes {@code consumer} wait (on the device) for this batch's copy; the host does not block. */
  public void streamWait(CUstream_st consumer) throws IOException {
    synchronized (shipper) {
      Cuda.check(cudart.cudaStreamWaitEvent(consumer, slot.copied, 0), "cudaStreamWaitEvent");
    }
  }

  /**
   * Lets go of the device batch once the work queued so far on {@code consumer} is done: the
   * slot's next copy waits for it on the device. The host does not block.
   */
  public void release(CUstream_st consumer) throws IOException {
    synchronized (shipper) {
      if (released) {
        return;
      }
      released = true;
      if (slot.lastCopy == token) {
        Cuda.check(cudart.cudaEventRecord(slot.released, consumer), "cudaEventRecord");
        slot.releaseRecorded = true;
      }
    }
  }

  /** Blocks until the copy to the device is done, then gives the host batch back to its loader. */
  public void await() throws IOException {
    copyDone(true);
  }

  /**
   * Whether the copy is done (waiting for it when {@code block}); once it is, the host batch is
   * closed. A slot reused since then has completed this copy when its newer one has.
   */
  boolean copyDone(boolean block) throws IOException {
    synchronized (shipper) {
      if (host == null) {
        shipper.hostReleased(this);
        return true;
      }
      if (block) {
        Cuda.check(cudart.cudaEventSynchronize(slot.copied), "cudaEventSynchronize");
      } else {
        int rc = cudart.cudaEventQuery(slot.copied);
        if (rc == cudart.cudaErrorNotReady) {
          return false;
        }
        Cuda.check(rc, "cudaEventQuery");
      }
      closeHost();
      shipper.hostReleased(this);
      return true;
    }
  }

  /** Closes the host batch (its memory goes back to the loader). */
  void closeHost() {
    Batch h = host;
    host = null;
    if (h != null) {
      h.close();
    }
  }

  /**
   * Waits for the copy, gives the host batch back and lets go of the device batch (as
   * {@link #release} on the shipper's stream: kernels the job queued elsewhere without {@link
   * #release} are not waited for).
   */
  @Override
  public void close() throws IOException {
    await();
    release(shipper.stream());
  }
}
