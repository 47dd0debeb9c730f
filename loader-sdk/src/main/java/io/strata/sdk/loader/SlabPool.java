package io.strata.sdk.loader;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.io.IOException;
import java.util.ArrayDeque;

/**
 * Reusable off-heap slabs for batch memory. Allocating and first-touching fresh memory for every
 * batch costs more than filling it (see BENCHMARKS.md), so each batch carves its buffers from a
 * recycled slab, or a new one while fewer than {@code maxIdle} exist. Every batch still gets its own arena: the slab is re-scoped to it, so a column
 * of a closed batch fails with {@link IllegalStateException} instead of showing the next batch's
 * data. The pool keeps at most {@code maxIdle} slabs, idle or held; the slabs themselves come from a {@link
 * BatchMemory} (off-heap memory of this process unless the job gives another).
 *
 * <p>Threads: prefetch threads take and fill memory, the job's thread closes batches and so
 * gives slabs back; the idle stack is guarded by the pool's monitor, and slabs are allocated and
 * freed outside it.
 */
final class SlabPool implements AutoCloseable {
  private final ArrayDeque<BatchMemory.Slab> idle = new ArrayDeque<>();
  private final int maxIdle;
  private final BatchMemory source;
  private long slabBytes;
  /** Slabs made and not yet freed: idle, or held by a batch. */
  private int live;
  private boolean closed;

  SlabPool(int maxIdle, BatchMemory source) {
    this.maxIdle = maxIdle;
    this.source = source;
  }

  /**
   * Memory for one batch; close it to return the slab. When no slab is idle (every one is held by
   * a batch in flight or with the job) a new one is made, of half again the largest batch seen,
   * up to {@code maxIdle} slabs in all: a batch in its own arena costs zeroed fresh memory, and a
   * memory owner that shares slabs with another process copies it once more.
   */
  Memory take() {
    BatchMemory.Slab slab;
    boolean grow = false;
    long size;
    synchronized (this) {
      slab = idle.poll();
      size = Math.max(slabBytes + slabBytes / 2, 1 << 20);
      if (slab == null && slabBytes > 0 && live < maxIdle && !closed) {
        live++;
        grow = true;
      }
    }
    if (grow) {
      try {
        slab = source.allocate(size);
      } catch (IOException e) {
        synchronized (this) {
          live--;
        }
      }
    }
    return new Memory(slab, source.scopedBatches() ? Arena.ofShared() : null);
  }

  /**
   * Takes back a slab after a batch that used {@code used} bytes. A slab that held its batch is
   * kept; one that overflowed is replaced by a slab with half again the largest batch seen, so
   * that the pool settles after a few batches and new memory (which Java zeroes) is rare.
   */
  private void giveBack(BatchMemory.Slab slab, long used, boolean overflowed) {
    BatchMemory.Slab keep = slab;
    synchronized (this) {
      slabBytes = Math.max(slabBytes, used);
      if (keep != null && overflowed) {
        keep.close();
        keep = null;
        live--;
      }
      if (closed || idle.size() + (keep == null ? 1 : 0) > maxIdle || (keep == null && live >= maxIdle)) {
        if (keep != null) {
          keep.close();
          live--;
        }
        return;
      }
      if (keep == null) {
        live++; // the replacement, made below
      }
    }
    if (keep == null) {
      try {
        keep = source.allocate(Math.max(slabBytes + slabBytes / 2, 1 << 20));
      } catch (IOException e) {
        // No slab this time (a full /dev/shm, say): later batches take their memory from their own
        // arenas, as the first batch did, and the memory's owner sees buffers outside its slabs.
        synchronized (this) {
          live--;
        }
        return;
      }
    }
    synchronized (this) {
      if (closed) {
        keep.close();
        live--;
      } else {
        idle.push(keep);
      }
    }
  }

  /**
   * A batch's allocator: the slab first, then the batch's own arena when the slab is full. With
   * scoped batches ({@link BatchMemory#scopedBatches}) the slab is viewed through that arena, so
   * the batch's columns die with it; otherwise the slab is used as it is and the arena is made
   * only for an overflow.
   */
  final class Memory implements SegmentAllocator, AutoCloseable {
    private final BatchMemory.Slab slab;
    private Arena batchArena;
    private final MemorySegment view;
    private long used;
    private long overflow;
    private boolean closed;

    // The slab's memory is viewed with the batch arena's lifetime (so that a batch's columns die
    // with the batch); the bounds are the slab's own.
    @SuppressWarnings("restricted")
    private Memory(BatchMemory.Slab slab, Arena batchArena) {
      this.slab = slab;
      this.batchArena = batchArena;
      this.view = slab == null ? MemorySegment.NULL
          : batchArena == null ? slab.memory() : slab.memory().reinterpret(batchArena, null);
    }

    @Override
    public MemorySegment allocate(long byteSize, long byteAlignment) {
      long at = (used + byteAlignment - 1) & -byteAlignment;
      if (slab != null && at + byteSize <= view.byteSize()) {
        used = at + byteSize;
        return view.asSlice(at, byteSize);
      }
      overflow += byteSize;
      if (batchArena == null) {
        batchArena = Arena.ofShared();
      }
      return batchArena.allocate(byteSize, byteAlignment);
    }

    @Override
    public void close() {
      if (closed) {
        return;
      }
      closed = true;
      if (batchArena != null) {
        batchArena.close();
      }
      giveBack(slab, used + overflow, slab == null || overflow > 0);
    }
  }

  @Override
  public synchronized void close() {
    closed = true;
    while (!idle.isEmpty()) {
      idle.pop().close();
      live--;
    }
  }
}
