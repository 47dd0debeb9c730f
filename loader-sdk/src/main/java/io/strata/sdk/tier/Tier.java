package io.strata.sdk.tier;

import java.util.Locale;

/**
 * A place feature data is read from, named the same way everywhere: in a job's statistics, in the
 * reads it reports to a node, in the node's counters, traces and metrics, and in the API (the
 * lower-case {@link #apiName()}). Ordered from the fastest; arrays of per-tier figures are indexed
 * by {@link #ordinal()}, so a tier added here (a memory tier above the SSD one, say) is counted
 * everywhere without another flag.
 */
public enum Tier {
  /** Memory-mapped segments on this host's SSD tier (and the page cache above them). */
  SSD,
  /** ORC files on the HDD tier. */
  HDD,
  /** Segments copied from another node of the cluster instead of decoding ORC. */
  PEER;

  private final String apiName = name().toLowerCase(Locale.ROOT);

  /** The tier's name in the API, traces and metrics: {@code ssd}, {@code hdd}, {@code peer}. */
  public String apiName() {
    return apiName;
  }

  /** The tier named {@code name} ({@link #apiName()}); IllegalArgumentException naming the known ones otherwise. */
  public static Tier parse(String name) {
    for (Tier t : values()) {
      if (t.apiName().equals(name)) {
        return t;
      }
    }
    throw new IllegalArgumentException("no tier '" + name + "' (known: ssd, hdd, peer)");
  }
}
