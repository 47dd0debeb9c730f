package io.strata.node;

import io.strata.sdk.derive.Spec;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.FeatureType;
import io.strata.sdk.tier.Tier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.IntToLongFunction;

/**
 * The node's keys: one int per chunk of a feature of a dataset version, allocated a feature at a
 * time as a block (the feature's base plus the chunk), so that finding a key is one map lookup per
 * feature and arithmetic per chunk. Each feature is also a group (its stream, for the policy's
 * sequential detection and the status's top streams), numbered in allocation order. Each key has
 * a size in the SSD budget: an estimate until its segment is written, then the segment's bytes.
 *
 * <p>Not thread-safe: {@link TierState} uses it under its monitor only.
 */
final class KeySpace {
  /** One feature chunk of one dataset version, and the group (feature) it belongs to. */
  record KeyInfo(String dataset, String version, String feature, int chunk, int group) {}

  private record Block(int base, int chunks) {}

  private final Map<String, Block> blocks = new HashMap<>();
  /** Bytes read of each group, from the SSD tier and the HDD tier. */
  private final Map<Integer, long[]> groupBytes = new HashMap<>();
  private final List<String> groupNames = new ArrayList<>();
  private KeyInfo[] infos = new KeyInfo[1024];
  private long[] bytes = new long[1024];
  /** What a miss of each key reads from the slow tier, once {@link SlowCosts} has said (0 until then). */
  private long[] slowBytes = new long[1024];
  private int size;

  private static String name(String dataset, String version, String feature) {
    return dataset + "\0" + version + "\0" + feature;
  }

  /** The key of {@code chunk} of the feature, or -1 when the feature has no keys yet. */
  int find(String dataset, String version, String feature, int chunk) {
    Block b = blocks.get(name(dataset, version, feature));
    return b == null || chunk < 0 || chunk >= b.chunks() ? -1 : b.base() + chunk;
  }

  /**
   * Allocates the keys of a feature's {@code chunks} chunks, sized by {@code estimate} (of the
   * chunk); returns the first (the key of chunk {@code c} is that plus {@code c}).
   */
  int allocate(String dataset, String version, String feature, int chunks, IntToLongFunction estimate) {
    String n = name(dataset, version, feature);
    if (blocks.containsKey(n)) {
      throw new IllegalStateException("keys of " + n.replace('\0', ' ') + " exist already");
    }
    int base = size;
    int group = groupNames.size();
    groupNames.add(dataset + "/" + feature);
    if (size + chunks > infos.length) {
      int cap = Math.max(infos.length * 2, size + chunks);
      infos = Arrays.copyOf(infos, cap);
      bytes = Arrays.copyOf(bytes, cap);
      slowBytes = Arrays.copyOf(slowBytes, cap);
    }
    for (int c = 0; c < chunks; c++) {
      infos[base + c] = new KeyInfo(dataset, version, feature, c, group);
      bytes[base + c] = estimate.applyAsLong(c);
    }
    size += chunks;
    blocks.put(n, new Block(base, chunks));
    return base;
  }

  /** Keys allocated so far (every key is below this). */
  int size() {
    return size;
  }

  KeyInfo get(int key) {
    return infos[key];
  }

  /** The key's size in the SSD budget. */
  long bytes(int key) {
    return bytes[key];
  }

  void setBytes(int key, long b) {
    bytes[key] = b;
  }

  /** The slow-tier bytes a miss of the key reads (0: not known). */
  long slowBytes(int key) {
    return slowBytes[key];
  }

  void setSlowBytes(int key, long b) {
    slowBytes[key] = b;
  }

  /** A group's name: {@code dataset/feature}. */
  String groupName(int group) {
    return groupNames.get(group);
  }

  /** Counts {@code bytes} read of {@code key}'s group from {@code tier}. */
  void read(int key, Tier tier, long bytes) {
    groupBytes.computeIfAbsent(infos[key].group(), x -> new long[Tier.values().length])[tier.ordinal()] += bytes;
  }

  /** The {@code n} groups (feature streams) read most, with their bytes per tier. */
  List<TierViews.Stream> topStreams(int n) {
    return groupBytes.entrySet().stream()
        .sorted(Comparator.comparingLong((Map.Entry<Integer, long[]> e) -> Arrays.stream(e.getValue()).sum()).reversed())
        .limit(n)
        .map(e -> new TierViews.Stream(groupName(e.getKey()), e.getValue()[Tier.SSD.ordinal()], e.getValue()[Tier.HDD.ordinal()]))
        .toList();
  }

  /** Bytes read per dataset from each tier (indexed by {@link Tier#ordinal()}). */
  Map<String, long[]> readBytesByDataset() {
    Map<String, long[]> out = new TreeMap<>();
    for (Map.Entry<Integer, long[]> e : groupBytes.entrySet()) {
      String group = groupName(e.getKey());
      long[] d = out.computeIfAbsent(group.substring(0, group.indexOf('/')), x -> new long[Tier.values().length]);
      for (int t = 0; t < d.length; t++) {
        d[t] += e.getValue()[t];
      }
    }
    return out;
  }

  /** The SSD bytes the policy reckons a feature chunk takes until its segment is written. */
  static long estimateBytes(Dataset ds, String feature, int chunk) {
    long rows = ds.chunks().get(chunk).rows();
    if (Spec.isDerived(ds, feature)) {
      return rows * 16 + 4096;
    }
    FeatureType t = ds.feature(feature).type();
    int width = t.kind().width();
    if (width > 0) {
      return rows * width + 4096;
    }
    if (width == 0) {
      return rows / 8 + 4096;
    }
    return rows * (t.isVariableWidth() ? 24 : 40) + 4096;
  }

}
