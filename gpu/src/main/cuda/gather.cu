// Strata's device gather: copies ranges of host memory the GPU reads itself (mapped segment
// pages registered with the driver, and the batch's pinned slab) into device memory, one thread
// block per range. Compiled to PTX by gather-ptx.py (NVRTC) into
// ../resources/io/strata/gpu/gather.ptx, which GpuShipper loads; the driver compiles that PTX
// for the GPU at hand.
//
// A range is three 64-bit words: source address (as the device sees it), destination address,
// length in bytes. The destination is written in aligned 16-byte words; when the source is not
// aligned the same way, each word is cut from two aligned source words (the second one passed
// along the warp by a shuffle), so host memory is read in aligned 16-byte pieces whatever the
// alignment and every byte crosses the bus once; each warp reads whole 128-byte lines of the
// source (a line read in part costs the bus a request of its own).

typedef unsigned long long u64;
typedef unsigned int u32;

__device__ __forceinline__ uint4 shifted(uint4 a, uint4 b, u32 sh) {
  u32 r = (sh & 3) * 8;
  u32 w0, w1, w2, w3, w4;
  switch (sh >> 2) {
    case 0: w0 = a.x; w1 = a.y; w2 = a.z; w3 = a.w; w4 = b.x; break;
    case 1: w0 = a.y; w1 = a.z; w2 = a.w; w3 = b.x; w4 = b.y; break;
    case 2: w0 = a.z; w1 = a.w; w2 = b.x; w3 = b.y; w4 = b.z; break;
    default: w0 = a.w; w1 = b.x; w2 = b.y; w3 = b.z; w4 = b.w; break;
  }
  return make_uint4(__funnelshift_r(w0, w1, r), __funnelshift_r(w1, w2, r), __funnelshift_r(w2, w3, r),
                    __funnelshift_r(w3, w4, r));
}

extern "C" __global__ void __launch_bounds__(256) strata_gather(const u64* __restrict__ ranges, int n) {
  const int lane = threadIdx.x & 31;
  for (int c = blockIdx.x; c < n; c += gridDim.x) {
    const unsigned char* s0 = (const unsigned char*) ranges[3 * c];
    unsigned char* d0 = (unsigned char*) ranges[3 * c + 1];
    u64 len0 = ranges[3 * c + 2];
    // The destination from its first aligned 16-byte word on, in aligned words; the bytes before
    // it (head) and after the last whole word (tail) are copied one by one at the end.
    u64 head = (16 - ((u64) d0 & 15)) & 15;
    if (head > len0) {
      head = len0;
    }
    const unsigned char* s = s0 + head;
    unsigned char* d = d0 + head;
    u64 len = len0 - head;
    long long words = (long long) (len >> 4);
    u32 sh = (u32) ((u64) s & 15);
    uint4* dw = (uint4*) d;
    // Source words are read aligned, and each warp reads whole 128-byte lines: its 32 words start
    // on a line (p words before the first one needed, in the same line and page). Destination
    // word i is cut from source words i and i + 1 (the latter from the next lane, by a shuffle).
    // With sh != 0 source word `words` holds the last bytes needed and lies in their 16-byte
    // block; with sh == 0 it is not needed and not read.
    const uint4* sw = (const uint4*) (s - sh);
    long long p = (long long) (((u64) sw >> 4) & 7);
    long long last = sh != 0 ? words : words - 1;
    for (long long base = (long long) (threadIdx.x - lane) - p; base < words; base += blockDim.x) {
      long long i = base + lane;
      uint4 a = make_uint4(0, 0, 0, 0);
      if (i <= last) {
        a = sw[i];
      }
      uint4 b;
      b.x = __shfl_down_sync(0xffffffffu, a.x, 1);
      b.y = __shfl_down_sync(0xffffffffu, a.y, 1);
      b.z = __shfl_down_sync(0xffffffffu, a.z, 1);
      b.w = __shfl_down_sync(0xffffffffu, a.w, 1);
      if (sh != 0 && lane == 31 && i + 1 <= last) {
        b = sw[i + 1];
      }
      if (i >= 0 && i < words) {
        dw[i] = shifted(a, b, sh);
      }
    }
    if (threadIdx.x < head) {
      d0[threadIdx.x] = s0[threadIdx.x];
    }
    u64 done = (u64) words << 4;
    if (threadIdx.x < len - done) {
      d[done + threadIdx.x] = s[done + threadIdx.x];
    }
  }
}
