package io.strata.sdk.tiering;

import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.FeatureType;
import io.strata.sdk.tier.SegmentSource;
import io.strata.sdk.tier.Tier;
import io.strata.sdk.tier.TierStats;
import io.strata.sdk.format.ColumnBuilder;
import io.strata.sdk.format.DeviceCopies;
import io.strata.sdk.format.Columns;
import io.strata.sdk.format.FusedGather;
import io.strata.sdk.format.GatherOrder;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.SegmentAllocator;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;

/**
 * Reads row ranges of a fixed set of features from the tiers: from a mapped segment when the
 * feature's chunk is resident on the SSD tier, from ORC otherwise, and appends them to column
 * builders. Every read is counted per tier ({@link #stats()}). Residency is looked up once per
 * feature and chunk and the segment stays leased ({@link ResidentColumns}) until {@link
 * #refresh()} finds it evicted, {@link #releaseLeases()} or {@link #close()}: an eviction never
 * pulls data from under a read, yet evicted segments are unmapped once the reader moves on. ORC
 * is read a row group at a time; decoded row groups are kept (within {@link
 * #DEFAULT_ORC_BLOCK_BUDGET}) for the next reads. A batch whose chunks are resident for some
 * features and not others is still assembled feature by feature: the chunks not resident are
 * decoded whole from the slow tier and gathered from as segments are ({@link SlowSources}). Bytes
 * count what reaches the batches from each tier (ORC decoding apart, {@link
 * TierStats#orcDecodedBytes()}). Not thread-safe: one reader per thread.
 *
 * <p>Its parts, each its reader's alone: {@link ResidentColumns} (leases and residency), {@link
 * RangePieces} (a batch's ranges cut at chunk boundaries), {@link SlowSources} (chunks decoded
 * whole from the slow tier), {@link FeatureMajorPass} (one pass a feature, reads counted), {@link
 * ColdReads} (read-ahead of cold batches) and {@link OrcBlockCache} (decoded ORC kept).
 */
public final class TieredReader implements AutoCloseable {
  /** Decoded ORC data kept per reader for reuse by nearby reads. */
  public static final long DEFAULT_ORC_BLOCK_BUDGET = 64L << 20;

  private final Dataset dataset;
  private final SegmentSource store;
  private final List<String> features;
  private final TierStats stats;
  /** The resident columns of the features' chunks, and the segment leases that hold them. */
  private final ResidentColumns resident;
  /** {@code resident}'s columns by feature and chunk (null: not resident, or not looked up yet). */
  private final Column[][] columns;
  private final List<Integer> fromOrc = new ArrayList<>();
  private final OrcBlockCache orcBlocks;
  private final DerivedChunkSource[] derived;
  private final ChunkCache derivedCache;
  private final int[] blockFirst = new int[1];
  /** Whether a batch is cold, and reading it ahead, over this reader's resident columns. */
  private final ColdReads coldReads;
  /** What a feature-major pass reads from: resident segments, and chunks decoded whole from the slow tier. */
  private final SlowSources slowSources;
  /** A batch assembled feature by feature from {@link #slowSources}, its reads counted. */
  private final FeatureMajorPass byFeature;

  /**
   * A reader of {@code features} of {@code dataset}; {@code store} (a local segment store or a
   * cache node) may be null (ORC only).
   * {@code stats} receives the per-tier counts (shared by several readers if wanted).
   */
  public TieredReader(Dataset dataset, SegmentSource store, List<String> features, TierStats stats) {
    this(dataset, store, features, stats, Map.of());
  }

  /**
   * A reader whose features may include derived ones: {@code derived} maps such a feature (as
   * named in {@code features}) to where its chunks come from when no segment holds them.
   */
  public TieredReader(Dataset dataset, SegmentSource store, List<String> features, TierStats stats,
      Map<String, DerivedChunkSource> derived) {
    this(dataset, store, features, stats, derived, DEFAULT_ORC_BLOCK_BUDGET);
  }

