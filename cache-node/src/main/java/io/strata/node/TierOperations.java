package io.strata.node;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.strata.node.policy.CachePolicy;
import io.strata.node.policy.CachePolicy.Placement;
import io.strata.node.policy.Policies;
import io.strata.sdk.dataset.Dataset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What an operator does to the SSD tier (through the API and the command): promote and evict
 * feature chunks now, pin and unpin datasets and features, change the policy, its budgets and
 * the quotas, and see the policy's settings. The node's state is {@link TierState}'s; this is the
 * part of it only operators change, kept apart so that the read path's class stays small.
 *
 * <p>Threads and locks: every method runs under {@link TierState}'s monitor (the one lock of the
 * tier's state), taken here, and quickly, as TierState's own methods do.
 */
final class TierOperations {
  private final TierState state;

  TierOperations(TierState state) {
    this.state = state;
  }

  /** Promotes {@code features} of {@code chunks} now (checked by the caller), within the SSD budget (409) and quotas. */
  TierViews.Promoted promote(Dataset ds, List<String> features, List<Integer> chunks) {
    synchronized (state) {
      long need = 0;
      List<Integer> todo = new ArrayList<>();
      for (String f : features) {
        for (int c : chunks) {
          int k = state.key(ds, f, c);
          if (state.residency.absent(k)) {
            todo.add(k);
            need += state.keys.bytes(k);
          }
        }
      }
      if (state.policy.residentBytes() + need > state.policy.budget()) {
        throw NodeException.conflict("promoting " + todo.size() + " chunks needs about " + need + " bytes but only "
            + Math.max(0, state.policy.budget() - state.policy.residentBytes()) + " of the SSD budget are free: evict, unpin or raise the budget");
      }
      int scheduled = 0;
      for (int k : todo) {
        if (state.policy.place(k, state.keys.bytes(k), Placement.OPERATOR) && state.schedule(k)) {
          scheduled++;
        }
      }
      return new TierViews.Promoted(scheduled, need);
    }
  }

  /** Evicts {@code features} of {@code chunks} (checked by the caller); a pinned feature is refused (409) before any is evicted. */
  TierViews.Evicted evict(Dataset ds, List<String> features, List<Integer> chunks) {
    synchronized (state) {
      for (String f : features) {
        if (state.reserved.pinned(ds.name(), f)) {
          throw NodeException.conflict("feature " + f + " of " + ds.name() + " is pinned: unpin it first");
        }
      }
      int n = 0;
      for (String f : features) {
        for (int c : chunks) {
          int k = state.key(ds, f, c);
          if (state.residency.resident(k)) {
            state.policy.removed(k);
            state.evicted(k);
            n++;
          }
        }
      }
      return new TierViews.Evicted(n);
    }
  }

  /** The SSD bytes the pinned features take (estimated until their segments are written): reserved in the budget. */
  long pinnedBytes() {
    synchronized (state) {
      long b = 0;
      for (int k = 0; k < state.keys.size(); k++) {
        KeySpace.KeyInfo ki = state.keys.get(k);
        if (state.reserved.pinned(ki.dataset(), ki.feature())) {
          b += state.keys.bytes(k);
        }
      }
      return b;
    }
  }

  /**
   * Pins (or unpins) a dataset ({@code feature} null) or one feature: pinned chunks are promoted
   * and never evicted. Pinned bytes are reserved in the SSD budget: a pin the budget cannot hold
   * is refused (409); unpinning what is not pinned is 404.
   */
  TierViews.Pinned pin(Dataset ds, String feature, boolean pin) {
    synchronized (state) {
      String p = feature == null ? ds.name() : ds.name() + "/" + feature;
      List<String> fs = feature == null ? ds.featureNames() : List.of(feature);
      if (pin) {
        if (!state.reserved.pins().contains(p)) {
          long more = 0;
          for (String f : fs) {
            if (!state.reserved.pinned(ds.name(), f)) {
              for (int c = 0; c < ds.chunks().size(); c++) {
                more += state.keys.bytes(state.key(ds, f, c));
              }
            }
          }
          long already = pinnedBytes();
          if (already + more > state.policy.budget()) {
            throw NodeException.conflict("pinning " + p + " needs " + more + " bytes of SSD budget; " + already + " of the "
                + state.policy.budget() + "-byte budget are pinned already: raise the budget or unpin first");
          }
        }
        state.reserved.pin(p);
      } else if (!state.reserved.unpin(p)) {
        throw NodeException.notFound(p + " is not pinned");
      }
      int scheduled = 0;
      for (String f : fs) {
        for (int c = 0; c < ds.chunks().size(); c++) {
          int k = state.key(ds, f, c);
          state.policy.pin(k, state.keys.bytes(k), state.reserved.pinned(ds.name(), f));
          if (pin && state.residency.absent(k) && state.policy.place(k, state.keys.bytes(k), Placement.OPERATOR)
              && state.schedule(k)) {
            scheduled++;
          }
        }
      }
      return new TierViews.Pinned(pin, p, scheduled);
    }
  }

