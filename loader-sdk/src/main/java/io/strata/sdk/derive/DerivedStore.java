package io.strata.sdk.derive;

import io.strata.sdk.Column;
import java.io.IOException;
import java.lang.foreign.SegmentAllocator;

/**
 * Where materialized derived features live (the feature store). A loader asks it for a derived
 * feature's chunks and computes the feature itself when the store does not have it complete.
 */
public interface DerivedStore {
  /** The fingerprint of {@code d} if the store holds it complete, else null. */
  String complete(Derivation d, Derivation.SourceReader reader) throws IOException;

  /**
   * The fingerprint of {@code d}, complete in the store: a store that can write computes and
   * stores it now if needed (callers asking for the same feature meanwhile wait for that one
   * computation); a read-only store returns null when it does not have it complete.
   */
  default String getOrCompute(Derivation d, Derivation.SourceReader reader) throws IOException {
    return complete(d, reader);
  }

  /** Chunk {@code chunk} of the complete feature {@code fingerprint}, decoded into {@code allocator}. */
  Column chunk(String fingerprint, int chunk, SegmentAllocator allocator) throws IOException;

  /** Records that a job computed a derived feature on the fly (the promotion job reads these). */
  void recordUsage(Usage usage);

  /**
   * One on-the-fly computation.
   *
   * @param dataset dataset name
   * @param datasetDir the dataset's directory
   * @param version dataset version
   * @param spec canonical spec
   * @param job the job that computed it
   * @param rows rows computed
   * @param bytes bytes of the result
   * @param cpuNanos CPU time spent computing
   * @param timeMillis when
   */
  record Usage(String dataset, String datasetDir, String version, String spec, String job, long rows, long bytes,
      long cpuNanos, long timeMillis) {}
}
