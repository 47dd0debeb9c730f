package io.strata.gpu;

import java.io.IOException;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.Pointer;

/**
 * One of a {@link GpuShipper}'s device slots: the device buffer a batch is copied or gathered
 * into, the pinned staging buffer for batches not in pinned memory, the pinned table of ranges
 * the device gather reads, and the events that gate the slot's reuse ({@code copied}: its last
 * copy or gather is done; {@code released}: its consumer let go of the batch). Buffers grow, never
 * shrink; growing frees the old one first (nothing in flight uses it: the shipper waited).
 *
 * <p>Threads: used under the shipper's monitor only.
 */
final class DeviceSlot {
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
  /** The device gather's table of ranges, pinned: the kernel reads it over the bus. */
  long rangesHost;
  long rangesBytes;
  boolean rangesInFlight;

  DeviceSlot(long bytes) throws IOException {
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

  void growRanges(long bytes) throws IOException {
    if (rangesHost != 0) {
      cudart.cudaFreeHost(Cuda.at(rangesHost)); // its last gather is done (the caller waited)
      rangesHost = 0;
    }
    rangesBytes = 0;
    Pointer h = new Pointer();
    Cuda.check(cudart.cudaHostAlloc(h, bytes, cudart.cudaHostAllocPortable | cudart.cudaHostAllocMapped),
        "cudaHostAlloc(" + bytes + ")");
    rangesHost = h.address();
    rangesBytes = bytes;
  }

  void free() {
    cudart.cudaEventDestroy(copied);
    cudart.cudaEventDestroy(released);
    if (rangesHost != 0) {
      cudart.cudaFreeHost(Cuda.at(rangesHost));
    }
    if (device != 0) {
      cudart.cudaFree(Cuda.at(device));
    }
    if (staging != 0) {
      cudart.cudaFreeHost(Cuda.at(staging));
    }
  }
}
