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

  /**
   * The directory holding {@code strata-spark.jar} and {@code jars/}: {@code $STRATA_SPARK} when
   * set, else {@code ops/target/spark} of the checkout this command runs from; null when not built.
   */
  public static Path home() {
    String given = System.getenv("STRATA_SPARK"); // where a user (or a harness) put this build's Spark directory
    if (given != null && !given.isBlank()) {
      Path h = Path.of(given);
      return Files.isRegularFile(h.resolve("strata-spark.jar")) && Files.isDirectory(h.resolve("jars")) ? h : null;
    }
    List<Path> starts = new ArrayList<>();
    try {
      starts.add(Path.of(SparkLaunch.class.getProtectionDomain().getCodeSource().getLocation().toURI()).getParent());
    } catch (URISyntaxException | RuntimeException e) {
      // no code source: the checkout the tests name, if any
    }
    String project = System.getProperty("strata.project.dir"); // set by the build for its tests
    if (project != null) {
      starts.add(Path.of(project));
    }
    for (Path start : starts) {
      for (Path d = start; d != null; d = d.getParent()) {
        for (Path h : List.of(d.resolve("ops/target/spark"), d.resolve("spark"))) {
          if (Files.isRegularFile(h.resolve("strata-spark.jar")) && Files.isDirectory(h.resolve("jars"))) {
            return h;
          }
        }
      }
    }
    return null;
  }

  /** Why Spark cannot be started here, or null when it can. */
  public static String unavailable() {
    return home() == null ? "the Spark job is not built (ops/target/spark: './mvnw -B package -pl bench -am' builds it)" : null;
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

  /**
   * The environment a Spark process of this build needs: its SPARK_HOME, its Scala version, this
   * JVM as JAVA_HOME, and STRATA_SPARK (so a command started with it finds the same build).
   */
  public static Map<String, String> environment() throws IOException {
    String home = requireHome().toString();
    return Map.of("SPARK_HOME", home, "STRATA_SPARK", home, "SPARK_SCALA_VERSION", "2.13", "JAVA_HOME",
        System.getProperty("java.home"));
  }

  /** {@code $SPARK_HOME/bin/spark-submit} when SPARK_HOME names a Spark installation, else null (this build's jars are used). */
  private static Path sparkSubmit() {
    String sparkHome = System.getenv("SPARK_HOME");
    Path submit = sparkHome == null ? null : Path.of(sparkHome, "bin", "spark-submit");
    return submit != null && Files.isExecutable(submit) ? submit : null;
  }

  /** The command running the promotion job with {@code jobArgs} on {@code master}. */
  static List<String> jobCommand(String master, List<String> jobArgs) throws IOException {
    // The executors run as Strata's own JVMs do: native access for the SDK, the parallel collector
    // (chunks are large arrays, which G1, Spark's default, allocates as humongous regions).
    String executorFlags = "spark.executor.extraJavaOptions=--enable-native-access=ALL-UNNAMED -XX:+UseParallelGC";
    Path submit = sparkSubmit();
    List<String> cmd = new ArrayList<>();
    Path jar = requireHome().resolve("strata-spark.jar");
    if (submit != null) {
      cmd.addAll(List.of(submit.toString(), "--master", master, "--class", JOB,
          "--conf", executorFlags, jar.toString()));
    } else {
      cmd.addAll(java(List.of("-XX:+UseParallelGC", "-Dspark.master=" + master, "-Dspark.app.name=strata-promote", "-Dspark.jars=" + jar,
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
    if (sparkSubmit() == null) {
      pb.environment().putAll(environment());
    }
    Process p = pb.start();
    // The job is this command's child: a command stopped (Ctrl-C, SIGTERM) stops it too.
    Thread stop = new Thread(p::destroy, "strata-spark-job-stop");
    Runtime.getRuntime().addShutdownHook(stop);
    String out;
    try (InputStream in = p.getInputStream()) {
      out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } finally {
      if (!p.waitFor(1, TimeUnit.MINUTES)) {
        p.destroyForcibly();
        p.waitFor();
      }
      try {
        Runtime.getRuntime().removeShutdownHook(stop);
      } catch (IllegalStateException e) {
        // shutting down already: the hook runs
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
