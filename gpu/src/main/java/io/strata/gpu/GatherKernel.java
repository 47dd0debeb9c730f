package io.strata.gpu;

import java.io.IOException;
import java.io.InputStream;
import org.bytedeco.cuda.cudart.CUkern_st;
import org.bytedeco.cuda.cudart.CUlib_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.cudart.dim3;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.PointerPointer;

/**
 * The device gather ({@code src/main/cuda/gather.cu}, shipped as PTX that the driver compiles for
 * the GPU at hand): copies a list of ranges, each three 64-bit words (source as the device reads
 * it, destination, length), one thread block per range at a time. Loaded once per shipper; a
 * launch is asynchronous on the caller's stream. Launches are made by the shipper's thread (its
 * monitor).
 */
final class GatherKernel implements AutoCloseable {
  static final int THREADS = 256;
  /** Blocks per launch at most: enough to keep every multiprocessor's loads in flight. */
  static final int MAX_BLOCKS = 8192;

  private final CUlib_st library = new CUlib_st();
  private final CUkern_st kernel = new CUkern_st();
  private final LongPointer rangesArg = new LongPointer(1);
  private final IntPointer countArg = new IntPointer(1);
  private final PointerPointer<?> args = new PointerPointer<>(2);
  private final dim3 block = new dim3(THREADS, 1, 1);
  private final dim3 grid = new dim3(1, 1, 1);

  GatherKernel() throws IOException {
    byte[] ptx;
    try (InputStream in = GatherKernel.class.getResourceAsStream("gather.ptx")) {
      if (in == null) {
        throw new IOException("the device gather's PTX (io/strata/gpu/gather.ptx) is missing from the jar");
      }
      ptx = in.readAllBytes();
    }
    byte[] code = java.util.Arrays.copyOf(ptx, ptx.length + 1); // NUL-terminated
    try (BytePointer image = new BytePointer(code.length)) {
      image.put(code);
      Cuda.check(cudart.cudaLibraryLoadData(library, image, (int[]) null, null, 0, (int[]) null, null, 0),
          "cudaLibraryLoadData(gather.ptx)");
    }
    Cuda.check(cudart.cudaLibraryGetKernel(kernel, library, "strata_gather"), "cudaLibraryGetKernel(strata_gather)");
    args.put(0, rangesArg);
    args.put(1, countArg);
  }

  /** Copies {@code count} ranges described at device address {@code ranges}, on {@code stream}. */
  void launch(long ranges, int count, CUstream_st stream) throws IOException {
    if (count == 0) {
      return;
    }
    rangesArg.put(0, ranges);
    countArg.put(0, count);
    grid.x(Math.min(count, MAX_BLOCKS));
    Cuda.check(cudart.cudaLaunchKernel(kernel, grid, block, args, 0, stream), "cudaLaunchKernel(strata_gather)");
  }

  @Override
  public void close() {
    cudart.cudaLibraryUnload(library);
    rangesArg.close();
    countArg.close();
    args.close();
    block.close();
    grid.close();
  }
}
