package io.strata.node;

import io.strata.sdk.files.Locations;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.node.policy.Policies;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.Json;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The settings an operator changes on a running node, kept in {@code <home>/settings.json}
 * (written atomically on every change) so that they survive a restart: the SSD and flash write
 * budgets, the popularity discount, quotas, pins and the HDD roots. Each value carries where it
 * came from ({@code default}, {@code start option}, {@code policy set at <time>}).
 *
 * <p>At start a value given explicitly (a start option or the configuration file) wins and is
 * kept; otherwise the kept value applies; otherwise the default. Not thread-safe: the tier
 * manager calls it under its monitor.
 */
final class Settings {
  static final String FILE = "settings.json";

  /** The names of the settings that start options may give. */
  static final Set<String> STARTABLE = Setting.startableKeys();

  private final Path file;
  final Map<String, String> sources = new TreeMap<>();
  /** The policy the node runs (one of {@link io.strata.node.policy.Policies}). */
  String policy;
  long ssdBudgetBytes;
  double flashWriteBudgetBytesPerHour;
  double popularityDiscount;
  final Map<String, Long> quotas = new TreeMap<>();
  final Set<String> pins = new TreeSet<>();
  List<Path> hddRoots;
  /** What went wrong reading the kept settings, or null. */
  String problem;

  private Settings(Path file) {
    this.file = file;
  }

  /**
   * The settings a node starting from {@code config} runs with: {@code given} names the values
   * given explicitly (the rest of {@code config} is defaults), the kept file fills in the others.
   */
  static Settings load(NodeConfig config, Set<String> given, double defaultDiscount) {
    Settings s = new Settings(config.home().resolve(FILE));
    JsonNode kept = null;
    if (Files.exists(s.file)) {
      try {
        kept = Json.parse(Files.readAllBytes(s.file));
        if (!kept.isObject()) {
          throw new IOException("not a JSON object");
        }
      } catch (IOException e) {
        s.problem = s.file + " is damaged (" + e.getMessage() + "); the settings start from their defaults";
        kept = null;
      }
    }
    JsonNode k = kept == null ? Json.object() : kept;
    s.policy = Policies.DEFAULT;
    s.ssdBudgetBytes = config.ssdBudgetBytes();
    s.flashWriteBudgetBytesPerHour = config.flashWriteBudgetBytesPerHour();
    s.popularityDiscount = defaultDiscount;
    s.hddRoots = config.hddRoots();
    for (Setting setting : Setting.values()) {
      String name = setting.key();
      JsonNode v = k.path(name);
      if (given.contains(name)) {
        s.sources.put(name, "start option");
      } else if (v.has("value")) {
        try {
          switch (setting) {
            case POLICY -> s.policy = knownPolicy(v.get("value").asText());
            case SSD_BUDGET_BYTES -> s.ssdBudgetBytes = nonNegative(v.get("value").asLong());
            case FLASH_WRITE_BUDGET_BYTES_PER_HOUR -> s.flashWriteBudgetBytesPerHour = nonNegative(v.get("value").asLong());
            case POPULARITY_DISCOUNT -> s.popularityDiscount = Math.max(1, v.get("value").asDouble());
            case HDD_ROOTS -> {
              List<Path> roots = new ArrayList<>();
              v.get("value").forEach(r -> roots.add(Locations.dataset(r.asText())));
              if (!roots.isEmpty()) {
                s.hddRoots = List.copyOf(roots);
              }
            }
          }
          s.sources.put(name, v.path("source").asText("kept"));
        } catch (IllegalArgumentException e) {
          s.sources.put(name, "default");
        }
      } else {
        s.sources.put(name, "default");
      }
    }
    k.path("quotas").properties().forEach(e -> {
      if (e.getValue().canConvertToLong() && e.getValue().asLong() >= 0) {
        s.quotas.put(e.getKey(), e.getValue().asLong());
      }
    });
    k.path("pins").forEach(p -> s.pins.add(p.asText()));
    s.sources.put("quotas", k.has("quotas") ? k.path("quotasSource").asText("kept") : "default");
    s.sources.put("pins", k.has("pins") ? k.path("pinsSource").asText("kept") : "default");
    return s;
  }

  private static String knownPolicy(String name) {
    if (!Policies.known(name)) {
      throw new IllegalArgumentException("no policy " + name);
    }
    return name;
  }

  private static long nonNegative(long v) {
    if (v < 0) {
      throw new IllegalArgumentException("negative");
    }
    return v;
  }

  /** Records that {@code names} were just changed at runtime. */
  void changed(String... names) {
    String source = "policy set at " + Instant.now().truncatedTo(ChronoUnit.SECONDS);
    for (String n : names) {
      sources.put(n, source);
    }
  }

  /** Writes the settings atomically. */
  void save() throws IOException {
    ObjectNode o = Json.object();
    o.putObject(Setting.POLICY.key()).put("value", policy).put("source", sources.get(Setting.POLICY.key()));
    o.putObject(Setting.SSD_BUDGET_BYTES.key()).put("value", ssdBudgetBytes)
        .put("source", sources.get(Setting.SSD_BUDGET_BYTES.key()));
    o.putObject(Setting.FLASH_WRITE_BUDGET_BYTES_PER_HOUR.key()).put("value", (long) flashWriteBudgetBytesPerHour)
        .put("source", sources.get(Setting.FLASH_WRITE_BUDGET_BYTES_PER_HOUR.key()));
    o.putObject(Setting.POPULARITY_DISCOUNT.key()).put("value", popularityDiscount)
        .put("source", sources.get(Setting.POPULARITY_DISCOUNT.key()));
    ObjectNode roots = o.putObject(Setting.HDD_ROOTS.key()).put("source", sources.get(Setting.HDD_ROOTS.key()));
    hddRoots.forEach(r -> roots.withArray("value").add(r.toString()));
    ObjectNode q = o.putObject("quotas");
    quotas.forEach(q::put);
    o.put("quotasSource", sources.get("quotas"));
    pins.forEach(o.putArray("pins")::add);
    o.put("pinsSource", sources.get("pins"));
    Files.createDirectories(file.getParent());
    AtomicFiles.write(file, Json.pretty(o).getBytes(StandardCharsets.UTF_8));
  }

  /** Where each value came from, for {@code GET /v1/policy}. */
  Map<String, String> sources() {
    return new LinkedHashMap<>(sources);
  }
}
