package io.strata.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Turns a JMH JSON result file into a table of operations per second and GB/s per benchmark and
 * parameter, with ratios to a named baseline benchmark of the same run: {@code Summarize
 * results.json BASELINE BYTES}, where BYTES is the name of the parameter that holds the bytes per
 * operation, or a number of bytes per operation.
 */
public final class Summarize {
  private Summarize() {}

  public static void main(String[] args) throws IOException {
    if (args.length != 3) {
      System.err.println("usage: Summarize RESULTS.json BASELINE_METHOD BYTES_PARAM_OR_NUMBER");
      System.exit(2);
    }
    JsonNode results = new ObjectMapper().readTree(Path.of(args[0]).toFile());
    String baseline = args[1];
    String bytesParam = args[2];
    Map<String, Double> baseByParam = new LinkedHashMap<>();
    for (JsonNode r : results) {
      if (method(r).equals(baseline)) {
        baseByParam.put(bytes(r, bytesParam), opsPerSecond(r) * Double.parseDouble(bytes(r, bytesParam)) / 1e9);
      }
    }
    System.out.printf(Locale.ROOT, "%-24s %12s %12s %10s %10s %12s%n", "benchmark", "bytes/op", "ops/s", "GB/s", "+-%", "vs " + baseline);
    for (JsonNode r : results) {
      String p = bytes(r, bytesParam);
      double ops = opsPerSecond(r);
      double g = ops * Double.parseDouble(p) / 1e9;
      double relErr = 100 * r.get("primaryMetric").get("scoreError").asDouble() / r.get("primaryMetric").get("score").asDouble();
      Double base = baseByParam.get(p);
      System.out.printf(Locale.ROOT, "%-24s %12s %12.2f %10.2f %10.1f %11.1f%%%n", method(r), p, ops, g, relErr,
          base == null ? Double.NaN : 100 * g / base);
    }
  }

  private static String bytes(JsonNode r, String bytesParam) {
    JsonNode params = r.get("params");
    if (params != null && params.has(bytesParam)) {
      return params.get(bytesParam).asText();
    }
    return bytesParam;
  }

  private static double opsPerSecond(JsonNode r) {
    JsonNode m = r.get("primaryMetric");
    double score = m.get("score").asDouble();
    return switch (m.get("scoreUnit").asText()) {
      case "ops/s" -> score;
      case "ops/ms" -> score * 1e3;
      case "s/op" -> 1 / score;
      case "ms/op" -> 1e3 / score;
      case "us/op" -> 1e6 / score;
      case "ns/op" -> 1e9 / score;
      default -> throw new IllegalArgumentException("unknown unit " + m.get("scoreUnit").asText());
    };
  }

  private static String method(JsonNode r) {
    String b = r.get("benchmark").asText();
    return b.substring(b.lastIndexOf('.') + 1);
  }

}
