package io.strata.sdk.tiering;

import io.strata.sdk.Column;
import io.strata.sdk.format.GatherOrder;
import io.strata.sdk.internal.PageMappings;
import java.lang.foreign.MemorySegment;

/**
 * Telling a cold batch and reading it ahead, for one {@link TieredReader}: a few {@code mincore}
 * probes of the resident segments a batch touches, and, when one finds a page not in memory,
 * {@code madvise(WILLNEED)} over every byte the batch will copy, all at once, so that the kernel
 * reads them in a few large requests instead of one per page fault.
 *
 * <p>Threads: confined to its reader's thread, as the reader is; it reads the reader's table of
 * resident columns, which that thread alone changes.
 */
final class ColdReads {
  private final Column[][] columns;
  private final int features;

  /**
   * Over {@code columns[feature][chunk]} (the reader's own table, null where not resident: such a
   * chunk's rows come decoded from the slow tier, already in memory, and are neither probed nor read ahead).
   */
  ColdReads(Column[][] columns, int features) {
    this.columns = columns;
    this.features = features;
  }

  /**
   * Whether a sample of a batch's ranges (at most {@link #COLD_SAMPLES}, spread over the ranges, each
   * feature in turn) finds pages of the segments not in memory: a cold batch, whose ranges are then
   * all read ahead. A few {@code mincore} calls a batch; a warm batch pays nothing more.
   */
  boolean cold(int pieces, int[] chunk, int[] local, int[] count) {
    int samples = (int) Math.min(COLD_SAMPLES, (long) pieces * features);
    for (int k = 0; k < samples; k++) {
      int i = k % features;
      int p = (int) ((long) k * pieces / samples);
      Column c = columns[i][chunk[p]];
      if (count[p] > 0 && c != null && !firstBuffersResident(c, local[p], count[p])) {
        return true;
      }
    }
    return false;
  }

  /** Ranges a batch samples to tell whether it is cold. */
  private static final int COLD_SAMPLES = 16;

  /**
   * Asks the kernel to read every byte the ranges occupy in every feature's segments, all at once
   * and only those ({@link PageMappings#willNeed}), before they are copied: without it, each first
   * touch of a page not in memory waits for its own read, of the device's whole read-around window.
   * First the buffers a row's position locates (validity, fixed-width values, offsets), then, with
   * the offsets read, the bytes of strings and the elements of lists.
   */
  void readAhead(int pieces, int[] chunk, int[] local, int[] count) {
    for (int i = 0; i < features; i++) {
      for (int p = 0; p < pieces; p++) {
        if (count[p] > 0 && columns[i][chunk[p]] != null) {
          readAheadDirect(columns[i][chunk[p]], local[p], count[p]);
        }
      }
    }
    for (int i = 0; i < features; i++) {
      for (int p = 0; p < pieces; p++) {
        if (count[p] > 0 && columns[i][chunk[p]] != null && columns[i][chunk[p]].type().kind().width() < 0) {
          readAheadData(columns[i][chunk[p]], local[p], count[p]);
        }
      }
    }
  }

  /**
   * Whether a sample of a batch of single rows finds a row's page not in memory: at most
   * {@link #COLD_SAMPLES} rows, each feature in turn, or, after a batch found warm, one row a
   * feature (each probe is a system call, about 1.3 µs: 16 of them were 1.5 % of a warm batch of
   * 16,384 rows).
   */
  boolean coldRows(GatherOrder order) {
    int samples = Math.min(lastRowsWarm ? Math.max(4, features) : COLD_SAMPLES, order.size());
    for (int k = 0; k < samples; k++) {
      int j = (int) ((long) k * order.size() / samples);
      Column c = columns[k % features][order.runChunk(order.runOf(j))];
      if (c != null && !firstBuffersResident(c, order.localRow(j), 1)) {
        lastRowsWarm = false;
        return true;
      }
    }
    lastRowsWarm = true;
    return false;
  }

  /** Whether the last batch of single rows was found warm (its sample all in memory). */
  private boolean lastRowsWarm;

  /** Pages a read-ahead of single rows reads through rather than cutting its span there. */
  private static final int GAP_PAGES = 4;