  /**
   * As above, keeping up to {@code orcBlockBudget} bytes of decoded ORC for later reads (a loader
   * shuffling within blocks of chunks keeps a block's worth).
   */
  public TieredReader(Dataset dataset, SegmentSource store, List<String> features, TierStats stats,
      Map<String, DerivedChunkSource> derived, long orcBlockBudget) {
    this.dataset = dataset;
    this.store = store;
    this.features = List.copyOf(features);
    this.stats = stats;
    this.derived = new DerivedChunkSource[features.size()];
    for (int i = 0; i < features.size(); i++) {
      String f = features.get(i);
      this.derived[i] = derived.get(f);
      if (this.derived[i] == null) {
        dataset.feature(f);
      }
    }
    this.derivedCache = new ChunkCache(DEFAULT_ORC_BLOCK_BUDGET);
    List<String> storage = new ArrayList<>();
    for (int i = 0; i < features.size(); i++) {
      storage.add(this.derived[i] != null ? this.derived[i].storageName() : features.get(i));
    }
    this.resident = new ResidentColumns(dataset, store, storage);
    this.columns = resident.columns();
    this.coldReads = new ColdReads(columns, features.size());
    long[] rowBytes = new long[features.size()];
    for (int i = 0; i < features.size(); i++) {
      rowBytes[i] = estimatedRowBytes(this.derived[i] != null ? this.derived[i].type() : dataset.feature(features.get(i)).type());
    }
    this.orcBlocks = new OrcBlockCache(dataset, Math.max(1, orcBlockBudget));
    this.slowSources = new SlowSources(dataset, this.features, columns, rowBytes, orcBlocks, stats);
    this.byFeature = new FeatureMajorPass(dataset, store, this.features, columns, stats, slowSources);
  }

  /** Estimated decoded bytes a row of a {@code t} feature: its width, or a guess for strings (16) and lists (64). */
  public static long estimatedRowBytes(FeatureType t) {
    int w = t.kind().width();
    return w > 0 ? w : w == 0 ? 1 : t.isVariableWidth() ? 16 : 64;
  }

  public List<String> features() {
    return features;
  }

  public TierStats stats() {
    return stats;
  }

  /** Builders for this reader's features, sized for {@code rows} rows. */
  public List<ColumnBuilder> builders(SegmentAllocator allocator, int rows) {
    List<ColumnBuilder> out = new ArrayList<>(features.size());
    for (int i = 0; i < features.size(); i++) {
      FeatureType t = derived[i] != null ? derived[i].type() : dataset.feature(features.get(i)).type();
      out.add(new ColumnBuilder(t, allocator, rows));
    }
    return out;
  }

  /** Reads rows {@code [start, start + count)} into new columns in {@code arena}. */
  public SequencedMap<String, Column> readRows(long start, int count, Arena arena) throws IOException {
    List<ColumnBuilder> b = builders(arena, count);
    appendRows(start, count, b);
    SequencedMap<String, Column> out = new LinkedHashMap<>();
    for (int i = 0; i < features.size(); i++) {
      out.put(features.get(i), b.get(i).build());
    }
    return out;
  }

  /**
   * Adds to {@code dataBytes[i]} the string or binary bytes, and to {@code childRows[i]} and
   * {@code childBytes[i]} the list elements (and their bytes), that rows {@code [start, start +
   * count)} of feature {@code i} hold where they are resident on the SSD tier, so that builders
   * can be sized exactly before {@link #appendRows}. Data read from ORC is not counted (its size
   * is known only after decoding).
   */
  public void measure(long start, int count, long[] dataBytes, long[] childRows, long[] childBytes) throws IOException {
    resident.measure(start, count, dataBytes, childRows, childBytes);
  }

  /** Appends rows {@code [start, start + count)} of every feature to {@code out} (one builder per feature, in order). */
  public void appendRows(long start, int count, List<ColumnBuilder> out) throws IOException {
    if (start < 0 || count < 0 || start + count > dataset.rows()) {
      throw new IllegalArgumentException(
          "rows [" + start + ", " + (start + count) + ") are outside dataset " + dataset.name() + " (" + dataset.rows() + " rows)");
    }
    long row = start;
    long end = start + count;
    while (row < end) {
      ChunkInfo c = dataset.chunks().get(dataset.chunkOf(row));
      int n = (int) (Math.min(end, c.endRow()) - row);
      appendFromChunk(c, row, n, out);
      row += n;
    }
  }

