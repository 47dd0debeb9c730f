package io.strata.node;

import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.tools.ParquetExport;
import java.io.IOException;
import java.nio.file.Path;

/**
 * The segment-source contract for a cache node serving a Parquet dataset: the generated rows
 * written as Parquet beside the node's HDD root, registered, promoted from Parquet and read by a
 * job through the node, every value compared with the Parquet files' own.
 */
class ParquetNodeSegmentSourceTest extends NodeSegmentSourceTest {
  @Override
  Dataset open(Path generated) throws IOException {
    Path pq = generated.resolveSibling("events-parquet");
    try (Dataset orc = Dataset.open(generated)) {
      ParquetExport.export(orc.directory(), orc.manifest(), orc.table(), pq, "events", Progress.NONE);
    }
    return Dataset.open(pq);
  }
}
