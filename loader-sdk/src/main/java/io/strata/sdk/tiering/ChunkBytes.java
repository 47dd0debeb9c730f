package io.strata.sdk.tiering;

/**
 * Bytes read per chunk by one feature's pass of a {@link TieredReader}; cleared in the time of the
 * chunks it touched ({@code touched[0..n)}). Confined to the reader's thread.
 */
final class ChunkBytes {
  final long[] bytes;
  final int[] touched;
  int n;

  ChunkBytes(int chunks) {
    bytes = new long[chunks];
    touched = new int[chunks];
  }

  void add(int chunk, long b) {
    if (bytes[chunk] == 0 && b > 0) {
      touched[n++] = chunk;
    }
    bytes[chunk] += b;
  }

  void clear() {
    for (int k = 0; k < n; k++) {
      bytes[touched[k]] = 0;
    }
    n = 0;
  }
}
