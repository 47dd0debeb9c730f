package io.strata.gpu;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import org.bytedeco.cuda.global.cudart;

/**
 * Whether CUDA works here, probed once. On a machine without a GPU, driver or CUDA library, the
 * first touch of the bindings throws a {@link LinkageError} (the native library does not load);
 * that, or a device count of zero, makes the GPU unavailable with a reason, logged once.
 */
final class Cuda {
  private static volatile String unavailable;
  private static volatile boolean probed;

  private Cuda() {}

  /** Null when CUDA works, else why not. */
  static String unavailableReason() {
    if (!probed) {
      synchronized (Cuda.class) {
        if (!probed) {
          unavailable = probe();
          probed = true;
          if (unavailable != null) {
            System.getLogger("io.strata.gpu").log(System.Logger.Level.INFO,
                "strata: no GPU (" + unavailable + "); serving host batches");
          }
        }
      }
    }
    return unavailable;
  }

  private static String probe() {
    if (Boolean.getBoolean("strata.gpu.disable")) {
      return "disabled by -Dstrata.gpu.disable=true";
    }
    try {
      int[] count = new int[1];
      int rc = cudart.cudaGetDeviceCount(count);
      if (rc != cudart.cudaSuccess) {
        return "cudaGetDeviceCount failed: " + cudart.cudaGetErrorString(rc).getString();
      }
      if (count[0] == 0) {
        return "no CUDA device";
      }
      return null;
    } catch (LinkageError e) {
      String m = e.getMessage();
      return "CUDA libraries do not load: " + (m == null ? e.getClass().getSimpleName() : m.lines().findFirst().orElse(m));
    }
  }

  /**
   * A bare pointer to {@code where} (host or device), for the bindings' calls; owns nothing. (The
   * parameter must not be called {@code address}: inside the anonymous subclass that name is
   * {@code Pointer}'s own field, which shadows the parameter, and every pointer was null: the
   * copies failed with "invalid argument" and every free was a no-op, found on the first GPU run.)
   */
  static org.bytedeco.javacpp.Pointer at(long where) {
    return new org.bytedeco.javacpp.Pointer() {
      {
        this.address = where;
      }
    };
  }

  /**
   * Host memory CUDA allocated ({@code cudaHostAlloc}) as a segment of {@code bytes}: giving a
   * bare address its size is the one unchecked step, and the size is the one just allocated.
   */
  @SuppressWarnings("restricted")
  static MemorySegment segment(long address, long bytes) {
    return MemorySegment.ofAddress(address).reinterpret(bytes);
  }

  /** Throws an {@link IOException} naming the call when {@code rc} is an error. */
  static void check(int rc, String call) throws IOException {
    if (rc != cudart.cudaSuccess) {
      throw new IOException("CUDA " + call + " failed (" + rc + "): " + cudart.cudaGetErrorString(rc).getString());
    }
  }
}
