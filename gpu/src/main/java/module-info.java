/**
 * Strata's GPU shipping: batches copied to a device through pinned host memory, double-buffered
 * on CUDA streams (bytedeco's CUDA bindings). A module of its own, so that a CPU-only training job
 * links the loader SDK without any CUDA library.
 */
module io.strata.gpu {
  requires transitive io.strata.sdk;
  requires transitive org.bytedeco.javacpp;
  requires transitive org.bytedeco.cuda; // streams in the API are bytedeco's CUstream_st

  exports io.strata.gpu;
}
