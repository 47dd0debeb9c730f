package io.strata.sdk.loader;

import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.tier.SegmentSource;
import io.strata.sdk.tier.TierStats;
import io.strata.sdk.format.ColumnBuilder;
import io.strata.sdk.format.DeviceCopies;
import io.strata.sdk.format.GatherOrder;
import io.strata.sdk.tiering.DerivedChunkSource;
import io.strata.sdk.tiering.TieredReader;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

/**
 * Assembles a loader's batches: one per prefetch worker, plus one on the job's thread for batch
 * cache misses after a restart. Each owns its readers (one per feature group); with several
 * groups, the groups of one batch are filled on threads of the assembler's own, a reader always
 * on the same thread (its decoded ORC blocks live in thread-confined memory), and the batch's
 * slab hands out memory to one thread at a time.
 *
 * <p>Threads and locks: an assembler is used by one thread at a time (its owner); what it shares
 * with the other assemblers of its loader ({@link Shared}) is thread-safe: the slab pool, the
 * segment source, the batch cache, the tier statistics (adders) and the counters (atomics).
 */
final class BatchAssembler implements Prefetcher.Producer {
  /** What a loader's assemblers share. */
  record Shared(Dataset dataset, SegmentSource store, List<String> features, Map<String, DerivedChunkSource> derived,
      TierStats tierStats, Plan plan, int planHash, long stepsPerEpoch, SlabPool slabs, AtomicLong assembled,
      BatchCache cache, AtomicInteger threadNames, int assemblyThreads, boolean reportSteps,
      boolean planAhead) {}

  private final Dataset dataset;
  private final SegmentSource store;
  /** Whether producing step g tells the store the job reached it (not with substitutable reads: the loader reports what it delivered). */
  private final boolean reportSteps;
  private final List<String> features;
  private final Map<String, DerivedChunkSource> derived;
  private final TierStats tierStats;
  private final Plan plan;
  private final int planHash;
  private final long stepsPerEpoch;
  private final SlabPool slabs;
  private final AtomicLong assembled;
  private final BatchCache cache;
  private final AtomicInteger assemblerNames;
  private final int assemblyThreads;
  /** One reader per part of the batch: all features, or feature groups assembled at once. */
  private final TieredReader[] readers;
  /** For each reader, the positions of its features in {@link #features}. */
  private final int[][] positions;
  /**
   * The thread of each reader but the first (which runs on the producer's own thread): a reader
   * always runs on the same thread, as its decoded ORC blocks live in thread-confined memory.
   */
  private final ExecutorService[] partThreads;
  private final boolean writeCache;
  private int orderEpoch = -1;
  /** The gather order of the batch being assembled (single rows), reused batch after batch. */
  private final GatherOrder gatherOrder = new GatherOrder();
  private final long[] chunkFirstRows;
  private EpochOrder order;
  /**
   * Where the loader plans ahead (shuffled single rows, a core to spare): the next batch's order,
   * worked out on a thread of its own while this one gathers; else null.
   */
  private final PlanAhead ahead;

  BatchAssembler(Shared shared, boolean writeCache) {
    this.dataset = shared.dataset();
    this.store = shared.store();
    this.reportSteps = shared.reportSteps();
    this.features = shared.features();
    this.derived = shared.derived();
    this.tierStats = shared.tierStats();
    this.plan = shared.plan();
    this.planHash = shared.planHash();
    this.stepsPerEpoch = shared.stepsPerEpoch();
    this.slabs = shared.slabs();
    this.assembled = shared.assembled();
    this.cache = shared.cache();
    this.assemblerNames = shared.threadNames();
    this.assemblyThreads = shared.assemblyThreads();
    this.positions = partition(assemblyThreads);
    this.readers = new TieredReader[positions.length];
    for (int r = 0; r < positions.length; r++) {
      List<String> part = new ArrayList<>();
      for (int i : positions[r]) {
        part.add(features.get(i));
      }
      readers[r] = new TieredReader(dataset, store, part, tierStats, derived, orcBlockBudget(positions[r]));
    }
    this.partThreads = new ExecutorService[readers.length];
    for (int r = 1; r < readers.length; r++) {
      partThreads[r] = Executors.newSingleThreadExecutor(
          t -> Thread.ofPlatform().name("strata-assemble-" + assemblerNames.incrementAndGet()).daemon(true).unstarted(t));
    }
    this.writeCache = writeCache;
    this.chunkFirstRows = dataset.table().chunkFirstRows();
    this.ahead = shared.planAhead() && plan.singleRowUnits() && writeCache
        ? new PlanAhead(plan, stepsPerEpoch, chunkFirstRows, dataset.rows(), "strata-plan-" + assemblerNames.incrementAndGet())
        : null;
  }