  /** Batches found cold and read ahead (this reader's thread only). */
  private long coldBatches;

  /**
   * Batches found cold and read ahead so far: of ranges by {@link #readAheadIfCold}, of single rows
   * by {@link #appendSingleRows}.
   */
  public long coldBatches() {
    return coldBatches;
  }

  /**
   * Before a batch of row ranges is measured and appended ({@link #measure}, {@link #appendRanges}):
   * when a sample of the ranges finds the segments' pages not in memory (a cold batch), asks the
   * kernel to read every byte the ranges occupy, all at once and only those. Returns whether it did.
   */
  public boolean readAheadIfCold(long[] starts, int[] offsets, int units) throws IOException {
    resident.recheckAbsent();
    RangePieces ps = RangePieces.of(dataset, resident, derived, starts, offsets, units);
    if (ps == null || ps.n() == 0 || !coldReads.cold(ps.n(), ps.chunk(), ps.local(), ps.count())) {
      return false;
    }
    try {
      coldReads.readAhead(ps.n(), ps.chunk(), ps.local(), ps.count());
    } catch (IndexOutOfBoundsException | InternalError fault) {
      // A segment went bad after it was mapped (offsets out of range, a truncated file): the copy
      // finds it and reads the chunk from ORC; advice is all this was.
      return false;
    }
    coldBatches++;
    return true;
  }

  /**
   * Appends the row ranges {@code [starts[k], starts[k] + offsets[k + 1] - offsets[k])} for
   * {@code k} in {@code [0, units)}, in this order, as {@link #appendRows} for each range would.
   * Unless a derived feature is not resident in a chunk the ranges touch, the batch is assembled
   * feature by feature (a range across a chunk boundary as one piece per chunk) from {@link
   * SlowSources}: each feature's ranges are copied in one pass into its builder (one source column and
   * one destination streamed at a time instead of every feature's in turn), and its reads are
   * counted once per chunk.
   */
  public void appendRanges(long[] starts, int[] offsets, int units, List<ColumnBuilder> out) throws IOException {
    appendRanges(starts, offsets, units, out, null);
  }

  /**
   * As {@link #appendRanges(long[], int[], int, List)}; when {@code device} is not null, the copies
   * from resident segments the device reads itself are recorded there instead of made (see {@link
   * DeviceCopies}), with the segments' leases held there.
   */
  public void appendRanges(long[] starts, int[] offsets, int units, List<ColumnBuilder> out, DeviceCopies deviceCopies)
      throws IOException {
    resident.recheckAbsent();
    RangePieces ps = RangePieces.of(dataset, resident, derived, starts, offsets, units);
    Column[][] src = ps == null || units == 0 ? null : slowSources.of(ps.touched(), ps.touchedCount());
    if (src == null) {
      appendEachRange(starts, offsets, units, out);
      return;
    }
    int pieces = ps.n();
    int[] chunk = ps.chunk();
    int[] local = ps.local();
    int[] count = ps.count();
    DeviceCopies device = deviceCopies;
    boolean done = byFeature.run(out, (i, into, read) -> {
      Column[] cols = src[i];
      for (int p = 0; p < pieces; p++) {
        Column col = cols[chunk[p]];
        if (device != null) {
          // Left to the device only while the batch holds the segment mapped.
          into.deferTo(device.hold(resident.lease(i, chunk[p])) ? device : null);
        }
        into.appendRange(col, local[p], count[p]);
        read.add(chunk[p], rangeBytes(col, local[p], count[p]));
      }
    });
    if (device != null) {
      for (ColumnBuilder b : out) {
        b.deferTo(null);
      }
    }
    if (!done) {
      appendEachRange(starts, offsets, units, out);
    }
  }

  /** The unit-by-unit path of {@link #appendRanges}: each range read on its own. */
  private void appendEachRange(long[] starts, int[] offsets, int units, List<ColumnBuilder> out) throws IOException {
    for (int k = 0; k < units; k++) {
      appendRows(starts[k], offsets[k + 1] - offsets[k], out);
    }
  }

