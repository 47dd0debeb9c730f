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
 * data. Slabs grow to the largest batch seen; the pool keeps at most {@code maxIdle} slabs.
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
      while (slab != null && slab.memory().byteSize() < slabBytes) {
        slab.arena().close();
        slab = idle.poll();
      }
    }
    Arena batchArena = Arena.ofShared();
    return new Memory(slab, batchArena);
  }

  private synchronized void giveBack(Slab slab, long used) {
    slabBytes = Math.max(slabBytes, used + used / 4);
    if (slab != null && !closed && slab.memory().byteSize() >= slabBytes && idle.size() < maxIdle) {
      idle.push(slab);
    } else if (slab != null) {
      slab.arena().close();
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
      long total = used + overflow;
      Slab back = slab;
      if (back == null || overflow > 0) {
        if (back != null) {
          back.arena().close();
        }
        Arena a = Arena.ofShared();
        long size = Math.max(total + total / 4, 1 << 20);
        back = new Slab(a, a.allocate(size, 64));
      }
      giveBack(back, total);
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
