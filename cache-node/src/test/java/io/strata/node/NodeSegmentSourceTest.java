package io.strata.node;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.tier.SegmentSource;
import io.strata.sdk.node.NodeClient;
import io.strata.sdk.node.NodeSegments;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * The segment-source contract for a cache node on a loopback port, read by a job through {@link
 * NodeSegments} (which maps the node's files itself); the node is the tier's owner.
 */
class NodeSegmentSourceTest extends SegmentSourceContract {
  @Override
  Fixture fixture(Path home, Dataset ds) throws Exception {
    NodeConfig config = NodeConfig.embedded(home, 0).withSsdBudget(64L << 20);
    return new Fixture() {
      CacheNode node = start(config);
      NodeClient client = new NodeClient(node.url(), null);
      NodeSegments segments;

      private CacheNode start(NodeConfig c) throws Exception {
        CacheNode n = CacheNode.start(c);
        new NodeClient(n.url(), null).registerDataset(ds.directory());
        return n;
      }

      @Override
      public SegmentSource source() {
        if (segments == null) {
          segments = new NodeSegments(client, "contract-job", ds, FEATURES, 0);
        }
        return segments;
      }

      @Override
      public void promote(List<String> features, List<Integer> chunks) throws Exception {
        client.promote(ds.name(), features, chunks);
        if (!node.awaitIdle(60_000)) {
          throw new AssertionError("promotions did not finish");
        }
      }

      @Override
      public void evict(int chunk) throws Exception {
        client.evict(ds.name(), null, List.of(chunk));
        node.awaitIdle(30_000); // the unlink runs on the node's evictor thread
      }

      private JsonNode segment(String feature, int chunk) throws Exception {
        for (JsonNode s : client.resolve(null, ds.name(), List.of(feature), List.of(chunk)).path("segments")) {
          if (s.path("chunk").asInt() == chunk) {
            return s;
          }
        }
        return null;
      }

      @Override
      public Path file(String feature, int chunk) throws Exception {
        return Path.of(segment(feature, chunk).path("path").asText());
      }

      @Override
      public boolean resident(String feature, int chunk) throws Exception {
        return segment(feature, chunk) != null;
      }

      @Override
      public long unlinkedMappedBytes() throws Exception {
        if (segments != null) {
          segments.flush(); // the job tells the node with its next report
        }
        long node = client.tiers().path("ssd").path("unlinkedMappedBytes").asLong();
        if (segments != null && node != segments.unlinkedMappedBytes()) {
          throw new AssertionError("the node counts " + node + " unlinked bytes, the job maps " + segments.unlinkedMappedBytes());
        }
        return node;
      }

      @Override
      public void restart() throws Exception {
        close();
        node = start(config);
        client = new NodeClient(node.url(), null);
      }

      @Override
      public void close() throws IOException {
        if (segments != null) {
          segments.close();
          segments = null;
        }
        node.close();
      }
    };
  }
}
