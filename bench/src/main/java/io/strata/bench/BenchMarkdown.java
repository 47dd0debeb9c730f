package io.strata.bench;

import static io.strata.bench.BenchCharts.chart;
import static io.strata.bench.BenchCharts.num;
import static io.strata.bench.BenchCharts.pct;
import static io.strata.bench.BenchCharts.x;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.node.Setting;
import io.strata.ops.Terminal;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.StreamSupport;

/**
 * The section of BENCHMARKS.md that {@code bench all} writes: every comparison's figures as
 * Markdown tables beside its chart, with the machine, the command and the earlier runs it is read
 * against. Built from the results' JSON alone.
 */
final class BenchMarkdown {
  private BenchMarkdown() {}

  /** The section for {@code results} (comparison name to its JSON), its charts under {@code out}. */
  static String markdown(Map<String, JsonNode> results, List<String> earlier, String machine, String command, Path out,
      boolean quick) {
    StringBuilder m = new StringBuilder();
    m.append("## All comparisons in one run (`strata bench all`)\n\n");
    m.append("Command: `").append(command).append("`  \nMachine: ").append(machine).append("  \n");
    m.append("Results (JSON) and charts (SVG): `").append(out).append("/`. Each comparison runs its peers side by side in the ")
        .append("same run; ratios are what to compare across machines.").append(quick ? " **Quick run: short rounds, not for the record.**" : "")
        .append("\n\n");
    if (!earlier.isEmpty()) {
      m.append("Not run by this command, shown from their earlier results in `").append(out).append("/`: ")
          .append(String.join(", ", earlier)).append(" (the same command without `--only` reruns them).\n\n");
    }
    String dir = out.toString().replace('\\', '/');
    for (var e : results.entrySet()) {
      JsonNode r = e.getValue();
      String time = r.has("benchSeconds") ? String.format(Locale.ROOT, " (%.0f s)", r.path("benchSeconds").asDouble()) : "";
      switch (e.getKey()) {
        case "sample" -> {
          m.append("### 1. Sample batches").append(time).append("\n\n");
          m.append(String.format(Locale.ROOT, "%s rows, %d features of mixed types, %d random samples per batch (%s of column data per "
              + "batch), median of %d rounds. numpy peer: `numpy.memmap` fancy indexing over the same Arrow buffers of the same "
              + "segment files (checked to gather the same bytes: %s).%n%n", Terminal.count(r.path("rows").asLong()),
              r.path("features").asInt(), r.path("samples").asInt(), Terminal.bytes(r.path("bytesPerBatch").asLong()),
              r.path("rounds").asInt(), r.path("numpyGathersTheSameBytes").asBoolean()));
          m.append("| peer | batches/s | GB/s | vs memcpy |\n| --- | ---: | ---: | ---: |\n");
          double memcpy = r.path("peers").path("memcpy").path("batchesPerSecond").asDouble();
          r.path("peers").properties().forEach(p -> m.append(String.format(Locale.ROOT, "| %s | %s | %s | %s |%n", p.getKey(),
              num(p.getValue().path("batchesPerSecond").asDouble()), num(p.getValue().path("gbPerSecond").asDouble()),
              pct(p.getValue().path("batchesPerSecond").asDouble() / memcpy))));
          JsonNode q = r.path("ratios");
          m.append(String.format(Locale.ROOT, "%nStrata (1 thread) vs ORC: **%s**; vs numpy.memmap: **%s**; vs memcpy: **%s** "
              + "(two threads: %s).%n%n", x(q.path("strataVsOrc").asDouble()), x(q.path("strataVsNumpy").asDouble()),
              pct(q.path("strataVsMemcpy").asDouble()), pct(q.path("strata2threadsVsMemcpy").asDouble())));
        }
        case "scan" -> {
          m.append("### 2. Epoch scan of 30 % of the features").append(time).append("\n\n");
          m.append(String.format(Locale.ROOT, "%s rows; %d of %d features %s; median of rounds.%n%n", Terminal.count(r.path("rows").asLong()),
              r.path("featuresScanned").asInt(), r.path("featuresTotal").asInt(), r.path("features")));
          m.append("| peer | seconds | M rows/s |\n| --- | ---: | ---: |\n");
          r.path("peers").properties().forEach(p -> m.append(String.format(Locale.ROOT, "| %s | %s | %s |%n", p.getKey(),
              num(p.getValue().path("seconds").asDouble()), num(p.getValue().path("rowsPerSecond").asDouble() / 1e6))));
          JsonNode q = r.path("ratios");
          m.append(String.format(Locale.ROOT, "%nStrata faster than ORC with projection: **%s**; than ORC without projection: **%s**.%n%n",
              x(q.path("strataVsOrcProjection").asDouble()), x(q.path("strataVsOrcNoProjection").asDouble())));
        }
        case "memory" -> {
          m.append("### 3. Memory of 1, 2, 4, 8 concurrent jobs").append(time).append("\n\n");
          m.append(String.format(Locale.ROOT, "Each job is a `strata loader run` process (%s, %s heap) reading every row of every "
              + "feature of %s of segments; smaps_rollup after the epoch.%n%n", r.path("jvmOpts").asText(), r.path("heap").asText(),
              Terminal.bytes(r.path("segmentBytes").asLong())));
          m.append("| jobs | private/job (max) | anonymous/job (max) | shared/job | PSS/job |\n| ---: | ---: | ---: | ---: | ---: |\n");
          for (JsonNode run : r.path("runs")) {
            m.append(String.format(Locale.ROOT, "| %d | %s | %s | %s | %s |%n", run.path("processes").asInt(),
                Terminal.bytes(run.path("maxPrivateKiB").asLong() << 10), Terminal.bytes(run.path("maxAnonymousKiB").asLong() << 10),
                Terminal.bytes(run.path("meanSharedKiB").asLong() << 10), Terminal.bytes(run.path("meanPssKiB").asLong() << 10)));
          }
          JsonNode l = r.path("limited");
          if (!l.isMissingNode()) {
            JsonNode lr = l.path("runs").path(0);
            JsonNode free = null;
            for (JsonNode run : r.path("runs")) {
              if (run.path("processes").asInt() == lr.path("processes").asInt()) {
                free = run;
              }
            }
            m.append(String.format(Locale.ROOT, "%nLarger than memory: %d jobs in a memory cgroup of %s (page cache included) read "
                + "all %s of segments: done in %s s (%s s without the limit), peak %s, the limit hit %d times.%n",
                lr.path("processes").asInt(), Terminal.bytes(l.path("memoryLimitBytes").asLong()),
                Terminal.bytes(l.path("segmentBytes").asLong()), num(lr.path("secondsToReadAll").asDouble()),
                free == null ? "?" : num(free.path("secondsToReadAll").asDouble()), Terminal.bytes(lr.path("cgroupPeakBytes").asLong()),
                lr.path("cgroupLimitHits").asLong()));
          } else if (r.has("limitedSkipped")) {
            m.append("\nLarger than memory: skipped (").append(r.path("limitedSkipped").asText()).append(").\n");
          }
          m.append('\n');
        }
        case "policy" -> {
          m.append("### 4. Cache policy on generated traces: Strata vs LRU, Caffeine, frequency, OPT").append(time).append("\n\n");
          m.append("Byte hit ratio, mean over generated multi-job traces (seeds ").append(r.path("seeds"))
              .append("); *Strata* gets the plans the jobs declare, *online* the same reads without them.\n\n");
          m.append("| SSD budget | Strata | Strata online | LRU | Caffeine | frequency | OPT | Strata/OPT | Strata/LRU | online/LRU |\n"
              + "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
          for (JsonNode b : r.path("budgets")) {
            m.append(String.format(Locale.ROOT, "| %s %% | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f | %s | %s |%n",
                num(b.path("ssdBudgetPercent").asDouble()), b.path("strata").asDouble(), b.path("strataOnline").asDouble(),
                b.path("lru").asDouble(), b.path("caffeine").asDouble(), b.path("frequency").asDouble(), b.path("opt").asDouble(),
                b.path("strataVsOpt").asDouble(), x(b.path("strataVsLru").asDouble()), x(b.path("onlineVsLru").asDouble())));
          }
          if (r.has("eventsPerSecond")) {
            JsonNode sp = r.path("eventsPerSecond");
            m.append(String.format(Locale.ROOT, "%nReplay speed on a %s-read trace (best of 3 after a warm-up): Strata %s events/s, "
                + "OPT %s, LRU %s.%n", Terminal.count(sp.path("traceReads").asLong()), Terminal.count((long) sp.path("strata").asDouble()),
                Terminal.count((long) sp.path("opt").asDouble()), Terminal.count((long) sp.path("lru").asDouble())));
          }
          m.append('\n');
        }
        case "policy-live" -> {
          m.append("### 4b. Cache policy live: real jobs against a real node").append(time).append("\n\n");
          JsonNode h = r.path("byteHitRatio");
          JsonNode fl = r.path("flashBytes");
          m.append(String.format(Locale.ROOT, "%d loader processes, %s reads recorded by the node, SSD budget %s (%.0f %% of the bytes "
              + "read); every policy but the live node replays the node's recorded trace.%n%n", r.path("jobs").asInt(),
              Terminal.count(r.path("reads").asLong()), Terminal.bytes(r.path(Setting.SSD_BUDGET_BYTES.key()).asLong()),
              100 * r.path("budgetShare").asDouble()));
          m.append("| policy | byte hit ratio | flash written |\n| --- | ---: | ---: |\n");
          for (String k : List.of("live", "strataReplayed", "strataReplayedNoPlans", "opt", "lru", "caffeine-wtinylfu", "frequency")) {
            m.append(String.format(Locale.ROOT, "| %s | %.3f | %s |%n", k, h.path(k).asDouble(), Terminal.bytes(fl.path(k).asLong())));
          }
          JsonNode ra = r.path("ratios");
          m.append(String.format(Locale.ROOT, "%nlive/OPT **%.2f**, live/LRU **%s**, flash/LRU **%.2f**.%n%n",
              ra.path("liveVsOpt").asDouble(), x(ra.path("liveVsLru").asDouble()), ra.path("flashVsLru").asDouble()));
          JsonNode su = r.path("substitution");
          if (!su.isMissingNode()) {
            m.append(String.format(Locale.ROOT, "Substitutable reads, the same jobs on a fresh node with the same budget: live byte"
                + " hit ratio %.3f -> %.3f (**%s**), flash %s -> %s (not a ratio to OPT: the order changed).%n%n",
                su.path("plainLive").asDouble(), su.path("substitutedLive").asDouble(), x(su.path("substitutedVsPlain").asDouble()),
                Terminal.bytes(su.path("plainFlashBytes").asLong()), Terminal.bytes(su.path("substitutedFlashBytes").asLong())));
          }
        }
        case "derived" -> {
          m.append("### 5. Derived features: first job vs later jobs").append(time).append("\n\n");
          m.append(String.format(Locale.ROOT, "`%s`: the first job computes and stores it in %s s; later jobs (other processes) read "
              + "it in %s s; **%s** faster; values byte-identical: %s.%n%n", r.path("spec").asText(),
              num(r.path("firstJobSeconds").asDouble()),
              String.join(", ", StreamSupport.stream(r.path("laterJobSeconds").spliterator(), false)
                  .map(v -> num(v.asDouble())).toList()), x(r.path("speedup").asDouble()),
              r.path("byteIdentical").asBoolean()));
        }
        case "restart" -> {
          m.append("### 6. Restart: time to the first batch after SIGKILL").append(time).append("\n\n");
          m.append(String.format(Locale.ROOT, "Without the batch cache %s ms, with it %s ms: **%s**.%n%n",
              num(r.path("withoutBatchCache").path("timeToFirstBatchMs").asDouble()),
              num(r.path("withBatchCache").path("timeToFirstBatchMs").asDouble()), x(r.path("speedup").asDouble())));
        }
        case "api" -> {
          m.append("### 7. Node API: resolve under concurrent clients").append(time).append("\n\n");
          m.append("The node in its own process on loopback; closed-loop clients (Java HttpClient, HTTP/1.1) in another; ")
              .append("`/health` is the floor of the HTTP stack.\n\n");
          m.append("| clients | resolve req/s | p50 ms | p99 ms | /health req/s | /health p99 ms | resolve/health |\n")
              .append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
          for (JsonNode p : r.path("points")) {
            m.append(String.format(Locale.ROOT, "| %d | %.0f | %.2f | %.2f | %.0f | %.2f | %.2f |%n", p.path("clients").asInt(),
                p.path("resolveRps").asDouble(), p.path("resolveP50Ms").asDouble(), p.path("resolveP99Ms").asDouble(),
                p.path("healthRps").asDouble(), p.path("healthP99Ms").asDouble(), p.path("resolveVsHealth").asDouble()));
          }
          m.append('\n');
        }
        case "gpu" -> {
          m.append("### 8. GPU: host-to-device").append(time).append("\n\n");
          if (r.has("cpu")) {
            JsonNode c = r.path("cpu");
            m.append(String.format(Locale.ROOT, "CPU side (any host): sample batches of %s assembled at **%.2f GB/s** on one thread"
                    + " (**%.0f %%** of memcpy's %.2f GB/s) and **%.2f GB/s** on %d threads, a batch per thread (**%.0f %%** of"
                    + " memcpy's %.2f GB/s on as many threads); **%.1f** copies per byte delivered.%n%n",
                Terminal.bytes(c.path("batchBytes").asLong()), c.path("assembly1GBps").asDouble(),
                100 * r.path("ratios").path("assemblyVsMemcpy1").asDouble(), c.path("memcpy1GBps").asDouble(),
                c.path("assemblyNGBps").asDouble(), c.path("threads").asInt(), 100 * r.path("ratios").path("assemblyVsMemcpyN").asDouble(),
                c.path("memcpyNGBps").asDouble(), r.path("copiesPerByte").asDouble()));
          }
          if (r.path("available").asBoolean()) {
            m.append(String.format(Locale.ROOT, "%.2f GB/s host-to-device over %d batches; the loop waited on the loader %.1f %% of the time.%n%n",
                r.path("h2dGBps").asDouble(), r.path("batches").asInt(), 100 * r.path("loaderWaitFraction").asDouble()));
          } else {
            m.append("Not measured: ").append(r.path("reason").asText()).append(".\n\n");
          }
        }
        case "python" -> {
          m.append("### 9. PyTorch: the Python client").append(time).append("\n\n");
          if (!r.path("available").asBoolean(true)) {
            m.append("Not measured: ").append(r.path("reason").asText()).append(".\n\n");
          } else {
            JsonNode q = r.path("ratios");
            JsonNode mem = r.path("memory");
            m.append(String.format(Locale.ROOT, "Shuffled rows, %d per batch, features %s, from segments; %d DataLoader workers for "
                + "both PyTorch pipelines; %d epoch(s). Python `strata.Loader` vs the Java `Loader`: **%s**; "
                + "`DataLoader(StrataIterableDataset)` vs a `Dataset` over numpy.memmap (one row per item, default collate): **%s**; "
                + "private memory each extra Python job adds: **%s** (the host's loader service: %s).%n%n",
                r.path("batchRows").asInt(), r.path("features"), r.path("workers").asInt(), r.path("epochs").asInt(),
                x(q.path("pythonVsJava").asDouble()), x(q.path("pythonVsTorchMemmap").asDouble()),
                Terminal.bytes(mem.path("extraPrivateBytesPerJob").asLong()), Terminal.bytes(mem.path("servicePrivateBytesOneJob").asLong())));
          }
        }
        case "relayout" -> {
          m.append("### 10. HDD layout tuned to co-access: `dataset relayout`").append(time).append("\n\n");
          JsonNode b = r.path("before");
          JsonNode a = r.path("after");
          JsonNode q = r.path("ratios");
          m.append(String.format(Locale.ROOT, "%d columns, %d jobs reading %.1f features each (Zipf popularity), every job's epoch"
              + " read from ORC; the relayout learned from their trace (expected %.2f -> %.2f reads per stripe per job; %d features"
              + " stored twice within a budget of %.0f%% of the bytes: stored bytes %.2f×; %s). Read"
              + " requests per epoch %d -> %d (**%.2f×**), bytes %s -> %s, cold epoch (%s; disk: %s) %s -> %s (**%.2f×**); values %s.%n%n",
              r.path("features").asInt(), r.path("jobs").asInt(), r.path("featuresPerJobMean").asDouble(),
              r.path("runsPerStripeBefore").asDouble(), r.path("runsPerStripeAfter").asDouble(),
              r.path("replicas").path("features").asInt(), 100 * r.path("replicas").path("budget").asDouble(),
              q.path("storedBytesAfterVsBefore").asDouble(1.0),
              !r.has("chunksAfter") || r.path("chunksAfter").asInt() == r.path("chunks").asInt() ? "the same stripes"
                  : String.format(Locale.ROOT, "its %d stripes merged into %d, up to %d MiB each", r.path("chunks").asInt(),
                      r.path("chunksAfter").asInt(), r.path("stripeMib").asInt()),
              b.path("requestsPerEpoch").asLong(),
              a.path("requestsPerEpoch").asLong(), q.path("readsAfterVsBefore").asDouble(), Terminal.bytes(b.path("bytesPerEpoch").asLong()),
              Terminal.bytes(a.path("bytesPerEpoch").asLong()), r.path("cold").asText(),
              r.path("disk").path("what").asText("the working directory's own disk"), Terminal.seconds(b.path("epochSeconds").asDouble()),
              Terminal.seconds(a.path("epochSeconds").asDouble()), q.path("epochTimeAfterVsBefore").asDouble(),
              r.path("identical").asBoolean() ? "identical" : "DIFFERENT"));
          JsonNode md = r.path("model");
          if (md.isObject()) {
            JsonNode mr = md.path("ratios");
            m.append(String.format(Locale.ROOT, "On the disk model (%s: %.0f random 4 KiB reads/s across the drive, %.0f MB/s"
                + " sequential; a short forward skip costs its length at the transfer rate; a touching-only reader's CPU in"
                + " series, the gap reader's overlapped by its read-ahead): reading through gaps up to %s with read-ahead vs"
                + " touching ranges only **%.2f×**; the relayout (read by the better reader) vs the gap reader without it"
                + " **%.2f×** for the jobs it learned from, **%.2f×** for %d held-out jobs of the same popularity. Cold epochs on"
                + " %s: through gaps %.2f× touching only; the relayout %.2f× the gap reader.%n%n", md.path("disk").path("name").asText(),
                md.path("disk").path("randomReads4kPerSecondWholeDrive").asDouble(),
                md.path("disk").path("sequentialMBps1MiBRequests").asDouble(), Terminal.bytes(md.path("gapBytes").asLong()),
                mr.path("gapReaderVsTouching").asDouble(), mr.path("relayoutVsGapReader").asDouble(),
                mr.path("relayoutHeldOutVsGapReader").asDouble(), md.path("heldOutTouchingBefore").path("jobs").asInt(),
                r.path("disk").path("emulatedHdd").asBoolean() ? "the emulated HDD" : "this machine's disk",
                q.path("coldGapReaderVsTouching").asDouble(), q.path("coldRelayoutVsGapReader").asDouble()));
          }
        }
        case "peers" -> {
          m.append("### 12. The tools a PyTorch user would pick: `bench peers`").append(time).append("\n\n");
          if (!r.path("available").asBoolean()) {
            m.append("Not measured: ").append(r.path("reason").asText()).append(".\n\n");
          } else {
            StringBuilder q = new StringBuilder();
            BenchPeers.eachRatio(r.path("ratios"), (k, v) -> q.append(q.isEmpty() ? "" : ", ").append('`').append(k)
                .append("` **").append(String.format(Locale.ROOT, "%.2f", v)).append("**"));
            m.append(String.format(Locale.ROOT, "%,d rows, %,d documents, warm; each peer used as its documentation recommends, every"
                + " peer's batch checked equal to Strata's first. Ratios: %s. The full tables and what each figure assumes:"
                + " BENCHMARKS.md \"PyTorch jobs: Strata and the tools a user would pick\".%n%n", r.path("rows").asLong(),
                r.path("documents").asLong(), q));
          }
        }
        case "cluster" -> {
          m.append("### 11. Clustered nodes across network namespaces: `bench cluster`").append(time).append("\n\n");
          if (!r.path("available").asBoolean()) {
            m.append("Not measured: ").append(r.path("reason").asText()).append(".\n\n");
          } else {
            JsonNode a = r.path("alone");
            JsonNode c = r.path("clustered");
            m.append(String.format(Locale.ROOT, "Three hosts (network namespaces on one bridge), a node each; job A on host 1,"
                + " then B and C (A's %s features and one of their own) on hosts 2 and 3; every sample verified against ORC."
                + " HDD bytes read, nodes alone %s, clustered %s (**%.2f×**; jobs %s + promotions %s); %d chunks copied from"
                + " peers; on one host, copying from peers %s GB/s vs decoding ORC %s GB/s (%.1f×); a killed host dropped"
                + " after %s, a partitioned one after %s; %,d values verified, %d mismatches. Assumes: %s.%n%n",
                "8", Terminal.bytes(a.path("hddBytes").asLong()), Terminal.bytes(c.path("hddBytes").asLong()),
                r.path("ratios").path("hddClusteredVsAlone").asDouble(), Terminal.bytes(c.path("loaderOrcBytes").asLong()),
                Terminal.bytes(c.path("promotionOrcBytes").asLong()), c.path("peerReads").asLong(),
                BenchPeers.f2(c.path("peerCopyGBps").asDouble()), BenchPeers.f2(c.path("orcDecodeCopyGBps").asDouble()),
                r.path("ratios").path("peerVsOrcDecode").asDouble(), Terminal.seconds(r.path("deadHostNoticedSeconds").asDouble()),
                Terminal.seconds(r.path("partitionNoticedSeconds").asDouble()), r.path("valuesVerified").asLong(),
                r.path("mismatches").asLong(), r.path("assumes").asText()));
          }
        }
        default -> { }
      }
      if (chart(e.getKey(), r) != null) {
        m.append("![").append(e.getKey()).append("](").append(dir).append('/').append(e.getKey()).append(".svg)\n\n");
      }
    }
    return m.toString();
  }
}