  /**
   * Splits the features into {@code parts} groups of about equal bytes per row (longest first
   * onto the lightest group), so that the groups' threads finish together.
   */
  private int[][] partition(int parts) {
    int n = Math.max(1, Math.min(parts, features.size()));
    List<List<Integer>> groups = new ArrayList<>();
    long[] load = new long[n];
    for (int k = 0; k < n; k++) {
      groups.add(new ArrayList<>());
    }
    List<Integer> order = new ArrayList<>();
    for (int i = 0; i < features.size(); i++) {
      order.add(i);
    }
    order.sort((a, c) -> Long.compare(weight(c), weight(a)));
    for (int i : order) {
      int lightest = 0;
      for (int k = 1; k < n; k++) {
        if (load[k] < load[lightest]) {
          lightest = k;
        }
      }
      groups.get(lightest).add(i);
      load[lightest] += weight(i);
    }
    int[][] out = new int[n][];
    for (int k = 0; k < n; k++) {
      out[k] = groups.get(k).stream().sorted().mapToInt(Integer::intValue).toArray();
    }
    return out;
  }

  /**
   * What a reader of the features at {@code part} keeps of decoded ORC: the default, or, where the
   * plan shuffles within blocks of chunks, a block's chunks of those features (every row of the
   * block is read before the next block starts, in random order: a smaller budget would decode
   * and read each chunk many times over).
   */
  private long orcBlockBudget(int[] part) {
    if (plan.blockChunks() == 0 || !plan.shuffle) {
      return TieredReader.DEFAULT_ORC_BLOCK_BUDGET;
    }
    long rowBytes = 0;
    for (int i : part) {
      rowBytes += weight(i);
    }
    long maxChunkRows = 0;
    for (var c : dataset.chunks()) {
      maxChunkRows = Math.max(maxChunkRows, c.rows());
    }
    // Decoded columns carry validity and offsets beside the values: an eighth more. Exactly a
    // block, not the default's 64 MiB floor: a block is read whole and then left for the next, so
    // more holds nothing that is read again, and a host's jobs each paid the floor (issue 58).
    long block = plan.blockChunks() * maxChunkRows * rowBytes;
    return block + block / 8;
  }

  /** Estimated bytes per row of feature {@code i}: its width, or a guess for strings and lists. */
  private long weight(int i) {
    DerivedChunkSource d = derived.get(features.get(i));
    return TieredReader.estimatedRowBytes(d != null ? d.type() : dataset.feature(features.get(i)).type());
  }

  /** Makes step {@code g} with nothing planned after it (the loader's own thread, outside the prefetcher). */
  Batch produce(long g) throws IOException {
    return produce(g, -1);
  }

