package io.strata.sdk.loader;

import java.util.Locale;

/**
 * How a loader cuts the dataset into batches, named the same way everywhere: the loader's
 * builder, the plan program a job declares to a node, the {@code strata loader run --mode}
 * option and the Python client's {@code mode=}.
 */
public enum BatchMode {
  /** Random samples with all their rows ({@link LoaderBuilder#sampleBatches}); needs a sample index. */
  SAMPLES,
  /** Rows, shuffled singly or in blocks, or in order ({@link LoaderBuilder#rowBatches}). */
  ROWS,
  /** Windows of consecutive rows of one sample with label rows after them ({@link LoaderBuilder#windows}). */
  WINDOWS;

  /** The name in plan programs, options and the Python client: {@code samples}, {@code rows}, {@code windows}. */
  public String apiName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The mode named {@code name}; IllegalArgumentException naming the known ones otherwise. */
  public static BatchMode parse(String name) {
    for (BatchMode m : values()) {
      if (m.apiName().equals(name)) {
        return m;
      }
    }
    throw new IllegalArgumentException("must be samples, rows or windows, got '" + name + "'");
  }
}
