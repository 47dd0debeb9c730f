package io.strata.ops;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.node.CacheNode;
import io.strata.node.HomeLock;
import io.strata.node.NodeConfig;
import io.strata.node.Setting;
import io.strata.node.Sizes;
import io.strata.node.sim.Trace;
import io.strata.ops.serve.LoaderServe;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.Json;
import io.strata.sdk.node.NodeClient;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code strata node start|stop|status}. */
@Command(name = "node", mixinStandardHelpOptions = true, description = "Run and inspect the cache node.",
    subcommands = {NodeCommand.Start.class, NodeCommand.Stop.class, NodeCommand.Status.class, NodeCommand.TraceOut.class})
public final class NodeCommand implements Runnable {
  @Spec CommandSpec spec;

  /** Written by a running node: its process and URL. */
  static final String INFO = "node.json";

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /** The URL of the node: --node, $STRATA_NODE, the node.json of the default home, or the default port. */
  static String nodeUrl(String explicit) {
    if (explicit != null) {
      return explicit;
    }
    String env = System.getenv("STRATA_NODE");
    if (env != null && !env.isBlank()) {
      return env;
    }
    try {
      Path info = NodeConfig.defaultHome().resolve(INFO);
      if (Files.exists(info)) {
        return Json.parse(Files.readAllBytes(info)).path("url").asText();
      }
      // The node started last, from any home, while it runs.
      Path last = lastNodeFile();
      if (Files.exists(last)) {
        JsonNode n = Json.parse(Files.readAllBytes(last));
        if (ProcessHandle.of(n.path("pid").asLong()).map(ProcessHandle::isAlive).orElse(false)) {
          return n.path("url").asText();
        }
      }
    } catch (IOException ignored) {
      // Fall back to the default address.
    }
    return "http://127.0.0.1:" + NodeConfig.DEFAULT_PORT;
  }

  /** Where a starting node records itself for later commands: beside the default home. */
  static Path lastNodeFile() {
    return NodeConfig.defaultHome().resolveSibling("last-node.json");
  }

  @Command(name = "start", mixinStandardHelpOptions = true, description = "Start a cache node (in the background unless --foreground).")
  static final class Start implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--home", description = "Node home (default: $STRATA_HOME/node or ~/.strata/node).")
    Path home;

    @Option(names = "--config", description = "JSON configuration file (see docs/API.md).")
    Path config;

    @Option(names = "--port", description = "Port (default 7070; 0 picks a free one).")
    Integer port;

    @Option(names = "--hdd-root", converter = DatasetPath.class,
        description = "HDD root directory, or an hdfs:// or s3://bucket/prefix URI (repeatable); datasets must lie inside one.")
    List<Path> hddRoots;

    @Option(names = "--ssd-budget", description = "SSD tier budget, for example 20g.")
    String ssdBudget;

    @Option(names = "--foreground", description = "Run in this process until stopped (Ctrl-C or SIGTERM).")
    boolean foreground;

    @Option(names = "--json", description = "Print the started node's pid, URL, home and log as JSON.")
    boolean json;

    @Option(names = "--loader-socket", paramLabel = "PATH",
        description = "Also serve the Python client's jobs on this Unix socket from the node's own JVM (set STRATA_LOADER_SOCKET"
            + " to it in the jobs): a host's node and its jobs' loaders then take one JVM, not two.")
    Path loaderSocket;

    /** The settings given explicitly (options, or fields of the configuration file): they win over the kept ones. */
    Set<String> given() throws IOException {
      Set<String> g = new HashSet<>();
      if (config != null) {
        JsonNode file = Json.parse(Files.readAllBytes(config));
        // The file's own field names (sizes as text: "ssdBudget": "800g"), the settings' names in what is given.
        for (Setting s : Setting.values()) {
          if (s.startable() && file.hasNonNull(s.fileKey())) {
            g.add(s.key());
          }
        }
      }
      if (ssdBudget != null) {
        g.add(Setting.SSD_BUDGET_BYTES.key());
      }
      if (hddRoots != null && !hddRoots.isEmpty()) {
        g.add(Setting.HDD_ROOTS.key());
      }
      return g;
    }