  @Override
  public Batch produce(long g, long next) throws IOException {
    int epoch = (int) (g / stepsPerEpoch);
    long step = g % stepsPerEpoch;
    if (store != null) {
      if (reportSteps) {
        store.step(g);
      }
      for (TieredReader reader : readers) {
        reader.refresh();
      }
    }
    int units = plan.unitsInStep(step);
    readAheadNextBlock(epoch, step, units);
    int[] offsets;
    long[] ids;
    long[] starts;
    int rows;
    boolean singleRows;
    GatherOrder gather;
    if (plan.singleRowUnits()) {
      // One row a unit, named by its row number: the ids are the rows themselves (read-only from
      // here on), and the offsets the same 0, 1, ..., units for every batch of this size.
      PlanAhead.Planned planned = ahead != null ? ahead.take(g) : null;
      if (planned != null) {
        starts = planned.rows();
        gather = planned.order();
      } else {
        starts = new long[units];
        plan.units(order(epoch), step, starts, units);
        gather = gatherOrder.compute(starts, units, chunkFirstRows, dataset.rows());
      }
      if (ahead != null && next >= 0) {
        ahead.plan(next); // while this batch is gathered: the step this assembler makes next (its turn)
      }
      ids = starts;
      offsets = identityOffsets(units);
      rows = units;
      singleRows = true;
    } else {
      starts = new long[units];
      plan.units(order(epoch), step, starts, units);
      offsets = new int[units + 1];
      ids = new long[units];
      rows = 0;
      singleRows = true;
      for (int k = 0; k < units; k++) {
        long u = starts[k];
        starts[k] = plan.unitStart(u);
        ids[k] = plan.unitId(u);
        offsets[k] = rows;
        int unitRows = plan.unitRows(u);
        singleRows &= unitRows == 1;
        rows = Math.addExact(rows, unitRows);
        offsets[k + 1] = rows;
      }
      gather = singleRows ? gatherOrder.compute(starts, units, chunkFirstRows, dataset.rows()) : null;
    }
    SlabPool.Memory memory = slabs.take();
    // Copies the consumer's device makes itself (a GPU reading registered segment pages): one
    // record per part of the batch, each filled on its part's thread.
    Predicate<MemorySegment> reach = gather == null ? slabs.deviceReads() : null;
    DeviceCopies[] device = new DeviceCopies[readers.length];
    if (reach != null) {
      for (int r = 0; r < readers.length; r++) {
        device[r] = new DeviceCopies(reach);
      }
    }
    boolean ok = false;
    try {
      Column[] built = new Column[features.size()];
      if (readers.length == 1) {
        assemble(readers[0], memory, rows, units, starts, offsets, gather, positions[0], built, device[0]);
      } else {
        // Several threads fill one batch: the slab hands out memory to one at a time.
        SegmentAllocator shared = (size, align) -> {
          synchronized (memory) {
            return memory.allocate(size, align);
          }
        };
        int finalRows = rows;
        List<Future<?>> parts = new ArrayList<>();
        for (int r = 1; r < readers.length; r++) {
          TieredReader reader = readers[r];
          int[] pos = positions[r];
          DeviceCopies part = device[r];
          parts.add(partThreads[r].submit(() -> {
            assemble(reader, shared, finalRows, units, starts, offsets, gather, pos, built, part);
            return null;
          }));
        }
        Throwable failure = null;
        try {
          assemble(readers[0], shared, rows, units, starts, offsets, gather, positions[0], built, device[0]);
        } catch (IOException | RuntimeException | Error e) {
          failure = e;
        }
        // Every part finishes before the batch's memory can go back to the pool, even when this
        // thread is interrupted meanwhile: a part still writing would write into another batch.
        boolean interrupted = false;
        for (var f : parts) {
          while (true) {
            try {
              f.get();
              break;
            } catch (ExecutionException e) {
              failure = failure == null ? e.getCause() : failure;
              break;
            } catch (InterruptedException e) {
              interrupted = true;
            }
          }
        }
        if (interrupted) {
          Thread.currentThread().interrupt();
          failure = failure == null ? new InterruptedException() : failure;
        }
        if (failure instanceof IOException io) {
          throw io;
        } else if (failure instanceof RuntimeException re) {
          throw re;
        } else if (failure instanceof Error err) {
          throw err;
        } else if (failure != null) {
          throw new InterruptedIOException("interrupted while assembling batch " + g);
        }
      }
      SequencedMap<String, Column> cols = new LinkedHashMap<>();
      for (int i = 0; i < features.size(); i++) {
        cols.put(features.get(i), built[i]);
      }
      int window = plan instanceof Plan.Windows w ? w.length() : 0;
      int lookahead = plan instanceof Plan.Windows w ? w.lookahead() : 0;
      Batch b = new Batch(epoch, step, planHash, stepsPerEpoch, rows, cols, offsets, ids, window, lookahead,
          Batch.Source.ASSEMBLED, memory);
      if (reach != null) {
        for (int r = 1; r < device.length; r++) {
          device[0].addAll(device[r]);
        }
        if (device[0].count() > 0) {
          b.deviceCopies(device[0]);
          device[0] = null; // the batch's now
        }
      }
      assembled.incrementAndGet();
      if (writeCache && cache != null) {
        b.completeOnHost(); // the cache keeps what the host holds
        cache.store(g, b, dataset.name(), dataset.version());
      }
      ok = true;
      return b;
    } finally {
      for (DeviceCopies d : device) {
        if (d != null) {
          d.close();
        }
      }
      if (!ok) {
        memory.close();
      }
    }
  }


  /** The block of chunks whose successor was last read ahead (epoch, block); -1: none yet. */
  private long blockAhead = -1;
  /** The epoch whose blocks below {@link #releasedBelow} have had their resident pages released. */
  private int releasedEpoch = -1;
  private int releasedBelow;

