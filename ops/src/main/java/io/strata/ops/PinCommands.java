package io.strata.ops;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.internal.Json;
import io.strata.sdk.node.NodeClient;
import java.io.PrintWriter;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** Operator actions on a node's SSD tier: {@code pin}, {@code unpin}, {@code evict}. */
final class PinCommands {
  private PinCommands() {}

  /** What pin and unpin share: the target and the output. */
  abstract static class PinBase implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Mixin NodeOptions node;

    @Option(names = "--dataset", required = true, description = "Registered dataset name.")
    String dataset;

    @Option(names = "--features", split = ",", paramLabel = "FEATURE",
        description = "Features, separated by ',' (default: the whole dataset).")
    List<String> features;

    @Option(names = "--json", description = "Print the node's answer as one JSON object (an array for several features).")
    boolean json;

    /** Pins or unpins {@code feature} (null: the dataset). */
    abstract JsonNode apply(NodeClient c, String feature) throws Exception;

    @Override
    public Integer call() throws Exception {
      NodeClient c = node.client();
      PrintWriter out = spec.commandLine().getOut();
      List<String> targets = features == null || features.isEmpty() ? Collections.singletonList(null) : features;
      com.fasterxml.jackson.databind.node.ArrayNode all = Json.array();
      for (String f : targets) {
        JsonNode r = apply(c, f);
        all.add(r);
        if (json) {
          continue;
        }
        if (r.path("pinned").asBoolean()) {
          out.printf("pinned %s: its chunks stay on the SSD tier (%d promotions scheduled)%n", r.path("target").asText(),
              r.path("promotionsScheduled").asInt());
        } else {
          out.printf("unpinned %s: the policy may evict it again%n", r.path("target").asText());
        }
      }
      if (json) {
        out.println(Json.compact(all.size() == 1 ? all.get(0) : all));
      }
      return 0;
    }
  }

  @Command(name = "pin", mixinStandardHelpOptions = true,
      description = "Pin a dataset or some of its features on a node: promoted now (within the budget) and never evicted.")
  static final class Pin extends PinBase {
    @Override
    JsonNode apply(NodeClient c, String feature) throws Exception {
      return c.pin(dataset, feature);
    }
  }

  @Command(name = "unpin", mixinStandardHelpOptions = true, description = "Remove a pin; the policy decides again.")
  static final class Unpin extends PinBase {
    @Override
    JsonNode apply(NodeClient c, String feature) throws Exception {
      return c.unpin(dataset, feature);
    }
  }

  @Command(name = "evict", mixinStandardHelpOptions = true,
      description = "Evict feature chunks of a dataset from a node's SSD tier (pinned features are refused).")
  static final class Evict implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Mixin NodeOptions node;

    @Option(names = "--dataset", required = true, description = "Registered dataset name.")
    String dataset;

    @Option(names = "--features", split = ",", description = "Features to evict (default: all).")
    List<String> features;

    @Option(names = "--chunks", split = ",", description = "Chunk indexes (default: all).")
    List<Integer> chunks;

    @Option(names = "--json", description = "Print the node's answer as one JSON object.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      JsonNode r = node.client().evict(dataset, features, chunks);
      PrintWriter out = spec.commandLine().getOut();
      if (json) {
        out.println(Json.compact(r));
      } else {
        out.printf("evicted %d feature chunks of %s%n", r.path("evicted").asInt(), dataset);
      }
      return 0;
    }
  }
}
