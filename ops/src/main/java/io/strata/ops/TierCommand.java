package io.strata.ops;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.internal.Json;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code strata tier status}: what the tiers hold and whether the cache earns its keep. */
@Command(name = "tier", mixinStandardHelpOptions = true, description = "Inspect the node's tiers.",
    subcommands = {TierCommand.Status.class})
final class TierCommand implements Runnable {
  @Spec CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  @Command(name = "status", mixinStandardHelpOptions = true,
      description = "Occupancy per tier, byte hit ratio, HDD bytes avoided, flash write rate, top reused feature streams, running jobs.")
  static final class Status implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Mixin NodeOptions node;

    @Option(names = "--json", description = "Print the node's answer as one JSON object.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      JsonNode t = node.client().tiers();
      PrintWriter out = spec.commandLine().getOut();
      if (json) {
        out.println(Json.compact(t));
        return 0;
      }
      JsonNode ssd = t.path("ssd");
      JsonNode hdd = t.path("hdd");
      JsonNode dram = t.path("dram");
      JsonNode tr = t.path("traffic");
      Terminal.Table tiers = new Terminal.Table("tier", "holds", "budget", "use", "read", "detail");
      long budget = ssd.path("budgetBytes").asLong();
      long held = ssd.path("bytes").asLong();
      tiers.row("SSD (segments)", Terminal.bytes(held), Terminal.bytes(budget),
          budget == 0 ? "-" : String.format(Locale.ROOT, "%.1f%%", 100.0 * held / budget),
          Terminal.bytes(tr.path("ssdBytes").asLong()),
          ssd.path("segments").asInt() + " segments, " + ssd.path("pendingPromotions").asInt() + " promotions pending");
      tiers.row("HDD (ORC)", Terminal.bytes(hdd.path("bytes").asLong()), "-", "-", Terminal.bytes(tr.path("hddBytes").asLong()),
          hdd.path("datasets").asInt() + " datasets");
      tiers.row("DRAM (page cache)", Terminal.bytes(dram.path("pageCacheBytes").asLong()), Terminal.bytes(dram.path("budgetBytes").asLong()),
          "-", "-", "host page cache of " + Terminal.bytes(dram.path("hostBytes").asLong()) + " memory; "
              + dram.path("openDatasets").asInt() + " datasets open");
      out.printf("node %s, up %s%n%n", node.client().url(), Terminal.seconds(t.path("uptimeSeconds").asDouble()));
      if (t.path("churn").path("thrashing").asBoolean()) {
        out.printf("warning: %s%n%n", t.path("churn").path("warning").asText());
      }
      tiers.print(out);
      for (JsonNode d : t.path("datasets")) {
        JsonNode l = d.path("layout");
        if (l.path("relayoutSuggested").asBoolean()) {
          out.printf("relayout suggested for %s: its %d jobs' features would take %.2f reads per stripe instead of %.2f,"
              + " in %d stripes instead of %d: %.1f reads an epoch instead of %.1f ('strata dataset relayout DIR --from-node')%n",
              d.path("name").asText(), l.path("jobs").asInt(), l.path("runsPerStripeLearned").asDouble(),
              l.path("runsPerStripeNow").asDouble(), l.path("chunksAfterRelayout").asInt(), l.path("chunksNow").asInt(),
              l.path("readsPerEpochLearned").asDouble(), l.path("readsPerEpochNow").asDouble());
        }
      }
      long unlinked = ssd.path("unlinkedMappedBytes").asLong();
      long damaged = ssd.path("damagedSegments").asLong();
      if (unlinked > 0 || damaged > 0) {
        out.printf("%s of evicted segments still mapped by jobs (freed as they move on); %d damaged segments dropped%s%n",
            Terminal.bytes(unlinked), damaged, ssd.has("lastDamagedSegment") ? " (last: " + ssd.path("lastDamagedSegment").asText() + ")" : "");
      }
      out.println();
      Terminal.Table traffic = new Terminal.Table("byte hit ratio", "HDD bytes avoided", "flash written", "flash rate (last min)", "promotions", "evictions", "reads");
      traffic.row(String.format(Locale.ROOT, "%.1f%%", 100 * tr.path("byteHitRatio").asDouble()),
          Terminal.bytes(tr.path("hddBytesAvoided").asLong()), Terminal.bytes(tr.path("flashBytesWritten").asLong()),
          Terminal.bytes((long) tr.path("flashBytesPerSecondLastMinute").asDouble()) + "/s", tr.path("promotions").asLong(),
          tr.path("evictions").asLong(), Terminal.count(tr.path("reads").asLong()));
      traffic.print(out);
      if (t.path("topStreams").size() > 0) {
        out.println();
        Terminal.Table top = new Terminal.Table("top feature stream", "SSD bytes", "HDD bytes", "hit ratio");
        for (JsonNode s : t.path("topStreams")) {
          long a = s.path("ssdBytes").asLong();
          long b = s.path("hddBytes").asLong();
          top.row(s.path("stream").asText(), Terminal.bytes(a), Terminal.bytes(b),
              String.format(Locale.ROOT, "%.1f%%", 100.0 * a / Math.max(1, a + b)));
        }
        top.print(out);
      }
      if (t.path("jobs").size() > 0) {
        out.println();
        Terminal.Table jobs = new Terminal.Table("job", "dataset", "progress", "rate", "hit ratio", "SSD read", "HDD read");
        t.path("jobs").forEach(j -> jobs.row(j.path("job").asText(), j.path("dataset").asText(),
            Terminal.percent(j.path("progress").asDouble()) + " (" + j.path("stepsDone").asLong() + " of " + j.path("steps").asLong()
                + " steps)",
            Terminal.bytes((long) j.path("bytesPerSecond").asDouble()) + "/s", Terminal.percent(j.path("byteHitRatio").asDouble()),
            Terminal.bytes(j.path("ssdBytes").asLong()), Terminal.bytes(j.path("hddBytes").asLong())));
        jobs.print(out);
      }
      JsonNode cl = t.path("cluster");
      if (!cl.isMissingNode()) {
        out.println();
        out.printf("cluster: %d members (%s); %s chunks held across it; %d copied from peers (%s, %d failed%s), %d served to"
            + " peers; %d members left%s%n", cl.path("members").size(), String.join(", ", strings(cl.path("members"))),
            Terminal.count(cl.path("residencyEntries").asLong()), cl.path("peerReads").asLong(),
            Terminal.bytes(cl.path("peerBytes").asLong()), cl.path("peerFailures").asLong(),
            cl.has("lastPeerFailure") ? ", last: " + cl.path("lastPeerFailure").asText() : "", cl.path("servedToPeers").asLong(),
            cl.path("membersLeft").asLong(), cl.has("lastLeft") ? " (last: " + cl.path("lastLeft").asText() + ")" : "");
        if (cl.path("jobs").size() > 0) {
          Terminal.Table cj = new Terminal.Table("host", "job", "dataset", "steps", "SSD read", "HDD read");
          cl.path("jobs").forEach(j -> cj.row(j.path("host").asText(), j.path("job").asText(), j.path("dataset").asText(),
              j.path("stepsDone").asLong() + " of " + j.path("steps").asLong(), Terminal.bytes(j.path("ssdBytes").asLong()),
              Terminal.bytes(j.path("hddBytes").asLong())));
          cj.print(out);
        }
        if (cl.path("datasetReadBytes").size() > 0) {
          StringBuilder pop = new StringBuilder();
          cl.path("datasetReadBytes").properties().forEach(e -> pop.append(pop.isEmpty() ? "" : ", ").append(e.getKey())
              .append(' ').append(Terminal.bytes(e.getValue().asLong())));
          out.printf("read across the cluster: %s%n", pop);
        }
      }
      return 0;
    }

    private static List<String> strings(JsonNode array) {
      List<String> out = new ArrayList<>();
      array.forEach(x -> out.add(x.asText()));
      return out;
    }
  }
}
