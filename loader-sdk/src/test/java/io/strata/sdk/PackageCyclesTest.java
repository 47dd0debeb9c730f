package io.strata.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * No package of any module (the SDK, the feature store, the node, the GPU module, the command, the
 * benchmarks) reaches itself again through the packages it uses: read from the sources (every
 * qualified name and import of an {@code io.strata} type, comments left out), the strongly
 * connected components of that graph must all be single packages (issue 29).
 */
class PackageCyclesTest {
  private static final Pattern PACKAGE = Pattern.compile("^package ([\\w.]+);", Pattern.MULTILINE);
  private static final Pattern USE = Pattern.compile("\\b(io\\.strata(?:\\.[a-z]\\w*)*)\\.[A-Z]\\w*");

  @Test
  void noPackageReachesItselfThroughOthers() throws IOException {
    Path project = Path.of(System.getProperty("strata.project.dir", ".."));
    List<Path> roots;
    try (Stream<Path> modules = Files.list(project)) {
      roots = modules.map(m -> m.resolve("src/main/java")).filter(Files::isDirectory).sorted().toList();
    }
    if (roots.isEmpty()) {
      roots = List.of(Path.of("src", "main", "java")); // run from the module alone
    }
    assertTrue(roots.stream().allMatch(Files::isDirectory), "the sources at " + roots);
    Map<String, Set<String>> uses = new TreeMap<>();
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
      Set<String> used = uses.computeIfAbsent(pkg, k -> new TreeSet<>());
      Matcher m = USE.matcher(text);
      while (m.find()) {
        if (!m.group(1).equals(pkg)) {
          used.add(m.group(1));
        }
      }
    }
    assertTrue(files.size() > 150 && roots.size() >= 6, roots.size() + " modules, read " + files.size() + " files");
    assertEquals(List.of(), cycles(uses), "groups of packages that reach each other (each one a cycle)");
  }

  @Test
  void findsACycleOfThreeAndLeavesADiamondAlone() {
    Map<String, Set<String>> g = new TreeMap<>();
    g.put("io.strata.a", Set.of("io.strata.b", "io.strata.d"));
    g.put("io.strata.b", Set.of("io.strata.c"));
    g.put("io.strata.c", Set.of("io.strata.a"));
    g.put("io.strata.d", Set.of("io.strata.e", "io.strata.f"));
    g.put("io.strata.e", Set.of("io.strata.g"));
    g.put("io.strata.f", Set.of("io.strata.g"));
    assertEquals(List.of(List.of("a", "b", "c")), cycles(g));
  }

  /** The strongly connected components of more than one package (Tarjan), each sorted, short names. */
  static List<List<String>> cycles(Map<String, Set<String>> uses) {
    Map<String, Integer> index = new HashMap<>();
    Map<String, Integer> low = new HashMap<>();
    Deque<String> stack = new ArrayDeque<>();
    Set<String> onStack = new HashSet<>();
    List<List<String>> out = new ArrayList<>();
    for (String v : uses.keySet()) {
      if (!index.containsKey(v)) {
        connect(v, uses, index, low, stack, onStack, out);
      }
    }
    out.sort(Comparator.comparing(List::toString));
    return out;
  }

  private static void connect(String v, Map<String, Set<String>> uses, Map<String, Integer> index,
      Map<String, Integer> low, Deque<String> stack, Set<String> onStack, List<List<String>> out) {
    index.put(v, index.size());
    low.put(v, index.get(v));
    stack.push(v);
    onStack.add(v);
    for (String w : uses.getOrDefault(v, Set.of())) {
      if (!index.containsKey(w)) {
        connect(w, uses, index, low, stack, onStack, out);
        low.put(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.contains(w)) {
        low.put(v, Math.min(low.get(v), index.get(w)));
      }
    }
    if (low.get(v).equals(index.get(v))) {
      List<String> component = new ArrayList<>();
      String w;
      do {
        w = stack.pop();
        onStack.remove(w);
        component.add(w.replace("io.strata.", ""));
      } while (!w.equals(v));
      if (component.size() > 1) {
        Collections.sort(component);
        out.add(component);
      }
    }
  }
}
