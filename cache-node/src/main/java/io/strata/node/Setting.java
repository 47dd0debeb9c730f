package io.strata.node;

import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The settings an operator changes on a running node, each named once: its field in the API
 * ({@code PUT /v1/policy}, {@code GET /v1/policy}), in {@code settings.json}, in reports and
 * metrics ({@link #key()}), and its field in the node's configuration file where it has one
 * ({@link #fileKey()}: sizes there are written as text, {@code "800g"}, so the byte-valued API
 * fields have names of their own there).
 */
public enum Setting {
  POLICY("policy", null),
  SSD_BUDGET_BYTES("ssdBudgetBytes", "ssdBudget"),
  FLASH_WRITE_BUDGET_BYTES_PER_HOUR("flashWriteBudgetBytesPerHour", "flashWriteBudgetPerHour"),
  POPULARITY_DISCOUNT("popularityDiscount", null),
  HDD_ROOTS("hddRoots", "hddRoots");

  private final String key;
  private final String fileKey;

  Setting(String key, String fileKey) {
    this.key = key;
    this.fileKey = fileKey;
  }

  /** The name in the API, {@code settings.json}, reports and metrics. */
  public String key() {
    return key;
  }

  /** The field of the node's configuration file that gives it at start, or null when none does. */
  public String fileKey() {
    return fileKey;
  }

  /** Whether a start option (or the configuration file) can give it. */
  public boolean startable() {
    return fileKey != null;
  }

  /** The keys of the settings a start option may give. */
  public static Set<String> startableKeys() {
    return Arrays.stream(values()).filter(Setting::startable).map(Setting::key).collect(Collectors.toUnmodifiableSet());
  }

  /** Every setting's key, in declaration order. */
  public static List<String> keys() {
    return Arrays.stream(values()).map(Setting::key).toList();
  }
}
