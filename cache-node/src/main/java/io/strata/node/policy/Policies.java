package io.strata.node.policy;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The policies a node can run, by name: what {@code strata policy set --policy NAME} and the
 * node's {@code policy} setting choose from. Adding a policy is one class implementing {@link
 * CachePolicy} (it must keep pins and its budget: the contract suite runs against every entry)
 * and one line here. Caffeine's W-TinyLFU (no way to keep pins) and OPT (an offline oracle) are
 * simulation baselines, not entries. Stateless.
 */
public final class Policies {
  private Policies() {}

  /** What a policy is made with: the node's settings (a policy ignores those it has no use for). */
  public record Options(long budgetBytes, double flashBytesPerHour, double popularityDiscount) {}

  /** The policy a node runs unless told otherwise. */
  public static final String DEFAULT = "strata";

  /**
   * One policy: its name, whether it takes the jobs' declared plans ({@link CachePolicy#plan}) and
   * keeps a flash write budget ({@link CachePolicy#setFlashBudget}), and how it is made.
   */
  public record Entry(String name, boolean takesPlans, boolean keepsFlashBudget, Function<Options, CachePolicy> make) {}

  private static final Map<String, Entry> REGISTRY = new LinkedHashMap<>();

  private static void add(Entry e) {
    REGISTRY.put(e.name(), e);
  }

  static {
    add(new Entry("strata", true, true, o -> new StrataPolicy(o.budgetBytes(), o.flashBytesPerHour(), o.popularityDiscount())));
    add(new Entry("lru", false, false, o -> new LruPolicy(o.budgetBytes())));
    add(new Entry("frequency", false, false, o -> new FrequencyPolicy(o.budgetBytes())));
    add(new Entry("s3fifo", false, false, o -> new S3FifoPolicy(o.budgetBytes())));
  }

  /** The names, in the order they are listed. */
  public static List<String> names() {
    return List.copyOf(REGISTRY.keySet());
  }

  /** Every entry, in the order they are listed. */
  public static List<Entry> entries() {
    return List.copyOf(REGISTRY.values());
  }

  /** Whether {@code name} is a policy the node can run. */
  public static boolean known(String name) {
    return REGISTRY.containsKey(name);
  }

  /** A new policy {@code name} made with {@code options}; IllegalArgumentException naming the known ones otherwise. */
  public static CachePolicy create(String name, Options options) {
    Entry e = REGISTRY.get(name);
    if (e == null) {
      throw new IllegalArgumentException("no policy '" + name + "' (known: " + String.join(", ", names()) + ")");
    }
    return e.make().apply(options);
  }
}
