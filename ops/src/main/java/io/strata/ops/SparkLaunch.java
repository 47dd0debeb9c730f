package io.strata.ops;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.internal.Json;
import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * Starts Spark processes of this build: the feature-promotion job ({@code io.strata.spark.PromoteJob}
 * in {@code strata-spark.jar}), and in the lab a standalone Master and Workers. Spark is not on
 * the command's class path: with {@code SPARK_HOME} set the job goes through that installation's
 * {@code spark-submit}; otherwise it runs on the Spark jars the build put beside the command
 * ({@code ops/target/spark/jars}, a directory Spark's own launcher takes as a {@code SPARK_HOME}),
 * with the JVM flags Spark's launcher gives a JVM (read from the job's jar, one list for both).
 *
 * <p>Threads: none; the caller waits for the processes it starts.
 */
public final class SparkLaunch {
  /** The job's entry point. */
  public static final String JOB = "io.strata.spark.PromoteJob";

  private SparkLaunch() {}

  /** The directory holding {@code strata-spark.jar} and {@code jars/} ({@code ops/target/spark}), or null when not built. */
  public static Path home() {
    try {
      Path self = Path.of(SparkLaunch.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      for (Path d = self.getParent(); d != null; d = d.getParent()) {
        for (Path h : List.of(d.resolve("ops/target/spark"), d.resolve("spark"))) {
          if (Files.isRegularFile(h.resolve("strata-spark.jar")) && Files.isDirectory(h.resolve("jars"))) {
            return h;
          }
        }
      }
    } catch (URISyntaxException | RuntimeException e) {
      // no code source: no Spark
    }
    return null;
  }

  /** Why Spark cannot be started here, or null when it can. */
  public static String unavailable() {
    return home() == null && System.getenv("SPARK_HOME") == null
        ? "the Spark job is not built (ops/target/spark: './mvnw -B package -pl bench -am' builds it) and SPARK_HOME is not set"
        : null;
  }

  /** The JVM flags every Spark JVM of this build needs (Spark's module opens, and native access for the SDK). */
  public static List<String> jvmFlags() throws IOException {
    Path jar = requireHome().resolve("strata-spark.jar");
    try (ZipFile z = new ZipFile(jar.toFile())) {
      ZipEntry e = z.getEntry("io/strata/spark/jvm-options");
      if (e == null) {
        throw new IOException(jar + " holds no io/strata/spark/jvm-options: rebuild it");
      }
      try (InputStream in = z.getInputStream(e)) {
        List<String> flags = new ArrayList<>(Arrays.asList(new String(in.readAllBytes(), StandardCharsets.UTF_8).trim().split("\\s+")));
        flags.add("--enable-native-access=ALL-UNNAMED");
        return flags;
      }
    }
  }

  private static Path requireHome() throws IOException {
    Path h = home();
    if (h == null) {
      throw new IOException("the Spark job is not built (ops/target/spark): run './mvnw -B package -pl bench -am'");
    }
    return h;
  }

  /** A JVM of this build on Spark's jars running {@code mainClass} (a Master, a Worker, the job). */
  public static List<String> java(List<String> extraFlags, String mainClass) throws IOException {
    Path h = requireHome();
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    cmd.addAll(jvmFlags());
    cmd.addAll(extraFlags);
    cmd.addAll(List.of("-cp", h.resolve("strata-spark.jar") + java.io.File.pathSeparator + h.resolve("jars") + "/*", mainClass));
    return cmd;
  }

  /** The environment a Spark daemon of this build needs: its SPARK_HOME, its Scala version, this JVM as JAVA_HOME. */
  public static Map<String, String> environment() throws IOException {
    return Map.of("SPARK_HOME", requireHome().toString(), "SPARK_SCALA_VERSION", "2.13", "JAVA_HOME",
        System.getProperty("java.home"));
  }

  /** The command running the promotion job with {@code jobArgs} on {@code master}. */
  static List<String> jobCommand(String master, List<String> jobArgs) throws IOException {
    String executorFlags = "spark.executor.extraJavaOptions=--enable-native-access=ALL-UNNAMED";
    String sparkHome = System.getenv("SPARK_HOME");
    List<String> cmd = new ArrayList<>();
    if (sparkHome != null && home() == null) {
      throw new IOException("strata-spark.jar is not built (ops/target/spark): spark-submit needs it");
    }
    Path jar = requireHome().resolve("strata-spark.jar");
    if (sparkHome != null) {
      cmd.addAll(List.of(Path.of(sparkHome, "bin", "spark-submit").toString(), "--master", master, "--class", JOB,
          "--conf", executorFlags, jar.toString()));
    } else {
      cmd.addAll(java(List.of("-Dspark.master=" + master, "-Dspark.app.name=strata-promote", "-Dspark.jars=" + jar,
          "-D" + executorFlags, "-Dspark.ui.enabled=false"), JOB));
    }
    cmd.addAll(jobArgs);
    return cmd;
  }

  /**
   * Runs the promotion job to its end; its log (Spark's) goes to {@code log}. The JSON line it
   * printed for each feature; a failure is an IOException carrying the job's own error line.
   */
  static List<JsonNode> runJob(String master, List<String> jobArgs, Path log) throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(jobCommand(master, jobArgs)).redirectError(log.toFile())
        .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
    if (System.getenv("SPARK_HOME") == null) {
      pb.environment().putAll(environment());
    }
    Process p = pb.start();
    String out;
    try (InputStream in = p.getInputStream()) {
      out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } finally {
      if (!p.waitFor(1, TimeUnit.MINUTES)) {
        p.destroyForcibly();
      }
    }
    if (p.exitValue() != 0) {
      String why = Files.readAllLines(log, StandardCharsets.UTF_8).stream().filter(l -> l.startsWith("strata-spark:"))
          .reduce((a, b) -> b).orElse("the Spark job failed (exit code " + p.exitValue() + "); its log: " + log);
      throw new IOException(why);
    }
    List<JsonNode> outcomes = new ArrayList<>();
    for (String line : out.split("\n")) {
      if (line.startsWith("{")) {
        outcomes.add(Json.parse(line.getBytes(StandardCharsets.UTF_8)));
      }
    }
    return outcomes;
  }
}
