package io.strata.sdk.tiering;

import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.SegmentLease;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.tier.SegmentSource;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;

/**
 * A {@link TieredReader}'s view of the SSD tier: for each of its features and each chunk, whether
 * it was looked up, the segment lease that holds it and the mapped column. A chunk is looked up
 * once; its lease is kept until {@link #refresh()} finds it evicted, {@link #releaseAll()}, or a
 * read finds the segment damaged; chunks found absent are looked up again when the source's
 * contents change (its generation).
 *
 * <p>Not thread-safe: its reader's alone, on the reader's thread.
 */
final class ResidentColumns {
  private static final System.Logger LOG = System.getLogger(ResidentColumns.class.getName());

  private final Dataset dataset;
  private final SegmentSource store;
  /** Each feature's name in the store (a derived feature's canonical spec). */
  private final List<String> storage;
  private final SegmentLease[][] leases;
  private final boolean[][] looked;
  private final Column[][] columns;
  private long seenGeneration;
  private long releaseGeneration;
  private long released;
  private long damagedChunks;

  /** {@code store} may be null (nothing is resident); {@code storage}: each feature's name in it. */
  ResidentColumns(Dataset dataset, SegmentSource store, List<String> storage) {
    this.dataset = dataset;
    this.store = store;
    this.storage = List.copyOf(storage);
    int chunks = dataset.chunks().size();
    this.leases = new SegmentLease[storage.size()][chunks];
    this.looked = new boolean[storage.size()][chunks];
    this.columns = new Column[storage.size()][chunks];
  }

  /** The columns by feature and chunk, as looked up so far (null: not resident, or not looked up yet); shared, not copied. */
  Column[][] columns() {
    return columns;
  }

  /** The resident column of feature {@code i} in {@code chunk}, or null when it is on the HDD tier only. */
  Column column(int i, int chunk) throws IOException {
    if (looked[i][chunk]) {
      return columns[i][chunk];
    }
    looked[i][chunk] = true;
    if (store == null) {
      return null;
    }
    SegmentLease l = store.lease(dataset, storage.get(i), chunk);
    if (l == null) {
      return null;
    }
    leases[i][chunk] = l;
    columns[i][chunk] = l.column(storage.get(i));
    return columns[i][chunk];
  }

  /** The lease holding feature {@code i}'s segment of {@code chunk}, or null when none is held. */
  SegmentLease lease(int i, int chunk) {
    return leases[i][chunk];
  }

  /**
   * When the store's contents changed, releases the leases of chunks it no longer holds (so that
   * their segments are unmapped and the node's SSD blocks freed) and looks up the chunks found
   * absent again.
   */
  void refresh() {
    if (store == null) {
      return;
    }
    long g = store.generation();
    if (g == releaseGeneration) {
      return;
    }
    releaseGeneration = g;
    for (int i = 0; i < leases.length; i++) {
      for (int c = 0; c < leases[i].length; c++) {
        if (leases[i][c] != null && !store.stillResident(dataset, storage.get(i), c, leases[i][c].path())) {
          leases[i][c].close();
          leases[i][c] = null;
          columns[i][c] = null;
          released++;
        }
      }
    }
    forgetAbsent();
  }

  /**
   * Feature {@code i}'s segment of {@code chunk} failed while being read ({@code fault}: an
   * offset out of bounds, or a fault on a mapping whose file shrank): the chunk is read from ORC,
   * the lease is released, and the source is told so that it checks the file and drops it if
   * damaged. The chunk is looked up again when the source's contents change.
   */
  void damaged(int i, int chunk, Throwable fault) {
    damagedChunks++;
    String feature = storage.get(i);
    Path file = leases[i][chunk] == null ? null : leases[i][chunk].path();
    String problem = fault.getClass().getSimpleName() + (fault.getMessage() == null ? "" : ": " + fault.getMessage());
    LOG.log(System.Logger.Level.WARNING, "segment " + file + " (" + feature + " of chunk " + chunk + " of " + dataset.name()
        + ") is damaged: " + problem + "; reading that chunk from ORC");
    if (leases[i][chunk] != null) {
      leases[i][chunk].close();
      leases[i][chunk] = null;
    }
    columns[i][chunk] = null;
    looked[i][chunk] = true;
    if (store != null && file != null) {
      store.damaged(dataset, feature, chunk, file, problem);
    }
  }

  long damagedChunks() {
    return damagedChunks;
  }

  long released() {
    return released;
  }

  /** When the store's contents changed since the last read, looks up the chunks found absent again. */
  void recheckAbsent() {
    if (store != null) {
      long g = store.generation();
      if (g != seenGeneration) {
        seenGeneration = g;
        forgetAbsent();
      }
    }
  }

  /** Forgets the chunks found absent, so that they are looked up again. */
  private void forgetAbsent() {
    for (int i = 0; i < looked.length; i++) {
      for (int c = 0; c < looked[i].length; c++) {
        if (leases[i][c] == null) {
          looked[i][c] = false;
        }
      }
    }
  }

  /** Releases every lease (so that evicted segments can be unmapped) and forgets residency. */
  void releaseAll() {
    for (int i = 0; i < leases.length; i++) {
      for (int c = 0; c < leases[i].length; c++) {
        if (leases[i][c] != null) {
          leases[i][c].close();
          leases[i][c] = null;
        }
        columns[i][c] = null;
        looked[i][c] = false;
      }
    }
  }

  /**
   * Adds to {@code dataBytes[i]} the string or binary bytes, and to {@code childRows[i]} and
   * {@code childBytes[i]} the list elements (and their bytes), that rows {@code [start, start +
   * count)} of feature {@code i} hold where they are resident on the SSD tier, so that builders
   * can be sized exactly before {@link TieredReader#appendRows}. Data read from ORC is not counted (its size
   * is known only after decoding).
   */
  void measure(long start, int count, long[] dataBytes, long[] childRows, long[] childBytes) throws IOException {
    long row = start;
    long end = start + count;
    while (row < end) {
      ChunkInfo c = dataset.chunks().get(dataset.chunkOf(row));
      int n = (int) (Math.min(end, c.endRow()) - row);
      int local = (int) (row - c.firstRow());
      for (int i = 0; i < storage.size(); i++) {
        Column col = column(i, c.index());
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
          damaged(i, c.index(), fault); // read from ORC by the append that follows
        }
      }
      row += n;
    }
  }

  /** Calls {@code action} with each resident column of {@code chunks} of the features not {@code derived}. */
  void forEachStored(int[] chunks, DerivedChunkSource[] derived, Consumer<Column> action) {
    for (int c : chunks) {
      for (int i = 0; i < storage.size(); i++) {
        if (derived[i] != null) {
          continue;
        }
        Column col;
        try {
          col = column(i, c);
        } catch (IOException | RuntimeException e) {
          continue; // found damaged or gone: the batch that reads it says so
        }
        if (col != null) {
          action.accept(col);
        }
      }
    }
  }
}
