package io.strata.sdk.tiering;

import io.strata.sdk.ChunkInfo;
import io.strata.sdk.dataset.Dataset;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;

/**
 * A batch's row ranges as {@code n} pieces of one chunk each, in order ({@code chunk}, the row
 * {@code local} to it, {@code count} rows), and the chunks they touch ({@code touched[0..touchedCount)},
 * ascending): what {@link TieredReader#appendRanges} copies feature by feature. Made on the
 * reader's thread, used by it alone.
 */
record RangePieces(int n, int[] chunk, int[] local, int[] count, int[] touched, int touchedCount) {
  /**
   * The ranges as pieces of one chunk each, in order (a range across a chunk boundary, a sample
   * whose rows two chunks hold, is two pieces, as appendRows would read it); null when a range is
   * out of bounds or a derived feature is not resident in a chunk a range touches (then the
   * ranges are read one by one). Residency is looked up for every feature and touched chunk.
   */
  static RangePieces of(Dataset dataset, ResidentColumns resident, DerivedChunkSource[] derived,
      long[] starts, int[] offsets, int units) throws IOException {
    List<ChunkInfo> chunks = dataset.chunks();
    int[] chunk = new int[units];
    int[] local = new int[units];
    int[] count = new int[units];
    int pieces = 0;
    boolean[] touched = new boolean[chunks.size()];
    boolean byFeature = true;
    for (int k = 0; k < units && byFeature; k++) {
      long s = starts[k];
      int n = offsets[k + 1] - offsets[k];
      if (s < 0 || n < 0 || s + n > dataset.rows()) {
        byFeature = false; // appendRows names the bad range
        break;
      }
      while (n > 0) {
        ChunkInfo c = chunks.get(dataset.chunkOf(s));
        int take = (int) Math.min(n, c.endRow() - s);
        if (pieces == chunk.length) {
          int cap = pieces + pieces / 2 + 8;
          chunk = Arrays.copyOf(chunk, cap);
          local = Arrays.copyOf(local, cap);
          count = Arrays.copyOf(count, cap);
        }
        chunk[pieces] = c.index();
        local[pieces] = (int) (s - c.firstRow());
        count[pieces++] = take;
        touched[c.index()] = true;
        s += take;
        n -= take;
      }
    }
    int[] list = new int[8];
    int listed = 0;
    for (int c = 0; c < touched.length && byFeature; c++) {
      if (!touched[c]) {
        continue;
      }
      if (listed == list.length) {
        list = Arrays.copyOf(list, listed * 2);
      }
      list[listed++] = c;
      for (int i = 0; i < derived.length && byFeature; i++) {
        byFeature = resident.column(i, c) != null || derived[i] == null;
      }
    }
    return byFeature ? new RangePieces(pieces, chunk, local, count, list, listed) : null;
  }
}