  /** The pins, sorted. */
  List<String> pins() {
    synchronized (state) {
      return state.reserved.pins();
    }
  }

  /** The quotas by dataset. */
  Map<String, Long> quotas() {
    synchronized (state) {
      return state.reserved.quotas();
    }
  }

  /** The policy's settings after a change: what the node keeps. */
  record Applied(String policy, long budgetBytes, double flashBudgetPerHour, double popularityDiscount, Map<String, Long> quotas) {}

  /**
   * Applies a change of policy (quota datasets and the policy's name checked by the caller), as a
   * whole or not at all: 409 for a budget below the pinned bytes; a null quota removes the
   * dataset's quota; another policy replaces this one (see {@link #replacePolicy}). Returns the
   * settings in force after it.
   */
  Applied setPolicy(String name, Long budget, Long flash, Double discount, Map<String, Long> quotaChanges) {
    synchronized (state) {
      long pinned = budget == null ? 0 : pinnedBytes();
      if (budget != null && budget < pinned) {
        throw NodeException.conflict("an SSD budget of " + budget + " bytes is below the " + pinned
            + " bytes pinned features take: unpin first (pins: " + pins() + ")");
      }
      if ((flash != null && flash < 0) || (discount != null && !(discount >= 1))) {
        throw new IllegalArgumentException("a flash budget must not be negative and a popularity discount must be at least 1");
      }
      if (name != null && !name.equals(state.policyName)) {
        replacePolicy(name);
      }
      if (budget != null) {
        state.policy.setBudget(budget, state.clock.getAsDouble(), state::evicted);
      }
      if (flash != null) {
        state.flashBudgetPerHour = flash;
        state.policy.setFlashBudget(flash);
      }
      if (discount != null) {
        state.popularityDiscount = discount;
        state.policy.setPopularityDiscount(discount);
      }
      state.reserved.quotas(quotaChanges);
      return new Applied(state.policyName, state.policy.budget(), state.flashBudgetPerHour, state.popularityDiscount, state.reserved.quotas());
    }
  }

  /**
   * Replaces the policy by a new {@code name} policy with the same settings, told everything the
   * node knows that a policy keeps: each key's feature stream and slow-tier bytes, pins, chunks other nodes hold, what
   * is resident or being written (resident for it, whatever its budget says: a smaller budget
   * sheds the excess at the next read or change), the plans in force and each planned job's
   * position. What the old one learned by itself (read histories, frequencies) is not carried over.
   */
  @GuardedBy("state")
  private void replacePolicy(String name) {
    CachePolicy next = Policies.create(name, new Policies.Options(state.policy.budget(), state.flashBudgetPerHour, state.popularityDiscount));
    for (int k = 0; k < state.keys.size(); k++) {
      KeySpace.KeyInfo ki = state.keys.get(k);
      next.group(k, ki.group());
      if (state.keys.slowBytes(k) > 0) {
        next.slowBytes(k, state.keys.slowBytes(k), state.keys.bytes(k));
      }
      if (state.reserved.pinned(ki.dataset(), ki.feature())) {
        next.pin(k, state.keys.bytes(k), true);
      }
      if (!state.elsewhere.isEmpty() && state.elsewhere.contains(Cluster.chunkKey(ki.dataset(), ki.version(), ki.feature(), ki.chunk()))) {
        next.heldElsewhere(k, true);
      }
    }
    for (int k : state.residency.residentKeys()) {
      next.place(k, state.keys.bytes(k), Placement.FOUND);
    }
    for (int k : state.residency.pendingKeys()) {
      next.place(k, state.keys.bytes(k), Placement.FOUND);
    }
    double now = state.clock.getAsDouble();
    for (Map.Entry<String, CachePolicy.JobPlan> e : state.planned.entrySet()) {
      int id = state.jobs.id(e.getKey());
      next.plan(id, e.getValue());
      long step = state.jobs.step(e.getKey());
      if (step >= 0) {
        next.progress(id, step, now);
      }
    }
    state.policy = next;
    state.policyName = name;
  }

  /** The policy's settings and decision counts as a view, with the node's part given by the caller. */
  TierViews.PolicyView policyView(long promotionBytesPerSecond, Map<String, String> sources, List<String> hddRoots) {
    synchronized (state) {
      return new TierViews.PolicyView(state.policyName, Policies.names(), state.policy.budget(), (long) state.flashBudgetPerHour, state.popularityDiscount,
          promotionBytesPerSecond, quotas(), pins(), pinnedBytes(), sources, hddRoots, state.policy.decisionCounts());
    }
  }
}
