package io.strata.sdk;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.internal.Json;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs interop/arrow-js/read.mjs (the apache-arrow npm package under Node) over segment files.
 * Installs the pinned package with {@code npm ci} on first use.
 */
public final class ArrowJs {
  private ArrowJs() {}

  public static Path projectDir() {
    String p = System.getProperty("strata.project.dir");
    Path dir = p != null ? Path.of(p) : Path.of("..");
    return dir.toAbsolutePath().normalize();
  }

  static synchronized Path ensureInstalled() throws IOException, InterruptedException {
    Path dir = projectDir().resolve("interop/arrow-js");
    if (!Files.isDirectory(dir.resolve("node_modules/apache-arrow"))) {
      run(dir, List.of("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"), 600);
    }
    return dir;
  }

  private static String run(Path dir, List<String> command, int timeoutSeconds)
      throws IOException, InterruptedException {
    Process p;
    try {
      p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(false).start();
    } catch (IOException e) {
      throw new IOException(
          "cannot run " + command.get(0) + " for the Arrow JS interop test; install Node.js and npm"
              + " (apt-get install nodejs npm): " + e.getMessage(), e);
    }
    p.getOutputStream().close();
    var out = new ByteArrayOutputStream();
    var err = new ByteArrayOutputStream();
    Thread t1 = Thread.ofVirtual().start(() -> copy(p.getInputStream(), out));
    Thread t2 = Thread.ofVirtual().start(() -> copy(p.getErrorStream(), err));
    if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IOException(command + " timed out");
    }
    t1.join();
    t2.join();
    if (p.exitValue() != 0) {
      throw new IOException(command + " failed (" + p.exitValue() + "): " + err.toString(StandardCharsets.UTF_8));
    }
    return out.toString(StandardCharsets.UTF_8);
  }

  private static void copy(InputStream in, OutputStream out) {
    try (in) {
      in.transferTo(out);
    } catch (IOException ignored) {
      // The process ended.
    }
  }

  /** Reads each file with Arrow JS; one JSON object per file. */
  public static List<JsonNode> read(List<Path> files) throws IOException, InterruptedException {
    Path dir = ensureInstalled();
    List<String> cmd = new ArrayList<>(List.of("node", "read.mjs"));
    files.forEach(f -> cmd.add(f.toAbsolutePath().toString()));
    String out = run(dir, cmd, 300);
    List<JsonNode> result = new ArrayList<>();
    for (String line : out.split("\n")) {
      if (!line.isBlank()) {
        result.add(Json.parse(line));
      }
    }
    return result;
  }

  /** Asserts that Arrow JS's rendering of a column equals the expected Java values. */
  public static void assertValues(FeatureType type, List<Object> expected, JsonNode values, String what) {
    if (values.size() != expected.size()) {
      throw new AssertionError(what + ": Arrow JS read " + values.size() + " rows, expected " + expected.size());
    }
    for (int i = 0; i < expected.size(); i++) {
      if (!matches(type, expected.get(i), values.get(i))) {
        throw new AssertionError(what + " row " + i + ": Arrow JS read " + values.get(i) + ", expected " + TestData.show(expected.get(i)));
      }
    }
  }

  @SuppressWarnings("JavaLocalDateTimeGetNano") // the nanos within the second, added to the epoch seconds
  static boolean matches(FeatureType type, Object e, JsonNode a) {
    if (e == null) {
      return a.isNull();
    }
    return switch (type.kind()) {
      case BOOL -> a.isBoolean() && a.booleanValue() == (Boolean) e;
      case INT8, INT16, INT32 -> a.isIntegralNumber() && a.longValue() == ((Number) e).longValue();
      case INT64 -> a.isTextual() && a.asText().equals(e.toString());
      case FLOAT32 -> a.isNumber() ? (float) a.doubleValue() == (Float) e : Float.isNaN((Float) e);
      case FLOAT64 -> a.isNumber() ? a.doubleValue() == (Double) e : Double.isNaN((Double) e);
      case STRING -> a.isTextual() && a.asText().equals(e);
      case BINARY -> a.isTextual() && a.asText().equals(HexFormat.of().formatHex((byte[]) e));
      case DATE -> a.isNumber() && a.longValue() == ((LocalDate) e).toEpochDay() * 86_400_000L;
      case TIMESTAMP -> {
        LocalDateTime t = (LocalDateTime) e;
        long nanos = t.toEpochSecond(ZoneOffset.UTC) * 1_000_000_000L + t.getNano();
        yield a.isTextual() && a.asText().equals(Long.toString(nanos));
      }
      case DECIMAL -> a.isTextual() && a.asText().equals(((BigDecimal) e).unscaledValue().toString());
      case LIST -> {
        List<?> items = (List<?>) e;
        if (!a.isArray() || a.size() != items.size()) {
          yield false;
        }
        for (int k = 0; k < items.size(); k++) {
          if (!matches(type.element(), items.get(k), a.get(k))) {
            yield false;
          }
        }
        yield true;
      }
    };
  }
}
