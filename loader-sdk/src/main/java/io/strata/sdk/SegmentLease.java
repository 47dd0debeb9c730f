package io.strata.sdk;

import java.nio.file.Path;

/**
 * A mapped segment a {@code SegmentSource} lent, held until closed: its columns stay readable
 * until then. Closing it twice is harmless.
 */
public interface SegmentLease extends AutoCloseable {
  Column column(String feature);

  /** The segment file, for messages. */
  Path path();

  @Override
  void close();
}