  /**
   * Reads ahead the pages a batch of single rows touches, in every feature (values, and validity
   * bits where there are nulls): in gather order the rows' pages mostly ascend, so the pages of a
   * run of one chunk are read as a few spans (a gap of up to {@link #GAP_PAGES} pages read through).
   */
  void readAheadRows(GatherOrder order) {
    for (int i = 0; i < features; i++) {
      for (int r = 0; r < order.runs(); r++) {
        Column c = columns[i][order.runChunk(r)];
        if (c == null) {
          continue; // decoded from the slow tier: in memory already
        }
        readAheadPages(c.values(), c.offset(), c.type().kind().width(), order, r);
        if (c.validity() != MemorySegment.NULL) {
          readAheadPages(c.validity(), c.offset(), 0, order, r);
        }
      }
    }
  }

  /** The pages of run {@code r}'s rows in a buffer of values {@code width} bytes wide (0: bits), as spans. */
  private static void readAheadPages(MemorySegment buffer, long base, int width, GatherOrder order, int r) {
    long lo = -1;
    long hi = -1;
    for (int j = order.runStart(r); j < order.runStart(r + 1); j++) {
      long row = base + order.localRow(j);
      long first = (width > 0 ? row * width : row >>> 3) >>> 12;
      long last = (width > 0 ? row * width + width - 1 : row >>> 3) >>> 12;
      if (lo >= 0 && first >= lo - GAP_PAGES && last <= hi + GAP_PAGES) {
        lo = Math.min(lo, first);
        hi = Math.max(hi, last);
        continue;
      }
      if (lo >= 0) {
        PageMappings.willNeed(buffer, lo << 12, (hi - lo + 1) << 12);
      }
      lo = first;
      hi = last;
    }
    if (lo >= 0) {
      PageMappings.willNeed(buffer, lo << 12, (hi - lo + 1) << 12);
    }
  }

  /** Whether the first buffer rows {@code [from, from + n)} of {@code c} start in is in memory. */
  private static boolean firstBuffersResident(Column c, int from, int n) {
    long at = (long) c.offset() + from;
    int width = c.type().kind().width();
    if (width > 0) {
      return PageMappings.resident(c.values(), at * width, (long) n * width);
    }
    if (width == 0) {
      return PageMappings.resident(c.values(), at >>> 3, (n + 7L) / 8 + 1);
    }
    return PageMappings.resident(c.offsets(), at * 4, (n + 1L) * 4);
  }

  /** Reads ahead every row of {@code c} (a resident chunk's column, about to be read whole: the next block's). */
  static void readAheadWhole(Column c) {
    if (c.length() == 0) {
      return;
    }
    readAheadDirect(c, 0, c.length());
    if (c.type().kind().width() < 0) {
      readAheadData(c, 0, c.length());
    }
  }

  /**
   * Drops this process's mappings of {@code c}'s pages (a resident chunk's column whose block has
   * been read: the block before the current one), so that pages no batch of this reader reads again
   * this epoch are not counted as its memory; they stay in the page cache. Pages a column shares
   * with its neighbours are kept.
   */
  static void releaseWhole(Column c) {
    for (MemorySegment m : new MemorySegment[] {c.validity(), c.offsets(), c.values()}) {
      PageMappings.releaseInside(m);
    }
    if (c.child() != null) {
      releaseWhole(c.child());
    }
  }

  /** Reads ahead the validity bits of rows {@code [from, from + n)} of {@code c}, and their values or offsets. */
  private static void readAheadDirect(Column c, int from, int n) {
    long at = (long) c.offset() + from;
    if (c.validity() != MemorySegment.NULL) {
      PageMappings.willNeed(c.validity(), at >>> 3, (n + 7L) / 8 + 1);
    }
    int width = c.type().kind().width();
    if (width > 0) {
      PageMappings.willNeed(c.values(), at * width, (long) n * width);
    } else if (width == 0) {
      PageMappings.willNeed(c.values(), at >>> 3, (n + 7L) / 8 + 1);
    } else {
      PageMappings.willNeed(c.offsets(), at * 4, (n + 1L) * 4);
    }
  }

  /** Reads ahead the string bytes or list elements of rows {@code [from, from + n)} of a variable-width {@code c}. */
  private static void readAheadData(Column c, int from, int n) {
    int start = c.start(from);
    int end = c.end(from + n - 1);
    if (end <= start) {
      return;
    }
    Column child = c.child();
    if (child == null) {
      PageMappings.willNeed(c.values(), start, end - start);
      return;
    }
    readAheadDirect(child, start, end - start);
    if (child.type().kind().width() < 0) {
      readAheadData(child, start, end - start);
    }
  }
}
