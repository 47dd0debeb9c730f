package io.strata.bench;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.internal.Json;
import java.io.PrintWriter;
import java.util.List;
import java.util.Locale;
import java.util.function.BiConsumer;

/**
 * What the side-by-side comparisons of {@code strata bench} share ({@link SampleBench}, {@link ScanBench},
 * {@link PolicyBench}, {@link ApiBench}, {@link GpuBench}: each peer measured in the same run, reported as ratios).
 */
final class BenchPeers {
  private BenchPeers() {}

  /** Every ratio of {@code ratios} by name, those of a nested object (such as {@code equalCores}) as {@code object.key}. */
  static void eachRatio(JsonNode ratios, BiConsumer<String, Double> to) {
    ratios.properties().forEach(e -> {
      if (e.getValue().isObject()) {
        e.getValue().properties().forEach(x -> to.accept(e.getKey() + "." + x.getKey(), x.getValue().asDouble()));
      } else {
        to.accept(e.getKey(), e.getValue().asDouble());
      }
    });
  }

  static double median(List<Double> xs) {
    double[] a = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return a.length == 0 ? 0 : a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
  }

  /** Prints that benchmark {@code name} was not measured, and why (as JSON with {@code json}); returns 0, the exit code. */
  static int notMeasured(PrintWriter out, boolean json, String name, String why) {
    if (json) {
      out.println(Json.compact(Json.object().put("benchmark", name)
          .put("available", false).put("reason", why)));
    } else {
      out.println("not measured: " + why);
    }
    out.flush();
    return 0;
  }

  static String f3(double v) {
    return String.format(Locale.ROOT, "%.3f", v);
  }

  static String f2(double v) {
    return String.format(Locale.ROOT, "%.2f", v);
  }
}
