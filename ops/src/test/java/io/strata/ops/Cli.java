package io.strata.ops;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs the CLI in-process or as a child JVM, capturing its output. */
final class Cli {
  record Result(int code, String out, String err) {
    /** The JSON object the command printed with --json (its last JSON line). */
    com.fasterxml.jackson.databind.JsonNode json() throws IOException {
      com.fasterxml.jackson.databind.JsonNode r = Processes.jsonResult(out);
      if (r == null) {
        throw new AssertionError("no JSON result in: " + out + err);
      }
      return r;
    }
  }

  private Cli() {}

  static Result run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = Main.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
    return new Result(code, out.toString(), err.toString());
  }

  /** Runs {@code strata args} in a new JVM with the given heap limit and this test's class path. */
  static Result fork(String heap, String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx" + heap);
    cmd.add("--enable-native-access=ALL-UNNAMED");
    cmd.add("--sun-misc-unsafe-memory-access=allow");
    cmd.add("-cp");
    cmd.add(Processes.classPath());
    cmd.add(Main.class.getName());
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(false).start();
    p.getOutputStream().close();
    var out = new ByteArrayOutputStream();
    var err = new ByteArrayOutputStream();
    Thread a = Thread.ofVirtual().start(() -> drain(p.getInputStream(), out));
    Thread b = Thread.ofVirtual().start(() -> drain(p.getErrorStream(), err));
    if (!p.waitFor(20, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      throw new IOException("strata " + String.join(" ", args) + " timed out");
    }
    a.join();
    b.join();
    return new Result(p.exitValue(), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  private static void drain(InputStream in, OutputStream out) {
    try (in) {
      in.transferTo(out);
    } catch (IOException ignored) {
      // The process ended.
    }
  }
}
