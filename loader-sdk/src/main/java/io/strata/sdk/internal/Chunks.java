package io.strata.sdk.internal;

/** Finding a row's chunk from the chunks' first rows. Stateless. */
public final class Chunks {
  private Chunks() {}

  /**
   * The index of the chunk holding row {@code row}: the last chunk whose first row is at most
   * {@code row} ({@code firstRows} ascending, the first 0; of chunks that start at the same row, the
   * empty ones come first, so the one holding rows is found). A binary search.
   */
  public static int of(long[] firstRows, long row) {
    int lo = 0;
    int hi = firstRows.length - 1;
    while (lo < hi) {
      int mid = (lo + hi + 1) >>> 1;
      if (firstRows[mid] <= row) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }
}
