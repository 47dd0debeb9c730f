package io.strata.sdk.tiering;

import io.strata.sdk.Column;
import io.strata.sdk.format.Columns;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.ChunkInfo;
import io.strata.sdk.files.HddTable;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;

/**
 * Decoded ORC row groups, least recently used first out, within a byte budget. Random reads from
 * ORC (a sample, a shuffled row) would otherwise seek and decode from the start of a row group
 * every time; here a block of one row group (the file's row-index stride, so that the seek lands
 * on an index entry) is decoded once for the features asked and reused by every read inside it.
 * A batch assembled feature by feature takes whole chunks instead ({@link #chunk}: Parquet row
 * groups decode whole anyway), kept for the rest of the batch whatever the budget; in a JVM whose
 * node promotes, they are offered to its promoter ({@link DecodedChunks}) in shared arenas.
 * One per reader thread; not thread-safe.
 */
final class OrcBlockCache implements AutoCloseable {
  private static final int DEFAULT_BLOCK_ROWS = 10_000;

  private static final class Block {
    /** Where a whole-chunk block's columns are offered to a promoter in this JVM ({@link DecodedChunks}); null otherwise. */
    final DecodedChunks.Holder holder;
    final Arena arena;
    final Map<String, Column> columns = new HashMap<>();
    long bytes;
    /**
     * The batch that last used a whole-chunk block ({@link #beginBatch}, {@link #chunk}; -1 for a
     * block of a stride): one in use by the current batch is never evicted.
     */
    long batch = -1;

    Block(boolean offered) {
      holder = offered ? new DecodedChunks.Holder() : null;
      arena = offered ? holder.arena : Arena.ofConfined();
    }

    void free() {
      if (holder != null) {
        holder.close();
      } else {
        arena.close();
      }
    }
  }

  /** The current batch's number. */
  private long batch;

  /**
   * Starts a batch: the blocks it asks for from here on stay until the next batch starts, even over
   * the budget (a batch's rows hold their columns until it is assembled).
   */
  void beginBatch() {
    batch++;
  }

  /** The key of chunk {@code c}'s whole-chunk block (blocks of a row-index stride use the block's index, never this). */
  private static long wholeKey(ChunkInfo c) {
    return ((long) c.index() << 32) | 0xFFFF_FFFFL;
  }

  /**
   * The decoded columns of {@code features} for every row of chunk {@code c} (decoded straight
   * into the block where the format can: {@link HddTable.Cursor#readChunk}); the features already
   * decoded for it are reused, the others added.
   */
  Map<String, Column> chunk(ChunkInfo c, List<String> features) throws IOException {
    long key = wholeKey(c);
    Block b = blocks.get(key);
    if (b == null) {
      b = new Block(DecodedChunks.enabled());
      blocks.put(key, b);
    }
    b.batch = batch;
    List<String> missing = missing(b, features);
    if (missing != null) {
      Map<String, Column> decoded = cursor(missing).readChunk(c, b.arena);
      add(b, decoded);
      if (b.holder != null) {
        for (Map.Entry<String, Column> e : decoded.entrySet()) {
          DecodedChunks.offer(dataset.name(), dataset.version(), c.index(), e.getKey(), e.getValue(), b.holder);
        }
      }
      evict(key);
    }
    return b.columns;
  }

  /** The features {@code b} has not decoded yet, or null when it has them all. */
  private static List<String> missing(Block b, List<String> features) {
    List<String> missing = null;
    for (String f : features) {
      if (!b.columns.containsKey(f)) {
        if (missing == null) {
          missing = new ArrayList<>();
        }
        missing.add(f);
      }
    }
    return missing;
  }

  private void add(Block b, Map<String, Column> decoded) {
    for (Map.Entry<String, Column> e : decoded.entrySet()) {
      long n = Columns.dataBytes(e.getValue());
      b.columns.put(e.getKey(), e.getValue());
      b.bytes += n;
      bytes += n;
      decodedBytes += n;
    }
  }

  private final Dataset dataset;
  private final long budgetBytes;
  private final LinkedHashMap<Long, Block> blocks = new LinkedHashMap<>(64, 0.75f, true);
  private final Map<Integer, Integer> strideByFile = new HashMap<>();
  /**
   * Open cursors by feature list, least recently used first: which features a block misses
   * depends on what each chunk has on the SSD tier, so the lists alternate between chunks; one
   * cursor per list keeps each positioned in its stripe instead of reopening (and re-reading the
   * stripe) at every change.
   */
  private final LinkedHashMap<List<String>, HddTable.Cursor> cursors = new LinkedHashMap<>(8, 0.75f, true);
  static final int MAX_CURSORS = 4;
  private long bytes;
  private long decodedBytes;

  OrcBlockCache(Dataset dataset, long budgetBytes) {
    this.dataset = dataset;
    this.budgetBytes = budgetBytes;
  }

  /** The bytes of decoded blocks kept beyond the current batch's. */
  long budgetBytes() {
    return budgetBytes;
  }

  /** Bytes of column data decoded from ORC so far (what the HDD tier delivered). */
  long decodedBytes() {
    return decodedBytes;
  }

  private int blockRows(ChunkInfo c) throws IOException {
    Integer s = strideByFile.get(c.file());
    if (s == null) {
      int stride = dataset.table().rowIndexStride(c.file());
      s = stride > 0 ? stride : DEFAULT_BLOCK_ROWS;
      strideByFile.put(c.file(), s);
    }
    return s;
  }

  /**
   * The decoded columns of {@code features} for the block of chunk {@code c} that holds chunk row
   * {@code local}, and the block's first chunk row in {@code firstRowOut[0]}.
   */
  Map<String, Column> block(ChunkInfo c, int local, List<String> features, int[] firstRowOut) throws IOException {
    int rows = blockRows(c);
    int index = local / rows;
    int first = index * rows;
    int count = (int) Math.min(rows, c.rows() - first);
    firstRowOut[0] = first;
    long key = ((long) c.index() << 32) | index;
    Block b = blocks.get(key);
    if (b == null) {
      b = new Block(false);
      blocks.put(key, b);
    }
    List<String> missing = missing(b, features);
    if (missing != null) {
      add(b, cursor(missing).readRows(c.firstRow() + first, count, b.arena));
      evict(key);
    }
    return b.columns;
  }

  private HddTable.Cursor cursor(List<String> features) throws IOException {
    HddTable.Cursor c = cursors.get(features);
    if (c == null) {
      if (cursors.size() >= MAX_CURSORS) {
        Iterator<Map.Entry<List<String>, HddTable.Cursor>> eldest = cursors.entrySet().iterator();
        eldest.next().getValue().close();
        eldest.remove();
      }
      c = dataset.table().cursor(features);
      cursors.put(List.copyOf(features), c);
    }
    return c;
  }

  private void evict(long keep) {
    Iterator<Map.Entry<Long, Block>> it = blocks.entrySet().iterator();
    while (bytes > budgetBytes && it.hasNext()) {
      Map.Entry<Long, Block> e = it.next();
      if (e.getKey() == keep || e.getValue().batch == batch) {
        continue;
      }
      bytes -= e.getValue().bytes;
      e.getValue().free();
      it.remove();
    }
  }

  @Override
  public void close() throws IOException {
    for (Block b : blocks.values()) {
      b.free();
    }
    blocks.clear();
    bytes = 0;
    IOException first = null;
    for (HddTable.Cursor c : cursors.values()) {
      try {
        c.close();
      } catch (IOException e) {
        first = first == null ? e : first;
      }
    }
    cursors.clear();
    if (first != null) {
      throw first;
    }
  }
}
