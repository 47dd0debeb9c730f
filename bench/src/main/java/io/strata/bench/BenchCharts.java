package io.strata.bench;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.ops.Terminal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

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
        BenchPeers.eachRatio(r.path("ratios"), (k, v) -> {
          labels.add(k);
          values.add(v);
        });
        return bars("Strata vs the tools a PyTorch user would pick: ratios (1 = even; memory: lower is leaner)", "ratio", labels,
            values, false);
      }
      case "fleet" -> {
        List<String> labels = new ArrayList<>();
        List<Double> values = new ArrayList<>();
        r.path("sides").properties().forEach(e -> {
          if (e.getValue().has("firstEpochUnitsPerSecond")) {
            labels.add(e.getKey() + ", epoch 1");
            values.add(e.getValue().path("firstEpochUnitsPerSecond").asDouble() / 1e6);
            labels.add(e.getKey() + ", epochs 2-3");
            values.add(e.getValue().path("laterEpochsUnitsPerSecond").asDouble() / 1e6);
          }
        });
        return labels.isEmpty() ? null
            : bars("4 jobs, data 3x memory, a slow disk: M units/s (samples or rows)", "M/s", labels, values, false);
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

  static String num(double v) {
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

  static String pct(double v) {
    return String.format(Locale.ROOT, "%.1f %%", 100 * v);
  }

  static String x(double v) {
    return String.format(Locale.ROOT, "%.2f×", v);
  }
}