  /** The row-by-row path of {@link #appendSingleRows}. */
  private void appendEachRow(long[] rows, int n, List<ColumnBuilder> out) throws IOException {
    for (int k = 0; k < n; k++) {
      appendRows(rows[k], 1, out);
    }
  }

  /** Per chunk, whether {@link #appendSingleRows} has listed it for the batch at hand (cleared after each). */
  private boolean[] listedChunk;

  /**
   * Appends single rows {@code rows[0..n)} (dataset row numbers, in this order) of every feature,
   * as {@link #appendRows}{@code (rows[k], 1, out)} for each {@code k} would. {@code order} is the
   * rows' gather order ({@link GatherOrder#compute}; the parts of one batch share it). When every
   * feature is fixed-width and stored (not derived), each feature's rows are gathered in that order
   * ({@link ColumnBuilder#appendGathered}) from {@link SlowSources} and its reads counted once per chunk.
   */
  public void appendSingleRows(long[] rows, int n, GatherOrder order, List<ColumnBuilder> out) throws IOException {
    if (order.size() != n) {
      throw new IllegalArgumentException("a gather order of " + order.size() + " rows for " + n + " rows");
    }
    resident.recheckAbsent();
    boolean gather = true;
    for (int i = 0; i < features.size() && gather; i++) {
      gather = derived[i] == null && out.get(i).type().isFixedWidth();
      for (int r = 0; r < order.runs() && gather; r++) {
        resident.column(i, order.runChunk(r)); // looked up before SlowSources copies a feature's row
      }
    }
    if (!gather) {
      appendEachRow(rows, n, out);
      return;
    }
    if (coldReads.coldRows(order)) {
      coldReads.readAheadRows(order); // offsets of rows within their chunks only: nothing read from the segments
      coldBatches++;
    }
    // The chunks the runs touch, each once (a region straddling a chunk boundary alternates between two).
    if (listedChunk == null) {
      listedChunk = new boolean[dataset.chunks().size()];
    }
    int[] touched = new int[order.runs()];
    int listed = 0;
    for (int r = 0; r < order.runs(); r++) {
      int c = order.runChunk(r);
      if (!listedChunk[c]) {
        listedChunk[c] = true;
        touched[listed++] = c;
      }
    }
    for (int k = 0; k < listed; k++) {
      listedChunk[touched[k]] = false;
    }
    Column[][] src = slowSources.of(touched, listed);
    if (src == null) {
      appendEachRow(rows, n, out);
      return;
    }
    // Several features of 1, 2, 4 or 8 bytes a value: one pass a run copies them all (FusedGather),
    // made with the first feature's part; each feature's reads are reported as for a pass of its own.
    boolean oneLoop = FusedGather.fits(out);
    boolean done = byFeature.run(out, (i, into, read) -> {
      if (!oneLoop) {
        into.appendGathered(src[i], order);
      } else if (i == 0) {
        FusedGather.append(out, src, order);
      }
      int width = Math.max(1, into.type().kind().width());
      for (int r = 0; r < order.runs(); r++) {
        read.add(order.runChunk(r), (long) order.runRows(r) * width);
      }
    });
    if (!done) {
      appendEachRow(rows, n, out);
    }
  }

