package io.strata.sdk.tier;

import io.strata.sdk.Column;
import io.strata.sdk.ColumnBuilder;
import io.strata.sdk.Columns;
import io.strata.sdk.Dataset;
import io.strata.sdk.dataset.ChunkInfo;
import io.strata.sdk.dataset.OrcTable;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;

/**
 * Reads row ranges of a fixed set of features from the tiers: from a mapped segment when the
 * feature's chunk is resident on the SSD tier, from ORC otherwise, and appends them to column
 * builders. Every read is counted per tier ({@link #stats()}). Segment leases are kept while the
 * reader is open (at most {@code maxLeases}, least recently used released first). Not thread-safe:
 * use one reader per thread.
 */
public final class TieredReader implements AutoCloseable {
  private final Dataset dataset;
  private final SegmentStore store;
  private final List<String> features;
  private final TierStats stats;
  private final int maxLeases;
  private final LinkedHashMap<String, SegmentStore.Lease> leases = new LinkedHashMap<>(16, 0.75f, true);
  private final Map<String, Boolean> absent = new HashMap<>();
  private OrcTable.Cursor orcCursor;
  private List<String> orcFeatures;

  /**
   * A reader of {@code features} of {@code dataset}; {@code store} may be null (ORC only).
   * {@code stats} receives the per-tier counts (shared by several readers if wanted).
   */
  public TieredReader(Dataset dataset, SegmentStore store, List<String> features, TierStats stats) {
    this.dataset = dataset;
    this.store = store;
    this.features = List.copyOf(features);
    this.stats = stats;
    this.maxLeases = 4096;
    for (String f : features) {
      dataset.feature(f);
    }
  }

  public List<String> features() {
    return features;
  }

  public TierStats stats() {
    return stats;
  }

  /** Builders for this reader's features, sized for {@code rows} rows. */
  public List<ColumnBuilder> builders(Arena arena, int rows) {
    List<ColumnBuilder> out = new ArrayList<>(features.size());
    for (String f : features) {
      out.add(new ColumnBuilder(dataset.feature(f).type(), arena, rows));
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

  private void appendFromChunk(ChunkInfo c, long row, int n, List<ColumnBuilder> out) throws IOException {
    int local = (int) (row - c.firstRow());
    List<Integer> fromOrc = null;
    long t0 = System.nanoTime();
    long ssdBytes = 0;
    for (int i = 0; i < features.size(); i++) {
      SegmentStore.Lease lease = lease(features.get(i), c.index());
      if (lease == null) {
        if (fromOrc == null) {
          fromOrc = new ArrayList<>();
        }
        fromOrc.add(i);
        continue;
      }
      Column col = lease.column(features.get(i));
      out.get(i).appendRange(col, local, n);
      ssdBytes += Columns.dataBytes(col.slice(local, n));
    }
    if (ssdBytes > 0 || fromOrc == null) {
      stats.record(TierStats.Tier.SSD, ssdBytes, System.nanoTime() - t0);
    }
    if (fromOrc != null) {
      long t1 = System.nanoTime();
      List<String> names = new ArrayList<>(fromOrc.size());
      for (int i : fromOrc) {
        names.add(features.get(i));
      }
      long hddBytes = 0;
      try (Arena arena = Arena.ofConfined()) {
        SequencedMap<String, Column> cols = cursor(names).readRows(row, n, arena);
        for (int i : fromOrc) {
          Column col = cols.get(features.get(i));
          out.get(i).appendRange(col, 0, n);
          hddBytes += Columns.dataBytes(col);
        }
      }
      stats.record(TierStats.Tier.HDD, hddBytes, System.nanoTime() - t1);
    }
  }

  private OrcTable.Cursor cursor(List<String> names) throws IOException {
    if (orcCursor == null || !names.equals(orcFeatures)) {
      if (orcCursor != null) {
        orcCursor.close();
      }
      orcCursor = dataset.orc().cursor(names);
      orcFeatures = names;
    }
    return orcCursor;
  }

  private SegmentStore.Lease lease(String feature, int chunk) throws IOException {
    if (store == null) {
      return null;
    }
    String key = feature + "\0" + chunk;
    SegmentStore.Lease l = leases.get(key);
    if (l != null) {
      return l;
    }
    Optional<SegmentRef> ref = store.find(dataset.name(), dataset.version(), feature, chunk);
    if (ref.isEmpty()) {
      return null;
    }
    try {
      l = store.map(ref.get());
    } catch (java.nio.file.NoSuchFileException | io.strata.sdk.CorruptFileException e) {
      // Evicted or damaged since the lookup: the HDD tier serves it.
      return null;
    }
    leases.put(key, l);
    if (leases.size() > maxLeases) {
      var eldest = leases.entrySet().iterator().next();
      eldest.getValue().close();
      leases.remove(eldest.getKey());
    }
    return l;
  }

  /** Releases segment leases so that evicted segments can be unmapped. */
  public void releaseLeases() {
    leases.values().forEach(SegmentStore.Lease::close);
    leases.clear();
    absent.clear();
  }

  @Override
  public void close() throws IOException {
    releaseLeases();
    if (orcCursor != null) {
      orcCursor.close();
      orcCursor = null;
    }
  }
}
