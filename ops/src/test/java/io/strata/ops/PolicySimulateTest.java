package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.node.policy.Policies;
import io.strata.sdk.internal.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code strata policy simulate} answers on traces of the stated format written by other tools. */
class PolicySimulateTest {
  @TempDir Path tmp;

  @Test
  void simulatesATraceWrittenByAnIndependentGenerator() throws Exception {
    Path trace = tmp.resolve("external.csv");
    Path script = Path.of(System.getProperty("strata.project.dir"), "bench", "traces", "make_trace.py");
    Process p = new ProcessBuilder("python3", script.toString(), trace.toString(), "3").redirectErrorStream(true).start();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "python3 finished");
    assertEquals(0, p.exitValue(), new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
    assertTrue(Files.readString(trace).startsWith("time, job, dataset, feature, chunk, bytes"));
    Cli.Result r = Cli.run("policy", "simulate", "--trace", trace.toString(), "--ssd-budget", "10%,25%", "--json");
    assertEquals(0, r.code(), r.err());
    JsonNode j = Json.parse(r.out());
    assertEquals(2, j.get("runs").size());
    for (JsonNode run : j.get("runs")) {
      // every registered policy (strata, lru, frequency, s3fifo), caffeine and opt
      assertEquals(2 + Policies.names().size(), run.get("policies").size());
      for (JsonNode pol : run.get("policies")) {
        double h = pol.get("byteHitRatio").asDouble();
        assertTrue(h >= 0 && h <= 1);
      }
      assertTrue(run.get("strataVsOpt").asDouble() > 0.5, run.toString());
    }
    Cli.Result human = Cli.run("policy", "simulate", "--trace", trace.toString(), "--ssd-budget", "64m");
    assertEquals(0, human.code(), human.err());
    assertTrue(human.out().contains("strata") && human.out().contains("frequency") && human.out().contains("s3fifo")
        && human.out().contains("opt"), human.out());
    assertTrue(human.out().matches("(?s).*\\b\\d+\\.\\d%.*"), "hit ratios print as percentages, as elsewhere: " + human.out());
  }

  @Test
  void badTracesAndArgumentsGiveOneLine() throws Exception {
    Path bad = tmp.resolve("bad.csv");
    Files.writeString(bad, "time,job,dataset,feature,chunk,bytes\n1,j,d,f,zero,10\n");
    Cli.Result r = Cli.run("policy", "simulate", "--trace", bad.toString(), "--ssd-budget", "1g");
    assertEquals(1, r.code(), "a malformed file is a failure, not wrong usage: " + r.err());
    assertTrue(r.err().contains("line 2: bad number"), r.err());
    Cli.Result missing = Cli.run("policy", "simulate", "--trace", tmp.resolve("none.csv").toString(), "--ssd-budget", "1g");
    assertEquals(1, missing.code());
    assertTrue(missing.err().contains("no such trace file"), missing.err());
    Cli.Result budget = Cli.run("policy", "simulate", "--trace", bad.toString(), "--ssd-budget", "lots");
    assertEquals(2, budget.code());
  }
}
