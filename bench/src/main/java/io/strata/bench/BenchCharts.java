package io.strata.bench;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.node.Setting;
import io.strata.ops.Terminal;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.StreamSupport;

/** SVG charts and the Markdown section of {@code strata bench all}, drawn from the results' JSON. */
final class BenchCharts {
  private BenchCharts() {}

  private static final String[] COLORS = {"#2f6fb0", "#d9822b", "#3a9a5b", "#b03a48", "#7a5cb0", "#8c8c8c"};

  static String chart(String name, JsonNode r) {
    switch (name) {
      case "python" -> {
        if (!r.path("available").asBoolean(true)) {
          return null;
        }
        return bars("PyTorch: shuffled rows, batches/s (log scale)", "batches/s",
            List.of("Java Loader", "strata.Loader (Python)", "DataLoader(Strata)", "DataLoader(memmap rows)"),
            List.of(r.path("java").path("batchesPerSecond").asDouble(), r.path("python").path("batchesPerSecond").asDouble(),
                r.path("torchStrata").path("batchesPerSecond").asDouble(), r.path("torchMemmap").path("batchesPerSecond").asDouble()),
            true);
      }
      case "sample" -> {
        List<String> labels = new ArrayList<>();
        List<Double> values = new ArrayList<>();
        r.path("peers").properties().forEach(e -> {
          labels.add(e.getKey());
          values.add(e.getValue().path("gbPerSecond").asDouble());
        });
        return bars("Sample batches: GB/s of column data (log scale)", "GB/s", labels, values, true);
      }
      case "scan" -> {
        List<String> labels = new ArrayList<>();
        List<Double> values = new ArrayList<>();
        r.path("peers").properties().forEach(e -> {
          labels.add(e.getKey());
          values.add(e.getValue().path("seconds").asDouble());
        });
        return bars("Epoch scan of " + r.path("featuresScanned").asInt() + " of " + r.path("featuresTotal").asInt()
            + " features: seconds (lower is better)", "s", labels, values, false);
      }
      case "memory" -> {
        List<Double> xs = new ArrayList<>();
        Map<String, List<Double>> s = new LinkedHashMap<>();
        s.put("private per process (MiB)", new ArrayList<>());
        s.put("PSS per process (MiB)", new ArrayList<>());
        s.put("anonymous per process (MiB)", new ArrayList<>());
        for (JsonNode run : r.path("runs")) {
          xs.add(run.path("processes").asDouble());
          s.get("private per process (MiB)").add(run.path("maxPrivateKiB").asDouble() / 1024);
          s.get("PSS per process (MiB)").add(run.path("meanPssKiB").asDouble() / 1024);
          s.get("anonymous per process (MiB)").add(run.path("maxAnonymousKiB").asDouble() / 1024);
        }
        return lines("Memory of concurrent loaders reading " + Terminal.bytes(r.path("segmentBytes").asLong()) + " of segments",
            "processes", "MiB", xs, s);
      }
      case "policy" -> {
        List<Double> xs = new ArrayList<>();
        Map<String, List<Double>> s = new LinkedHashMap<>();
        for (String p : List.of("Strata", "Strata online", "Caffeine", "LRU", "OPT")) {
          s.put(p, new ArrayList<>());
        }
        for (JsonNode b : r.path("budgets")) {
          xs.add(b.path("ssdBudgetPercent").asDouble());
          s.get("Strata").add(b.path("strata").asDouble());
          s.get("Strata online").add(b.path("strataOnline").asDouble());
          s.get("Caffeine").add(b.path("caffeine").asDouble());
          s.get("LRU").add(b.path("lru").asDouble());
          s.get("OPT").add(b.path("opt").asDouble());
        }
        return lines("Cache policy: byte hit ratio by SSD budget", "SSD budget, % of distinct bytes", "byte hit ratio", xs, s);
      }
      case "policy-live" -> {
        JsonNode h = r.path("byteHitRatio");
        List<String> labels = List.of("live node", "Strata replayed", "Strata, no plans", "OPT", "LRU", "Caffeine", "frequency");
        List<Double> values = new ArrayList<>();
        for (String k : List.of("live", "strataReplayed", "strataReplayedNoPlans", "opt", "lru", "caffeine-wtinylfu", "frequency")) {
          values.add(h.path(k).asDouble());
        }
        return bars("Cache policy live: byte hit ratio on the node's recorded trace (higher is better)", "", labels, values, false);
      }
      case "derived" -> {
        List<String> labels = new ArrayList<>(List.of("first job (computes)"));
        List<Double> values = new ArrayList<>(List.of(r.path("firstJobSeconds").asDouble()));
        int i = 1;
        for (JsonNode v : r.path("laterJobSeconds")) {
          labels.add("later job " + i++);
          values.add(v.asDouble());
        }
        return bars("Derived feature: seconds per job (lower is better)", "s", labels, values, false);
      }
      case "restart" -> {
        return bars("Restart after SIGKILL: ms to the first batch (lower is better)", "ms",
            List.of("without batch cache", "with batch cache"),
            List.of(r.path("withoutBatchCache").path("timeToFirstBatchMs").asDouble(),
                r.path("withBatchCache").path("timeToFirstBatchMs").asDouble()), false);
      }
      case "api" -> {
        List<Double> xs = new ArrayList<>();
        Map<String, List<Double>> s = new LinkedHashMap<>();
        s.put("resolve req/s", new ArrayList<>());
        s.put("/health req/s", new ArrayList<>());
        for (JsonNode p : r.path("points")) {
          xs.add(p.path("clients").asDouble());
          s.get("resolve req/s").add(p.path("resolveRps").asDouble());
          s.get("/health req/s").add(p.path("healthRps").asDouble());
        }
        return lines("Node API on loopback: requests/s by concurrent clients", "clients", "requests/s", xs, s);
      }
      case "relayout" -> {
        return bars("HDD relayout: read requests per epoch from ORC (lower is better)", "",
            List.of("before relayout", "after relayout"),
            List.of(r.path("before").path("requestsPerEpoch").asDouble(), r.path("after").path("requestsPerEpoch").asDouble()), false);
      }
      case "peers" -> {
        if (!r.path("available").asBoolean(true)) {
          return null;
        }
        List<String> labels = new ArrayList<>();
        List<Double> values = new ArrayList<>();
        r.path("ratios").properties().forEach(e -> {
          labels.add(e.getKey());
          values.add(e.getValue().asDouble());
        });
        return bars("Strata vs the tools a PyTorch user would pick: ratios (1 = even; memory: lower is leaner)", "ratio", labels,
            values, false);
      }
      case "cluster" -> {
        if (!r.path("available").asBoolean()) {
          return null;
        }
        return bars("Three hosts, the same jobs: HDD MB read (lower is better)", "",
            List.of("nodes alone", "nodes clustered"),
            List.of(r.path("alone").path("hddBytes").asDouble() / 1e6, r.path("clustered").path("hddBytes").asDouble() / 1e6), false);
      }
      default -> {
        return null;
      }
    }
  }

