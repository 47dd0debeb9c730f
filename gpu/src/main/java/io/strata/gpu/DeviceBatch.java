package io.strata.gpu;

import java.util.Map;

/**
 * A batch copied (or being copied) to the GPU: one device allocation holding every buffer of
 * every feature, 64-byte aligned, in the batch's Arrow layout. Valid until the shipper reuses its
 * slot, two {@link GpuShipper#ship} calls later.
 */
public final class DeviceBatch {
  /**
   * Where a feature's buffers start in device memory; -1 for an absent buffer.
   *
   * @param validity validity bitmap
   * @param offsets int32 offsets of strings, binaries and lists
   * @param values values (for lists: the elements' values)
   * @param childOffsets offsets of list elements that are strings or binaries
   * @param rows rows of the feature
   */
  public record Buffers(long validity, long offsets, long values, long childOffsets, int rows) {}

  private final GpuShipper.Slot slot;
  private final long epochStep;
  private final Map<String, Buffers> buffers;
  private final long bytes;

  DeviceBatch(GpuShipper.Slot slot, long epochStep, Map<String, Buffers> buffers, long bytes) {
    this.slot = slot;
    this.epochStep = epochStep;
    this.buffers = Map.copyOf(buffers);
    this.bytes = bytes;
  }

  /** Device addresses of {@code feature}'s buffers. */
  public Buffers buffers(String feature) {
    Buffers b = buffers.get(feature);
    if (b == null) {
      throw new IllegalArgumentException("no feature '" + feature + "' in this device batch");
    }
    return b;
  }

  /** Bytes copied to the device. */
  public long bytes() {
    return bytes;
  }

  /** Waits until the copy has completed on the device. */
  public void await() throws java.io.IOException {
    slot.await(epochStep);
  }
}
