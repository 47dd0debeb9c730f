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

  /**
   * Another lease on the same mapping, held until it is closed (so that something that reads the
   * mapping later, a GPU gathering from it, keeps it mapped), or null when this source cannot
   * share its leases.
   */
  default SegmentLease share() {
    return null;
  }

  @Override
  void close();
}
