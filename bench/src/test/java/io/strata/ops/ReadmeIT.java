package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * README.md as a user pastes it: every {@code sh} block runs with bash in the checkout, as
 * written, through the launcher (with {@code STRATA_SKIP_BUILD}: this build is what it runs), and
 * must succeed; every verb of the command's synopsis (the {@code text} block) answers its
 * {@code --help}. The one line not run is {@code ./mvnw -B verify}: it is the build this test runs
 * in. The PyTorch block needs {@code target/pyvenv} ({@code ./strata bench setup}, which .ci/run
 * makes); where it is missing and not required (STRATA_REQUIRE_PYTHON), that block is skipped
 * with its reason. The README itself stays within the 150 lines a reader takes in at once.
 */
class ReadmeIT {
  private static final Pattern BLOCK = Pattern.compile("(?ms)^```(sh|text)\\n(.*?)^```\\n");

  private static Path root() {
    String dir = System.getProperty("strata.project.dir");
    Path r = dir != null ? Path.of(dir) : Processes.checkout();
    assertTrue(r != null && Files.isRegularFile(r.resolve("README.md")), "not run from the checkout");
    return r;
  }

  private static List<String[]> blocks() throws IOException {
    String md = Files.readString(root().resolve("README.md"));
    List<String[]> out = new ArrayList<>();
    Matcher m = BLOCK.matcher(md);
    while (m.find()) {
      out.add(new String[] {m.group(1), m.group(2)});
    }
    return out;
  }

  @Test
  void theReadmeIsShortAndHasItsBlocks() throws IOException {
    long lines = Files.readAllLines(root().resolve("README.md")).size();
    assertTrue(lines <= 150, "README.md has " + lines + " lines");
    assertTrue(blocks().stream().filter(b -> b[0].equals("sh")).count() >= 3, "quick start, a Java job, a PyTorch job");
  }

  @TestFactory
  List<DynamicTest> everyShellBlockRunsAsPasted() throws IOException {
    List<DynamicTest> tests = new ArrayList<>();
    int n = 0;
    for (String[] b : blocks()) {
      if (!b[0].equals("sh")) {
        continue;
      }
      String script = b[1];
      String first = script.lines().findFirst().orElse("");
      n++;
      tests.add(DynamicTest.dynamicTest("block " + n + ": " + first, () -> run(script)));
    }
    return tests;
  }

  private static void run(String block) throws Exception {
    StringBuilder script = new StringBuilder();
    for (String line : block.split("\n", -1)) {
      // The build this test runs in.
      script.append(line.startsWith("./mvnw -B verify") ? "# " + line : line).append('\n');
    }
    boolean python = block.contains("target/pyvenv/bin/python");
    if (python && !Files.isExecutable(root().resolve("target/pyvenv/bin/python"))) {
      assertFalse(System.getenv().containsKey("STRATA_REQUIRE_PYTHON"), "target/pyvenv is required here");
      org.junit.jupiter.api.Assumptions.abort("no target/pyvenv here (./strata bench setup makes it)");
    }
    ProcessBuilder pb = new ProcessBuilder("bash", "-euo", "pipefail", "-c", script.toString())
        .directory(root().toFile()).redirectErrorStream(true);
    pb.environment().put("STRATA_SKIP_BUILD", "1");
    Path log = Files.createTempFile("strata-readme-", ".log");
    pb.redirectOutput(log.toFile());
    Process p = pb.start();
    p.getOutputStream().close();
    boolean done = p.waitFor(10, TimeUnit.MINUTES);
    if (!done) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
    }
    String out = Files.readString(log, StandardCharsets.UTF_8);
    Files.deleteIfExists(log);
    assertTrue(done, "did not finish in 10 minutes:\n" + out);
    assertEquals(0, p.exitValue(), out);
    if (block.contains("TrainJob")) {
      assertTrue(out.contains("rows read: 400000"), out);
    }
    if (python) {
      assertTrue(out.contains("'zscore(log1p(amount))': ("), out);
    }
  }

  @Test
  void everyVerbOfTheSynopsisAnswersItsHelp() throws Exception {
    int checked = 0;
    for (String[] b : blocks()) {
      if (!b[0].equals("text")) {
        continue;
      }
      for (String line : b[1].split("\n")) {
        // The command, then its description after two spaces or more.
        String[] words = line.trim().split("\\s{2,}")[0].split("\\s+");
        if (words.length < 2 || !words[0].equals("strata")) {
          continue;
        }
        if (words[1].equals("run")) {
          ProcessBuilder pb = new ProcessBuilder(root().resolve("strata").toString(), "run", "--help")
              .redirectErrorStream(true);
          pb.environment().put("STRATA_SKIP_BUILD", "1");
          Process p = pb.start();
          String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
          assertEquals(0, p.waitFor(), out);
          assertTrue(out.contains("Usage: strata run FILE.java"), out);
          checked++;
          continue;
        }
        for (String verb : words[1].split("\\|")) {
          List<String> args = new ArrayList<>(List.of(verb));
          if (words.length > 2 && words[2].matches("[a-z|-]+")) {
            for (String sub : words[2].split("\\|")) {
              List<String> a = new ArrayList<>(args);
              a.add(sub);
              checked += help(a);
            }
          } else {
            checked += help(args);
          }
        }
      }
    }
    assertTrue(checked >= 30, "verbs checked: " + checked);
  }

  private static int help(List<String> args) {
    List<String> a = new ArrayList<>(args);
    a.add("--help");
    Cli.Result r = Cli.run(a.toArray(String[]::new));
    assertEquals(0, r.code(), String.join(" ", a) + ": " + r.out() + r.err());
    return 1;
  }
}
