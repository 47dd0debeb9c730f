package io.strata.ops;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.files.Locations;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.Json;
import io.strata.sdk.node.NodeClient;
import io.strata.sdk.tiering.Promoter;
import io.strata.sdk.tiering.SegmentStore;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code strata promote}: move feature streams of a dataset to the SSD tier, through a node (by
 * dataset name) or into a local segment directory ({@code --ssd}, by dataset directory).
 */
@Command(name = "promote", mixinStandardHelpOptions = true,
    description = {"Promote feature streams of a dataset from ORC (HDD tier) to segments (SSD tier).",
        "With --ssd, into that local directory (DATASET is a directory); otherwise on the node (DATASET is a registered name)."})
final class PromoteCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Mixin NodeOptions node;

  @Option(names = "--dataset", required = true, paramLabel = "DATASET", description = "Registered dataset name, or a directory with --ssd.")
  String dataset;

  @Option(names = "--ssd", description = "Local SSD tier directory (segment store) instead of a node.")
  Path ssd;

  @Option(names = "--features", split = ",", description = "Features to promote (default: all served features).")
  List<String> features;

  @Option(names = "--chunks", split = ",", description = "Chunk indexes to promote (default: all).")
  List<Integer> chunks;

  @Option(names = "--no-wait", description = "On a node: return once the promotions are scheduled.")
  boolean noWait;

  @Option(names = "--json", description = "Print the result as one JSON object.")
  boolean json;

  @Override
  public Integer call() throws Exception {
    return ssd != null ? local() : onNode();
  }

  private int onNode() throws Exception {
    PrintWriter w = spec.commandLine().getOut();
    NodeClient c = node.client();
    long started = System.nanoTime();
    long failedBefore = c.tiers().path("traffic").path("promotionFailures").asLong();
    JsonNode r = c.promote(dataset, features, chunks);
    int scheduled = r.path("scheduled").asInt();
    ObjectNode result = Json.object().put("dataset", dataset).put("scheduled", scheduled).put("bytes", r.path("bytes").asLong());
    long failed = 0;
    String lastFailure = null;
    if (!noWait && scheduled > 0) {
      Terminal.Bar bar = new Terminal.Bar("promote", spec.commandLine().getErr());
      JsonNode t;
      int pending;
      do {
        Thread.sleep(200);
        t = c.tiers();
        pending = t.path("ssd").path("pendingPromotions").asInt();
        // The node's count of failed promotions since this command asked (another client's failures
        // at the same moment would count too: the node keeps no count per request).
        failed = Math.min(scheduled, t.path("traffic").path("promotionFailures").asLong() - failedBefore);
        bar.update(Math.max(0, scheduled - pending - failed), scheduled, "chunks");
      } while (pending > 0);
      lastFailure = t.path("traffic").path("lastPromotionFailure").asText(null);
      bar.done();
      result.put("promoted", scheduled - failed).put("failed", failed).put("seconds", (System.nanoTime() - started) / 1e9);
      if (failed > 0 && lastFailure != null) {
        result.put("lastFailure", lastFailure);
      }
    }
    if (json) {
      w.println(Json.compact(result));
    } else if (noWait || scheduled == 0) {
      w.printf("%d promotions of %s scheduled (about %s)%n", scheduled, dataset, Terminal.bytes(r.path("bytes").asLong()));
    } else if (failed < scheduled) {
      w.printf("promoted %d feature chunks of %s (about %s) in %s%n", scheduled - failed, dataset,
          Terminal.bytes(r.path("bytes").asLong()), Terminal.seconds(result.path("seconds").asDouble()));
    }
    if (failed > 0) {
      spec.commandLine().getErr().printf("strata: %d of %d promotions of %s failed; they are served from the HDD tier%s%n",
          failed, scheduled, dataset, lastFailure == null ? "" : " (the last: " + lastFailure + ")");
      return 1;
    }
    return 0;
  }

  private int local() throws Exception {
    PrintWriter w = spec.commandLine().getOut();
    try (Dataset ds = Dataset.open(Locations.dataset(dataset))) {
      // Arguments are checked before the SSD directory is opened (or created).
      List<String> f = features != null ? features : ds.featureNames();
      f.forEach(ds::feature);
      if (chunks != null) {
        for (int c : chunks) {
          if (c < 0 || c >= ds.chunks().size()) {
            throw new IllegalArgumentException("chunk " + c + " is outside " + ds.name() + " (0.." + (ds.chunks().size() - 1) + ")");
          }
        }
      }
      return promoteInto(ds, f, w);
    }
  }

  private int promoteInto(Dataset ds, List<String> f, PrintWriter w) throws Exception {
    try (SegmentStore store = SegmentStore.open(ssd, false, SegmentFile.Verify.FIRST_OPEN)) {
      Terminal.Bar bar = new Terminal.Bar("promote", spec.commandLine().getErr());
      Promoter.Report r = Promoter.promote(ds, store, f, chunks, bar);
      bar.done();
      if (json) {
        w.println(Json.compact(Json.object().put("dataset", ds.name()).put("features", f.size()).put("chunks", r.chunks())
            .put("rows", r.rows()).put("bytes", r.bytesWritten()).put("seconds", r.seconds())));
      } else {
        w.printf("promoted %d features of %s: %d chunks, %s rows, %s of segments in %s (%.1f MB/s)%n", f.size(), ds.name(),
            r.chunks(), Terminal.count(r.rows()), Terminal.bytes(r.bytesWritten()), Terminal.seconds(r.seconds()),
            r.bytesWritten() / 1e6 / Math.max(1e-9, r.seconds()));
      }
    }
    return 0;
  }
}