  private void appendFromChunk(ChunkInfo c, long row, int n, List<ColumnBuilder> out) throws IOException {
    int local = (int) (row - c.firstRow());
    int chunk = c.index();
    resident.recheckAbsent();
    fromOrc.clear();
    long t0 = System.nanoTime();
    long ssdBytes = 0;
    for (int i = 0; i < features.size(); i++) {
      Column col = resident.column(i, chunk);
      if (col == null && derived[i] != null) {
        long t = System.nanoTime();
        Column d = derivedCache.get(derived[i], chunk);
        out.get(i).appendRange(d, local, n);
        stats.record(derived[i].stored() ? Tier.SSD : Tier.HDD, rangeBytes(d, local, n), System.nanoTime() - t);
        continue;
      }
      if (col == null) {
        fromOrc.add(i);
        continue;
      }
      int before = out.get(i).rows();
      long b;
      try {
        out.get(i).appendRange(col, local, n);
        b = rangeBytes(col, local, n);
      } catch (IndexOutOfBoundsException | InternalError fault) {
        out.get(i).truncate(before);
        resident.damaged(i, chunk, fault);
        fromOrc.add(i);
        continue;
      }
      ssdBytes += b;
      if (store != null) {
        store.read(dataset, features.get(i), chunk, b, Tier.SSD);
      }
    }
    if (fromOrc.size() < features.size()) {
      stats.record(Tier.SSD, ssdBytes, System.nanoTime() - t0);
    }
    if (!fromOrc.isEmpty()) {
      long t1 = System.nanoTime();
      List<String> names = new ArrayList<>(fromOrc.size());
      for (int i : fromOrc) {
        names.add(features.get(i));
      }
      long before = orcBlocks.decodedBytes();
      long delivered = 0;
      int done = 0;
      while (done < n) {
        Map<String, Column> block = orcBlocks.block(c, local + done, names, blockFirst);
        int inBlock = local + done - blockFirst[0];
        int take = Math.min(n - done, block.get(names.getFirst()).length() - inBlock);
        for (int i : fromOrc) {
          Column col = block.get(features.get(i));
          out.get(i).appendRange(col, inBlock, take);
          long b = rangeBytes(col, inBlock, take);
          delivered += b;
          if (store != null) {
            store.read(dataset, features.get(i), chunk, b, Tier.HDD);
          }
        }
        done += take;
      }
      stats.record(Tier.HDD, delivered, System.nanoTime() - t1);
      stats.recordOrcDecoded(orcBlocks.decodedBytes() - before);
    }
  }

  /** Bytes of column data in rows {@code [from, from + n)}: cheap for fixed-width and strings. */
  private static long rangeBytes(Column c, int from, int n) {
    int width = c.type().kind().width();
    if (width > 0) {
      return (long) n * width;
    }
    if (width == 0) {
      return (n + 7L) / 8;
    }
    return Columns.dataBytes(c.slice(from, n));
  }

  /**
   * Reads ahead {@code chunks} of this reader's stored features that lie in resident segments,
   * which a block of whole chunks is about to read every row of: {@code madvise(WILLNEED)} over
   * each of their columns (asynchronous, a few large reads instead of a page fault a page as
   * batches touch them). Chunks not resident are not fetched ahead from the slow tier: under a
   * memory limit the page cache dropped such bytes before their decode read them, and the slow
   * tier was read twice (issue 58, BENCHMARKS.md). Called on this reader's thread.
   */
  public void readAheadChunks(int[] chunks) {
    resident.forEachStored(chunks, derived, col -> {
      ColdReads.readAheadWhole(col);
      stats.recordReadAhead();
    });
  }

  /**
   * Drops this process's mappings of {@code chunks}' resident columns of this reader's stored
   * features: a block of whole chunks this reader has read every row of, which the epoch does not
   * read again ({@link ColdReads#releaseWhole}; issue 58: the pages of the blocks already read stayed
   * mapped, counted in the node's memory, until the kernel reclaimed them). Called on this reader's
   * thread.
   */
  public void releaseChunks(int[] chunks) {
    resident.forEachStored(chunks, derived, col -> {
      ColdReads.releaseWhole(col);
      stats.recordReleased();
    });
  }

  /**
   * Between batches: when the store's contents changed, releases the leases of chunks it no
   * longer holds (so that their segments are unmapped and the node's SSD blocks freed) and looks
   * up the chunks found absent again. Not to be called between {@link #measure} and the appends
   * of the same rows.
   */
  public void refresh() {
    resident.refresh();
  }

  /** Chunks whose segment was found damaged while being read (and were read from ORC instead). */
  public long damagedChunks() {
    return resident.damagedChunks();
  }

  /** Leases released because their chunks left the SSD tier. */
  public long releasedLeases() {
    return resident.released();
  }

  /** Releases segment leases (so that evicted segments can be unmapped) and forgets residency. */
  public void releaseLeases() {
    resident.releaseAll();
  }

  @Override
  public void close() throws IOException {
    releaseLeases();
    orcBlocks.close();
    derivedCache.close();
  }
}
