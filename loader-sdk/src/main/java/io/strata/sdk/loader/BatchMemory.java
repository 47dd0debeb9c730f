package io.strata.sdk.loader;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.Predicate;

/**
 * Where a loader's batch memory comes from. The default is off-heap memory of the job's own
 * process. A consumer that reads batches somewhere else gives its own, so that batches are
 * assembled where they are consumed and never copied: shared-memory files that a Python job maps
 * ({@code strata loader serve}), or pinned memory a GPU copies from.
 *
 * <p>The loader asks for a few slabs (about one per batch in flight, each sized to the largest
 * batch seen plus half) and carves each batch's buffers from one. A slab is closed when the loader
 * no longer needs it: after it overflowed, when the pool has enough idle slabs, or when the loader
 * closes. The first batches, before the loader knows their size, and the rare batch that outgrows
 * its slab, take their overflow from ordinary off-heap memory; a consumer that needs every byte in
 * its memory copies those buffers. Implementations must be thread-safe: prefetch threads allocate,
 * the job's thread closes.
 */
public interface BatchMemory {
  /** A slab of at least {@code bytes} bytes, 64-byte aligned. */
  Slab allocate(long bytes) throws IOException;

  /**
   * Whether each batch's buffers get a scope of their own that closing the batch ends, so that a
   * column used after its batch was closed fails instead of showing the next batch's data (the
   * default). Closing such a scope stops every thread of the process briefly (a handshake), a
   * cost paid per batch; a consumer whose Java batches never outlive their use (the Python loader
   * service, where the job holds the memory itself and the service closes each batch when the job
   * gives it back) turns it off.
   */
  default boolean scopedBatches() {
    return true;
  }

  /**
   * The mapped segment buffers that the consumer's device reads itself (a GPU gathering from host
   * pages registered with its driver), or null (the default) when it reads none. Where it reads a
   * buffer, a batch's copies from it are left to the device: {@link Batch#deviceCopies()} lists
   * them, the host never writes those bytes, and the segments stay mapped until the batch is
   * closed. Thread-safe; asked once per buffer a batch reads.
   */
  default Predicate<MemorySegment> deviceReads() {
    return null;
  }

  /** Memory of the job's own process ({@link Arena#ofShared()}); what a loader uses by default. */
  static BatchMemory offHeap() {
    return bytes -> {
      Arena arena = Arena.ofShared();
      return Slab.of(arena.allocate(bytes, 64), arena::close);
    };
  }

  /** One slab; {@link #close()} frees it and is called exactly once. */
  interface Slab extends AutoCloseable {
    MemorySegment memory();

    @Override
    void close();

    /** A slab over {@code memory} that {@code free} releases. */
    static Slab of(MemorySegment memory, Runnable free) {
      return new Slab() {
        @Override
        public MemorySegment memory() {
          return memory;
        }

        @Override
        public void close() {
          free.run();
        }
      };
    }
  }
}