    NodeConfig build() throws IOException {
      // Values are checked before the home's directories are created.
      long budget = ssdBudget == null ? -1 : Sizes.parse(ssdBudget);
      NodeConfig c = config != null ? NodeConfig.read(config)
          : NodeConfig.embedded(home != null ? home : NodeConfig.defaultHome(), NodeConfig.DEFAULT_PORT);
      if (config != null && home != null
          && !c.home().toAbsolutePath().normalize().equals(home.toAbsolutePath().normalize())) {
        // Not silently one or the other: the file's home (or the default one) was used, --home ignored.
        throw new IllegalArgumentException("--home " + home + " is not the home of " + config + " (" + c.home()
            + "): give the home in one place");
      }
      if (port != null) {
        c = c.withPort(port);
      }
      if (hddRoots != null && !hddRoots.isEmpty()) {
        List<Path> roots = new ArrayList<>(c.hddRoots());
        hddRoots.forEach(r -> roots.add(r.toAbsolutePath().normalize()));
        c = c.withHddRoots(roots);
      }
      if (budget >= 0) {
        c = c.withSsdBudget(budget);
      }
      return c;
    }

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      NodeConfig c = build();
      Path info = c.home().resolve(INFO);
      Optional<ProcessHandle> running = running(info);
      if (running.isPresent()) {
        throw new IllegalStateException("a node is already running from " + c.home() + " (pid " + running.get().pid()
            + "); stop it with 'strata node stop'");
      }
      // Its node.json may be gone: the home's lock says whether a node owns it, before anything is written there.
      HomeLock.requireFree(c.home());
      if (!foreground) {
        return background(out, c, info);
      }
      CacheNode node = CacheNode.start(c, given());
      LoaderServe.Hosted service = null;
      if (loaderSocket != null) {
        try {
          service = LoaderServe.host(loaderSocket.toAbsolutePath());
          // The hosted jobs' readers offer the chunks they decode whole to this node's promoter.
          io.strata.sdk.tiering.DecodedChunks.enable();
        } catch (IOException | RuntimeException e) {
          node.close();
          throw e;
        }
      }
      LoaderServe.Hosted hosted = service;
      c = node.config();
      byte[] me = Json.compact(Json.object().put("pid", ProcessHandle.current().pid()).put("url", node.url())
          .put("home", c.home().toString())).getBytes(StandardCharsets.UTF_8);
      AtomicFiles.write(info, me);
      Files.createDirectories(lastNodeFile().getParent());
      AtomicFiles.write(lastNodeFile(), me);
      CountDownLatch stopped = new CountDownLatch(1);
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try {
          if (hosted != null) {
            hosted.close();
          }
          node.close();
          Files.deleteIfExists(info);
          Path last = lastNodeFile();
          if (Files.exists(last) && Json.parse(Files.readAllBytes(last)).path("pid").asLong() == ProcessHandle.current().pid()) {
            Files.deleteIfExists(last);
          }
        } catch (IOException ignored) {
          // Exiting anyway.
        }
        stopped.countDown();
      }, "strata-node-shutdown"));
      if (json) {
        com.fasterxml.jackson.databind.node.ObjectNode o = Json.object().put("pid", ProcessHandle.current().pid())
            .put("url", node.url()).put("home", c.home().toString()).put(Setting.SSD_BUDGET_BYTES.key(), c.ssdBudgetBytes());
        node.startupNotes().forEach(o.putArray("startupNotes")::add);
        if (hosted != null) {
          o.put("loaderSocket", hosted.socket().toString());
        }
        out.println(Json.compact(o));
      } else {
        out.printf("strata node listening on %s (home %s, SSD budget %s)%n  dashboard: %s/ui%n", node.url(), c.home(),
            Terminal.bytes(c.ssdBudgetBytes()), node.url());
        for (String note : node.startupNotes()) {
          out.println("  " + note);
        }
        if (hosted != null) {
          out.printf("  loader service for Python jobs on %s (STRATA_LOADER_SOCKET)%n", hosted.socket());
        }
      }
      out.flush();
      stopped.await();
      return 0;
    }

    private int background(PrintWriter out, NodeConfig c, Path info) throws Exception {
      Files.deleteIfExists(info);
      List<String> args = new ArrayList<>(List.of("node", "start", "--foreground", "--home", c.home().toString()));
      if (config != null) {
        args.addAll(List.of("--config", config.toString()));
      }
      if (port != null) {
        args.addAll(List.of("--port", port.toString()));
      }
      if (hddRoots != null) {
        hddRoots.forEach(r -> args.addAll(List.of("--hdd-root", r.toString())));
      }
      if (ssdBudget != null) {
        args.addAll(List.of("--ssd-budget", ssdBudget));
      }
      if (loaderSocket != null) {
        args.addAll(List.of("--loader-socket", loaderSocket.toAbsolutePath().toString()));
      }
      Path log = c.home().resolve("node.log");
      Files.createDirectories(c.home());
      Process p = Processes.spawn(List.of("-Xmx1g"), args, log);
      awaitStart(p, info, log);
      JsonNode n = Json.parse(Files.readAllBytes(info));
      if (json) {
        out.println(Json.compact(Json.object().put("pid", n.path("pid").asLong()).put("url", n.path("url").asText())
            .put("home", c.home().toString()).put("log", log.toString())));
        return 0;
      }
      out.printf("strata node started: %s (pid %d, home %s, log %s)%n  dashboard: %s/ui%n"
              + "  later commands find it while it runs (the node started last), or with --node %s or STRATA_NODE%n",
          n.path("url").asText(), n.path("pid").asLong(), c.home(), log, n.path("url").asText(), n.path("url").asText());
      return 0;
    }
  }

  /**
   * Starts {@code strata node start --foreground --home HOME args...} as a child JVM and waits
   * until it has written its node.json; returns the process and the node's URL.
   */
  public record Child(Process process, String url) {}

  public static Child startChild(List<String> jvm, Path home, List<String> args, Path log) throws IOException, InterruptedException {
    Files.createDirectories(home);
    Path info = home.resolve(INFO);
    Files.deleteIfExists(info);
    List<String> all = new ArrayList<>(List.of("node", "start", "--foreground", "--home", home.toString()));
    all.addAll(args);
    Process p = Processes.spawn(jvm, all, log);
    awaitStart(p, info, log);
    return new Child(p, Json.parse(Files.readAllBytes(info)).path("url").asText());
  }

  private static void awaitStart(Process p, Path info, Path log) throws IOException, InterruptedException {
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (!Files.exists(info)) {
      if (!p.isAlive()) {
        throw new IOException("the node exited (" + p.exitValue() + "): " + Files.readString(log).strip());
      }
      if (System.nanoTime() > deadline) {
        p.destroy();
        throw new IOException("the node did not start within 60 s; see " + log);
      }
      Thread.sleep(50);
    }
  }

  static Optional<ProcessHandle> running(Path info) {
    try {
      if (!Files.exists(info)) {
        return Optional.empty();
      }
      long pid = Json.parse(Files.readAllBytes(info)).path("pid").asLong(-1);
      return ProcessHandle.of(pid).filter(ProcessHandle::isAlive);
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  @Command(name = "stop", mixinStandardHelpOptions = true, description = "Stop the node started from a home directory.")
  static final class Stop implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--home", description = "Node home (default: $STRATA_HOME/node or ~/.strata/node).")
    Path home;

    @Option(names = "--json", description = "Print the result as JSON.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      Path h = home != null ? home : NodeConfig.defaultHome();
      Optional<ProcessHandle> p = running(h.resolve(INFO));
      if (p.isEmpty()) {
        throw new IllegalStateException("no node is running from " + h);
      }
      p.get().destroy();
      p.get().onExit().get(30, TimeUnit.SECONDS);
      if (json) {
        spec.commandLine().getOut().println(Json.compact(Json.object().put("stopped", p.get().pid())));
      } else {
        spec.commandLine().getOut().printf("stopped the node (pid %d)%n", p.get().pid());
      }
      return 0;
    }
  }

  @Command(name = "status", mixinStandardHelpOptions = true, description = "Is the node up, and what does it hold.")
  static final class Status implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Mixin NodeOptions node;

    @Option(names = "--home", description = "Ask the node started from this home (reads its node.json).")
    Path home;

    @Option(names = "--json", description = "Print as JSON.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      if (home != null && node.node == null) {
        Path info = home.resolve(INFO);
        if (running(info).isEmpty()) {
          throw new IllegalStateException("no node is running from " + home);
        }
        node.node = Json.parse(Files.readAllBytes(info)).path("url").asText();
      }
      NodeClient c = node.client();
      JsonNode t = c.tiers();
      PrintWriter out = spec.commandLine().getOut();
      if (json) {
        out.println(Json.compact(t));
        return 0;
      }
      out.printf("node %s up %s: %d datasets, %d jobs; SSD %s of %s in %d segments; byte hit ratio %.1f%%%n", c.url(),
          Terminal.seconds(t.path("uptimeSeconds").asDouble()), t.path("hdd").path("datasets").asInt(), t.path("jobs").size(),
          Terminal.bytes(t.path("ssd").path("bytes").asLong()), Terminal.bytes(t.path("ssd").path("budgetBytes").asLong()),
          t.path("ssd").path("segments").asInt(), 100 * t.path("traffic").path("byteHitRatio").asDouble());
      return 0;
    }
  }

  @Command(name = "trace", mixinStandardHelpOptions = true,
      description = "Save what the node recorded of the jobs' reads and plans as a trace CSV, to replay with 'strata policy simulate'.")
  static final class TraceOut implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Mixin NodeOptions node;

    @Option(names = {"-o", "--out"}, required = true, description = "CSV file to write (replaced atomically).")
    Path out;

    @Option(names = "--clear", description = "Then forget the recorded trace on the node (the next one starts empty).")
    boolean clear;

    @Option(names = "--json", description = "Print what was saved as JSON.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      Path dir = out.toAbsolutePath().getParent();
      if (dir == null || !Files.isDirectory(dir)) {
        throw new IllegalArgumentException("--out: directory " + dir + " does not exist");
      }
      NodeClient c = node.client();
      NodeClient.RecordedTrace t = c.trace();
      AtomicFiles.write(out, t.csv().getBytes(StandardCharsets.UTF_8));
      Trace parsed;
      try {
        parsed = Trace.read(out);
      } catch (IllegalArgumentException e) {
        Files.deleteIfExists(out);
        throw new IOException("the node's trace does not parse: " + e.getMessage(), e);
      }
      if (clear) {
        c.clearTrace();
      }
      PrintWriter w = spec.commandLine().getOut();
      if (json) {
        w.println(Json.compact(Json.object().put("trace", out.toString()).put("reads", parsed.size()).put("jobs", parsed.jobs())
            .put("records", parsed.controls().size()).put("droppedRows", t.droppedRows())));
      } else {
        w.printf("wrote %s: %s reads by %d jobs, %d plan/step/end records%s%n", out, Terminal.count(parsed.size()), parsed.jobs(),
            parsed.controls().size(), t.droppedRows() > 0 ? "; the node dropped the " + t.droppedRows() + " oldest rows" : "");
      }
      return 0;
    }
  }
}
