package io.strata.sdk.loader;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * Reusable off-heap slabs for batch memory. Allocating and first-touching fresh memory for every
 * batch costs more than filling it (see BENCHMARKS.md), so each batch carves its buffers from a
 * recycled slab, or a new one while fewer than {@code maxIdle} exist. The pool keeps at most
 * {@code maxIdle} slabs, idle or held (plus the span of one scope, below); the slabs themselves
 * come from a {@link BatchMemory} (off-heap memory of this process unless the job gives another).
 *
 * <p><b>Scopes.</b> With scoped batches ({@link BatchMemory#scopedBatches}) a batch's buffers are
 * views of its slab through a shared arena, so that memory used after the loader freed it raises
 * {@link IllegalStateException} instead of showing another batch's data. Closing a shared arena
 * stops every thread of the process for a moment (a handshake): one per batch cost a fifth of the
 * loader's time at two threads on small batches. So consecutive batches share one scope (a
 * generation) of up to {@link #MAX_SPAN} batches and {@link #SCOPE_BYTES} bytes of slabs; a closed
 * batch's slab is held, unused, until every batch of its generation is closed, then the arena
 * closes once and the slabs go back. A buffer of a closed batch thus stays readable, with that
 * batch's data, until its generation ends, and is never reused while readable; the batch's
 * {@link io.strata.sdk.Column}s refuse use at once (the batch guards them). Large batches (a slab
 * over half of {@link #SCOPE_BYTES}) get a scope each, as before. The bytes bound the memory a
 * scope holds; the count of 32 (8 until 2026-11-26) only stops tiny batches from making a scope
 * endless: at 8, the closes still cost shuffled batches of 16,384 rows (0.4 MB) about a tenth of
 * their time at two threads (BENCHMARKS.md, the gather floor).
 *
 * <p>Threads: prefetch threads take and fill memory, the job's thread closes batches and so
 * gives slabs back; the idle stack and the generations are guarded by the pool's monitor, and
 * slabs are allocated and freed, and arenas closed, outside it.
 */
final class SlabPool implements AutoCloseable {
  @GuardedBy("this")
  private final ArrayDeque<BatchMemory.Slab> idle = new ArrayDeque<>();
  private final int maxIdle;
  private final BatchMemory source;
  @GuardedBy("this")
  private long slabBytes;
  /** Slabs made and not yet freed: idle, held by a batch, or held by a generation not yet ended. */
  @GuardedBy("this")
  private int live;
  @GuardedBy("this")
  private boolean closed;
  /** The generation new batches join (scoped batches only); null when the next take starts one. */
  @GuardedBy("this")
  private Generation current;

  /** Bytes of slabs one scope spans at most. */
  static final long SCOPE_BYTES = 16L << 20;
  /** Batches one scope spans at most. */
  static final int MAX_SPAN = 32;

  /**
   * Consecutive batches that share one arena: it closes, and their slabs go back to the pool,
   * once it takes no more batches (sealed) and every one it took is closed. Guarded by the pool.
   */
  private static final class Generation {
    final Arena arena = Arena.ofShared();
    int taken;
    int open;
    boolean sealed;
    /** The slabs of its closed batches, given back when it ends. */
    final List<Returned> returned = new ArrayList<>();
  }

  private record Returned(BatchMemory.Slab slab, long used, boolean overflowed) {}

  /** Batches a scope spans: as many as fit {@link #SCOPE_BYTES} of slabs, at most {@link #MAX_SPAN}, one before sizes are known. */
  @GuardedBy("this")
  private int span() {
    return slabBytes <= 0 ? 1 : (int) Math.max(1, Math.min(MAX_SPAN, SCOPE_BYTES / Math.max(1, slabBytes + slabBytes / 2)));
  }

  /** Batches one scope spans now ({@link #span}; for tests). */
  synchronized int batchesPerScope() {
    return span();
  }

  SlabPool(int maxIdle, BatchMemory source) {
    this.maxIdle = maxIdle;
    this.source = source;
  }

  /** What the consumer's device reads itself ({@link BatchMemory#deviceReads()}), or null. */
  java.util.function.Predicate<MemorySegment> deviceReads() {
    return source.deviceReads();
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
    Generation gen = null;
    synchronized (this) {
      slab = idle.poll();
      size = Math.max(slabBytes + slabBytes / 2, 1 << 20);
      if (slab == null && slabBytes > 0 && live < maxIdle + span() && !closed) {
        live++;
        grow = true;
      }
      if (source.scopedBatches()) {
        if (current == null) {
          current = new Generation();
        }
        gen = current;
        gen.open++;
        if (++gen.taken >= span() || closed) {
          gen.sealed = true;
          current = null;
        }
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
    return new Memory(slab, gen);
  }

  /**
   * A batch of {@code gen} is closed: its slab is held until the generation ends, when its arena
   * closes (one handshake for all its batches) and every slab goes back.
   */
  private void batchClosed(Generation gen, BatchMemory.Slab slab, long used, boolean overflowed) {
    List<Returned> done = null;
    synchronized (this) {
      gen.returned.add(new Returned(slab, used, overflowed));
      gen.open--;
      if (gen.open == 0 && (gen.sealed || closed)) {
        if (current == gen) {
          current = null;
        }
        done = gen.returned;
      }
    }
    if (done != null) {
      end(gen, done);
    }
  }

  private void end(Generation gen, List<Returned> done) {
    gen.arena.close();
    for (Returned r : done) {
      giveBack(r.slab(), r.used(), r.overflowed());
    }
  }

  /**
   * Takes back a slab after a batch that used {@code used} bytes. A slab that held its batch is
   * kept; one that overflowed is replaced by a slab with half again the largest batch seen, so
   * that the pool settles after a few batches and new memory (which Java zeroes) is rare.
   */
  private void giveBack(BatchMemory.Slab slab, long used, boolean overflowed) {
    BatchMemory.Slab keep = slab;
    long replacement;
    synchronized (this) {
      slabBytes = Math.max(slabBytes, used);
      replacement = Math.max(slabBytes + slabBytes / 2, 1 << 20);
      if (keep != null && overflowed) {
        keep.close();
        keep = null;
        live--;
      }
      int cap = maxIdle + span();
      if (closed || idle.size() + (keep == null ? 1 : 0) > cap || (keep == null && live >= cap)) {
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
        keep = source.allocate(replacement);
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
   * A batch's allocator: the slab first, then the arena of its generation (or, unscoped, one of
   * its own) when the slab is full. With scoped batches the slab is viewed through its
   * generation's arena, so the batch's buffers die with the generation; otherwise the slab is
   * used as it is and an arena is made only for an overflow.
   */
  final class Memory implements SegmentAllocator, AutoCloseable {
    private final BatchMemory.Slab slab;
    private final Generation gen;
    private Arena overflowArena;
    private final MemorySegment view;
    private long used;
    private long overflow;
    private boolean closed;

    // The slab's memory is viewed with the generation arena's lifetime (so that a batch's columns
    // die with it); the bounds are the slab's own.
    @SuppressWarnings("restricted")
    private Memory(BatchMemory.Slab slab, Generation gen) {
      this.slab = slab;
      this.gen = gen;
      this.view = slab == null ? MemorySegment.NULL
          : gen == null ? slab.memory() : slab.memory().reinterpret(gen.arena, null);
    }

    @Override
    public MemorySegment allocate(long byteSize, long byteAlignment) {
      long at = (used + byteAlignment - 1) & -byteAlignment;
      if (slab != null && at + byteSize <= view.byteSize()) {
        used = at + byteSize;
        return view.asSlice(at, byteSize);
      }
      overflow += byteSize;
      if (gen != null) {
        return gen.arena.allocate(byteSize, byteAlignment);
      }
      if (overflowArena == null) {
        overflowArena = Arena.ofShared();
      }
      return overflowArena.allocate(byteSize, byteAlignment);
    }

    @Override
    public void close() {
      if (closed) {
        return;
      }
      closed = true;
      if (gen != null) {
        SlabPool.this.batchClosed(gen, slab, used + overflow, slab == null || overflow > 0);
        return;
      }
      if (overflowArena != null) {
        overflowArena.close();
      }
      giveBack(slab, used + overflow, slab == null || overflow > 0);
    }
  }

  /**
   * Frees the idle slabs; a slab held by a batch is freed when the batch closes (the generation
   * it joined ends then, sealed or not).
   */
  @Override
  public void close() {
    Generation gen;
    List<Returned> done = null;
    synchronized (this) {
      closed = true;
      while (!idle.isEmpty()) {
        idle.pop().close();
        live--;
      }
      gen = current;
      current = null;
      if (gen != null) {
        gen.sealed = true;
        if (gen.open == 0) {
          done = gen.returned;
        }
      }
    }
    if (done != null) {
      end(gen, done);
    }
  }
}
