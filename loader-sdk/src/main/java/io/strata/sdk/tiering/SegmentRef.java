package io.strata.sdk.tiering;

import io.strata.sdk.format.SegmentInfo;
import java.nio.file.Path;

/**
 * A segment in a {@link SegmentStore}'s catalog.
 *
 * @param path the segment file
 * @param info its provenance (dataset, version, chunk, rows, columns)
 * @param bytes file size
 */
public record SegmentRef(Path path, SegmentInfo info, long bytes) {
  public boolean holds(String feature) {
    return info.columns().contains(feature);
  }
}
