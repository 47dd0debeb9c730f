package io.strata.sdk.loader;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.util.ArrayDeque;

/**
 * Reusable off-heap slabs for batch memory. Allocating and first-touching fresh memory for every
 * batch costs more than filling it (see BENCHMARKS.md), so each batch carves its buffers from a
 * recycled slab. Every batch still gets its own arena: the slab is re-scoped to it, so a column
 * of a closed batch fails with {@link IllegalStateException} instead of showing the next batch's
 * data. The pool keeps at most {@code maxIdle} slabs.
 */
final class SlabPool implements AutoCloseable {
  private record Slab(Arena arena, MemorySegment memory) {}

  private final ArrayDeque<Slab> idle = new ArrayDeque<>();
  private final int maxIdle;
  private long slabBytes;
  private boolean closed;

  SlabPool(int maxIdle) {
    this.maxIdle = maxIdle;
  }

  /** Memory for one batch; close it to return the slab. */
  Memory take() {
    Slab slab;
    synchronized (this) {
      slab = idle.poll();
    }
    Arena batchArena = Arena.ofShared();
    return new Memory(slab, batchArena);
  }

  /**
   * Takes back a slab after a batch that used {@code used} bytes. A slab that held its batch is
   * kept; one that overflowed is replaced by a slab with half again the largest batch seen, so
   * that the pool settles after a few batches and new memory (which Java zeroes) is rare.
   */
  private void giveBack(Slab slab, long used, boolean overflowed) {
    Slab keep = slab;
    synchronized (this) {
      slabBytes = Math.max(slabBytes, used);
      if (keep != null && overflowed) {
        keep.arena().close();
        keep = null;
      }
      if (closed || idle.size() >= maxIdle) {
        if (keep != null) {
          keep.arena().close();
        }
        return;
      }
    }
    if (keep == null) {
      Arena a = Arena.ofShared();
      keep = new Slab(a, a.allocate(Math.max(slabBytes + slabBytes / 2, 1 << 20), 64));
    }
    synchronized (this) {
      if (closed) {
        keep.arena().close();
      } else {
        idle.push(keep);
      }
    }
  }

  /** A batch's allocator: the slab first, then the batch's own arena when the slab is full. */
  final class Memory implements SegmentAllocator, AutoCloseable {
    private final Slab slab;
    private final Arena batchArena;
    private final MemorySegment view;
    private long used;
    private long overflow;
    private boolean closed;

    private Memory(Slab slab, Arena batchArena) {
      this.slab = slab;
      this.batchArena = batchArena;
      this.view = slab == null ? MemorySegment.NULL : slab.memory().reinterpret(batchArena, null);
    }

    @Override
    public MemorySegment allocate(long byteSize, long byteAlignment) {
      long at = (used + byteAlignment - 1) & -byteAlignment;
      if (slab != null && at + byteSize <= view.byteSize()) {
        used = at + byteSize;
        return view.asSlice(at, byteSize);
      }
      overflow += byteSize;
      return batchArena.allocate(byteSize, byteAlignment);
    }

    @Override
    public void close() {
      if (closed) {
        return;
      }
      closed = true;
      batchArena.close();
      giveBack(slab, used + overflow, slab == null || overflow > 0);
    }
  }

  @Override
  public synchronized void close() {
    closed = true;
    while (!idle.isEmpty()) {
      idle.pop().arena().close();
    }
  }
}
