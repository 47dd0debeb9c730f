package io.strata.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Which packages use each other both ways, in every module of the project (the SDK, the feature
 * store, the node, the GPU module, the command, the benchmarks): read from the sources (every
 * qualified name and import of an {@code io.strata} type, comments left out). A ratchet: a new
 * pair fails the build, and a pair that is gone must leave the list (issue 29 wants none).
 */
class PackageCyclesTest {
  /** The pairs left, each "a <-> b" with a before b. */
  private static final Set<String> KNOWN = Set.of("sdk <-> sdk.dataset");

  private static final Pattern PACKAGE = Pattern.compile("^package ([\\w.]+);", Pattern.MULTILINE);
  private static final Pattern USE = Pattern.compile("\\b(io\\.strata(?:\\.[a-z]\\w*)*)\\.[A-Z]\\w*");

  @Test
  void noPackagePairUsesEachOtherBeyondTheKnownOnes() throws IOException {
    Path project = Path.of(System.getProperty("strata.project.dir", ".."));
    List<Path> roots;
    try (Stream<Path> modules = Files.list(project)) {
      roots = modules.map(m -> m.resolve("src/main/java")).filter(Files::isDirectory).sorted().toList();
    }
    if (roots.isEmpty()) {
      roots = List.of(Path.of("src", "main", "java")); // run from the module alone
    }
    assertTrue(roots.stream().allMatch(Files::isDirectory), "the sources at " + roots);
    Map<String, Set<String>> uses = new HashMap<>();
    List<Path> files = new ArrayList<>();
    for (Path src : roots) {
      try (Stream<Path> s = Files.walk(src)) {
        s.filter(p -> p.toString().endsWith(".java") && !p.endsWith("module-info.java")).forEach(files::add);
      }
    }
    for (Path f : files) {
      String text = Files.readString(f).replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\n]*", "");
      Matcher pm = PACKAGE.matcher(text);
      assertTrue(pm.find(), f + " has a package");
      String pkg = pm.group(1);
      Matcher m = USE.matcher(text);
      while (m.find()) {
        if (!m.group(1).equals(pkg)) {
          uses.computeIfAbsent(pkg, k -> new HashSet<>()).add(m.group(1));
        }
      }
    }
    Set<String> pairs = new TreeSet<>();
    uses.forEach((a, bs) -> bs.forEach(b -> {
      if (a.compareTo(b) < 0 && uses.getOrDefault(b, Set.of()).contains(a)) {
        pairs.add(shortName(a) + " <-> " + shortName(b));
      }
    }));
    assertTrue(files.size() > 150 && roots.size() >= 6, roots.size() + " modules, read " + files.size() + " files");
    assertEquals(new TreeSet<>(KNOWN), pairs, "package pairs that use each other (a new one is a new cycle)");
  }

  private static String shortName(String pkg) {
    return pkg.replace("io.strata.", "");
  }
}
