package io.strata.node;

import io.strata.sdk.dataset.Dataset;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The operators' changes of the tier that the node keeps in its home's settings file, so that a
 * restarted node has them again: pins, the policy, its budgets and the quotas. Each is applied to
 * the tier through {@link TierOperations} (as a whole or not at all), then recorded in the {@link
 * Settings} and saved; a failure to save is a startup note, not a failed request.
 *
 * <p>Threads and locks: changes are serialized by the settings' monitor (a change and its record
 * stay together), inside which {@link TierOperations} takes the tier state's monitor; nothing takes
 * them the other way round.
 */
final class KeptChanges {
  private static final System.Logger LOG = System.getLogger("io.strata.node");

  /**
   * A change of policy, as parsed from a request: each field null when not changed; a quota of
   * null in {@code quotas} removes the dataset's quota.
   */
  record PolicyChange(String policy, Long ssdBudgetBytes, Long flashWriteBudgetBytesPerHour, Double popularityDiscount,
      Map<String, Long> quotas) {}

  private final Settings settings;
  private final TierOperations operations;
  private final NodeConfig config;
  private final DatasetRegistry datasets;
  private final List<String> startupNotes;

  KeptChanges(Settings settings, TierOperations operations, NodeConfig config, DatasetRegistry datasets,
      List<String> startupNotes) {
    this.settings = settings;
    this.operations = operations;
    this.config = config;
    this.datasets = datasets;
    this.startupNotes = startupNotes;
  }

  /** How a kept pin is applied at start: the node's own pin request (dataset, feature or null, pin). */
  interface PinRequest {
    TierViews.Pinned pin(String dataset, String feature, boolean pin);
  }

  /**
   * At start: the kept quotas applied, then every kept pin through {@code request} (a pin that can
   * no longer be restored, its dataset gone or the budget smaller, is a startup note), and the pins
   * in force kept.
   */
  void restore(PinRequest request) throws IOException {
    operations.setPolicy(null, null, null, null, settings.quotas);
    List<String> kept;
    synchronized (settings) {
      kept = List.copyOf(settings.pins);
    }
    for (String p : kept) {
      int slash = p.indexOf('/');
      try {
        request.pin(slash < 0 ? p : p.substring(0, slash), slash < 0 ? null : p.substring(slash + 1), true);
      } catch (RuntimeException e) {
        startupNotes.add("the kept pin " + p + " is not restored: " + e.getMessage());
      }
    }
    synchronized (settings) {
      settings.pins.clear();
      settings.pins.addAll(operations.pins());
      settings.save();
    }
  }

  /** Pins (or unpins) {@code feature} of {@code ds} (checked by the caller; null: the whole dataset) and keeps the pins. */
  TierViews.Pinned pin(Dataset ds, String feature, boolean pin) {
    synchronized (settings) {
      TierViews.Pinned out = operations.pin(ds, feature, pin);
      List<String> now = operations.pins();
      if (settings.pins.size() != now.size() || !settings.pins.containsAll(now)) {
        settings.pins.clear();
        settings.pins.addAll(now);
        settings.changed("pins");
        save();
      }
      return out;
    }
  }

  /** The policy's settings, with where each came from and the HDD roots. */
  TierViews.PolicyView policy() {
    Map<String, String> sources;
    synchronized (settings) {
      sources = new TreeMap<>(settings.sources());
    }
    return operations.policyView(config.promotionBytesPerSecond(), sources,
        config.hddRoots().stream().map(Path::toString).toList());
  }

  /**
   * Applies {@code change}, checked as a whole first (a refused change changes nothing): not found
   * for a quota of an unregistered dataset, conflict for a budget below the pinned bytes.
   */
  TierViews.PolicyView setPolicy(PolicyChange change) {
    for (String name : change.quotas().keySet()) {
      if (!datasets.contains(name)) {
        throw NodeException.notFound("no dataset '" + name + "' is registered");
      }
    }
    synchronized (settings) {
      TierOperations.Applied s = operations.setPolicy(change.policy(), change.ssdBudgetBytes(), change.flashWriteBudgetBytesPerHour(),
          change.popularityDiscount(), change.quotas());
      settings.policy = s.policy();
      settings.ssdBudgetBytes = s.budgetBytes();
      settings.flashWriteBudgetBytesPerHour = s.flashBudgetPerHour();
      settings.popularityDiscount = s.popularityDiscount();
      settings.quotas.clear();
      settings.quotas.putAll(s.quotas());
      List<String> changed = new ArrayList<>();
      if (change.policy() != null) {
        changed.add(Setting.POLICY.key());
      }
      if (change.ssdBudgetBytes() != null) {
        changed.add(Setting.SSD_BUDGET_BYTES.key());
      }
      if (change.flashWriteBudgetBytesPerHour() != null) {
        changed.add(Setting.FLASH_WRITE_BUDGET_BYTES_PER_HOUR.key());
      }
      if (change.popularityDiscount() != null) {
        changed.add("popularityDiscount");
      }
      if (!change.quotas().isEmpty()) {
        changed.add("quotas");
      }
      settings.changed(changed.toArray(String[]::new));
      save();
    }
    return policy();
  }

  /** Keeps the settings in the home (under the settings' monitor). */
  private void save() {
    try {
      settings.save();
    } catch (IOException e) {
      LOG.log(System.Logger.Level.WARNING, "the settings could not be kept in " + config.home() + ": " + e);
      startupNotes.add("settings not kept: " + e.getMessage());
    }
  }
}
