package io.strata.sdk.loader;

import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.FeatureType;
import io.strata.sdk.derive.Derivation;
import io.strata.sdk.derive.DerivedStore;
import io.strata.sdk.format.Columns;
import io.strata.sdk.tiering.DerivedChunkSource;
import java.io.IOException;
import java.lang.foreign.SegmentAllocator;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A derived feature as a loader reads it: from the feature store when it holds the feature
 * complete, computed chunk by chunk otherwise (with the computation recorded for the promotion
 * job). Dataset-wide statistics are computed once per loader, on first need.
 */
final class DerivedFeature implements DerivedChunkSource {
  private final Derivation derivation;
  private final DerivedStore store;
  private final String job;
  private final String fingerprint;
  private Derivation.Statistics statistics;
  private final AtomicLong computed = new AtomicLong();

  DerivedFeature(Derivation derivation, DerivedStore store, String job) throws IOException {
    this.derivation = derivation;
    this.store = store;
    this.job = job;
    this.fingerprint = store == null ? null : store.getOrCompute(derivation, Derivation.SourceReader.orc(derivation.dataset()));
  }

  @Override
  public String storageName() {
    return derivation.spec().canonical();
  }

  @Override
  public FeatureType type() {
    return derivation.type();
  }

  @Override
  public boolean stored() {
    return fingerprint != null;
  }

  private synchronized Derivation.Statistics statistics() throws IOException {
    if (statistics == null) {
      statistics = derivation.statistics(Derivation.SourceReader.orc(derivation.dataset()));
    }
    return statistics;
  }

  /** Chunks this loader computed itself (not served by a store or the SSD tier). */
  long chunksComputed() {
    return computed.get();
  }

  @Override
  public Column chunk(int chunk, SegmentAllocator allocator) throws IOException {
    if (fingerprint != null) {
      return store.chunk(fingerprint, chunk, allocator);
    }
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long t0 = threads.getCurrentThreadCpuTime();
    Column c = derivation.computeChunk(chunk, statistics(), Derivation.SourceReader.orc(derivation.dataset()), allocator);
    computed.incrementAndGet();
    if (store != null) {
      Dataset ds = derivation.dataset();
      store.recordUsage(new DerivedStore.Usage(ds.name(), ds.directory().toString(), ds.version(), storageName(), job,
          c.length(), Columns.dataBytes(c), threads.getCurrentThreadCpuTime() - t0, System.currentTimeMillis()));
    }
    return c;
  }
}