  private static String esc(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
  }

  private static String num(double v) {
    if (v == 0) {
      return "0";
    }
    double a = Math.abs(v);
    return String.format(Locale.ROOT, a >= 100 ? "%.0f" : a >= 10 ? "%.1f" : a >= 0.1 ? "%.2f" : "%.4f", v);
  }

  static String bars(String title, String unit, List<String> labels, List<Double> values, boolean log) {
    int w = 720;
    int left = 190;
    int right = 90;
    int row = 30;
    int top = 40;
    int h = top + row * labels.size() + 20;
    double max = values.stream().mapToDouble(Double::doubleValue).max().orElse(1);
    double min = values.stream().mapToDouble(Double::doubleValue).filter(v -> v > 0).min().orElse(1);
    double lo = log ? Math.pow(10, Math.floor(Math.log10(min))) : 0;
    StringBuilder s = header(w, h, title);
    for (int i = 0; i < labels.size(); i++) {
      double v = values.get(i);
      double frac = log ? (Math.log10(Math.max(v, lo)) - Math.log10(lo)) / Math.max(1e-9, Math.log10(max) - Math.log10(lo))
          : v / Math.max(1e-12, max);
      int y = top + i * row;
      int bw = (int) Math.max(1, frac * (w - left - right));
      s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>%n", left - 8, y + 19, esc(labels.get(i))));
      s.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>%n", left, y + 5, bw, row - 10,
          labels.get(i).startsWith("strata") || labels.get(i).startsWith("with batch") || labels.get(i).startsWith("later")
              ? COLORS[0] : COLORS[5]));
      s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s %s</text>%n", left + bw + 6, y + 19, num(v), esc(unit)));
    }
    return s.append("</svg>\n").toString();
  }

  static String lines(String title, String xLabel, String yLabel, List<Double> xs, Map<String, List<Double>> series) {
    int w = 720;
    int h = 360;
    int left = 70;
    int right = 20;
    int top = 40;
    int bottom = 80;
    double xMin = xs.stream().mapToDouble(Double::doubleValue).min().orElse(0);
    double xMax = xs.stream().mapToDouble(Double::doubleValue).max().orElse(1);
    double yMax = series.values().stream().flatMap(List::stream).mapToDouble(Double::doubleValue).max().orElse(1) * 1.1;
    if (xMax == xMin) {
      xMax = xMin + 1;
    }
    StringBuilder s = header(w, h, title);
    int pw = w - left - right;
    int ph = h - top - bottom;
    s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>%n", left, top + ph, left + pw, top + ph));
    s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>%n", left, top, left, top + ph));
    for (int k = 0; k <= 4; k++) {
      double v = yMax * k / 4;
      int y = top + ph - (int) (ph * k / 4.0);
      s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>%n", left, y, left + pw, y));
      s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>%n", left - 6, y + 4, num(v)));
    }
    for (double x : xs) {
      int px = left + (int) (pw * (x - xMin) / (xMax - xMin));
      s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>%n", px, top + ph + 16, num(x)));
    }
    s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>%n", left + pw / 2, top + ph + 34, esc(xLabel)));
    s.append(String.format(Locale.ROOT, "<text x=\"14\" y=\"%d\" transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\">%s</text>%n",
        top + ph / 2, top + ph / 2, esc(yLabel)));
    int i = 0;
    int lx = left;
    for (var e : series.entrySet()) {
      String color = COLORS[i++ % COLORS.length];
      StringBuilder pts = new StringBuilder();
      for (int k = 0; k < xs.size() && k < e.getValue().size(); k++) {
        int px = left + (int) (pw * (xs.get(k) - xMin) / (xMax - xMin));
        int py = top + ph - (int) (ph * e.getValue().get(k) / yMax);
        pts.append(px).append(',').append(py).append(' ');
        s.append(String.format(Locale.ROOT, "<circle cx=\"%d\" cy=\"%d\" r=\"3.5\" fill=\"%s\"/>%n", px, py, color));
      }
      s.append(String.format(Locale.ROOT, "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>%n", pts.toString().strip(), color));
      s.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>%n", lx, h - 26, color));
      s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s</text>%n", lx + 16, h - 16, esc(e.getKey())));
      lx += 30 + 7 * e.getKey().length();
    }
    return s.append("</svg>\n").toString();
  }

  private static StringBuilder header(int w, int h, String title) {
    StringBuilder s = new StringBuilder();
    s.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
        + "font-family=\"sans-serif\" font-size=\"12\">%n", w, h, w, h));
    s.append(String.format(Locale.ROOT, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>%n", w, h));
    s.append(String.format(Locale.ROOT, "<text x=\"10\" y=\"22\" font-size=\"15\" font-weight=\"bold\">%s</text>%n", esc(title)));
    return s;
  }

  private static String pct(double v) {
    return String.format(Locale.ROOT, "%.1f %%", 100 * v);
  }

  private static String x(double v) {
    return String.format(Locale.ROOT, "%.2f×", v);
  }

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
              + " stored twice within a budget of %.0f%% of the bytes: stored bytes %.2f×). Read"
              + " requests per epoch %d -> %d (**%.2f×**), bytes %s -> %s, cold epoch (%s; disk: %s) %s -> %s (**%.2f×**); values %s.%n%n",
              r.path("features").asInt(), r.path("jobs").asInt(), r.path("featuresPerJobMean").asDouble(),
              r.path("runsPerStripeBefore").asDouble(), r.path("runsPerStripeAfter").asDouble(),
              r.path("replicas").path("features").asInt(), 100 * r.path("replicas").path("budget").asDouble(),
              q.path("storedBytesAfterVsBefore").asDouble(1.0), b.path("requestsPerEpoch").asLong(),
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
            r.path("ratios").properties().forEach(x -> q.append(q.isEmpty() ? "" : ", ").append('`').append(x.getKey())
                .append("` **").append(String.format(Locale.ROOT, "%.2f", x.getValue().asDouble())).append("**"));
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
