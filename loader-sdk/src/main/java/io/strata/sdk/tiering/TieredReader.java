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
import java.util.Arrays;
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
 * decoded whole from the slow tier and gathered from as segments are ({@link #sources}). Bytes
 * count what reaches the batches from each tier (ORC decoding apart, {@link
 * TierStats#orcDecodedBytes()}). Not thread-safe: one reader per thread.
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
  /** Estimated decoded bytes a row of each feature (its width; a guess for strings and lists), for {@link #sources}. */
  private final long[] rowBytes;

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
    this.rowBytes = new long[features.size()];
    for (int i = 0; i < features.size(); i++) {
      rowBytes[i] = estimatedRowBytes(this.derived[i] != null ? this.derived[i].type() : dataset.feature(features.get(i)).type());
    }
    this.orcBlocks = new OrcBlockCache(dataset, Math.max(1, orcBlockBudget));
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
    long row = start;
    long end = start + count;
    while (row < end) {
      ChunkInfo c = dataset.chunks().get(dataset.chunkOf(row));
      int n = (int) (Math.min(end, c.endRow()) - row);
      int local = (int) (row - c.firstRow());
      for (int i = 0; i < features.size(); i++) {
        Column col = resident.column(i, c.index());
        if (col == null || col.type().isFixedWidth() || n == 0) {
          continue;
        }
        try {
          int s = col.start(local);
          int e = col.end(local + n - 1);
          if (col.type().isVariableWidth()) {
            dataBytes[i] += e - s;
          } else {
            childRows[i] += e - s;
            Column child = col.child();
            if (child.type().isVariableWidth() && e > s) {
              childBytes[i] += child.end(e - 1) - child.start(s);
            }
          }
        } catch (IndexOutOfBoundsException | InternalError fault) {
          resident.damaged(i, c.index(), fault); // read from ORC by the append that follows
        }
      }
      row += n;
    }
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

  /** A batch's ranges as pieces of one chunk each, in order, and the chunks they touch. */
  private record Pieces(int n, int[] chunk, int[] local, int[] count, int[] touched, int touchedCount) {}

  /**
   * The ranges as pieces of one chunk each, in order (a range across a chunk boundary, a sample
   * whose rows two chunks hold, is two pieces, as appendRows would read it); null when a range is
   * out of bounds or a derived feature is not resident in a chunk a range touches (then the
   * ranges are read one by one). Residency is looked up for every feature and touched chunk.
   */
  private Pieces pieces(long[] starts, int[] offsets, int units) throws IOException {
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
      for (int i = 0; i < features.size() && byFeature; i++) {
        byFeature = resident.column(i, c) != null || derived[i] == null;
      }
    }
    return byFeature ? new Pieces(pieces, chunk, local, count, list, listed) : null;
  }

  /**
   * Before a batch of row ranges is measured and appended ({@link #measure}, {@link #appendRanges}):
   * when a sample of the ranges finds the segments' pages not in memory (a cold batch), asks the
   * kernel to read every byte the ranges occupy, all at once and only those. Returns whether it did.
   */
  public boolean readAheadIfCold(long[] starts, int[] offsets, int units) throws IOException {
    resident.recheckAbsent();
    Pieces ps = pieces(starts, offsets, units);
    if (ps == null || ps.n == 0 || !coldReads.cold(ps.n, ps.chunk, ps.local, ps.count)) {
      return false;
    }
    try {
      coldReads.readAhead(ps.n, ps.chunk, ps.local, ps.count);
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
   * #sources}: each feature's ranges are copied in one pass into its builder (one source column and
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
    Pieces ps = pieces(starts, offsets, units);
    Column[][] src = ps == null || units == 0 ? null : sources(ps.touched, ps.touchedCount);
    if (src == null) {
      appendEachRange(starts, offsets, units, out);
      return;
    }
    int pieces = ps.n;
    int[] chunk = ps.chunk;
    int[] local = ps.local;
    int[] count = ps.count;
    DeviceCopies device = deviceCopies;
    boolean done = byFeature(out, (i, into, read) -> {
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
   * ({@link ColumnBuilder#appendGathered}) from {@link #sources} and its reads counted once per chunk.
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
        resident.column(i, order.runChunk(r)); // looked up before sources() copies a feature's row
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
    Column[][] src = sources(touched, listed);
    if (src == null) {
      appendEachRow(rows, n, out);
      return;
    }
    // Several features of 1, 2, 4 or 8 bytes a value: one pass a run copies them all (FusedGather),
    // made with the first feature's part; each feature's reads are reported as for a pass of its own.
    boolean oneLoop = FusedGather.fits(out);
    boolean done = byFeature(out, (i, into, read) -> {
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

  /**
   * What a feature-major pass does for feature {@code i}: append its part of the batch to {@code
   * into} (or, where one loop fills every builder, leave it to the first feature's call), adding
   * what it read of each chunk to {@code read}.
   */
  @FunctionalInterface
  private interface FeaturePass {
    void append(int i, ColumnBuilder into, ChunkBytes read);
  }

  private ChunkBytes chunkBytes;

  /** Nanoseconds the last {@link #sources} spent decoding from the slow tier (recorded with the HDD bytes of its pass). */
  private long slowNanos;

  /**
   * What a feature-major pass over chunks {@code touched[0..n)} reads from: per feature, its
   * resident columns by chunk ({@link #columns}' own row where every touched chunk is resident),
   * else a copy of that row with each touched chunk not resident filled with the chunk decoded whole
   * from the slow tier ({@link OrcBlockCache#chunk}: one decode a chunk for every feature it lacks,
   * kept while the reader's block budget allows and always for the rest of this batch). A batch of
   * rows shuffled within blocks of chunks gathers from these as it does from mapped segments,
   * instead of row by row (issue 58: 36 % of a fleet node's CPU was single rows appended one by one
   * through the slow tier's block lookups). Null (the unit-by-unit path then) where the chunks to
   * decode would take more than twice the block budget (a global shuffle's batch touches every
   * chunk: decoding them all at once is not bounded by the budget; a block shuffle's batch that
   * straddles two blocks is). Residency must have been looked up for every feature and touched
   * chunk; no feature is derived and not resident.
   */
  private Column[][] sources(int[] touched, int n) throws IOException {
    List<ChunkInfo> chunks = dataset.chunks();
    long estimate = 0;
    for (int k = 0; k < n; k++) {
      int c = touched[k];
      for (int i = 0; i < features.size(); i++) {
        if (columns[i][c] == null) {
          estimate += chunks.get(c).rows() * rowBytes[i];
        }
      }
    }
    if (estimate > 2 * orcBlocks.budgetBytes()) {
      return null;
    }
    orcBlocks.beginBatch();
    Column[][] src = new Column[features.size()][];
    long t0 = System.nanoTime();
    long before = orcBlocks.decodedBytes();
    boolean decoded = false;
    for (int k = 0; k < n; k++) {
      int c = touched[k];
      List<String> missing = null;
      for (int i = 0; i < features.size(); i++) {
        if (columns[i][c] == null) {
          if (missing == null) {
            missing = new ArrayList<>(features.size());
          }
          missing.add(features.get(i));
        }
      }
      if (missing == null) {
        continue;
      }
      Map<String, Column> block = orcBlocks.chunk(chunks.get(c), missing);
      decoded = true;
      for (int i = 0; i < features.size(); i++) {
        if (columns[i][c] == null) {
          if (src[i] == null) {
            src[i] = columns[i].clone();
          }
          src[i][c] = block.get(features.get(i));
        }
      }
    }
    for (int i = 0; i < features.size(); i++) {
      if (src[i] == null) {
        src[i] = columns[i];
      }
    }
    slowNanos = decoded ? System.nanoTime() - t0 : 0;
    if (decoded) {
      stats.recordOrcDecoded(orcBlocks.decodedBytes() - before);
    }
    return src;
  }

  /**
   * The one loop of a batch assembled feature by feature from resident segments (ranges or single
   * rows): each feature's part appended by {@code pass}, its reads reported to the store once per
   * chunk, the whole timed as one SSD read. A segment that went bad after it was mapped (an
   * access out of its bounds, or the JVM's InternalError on a truncated mapping) undoes every
   * append of the batch and returns false: the caller then takes the unit-by-unit path, which finds
   * the damaged chunk and reads it from ORC.
   */
  private boolean byFeature(List<ColumnBuilder> out, FeaturePass pass) {
    long t0 = System.nanoTime();
    long bytes = 0;
    long slowBytes = 0;
    int[] before = new int[features.size()];
    for (int i = 0; i < features.size(); i++) {
      before[i] = out.get(i).rows();
    }
    if (chunkBytes == null) {
      chunkBytes = new ChunkBytes(dataset.chunks().size());
    }
    ChunkBytes read = chunkBytes;
    for (int i = 0; i < features.size(); i++) {
      read.clear();
      try {
        pass.append(i, out.get(i), read);
      } catch (IndexOutOfBoundsException | InternalError fault) {
        for (int j = 0; j < features.size(); j++) { // every builder: one pass may append to several
          out.get(j).truncate(before[j]);
        }
        read.clear();
        return false;
      }
      for (int k = 0; k < read.n; k++) {
        int c = read.touched[k];
        Tier tier = columns[i][c] != null ? Tier.SSD : Tier.HDD; // HDD: decoded by sources()
        if (tier == Tier.SSD) {
          bytes += read.bytes[c];
        } else {
          slowBytes += read.bytes[c];
        }
        if (store != null) {
          store.read(dataset, features.get(i), c, read.bytes[c], tier);
        }
      }
    }
    read.clear();
    if (bytes > 0 || slowBytes == 0) {
      stats.record(Tier.SSD, bytes, System.nanoTime() - t0);
    }
    if (slowBytes > 0) {
      stats.record(Tier.HDD, slowBytes, slowNanos);
    }
    slowNanos = 0;
    return true;
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
    forEachResident(chunks, col -> {
      ColdReads.readAheadWhole(col);
      stats.recordReadAhead();
    });
  }

  /** Calls {@code action} with each resident column of {@code chunks} of this reader's stored features. */
  private void forEachResident(int[] chunks, java.util.function.Consumer<Column> action) {
    for (int c : chunks) {
      for (int i = 0; i < features.size(); i++) {
        if (derived[i] != null) {
          continue;
        }
        Column col;
        try {
          col = resident.column(i, c);
        } catch (IOException | RuntimeException e) {
          continue; // found damaged or gone: the batch that reads it says so
        }
        if (col != null) {
          action.accept(col);
        }
      }
    }
  }

  /**
   * Drops this process's mappings of {@code chunks}' resident columns of this reader's stored
   * features: a block of whole chunks this reader has read every row of, which the epoch does not
   * read again ({@link ColdReads#releaseWhole}; issue 58: the pages of the blocks already read stayed
   * mapped, counted in the node's memory, until the kernel reclaimed them). Called on this reader's
   * thread.
   */
  public void releaseChunks(int[] chunks) {
    forEachResident(chunks, col -> {
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
