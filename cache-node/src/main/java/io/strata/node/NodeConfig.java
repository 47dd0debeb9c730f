package io.strata.node;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.files.DiskModel;
import io.strata.sdk.files.Locations;
import io.strata.sdk.internal.Json;
import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The cache node's configuration: its home, HDD roots (datasets must lie inside them), the SSD
 * directory and byte budget, the flash write budget, the DRAM budget, the bind address, port and
 * token, the cluster it joins ({@code cluster}, null: alone), and the settings of its HDFS client
 * ({@code hadoop}; HDD roots and datasets may be {@code hdfs://} URIs) and of its S3 client ({@code
 * s3}; roots and datasets may be {@code s3://bucket/prefix} URIs), and per HDD root the gap its
 * reads read through, from the disk under it ({@code hddGapBytes}, the file's {@code hddDisks}),
 * and where the feature-promotion job stages derived features for this node to ingest instead of
 * computing them ({@code featureStaging}, null: nowhere). {@link #embedded} gives a working
 * default; {@link #read} reads a JSON file (every field optional, see docs/API.md).
 */
public record NodeConfig(
    Path home,
    List<Path> hddRoots,
    Path ssdDir,
    long ssdBudgetBytes,
    double flashWriteBudgetBytesPerHour,
    long dramBudgetBytes,
    String bindHost,
    int port,
    String token,
    int promotionThreads,
    long promotionBytesPerSecond,
    long maxBodyBytes,
    ClusterSettings cluster,
    long scrubBytesPerSecond,
    Map<String, String> hadoop,
    Map<Path, Long> hddGapBytes,
    Map<String, String> s3,
    Path featureStaging) {
  /** The shortest token a node takes, bound to loopback or not. */
  static final int MIN_TOKEN_CHARS = 16;


  public static final int DEFAULT_PORT = 7070;
  /** The rate at which a node re-verifies its segments' checksums in the background ({@code scrubBytesPerSecond}). */
  public static final long DEFAULT_SCRUB_BYTES_PER_SECOND = 32L << 20;

  public NodeConfig {
    Objects.requireNonNull(home, "home");
    // Each root once, however often it is named (a --hdd-root that is the default one too).
    hddRoots = List.copyOf(new java.util.LinkedHashSet<>(hddRoots.stream()
        .map(r -> r.getFileSystem() == java.nio.file.FileSystems.getDefault() ? r.toAbsolutePath().normalize() : r).toList()));
    hadoop = Map.copyOf(hadoop);
    s3 = Map.copyOf(s3);
    if (featureStaging != null) {
      featureStaging = featureStaging.toAbsolutePath().normalize();
    }
    io.strata.sdk.s3.S3Settings.of(s3); // every key known, every value sound
    Map<Path, Long> gaps = new LinkedHashMap<>();
    hddGapBytes.forEach((root, gap) -> {
      if (gap < 0) {
        throw new IllegalArgumentException("the gap of HDD root " + root + " must not be negative: " + gap);
      }
      gaps.put(root.getFileSystem() == java.nio.file.FileSystems.getDefault() ? root.toAbsolutePath().normalize() : root, gap);
    });
    hddGapBytes = Map.copyOf(gaps);
    Objects.requireNonNull(ssdDir, "ssdDir");
    if (hddRoots.isEmpty()) {
      throw new IllegalArgumentException("at least one HDD root is needed");
    }
    if (ssdBudgetBytes < 0 || dramBudgetBytes < 0 || flashWriteBudgetBytesPerHour < 0) {
      throw new IllegalArgumentException("budgets must not be negative");
    }
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("port must be in 0..65535, got " + port);
    }
    if (promotionThreads < 1 || promotionThreads > 64) {
      throw new IllegalArgumentException("promotion threads must be in 1..64, got " + promotionThreads);
    }
    if (scrubBytesPerSecond < 0) {
      throw new IllegalArgumentException("scrubBytesPerSecond must not be negative (0 turns the checksum scrub off)");
    }
    if (maxBodyBytes < 1024) {
      throw new IllegalArgumentException("the body limit must be at least 1024 bytes");
    }
    if (token != null && (token.isEmpty() || !token.chars().allMatch(c -> c > 0x20 && c < 0x7f))) {
      // A request's header value is trimmed and ASCII: such a token could never authenticate.
      throw new IllegalArgumentException("the token must be printable ASCII without spaces"
          + (token.isBlank() ? " (it is empty or only whitespace)" : " (it holds whitespace, a control or a non-ASCII character)"));
    }
    if (token != null && token.length() < MIN_TOKEN_CHARS) {
      // Guessable in a search a local process can afford against a loopback port (no rate limit on 401s).
      throw new IllegalArgumentException("the token must be at least " + MIN_TOKEN_CHARS + " characters, got " + token.length());
    }
    if (!isLoopback(bindHost) && (token == null || token.length() < 16)) {
      throw new IllegalArgumentException(
          "binding to " + bindHost + " needs a token of at least 16 characters for mutating requests (set \"token\")");
    }
    if (cluster != null && (token == null || token.length() < 16)) {
      throw new IllegalArgumentException(
          "a clustered node needs a token of at least 16 characters, shared by the cluster's nodes (set \"token\")");
    }
    if (cluster != null && isLoopback(bindHost) && !isLoopback(cluster.host())) {
      throw new IllegalArgumentException("a clustered node serves its peers: bind it to its cluster address "
          + cluster.host() + " (\"bind\"), not to loopback");
    }
  }

  /**
   * Whether {@code host} resolves to loopback addresses only (a name such as {@code
   * 127.evil.invalid} is not loopback because of how it starts: it is resolved, and one that does
   * not resolve is not loopback).
   */
  static boolean isLoopback(String host) {
    try {
      InetAddress[] all = InetAddress.getAllByName(host);
      return all.length > 0 && Arrays.stream(all).allMatch(InetAddress::isLoopbackAddress);
    } catch (UnknownHostException | SecurityException e) {
      return false;
    }
  }

  /** Whether a Host or Origin names this machine's loopback without any lookup: {@code localhost} or a loopback literal. */
  static boolean isLoopbackName(String host) {
    String h = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    if (h.equalsIgnoreCase("localhost")) {
      return true;
    }
    try {
      return InetAddress.ofLiteral(h).isLoopbackAddress();
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /** The default home: {@code $STRATA_HOME/node} or {@code ~/.strata/node}. */
  public static Path defaultHome() {
    String env = System.getenv("STRATA_HOME");
    return (env != null ? Path.of(env) : Path.of(System.getProperty("user.home"), ".strata")).resolve("node");
  }

  /**
   * A node in {@code home}: HDD root {@code home/hdd}, SSD tier {@code home/ssd} with a budget of
   * a quarter of the free space (at most 20 GiB), no flash write limit, loopback only.
   */
  public static NodeConfig embedded(Path home, int port) throws IOException {
    Files.createDirectories(home.resolve("hdd"));
    Files.createDirectories(home.resolve("ssd"));
    long free = Files.getFileStore(home).getUsableSpace();
    long budget = Math.min(20L << 30, free / 4);
    return new NodeConfig(home, List.of(home.resolve("hdd")), home.resolve("ssd"), budget, 0, 4L << 30, "127.0.0.1",
        port, null, 2, 200L << 20, 1 << 20, null, DEFAULT_SCRUB_BYTES_PER_SECOND, Map.of(), Map.of(), Map.of(), null);
  }

  public NodeConfig withPort(int p) {
    return new NodeConfig(home, hddRoots, ssdDir, ssdBudgetBytes, flashWriteBudgetBytesPerHour, dramBudgetBytes, bindHost, p,
        token, promotionThreads, promotionBytesPerSecond, maxBodyBytes, cluster, scrubBytesPerSecond, hadoop, hddGapBytes, s3, featureStaging);
  }

  public NodeConfig withHddRoots(List<Path> roots) {
    return new NodeConfig(home, roots, ssdDir, ssdBudgetBytes, flashWriteBudgetBytesPerHour, dramBudgetBytes, bindHost, port,
        token, promotionThreads, promotionBytesPerSecond, maxBodyBytes, cluster, scrubBytesPerSecond, hadoop, hddGapBytes, s3, featureStaging);
  }

  public NodeConfig withSsdBudget(long bytes) {
    return new NodeConfig(home, hddRoots, ssdDir, bytes, flashWriteBudgetBytesPerHour, dramBudgetBytes, bindHost, port, token,
        promotionThreads, promotionBytesPerSecond, maxBodyBytes, cluster, scrubBytesPerSecond, hadoop, hddGapBytes, s3, featureStaging);
  }

  public NodeConfig withBind(String host, String tok) {
    return new NodeConfig(home, hddRoots, ssdDir, ssdBudgetBytes, flashWriteBudgetBytesPerHour, dramBudgetBytes, host, port, tok,
        promotionThreads, promotionBytesPerSecond, maxBodyBytes, cluster, scrubBytesPerSecond, hadoop, hddGapBytes, s3, featureStaging);
  }

  /** This configuration scrubbing its segments' checksums at {@code bytesPerSecond} (0: off). */
  public NodeConfig withScrubRate(long bytesPerSecond) {
    return new NodeConfig(home, hddRoots, ssdDir, ssdBudgetBytes, flashWriteBudgetBytesPerHour, dramBudgetBytes, bindHost, port,
        token, promotionThreads, promotionBytesPerSecond, maxBodyBytes, cluster, bytesPerSecond, hadoop, hddGapBytes, s3, featureStaging);
  }

  /** This configuration joining {@code c} (null: alone). */
  public NodeConfig withCluster(ClusterSettings c) {
    return new NodeConfig(home, hddRoots, ssdDir, ssdBudgetBytes, flashWriteBudgetBytesPerHour, dramBudgetBytes, bindHost, port,
        token, promotionThreads, promotionBytesPerSecond, maxBodyBytes, c, scrubBytesPerSecond, hadoop, hddGapBytes, s3, featureStaging);
  }

  /**
   * Refuses a file holding a secret that others on the host may read or change (as ssh refuses
   * a private key): group or other permission bits set. Where the file system has no POSIX
   * permissions there is nothing to check.
   */
  public static void requirePrivate(Path file, String what) throws IOException {
    if (!Files.getFileStore(file).supportsFileAttributeView(PosixFileAttributeView.class)) {
      return;
    }
    Set<PosixFilePermission> p = Files.getPosixFilePermissions(file);
    for (PosixFilePermission x : p) {
      if (!x.name().startsWith("OWNER_")) {
        throw new IOException(what + " " + file + " is accessible to others ("
            + PosixFilePermissions.toString(p) + "): chmod 600 " + file);
      }
    }
  }

  /** The staging directory of the feature-promotion job: a local (or mounted) directory, not a URI. */
  private static Path featureStaging(String text) {
    if (text.matches("^[a-zA-Z][a-zA-Z0-9+.-]*://.*")) {
      throw new IllegalArgumentException("featureStaging must be a directory every host mounts, not a URI: " + text);
    }
    return Path.of(text);
  }

  /** Reads a JSON configuration file; fields not given take the embedded defaults for its home. */
  public static NodeConfig read(Path file) throws IOException {
    if (!Files.isRegularFile(file)) {
      throw new NoSuchFileException(file.toString(), null, "no node configuration file");
    }
    JsonNode n;
    try {
      n = Json.parse(Files.readAllBytes(file));
    } catch (IOException e) {
      throw new IOException(file + " is not valid JSON: " + e.getMessage(), e);
    }
    if (n.hasNonNull("token")) {
      requirePrivate(file, "node configuration holding a token,");
    }
    try {
      Path home = n.hasNonNull("home") ? Path.of(n.get("home").asText()) : defaultHome();
      NodeConfig d = embedded(home, DEFAULT_PORT);
      List<Path> roots = new ArrayList<>();
      String rootsKey = Setting.HDD_ROOTS.fileKey();
      if (n.has(rootsKey)) {
        if (!n.get(rootsKey).isArray()) {
          throw new IllegalArgumentException(rootsKey + " must be an array of directories");
        }
        n.get(rootsKey).forEach(r -> roots.add(Locations.dataset(r.asText())));
      }
      String budgetKey = Setting.SSD_BUDGET_BYTES.fileKey();
      String flashKey = Setting.FLASH_WRITE_BUDGET_BYTES_PER_HOUR.fileKey();
      return new NodeConfig(
          home,
          roots.isEmpty() ? d.hddRoots() : roots,
          n.hasNonNull("ssdDir") ? Path.of(n.get("ssdDir").asText()) : d.ssdDir(),
          n.hasNonNull(budgetKey) ? bytes(n.get(budgetKey)) : d.ssdBudgetBytes(),
          n.hasNonNull(flashKey) ? bytes(n.get(flashKey)) : 0,
          n.hasNonNull("dramBudget") ? bytes(n.get("dramBudget")) : d.dramBudgetBytes(),
          n.hasNonNull("bind") ? n.get("bind").asText() : "127.0.0.1",
          n.hasNonNull("port") ? n.get("port").asInt() : DEFAULT_PORT,
          n.hasNonNull("token") ? n.get("token").asText() : null,
          n.hasNonNull("promotionThreads") ? n.get("promotionThreads").asInt() : d.promotionThreads(),
          n.hasNonNull("promotionBytesPerSecond") ? bytes(n.get("promotionBytesPerSecond")) : d.promotionBytesPerSecond(),
          n.hasNonNull("maxBodyBytes") ? bytes(n.get("maxBodyBytes")) : d.maxBodyBytes(),
          n.hasNonNull("cluster") ? cluster(n.get("cluster")) : null,
          n.hasNonNull("scrubBytesPerSecond") ? bytes(n.get("scrubBytesPerSecond")) : d.scrubBytesPerSecond(),
          n.hasNonNull("hadoop") ? hadoop(n.get("hadoop")) : Map.of(),
          n.hasNonNull("hddDisks") ? disks(n.get("hddDisks")) : Map.of(),
          n.hasNonNull("s3") ? s3(n.get("s3")) : Map.of(),
          n.hasNonNull("featureStaging") ? featureStaging(n.get("featureStaging").asText()) : null);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(file + ": " + e.getMessage(), e);
    }
  }

  /**
   * The "hddDisks" object: per HDD root, the disk under it, so that its reads read through the
   * gaps that disk's break-even says (OrcReads): {@code {"/mnt/hdd": {"gapBytes": N}}}, or the
   * drive's figures {@code {"mbps": 130, "averageSeekMs": 8.5, "rpm": 7200}} (single-track seek
   * 0.23 ms, command overhead 0.2 ms unless given: {@code singleTrackSeekMs}, {@code
   * commandOverheadMs}), its break-even computed by {@link DiskModel}. A root not named keeps
   * "auto" (the model's 7,200 rpm drive where the kernel calls the device rotational).
   */
  static Map<Path, Long> disks(JsonNode d) {
    if (!d.isObject()) {
      throw new IllegalArgumentException("hddDisks must be an object {\"/root\": {\"gapBytes\": N} or {\"mbps\": …, \"averageSeekMs\": …, \"rpm\": …}}");
    }
    Map<Path, Long> out = new LinkedHashMap<>();
    for (var e : d.properties()) {
      JsonNode v = e.getValue();
      String what = "hddDisks." + e.getKey();
      if (!v.isObject()) {
        throw new IllegalArgumentException(what + " must be an object");
      }
      if (v.has("gapBytes")) {
        out.put(Path.of(e.getKey()), bytes(v.get("gapBytes")));
        continue;
      }
      for (String k : List.of("mbps", "averageSeekMs", "rpm")) {
        if (!v.path(k).isNumber() || v.path(k).asDouble() <= 0) {
          throw new IllegalArgumentException(what + " needs gapBytes, or mbps, averageSeekMs and rpm (positive numbers)");
        }
      }
      DiskModel m = new DiskModel(what, v.get("averageSeekMs").asDouble(), v.path("singleTrackSeekMs").asDouble(0.23),
          v.get("rpm").asDouble(), v.get("mbps").asDouble() * 1e6, DiskModel.HDD.capacityBytes(),
          v.path("commandOverheadMs").asDouble(0.2));
      out.put(Path.of(e.getKey()), m.breakEvenGapBytes());
    }
    return out;
  }

  /**
   * The "hadoop" object: the HDFS client's settings (core-site and hdfs-site keys, string values),
   * the only way the node's client is configured (no core-site.xml or environment is read).
   */
  static Map<String, String> hadoop(JsonNode h) {
    return strings(h, "hadoop", "Hadoop client settings");
  }

  /**
   * The "s3" object: how the node reaches S3 and what a request there costs (endpoint, region,
   * pathStyle, credentials, the cost model's figures; {@link io.strata.sdk.s3.S3Settings}); keys
   * it does not set come from the AWS SDK's chains (the environment, profiles).
   */
  static Map<String, String> s3(JsonNode h) {
    return strings(h, "s3", "S3 client settings");
  }

  private static Map<String, String> strings(JsonNode h, String name, String what) {
    if (!h.isObject()) {
      throw new IllegalArgumentException(name + " must be an object of " + what + " {\"key\": \"value\"}");
    }
    Map<String, String> m = new LinkedHashMap<>();
    for (var e : h.properties()) {
      if (!e.getValue().isValueNode()) {
        throw new IllegalArgumentException(name + "." + e.getKey() + " must be a string, number or boolean");
      }
      m.put(e.getKey(), e.getValue().asText());
    }
    return m;
  }

  /** The "cluster" object: {"host": ADDRESS, "members": [ADDRESS, ...], "port": 5701, "name": "strata"}. */
  static ClusterSettings cluster(JsonNode c) {
    if (!c.isObject()) {
      throw new IllegalArgumentException("cluster must be an object {host, members, port, name}");
    }
    JsonNode m = c.get("members");
    if (m == null || !m.isArray()) {
      throw new IllegalArgumentException("cluster.members must be an array of addresses");
    }
    List<String> members = new ArrayList<>();
    m.forEach(x -> members.add(x.asText()));
    return new ClusterSettings(c.path("host").asText(""), members,
        c.hasNonNull("port") ? c.get("port").asInt() : ClusterSettings.DEFAULT_PORT,
        c.hasNonNull("name") ? c.get("name").asText() : "strata");
  }

  /** A byte count as a JSON number or a string such as "512m", "10g". */
  static long bytes(JsonNode v) {
    if (v.isIntegralNumber()) {
      return v.asLong();
    }
    return Sizes.parse(v.asText());
  }
}