  /**
   * Where the epoch reads whole chunks a block at a time ({@link ChunkBlockOrder}): when a step
   * reaches a block, every reader reads the next block's resident segments ahead ({@link
   * TieredReader#readAheadChunks}), so that they are in memory when that block's first batch is
   * made instead of being paged in as batches touch them (issue 58: a fleet node's reader threads
   * waited on 800 page faults a second; 3.3 times fewer with this).
   */
  private void readAheadNextBlock(int epoch, long step, int units) {
    if (plan.blockChunks() == 0 || !plan.shuffle || units == 0 || !(order(epoch) instanceof ChunkBlockOrder blocks)) {
      return;
    }
    int first = blocks.blockOf(plan.position(step, 0));
    if (epoch != releasedEpoch) {
      releasedEpoch = epoch;
      releasedBelow = first; // blocks before the first this assembler reads (a resumed epoch) it never mapped
    }
    // The blocks this assembler read before this step's first: every row read (another thread of the
    // loader still on one only maps its pages again, from the page cache). A step's release and its
    // read-ahead are both a few system calls.
    for (; releasedBelow < first; releasedBelow++) {
      int[] done = blocks.chunksOfBlock(releasedBelow);
      for (TieredReader reader : readers) {
        reader.releaseChunks(done);
      }
    }
    int g = blocks.blockOf(plan.position(step, units - 1));
    long key = (long) epoch << 32 | g;
    if (key == blockAhead) {
      return;
    }
    blockAhead = key;
    int[] next = blocks.chunksOfBlock(g + 1);
    if (next.length == 0) {
      return;
    }
    for (TieredReader reader : readers) {
      reader.readAheadChunks(next);
    }
  }

  /** The epoch's order (this assembler's own permutation: its scratch is one thread's). */
  private EpochOrder order(int epoch) {
    if (epoch != orderEpoch) {
      order = plan.order(epoch);
      orderEpoch = epoch;
    }
    return order;
  }

  /** The offsets 0, 1, ..., {@code units}: shared by the batches of one size (no one writes them). */
  private int[] identityOffsets(int units) {
    int[] o = identity;
    if (o.length != units + 1) {
      o = new int[units + 1];
      for (int k = 0; k <= units; k++) {
        o[k] = k;
      }
      identity = o;
    }
    return o;
  }

  private int[] identity = new int[0];

  /**
   * Assembles the features at {@code pos} of one batch with {@code reader} (whose features they
   * are, in that order) into {@code built}: sized first, then appended unit by unit.
   */
  private void assemble(TieredReader reader, SegmentAllocator allocator, int rows, int units, long[] starts,
      int[] offsets, GatherOrder gather, int[] pos, Column[] built, DeviceCopies device) throws IOException {
    List<ColumnBuilder> builders = reader.builders(allocator, rows);
    int n = pos.length;
    long[] dataBytes = new long[n];
    long[] childRows = new long[n];
    long[] childBytes = new long[n];
    boolean allFixed = builders.stream().allMatch(b -> b.type().isFixedWidth());
    if (gather == null) {
      // Cold segments: every byte of the batch asked of the kernel at once, before measuring reads offsets.
      reader.readAheadIfCold(starts, offsets, units);
    }
    if (!allFixed) {
      for (int k = 0; k < units; k++) {
        reader.measure(starts[k], offsets[k + 1] - offsets[k], dataBytes, childRows, childBytes);
      }
      for (int i = 0; i < n; i++) {
        ColumnBuilder b = builders.get(i);
        if (b.type().isVariableWidth()) {
          b.reserve(0, dataBytes[i]);
        } else if (!b.type().isFixedWidth()) {
          b.child().reserve(Math.toIntExact(childRows[i]), childBytes[i]);
        }
      }
    }
    if (gather != null) {
      reader.appendSingleRows(starts, units, gather, builders);
    } else {
      reader.appendRanges(starts, offsets, units, builders, device);
    }
    for (int k = 0; k < pos.length; k++) {
      built[pos[k]] = builders.get(k).build();
    }
    if (device != null) {
      device.coverBuilt(builders);
    }
  }

  /** Closes every reader on its own thread (confined memory is freed only there), then the threads. */
  @Override
  public void close() throws IOException {
    if (ahead != null) {
      ahead.close();
    }
    List<Future<?>> closing = new ArrayList<>();
    for (int r = 1; r < readers.length; r++) {
      TieredReader reader = readers[r];
      closing.add(partThreads[r].submit(() -> {
        reader.close();
        return null;
      }));
      partThreads[r].shutdown();
    }
    IOException failure = null;
    try {
      readers[0].close();
    } catch (IOException e) {
      failure = e;
    }
    for (var f : closing) {
      try {
        f.get(30, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        if (failure == null) {
          failure = e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
        }
      } catch (TimeoutException e) {
        failure = failure == null ? new IOException("an assembly thread did not finish within 30 s", e) : failure;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (failure != null) {
      throw failure;
    }
  }
}
