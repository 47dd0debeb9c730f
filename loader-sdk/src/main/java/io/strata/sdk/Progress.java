package io.strata.sdk;

/** Receives progress of long work (generation, import, promotion); called from worker threads. */
@FunctionalInterface
public interface Progress {
  /** A progress that ignores updates. */
  Progress NONE = (done, total, unit) -> {};

  /** {@code done} of {@code total} units (rows, bytes, chunks) are finished; total may be -1 if unknown. */
  void update(long done, long total, String unit);
}
