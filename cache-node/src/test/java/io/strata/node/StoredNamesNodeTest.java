package io.strata.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.Progress;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.Loader;
import io.strata.sdk.node.NodeClient;
import io.strata.sdk.node.NodeSegments;
import io.strata.tools.DatasetImporter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Stored columns named like derived specs (issue 52: SQL engines name unaliased expressions so)
 * through a node: promoted from the Parquet file as stored columns, written to the SSD tier as
 * the file's int64 values, and served from there to a job, never computed as the derivation.
 */
class StoredNamesNodeTest {
  @TempDir Path home;

  @Test
  void storedColumnsNamedLikeDerivationsArePromotedAndServedAsStored() throws Exception {
    Path edge = Path.of(System.getProperty("strata.conformance.dir", "../loader-sdk/src/test/resources/orc-conformance"))
        .resolveSibling("parquet-conformance").resolve("edge").resolve("derived-names.parquet");
    assertTrue(Files.isRegularFile(edge), "edge file " + edge.toAbsolutePath());
    NodeConfig config = NodeConfig.embedded(home, 0).withSsdBudget(64L << 20);
    Path files = home.resolve("hdd").resolve("names-files");
    Files.createDirectories(files);
    Files.copy(edge, files.resolve("part.parquet"));
    Path dir = home.resolve("hdd").resolve("names");
    DatasetImporter.importFiles(new DatasetImporter.Options("names", List.of(files), dir, null, true, false), Progress.NONE);
    List<String> features = List.of("v", "log1p(v)", "log1p(w)");
    try (CacheNode node = CacheNode.start(config); Dataset ds = Dataset.open(dir)) {
      NodeClient client = new NodeClient(node.url(), null);
      client.registerDataset(dir);
      List<Integer> chunks = ds.chunks().stream().map(c -> c.index()).toList();
      client.promote("names", features, chunks);
      assertTrue(node.awaitIdle(60_000), "promotions finished");
      for (JsonNode s : client.resolve(null, "names", List.of("log1p(v)"), chunks).path("segments")) {
        try (SegmentFile seg = SegmentFile.open(Path.of(s.path("path").asText()), SegmentFile.Verify.ALWAYS)) {
          assertEquals("int64", seg.column("log1p(v)").type().toString(), "written as the file stores it");
        }
      }
      assertEquals(chunks.size(), client.resolve(null, "names", List.of("log1p(v)"), chunks).path("segments").size());
      long rows = 0;
      try (NodeSegments segments = new NodeSegments(client, "names-job", ds, features, 0);
          Loader l = Loader.builder(ds).features(features).segments(segments).rowBatches(100, true).seed(1).build()) {
        Iterator<Batch> it = l.iterator();
        while (it.hasNext()) {
          try (Batch b = it.next()) {
            for (int r = 0; r < b.rows(); r++) {
              long v = b.column("v").getLong(r);
              assertEquals(10 * v, b.column("log1p(v)").getLong(r));
              assertEquals(1000 * v, b.column("log1p(w)").getLong(r));
              rows++;
            }
          }
        }
      }
      assertEquals(ds.rows(), rows);
    }
  }
}
