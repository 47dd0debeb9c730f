package io.strata.sdk.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

class SlabPoolTest {
  private static void assertApart(MemorySegment a, MemorySegment b) {
    long a0 = a.address();
    long b0 = b.address();
    assertTrue(a0 + a.byteSize() <= b0 || b0 + b.byteSize() <= a0, "a later batch's memory overlaps a closed batch's");
  }

  @Test
  void aClosedBatchKeepsItsMemoryUntilItsScopeEndsAndNoOtherBatchGetsIt() {
    try (SlabPool pool = new SlabPool(4, BatchMemory.offHeap())) {
      SlabPool.Memory sizing = pool.take(); // before sizes are known: a scope of its own
      sizing.allocate(100_000, 64);
      sizing.close();
      SlabPool.Memory first = pool.take();
      MemorySegment kept = first.allocate(100_000, 64);
      kept.fill((byte) 7);
      first.close();
      // The other batches of its scope: the closed batch's buffer still reads its own data, and
      // none of them is given its memory.
      int span = pool.batchesPerScope();
      assertTrue(span > 1 && span <= SlabPool.MAX_SPAN, "a scope spans " + span + " batches");
      for (int i = 1; i < span; i++) {
        SlabPool.Memory m = pool.take();
        MemorySegment b = m.allocate(100_000, 64);
        assertApart(kept, b);
        b.fill((byte) i);
        assertEquals(7, kept.get(ValueLayout.JAVA_BYTE, 99_999), "batch " + i);
        m.close();
      }
      // The scope ended with its last batch: the buffer is gone, and reading it says so.
      assertThrows(IllegalStateException.class, () -> kept.get(ValueLayout.JAVA_BYTE, 0));
      // Its slab went back to the pool and serves the next batches.
      SlabPool.Memory next = pool.take();
      next.allocate(100_000, 64).fill((byte) 1);
      next.close();
    }
  }

  @Test
  void aLargeBatchHasAScopeOfItsOwn() {
    try (SlabPool pool = new SlabPool(4, BatchMemory.offHeap())) {
      SlabPool.Memory sizing = pool.take();
      sizing.allocate(12L << 20, 64);
      sizing.close();
      SlabPool.Memory m = pool.take();
      MemorySegment b = m.allocate(12L << 20, 64);
      b.fill((byte) 3);
      m.close();
      assertThrows(IllegalStateException.class, () -> b.get(ValueLayout.JAVA_BYTE, 0));
    }
  }

  @Test
  void closingThePoolEndsAScopeWhoseBatchesAreClosed() {
    MemorySegment kept;
    try (SlabPool pool = new SlabPool(4, BatchMemory.offHeap())) {
      SlabPool.Memory sizing = pool.take();
      sizing.allocate(1_000, 64);
      sizing.close();
      SlabPool.Memory m = pool.take();
      kept = m.allocate(1_000, 64);
      m.close();
      assertEquals(0, kept.get(ValueLayout.JAVA_BYTE, 0));
    }
    assertThrows(IllegalStateException.class, () -> kept.get(ValueLayout.JAVA_BYTE, 0));
  }

  @Test
  void aBatchClosedAfterThePoolFreesItsMemoryThen() {
    SlabPool.Memory open;
    MemorySegment b;
    try (SlabPool pool = new SlabPool(4, BatchMemory.offHeap())) {
      SlabPool.Memory sizing = pool.take();
      sizing.allocate(1_000, 64);
      sizing.close();
      open = pool.take();
      b = open.allocate(1_000, 64);
    }
    b.fill((byte) 2); // still the batch's: the pool closed, the batch did not
    open.close();
    assertThrows(IllegalStateException.class, () -> b.get(ValueLayout.JAVA_BYTE, 0));
  }
}
