package io.strata.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Turns a JMH JSON result file into a table of GB/s per benchmark and parameter, with ratios to
 * a named baseline benchmark of the same run: {@code Summarize results.json BASELINE BYTES_PARAM}.
 */
public final class Summarize {
  private Summarize() {}

  public static void main(String[] args) throws IOException {
    if (args.length != 3) {
      System.err.println("usage: Summarize RESULTS.json BASELINE_METHOD BYTES_PARAM");
      System.exit(2);
    }
    JsonNode results = new ObjectMapper().readTree(Path.of(args[0]).toFile());
    String baseline = args[1];
    String bytesParam = args[2];
    Map<String, Double> baseByParam = new LinkedHashMap<>();
    for (JsonNode r : results) {
      if (method(r).equals(baseline)) {
        baseByParam.put(r.get("params").get(bytesParam).asText(), gbps(r, bytesParam));
      }
    }
    System.out.printf(Locale.ROOT, "%-24s %12s %10s %10s %12s%n", "benchmark", bytesParam, "GB/s", "+-GB/s", "vs " + baseline);
    for (JsonNode r : results) {
      String p = r.get("params").get(bytesParam).asText();
      double g = gbps(r, bytesParam);
      double err = r.get("primaryMetric").get("scoreError").asDouble() * Double.parseDouble(p) / 1e9;
      Double base = baseByParam.get(p);
      System.out.printf(Locale.ROOT, "%-24s %12s %10.2f %10.2f %11.0f%%%n", method(r), p, g, err,
          base == null ? Double.NaN : 100 * g / base);
    }
  }

  private static String method(JsonNode r) {
    String b = r.get("benchmark").asText();
    return b.substring(b.lastIndexOf('.') + 1);
  }

  private static double gbps(JsonNode r, String bytesParam) {
    double opsPerSecond = r.get("primaryMetric").get("score").asDouble();
    return opsPerSecond * Double.parseDouble(r.get("params").get(bytesParam).asText()) / 1e9;
  }
}
