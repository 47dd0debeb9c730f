package io.strata.node;

import io.strata.sdk.files.Manifest;
import io.strata.sdk.internal.Json;
import io.strata.sdk.loader.Loader;
import io.strata.sdk.loader.PlanProgram;
import io.strata.sdk.tiering.SegmentRef;
import io.strata.sdk.tiering.SegmentStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.DoubleSupplier;

/**
 * What the node does with its cluster beyond promotions (those are {@link PromotionQueue}'s):
 * going online, serving segments to peers, peer prefetch from the jobs' plans, distributed jobs'
 * plans (declared here for every rank, installed here for this host's ranks). Alone ({@link
 * Cluster#ALONE}) it does nothing but answer that this node is the host it is.
 *
 * <p>Threads and locks: called on API workers (plans, peer segments) and on the node's timer
 * workers (prefetch, shared plans). Its one lock is the monitor of the map of shared plans
 * installed, held while installing them (two timer calls may overlap); under it, it calls the
 * cluster (bounded waits on the network) and the plan intake, which takes only the tier state's
 * monitor. Everything else calls the tier state (its own monitor, quick) and the cluster with no
 * lock held.
 */
final class ClusterWork {
  private static final System.Logger LOG = System.getLogger("io.strata.node");
  /** Chunks a prefetch pass looks up at most. */
  static final int PEER_PREFETCH_BATCH = 256;

  private final Cluster cluster;
  private final NodeConfig config;
  private final TierState state;
  private final PlanIntake plans;
  private final SegmentStore store;
  private final TierCounters counters;
  private final DoubleSupplier clock;
  /** Shared plans installed here (their JSON), or "failed <time>" for a retry 30 s later. */
  private final Map<String, String> sharedPlans = new HashMap<>();
  /** This node's URL once it listens. */
  private volatile String url;

  ClusterWork(Cluster cluster, NodeConfig config, TierState state, PlanIntake plans, SegmentStore store, TierCounters counters,
      DoubleSupplier clock) {
    this.cluster = cluster;
    this.config = config;
    this.state = state;
    this.plans = plans;
    this.store = store;
    this.counters = counters;
    this.clock = clock;
  }

  /** The node listens at {@code url}: in a cluster, the cluster learns where it is and what its SSD tier holds. */
  void online(String url) {
    this.url = url;
    cluster.online(url, store.segments());
    cluster.watchHeldElsewhere(state::heldElsewhere);
  }

  /**
   * A single-feature segment of the current version of a dataset, for a peer to copy (404 when
   * this node does not hold it: never announced, or evicted since).
   */
  Path peerSegment(String dataset, String version, String feature, int chunk) {
    Manifest.checkName(dataset);
    if (chunk < 0) {
      throw NodeException.badRequest("'chunk' must not be negative");
    }
    return store.find(dataset, version, feature, chunk).filter(r -> r.info().columns().size() == 1)
        .map(SegmentRef::path)
        .orElseThrow(() -> NodeException.notFound("this node holds no segment of " + dataset + " " + version + " " + feature
            + " chunk " + chunk));
  }

  /**
   * In a cluster, places ahead of the jobs the chunks their plans read next that a peer holds
   * (a copy from a peer reads nothing from the HDD tier), while the SSD budget has room; called
   * four times a second, it goes on for up to two seconds while it finds chunks to place. Chunks
   * no peer holds are asked about again after {@link PeerLookahead#RETRY_SECONDS}.
   */
  int peerPrefetch(BooleanSupplier closed) {
    if (!cluster.clustered()) {
      return 0;
    }
    int placed = 0;
    long end = System.nanoTime() + 2_000_000_000L;
    boolean more = true;
    while (more && System.nanoTime() < end && !closed.getAsBoolean()) {
      more = false;
      double now = clock.getAsDouble();
      for (PeerLookahead.Candidate c : state.peerCandidates(PEER_PREFETCH_BATCH, now)) {
        boolean held;
        try {
          held = !cluster.holders(c.info().dataset(), c.info().version(), c.info().feature(), c.info().chunk()).isEmpty();
        } catch (RuntimeException e) {
          held = false;
        }
        if (!held) {
          state.noPeer(c.key(), now);
        } else if (state.placeFromPeer(c.key())) {
          placed++;
          more = true;
        }
      }
    }
    return placed;
  }

  /**
   * A distributed job's plan, declared once (its dataset and features checked by the caller): the
   * program's shard for each rank goes to the node of that rank's host ({@code hosts}, one per
   * rank: a cluster address or a node's URL), installed here for this node's ranks and shared
   * through the cluster for the others (their nodes install them within a second). Each rank's
   * plan is named {@code job@rank}, the name its loader declares under; a rank's loader that
   * starts replaces it with its own (the same program).
   */
  TierViews.DistributedPlanAnswer plan(String job, String datasetName, List<String> features, PlanProgram program,
      boolean substitutable, List<String> hosts) {
    Jobs.checkName(job);
    int world = program.world();
    if (world < 2) {
      throw NodeException.badRequest("'ranks' is for a distributed job: the program's world must be at least 2, got " + world);
    }
    if (hosts.size() != world) {
      throw NodeException.badRequest("'ranks' names the host of each of the program's " + world + " ranks, got " + hosts.size());
    }
    Jobs.checkName(Loader.rankJob(job, world - 1, world));
    for (int r = 0; r < world; r++) {
      if (!isThisHost(hosts.get(r)) && !cluster.clustered()) {
        throw NodeException.badRequest("rank " + r + "'s host '" + hosts.get(r) + "' is not this node, and this node is not in a"
            + " cluster: declare the plan on that host's node, or cluster the nodes");
      }
    }
    List<TierViews.RankPlan> out = new ArrayList<>();
    for (int r = 0; r < world; r++) {
      String name = Loader.rankJob(job, r, world);
      PlanProgram shard = program.forRank(r);
      if (isThisHost(hosts.get(r))) {
        TierViews.PlanAnswer a = plans.plan(name, datasetName, features, shard, substitutable);
        out.add(new TierViews.RankPlan(r, hosts.get(r), name, "here", a.steps()));
      } else {
        com.fasterxml.jackson.databind.node.ObjectNode p = Json.object().put("dataset", datasetName)
            .put("substitutable", substitutable);
        features.forEach(p.putArray("features")::add);
        p.set("program", shard.toJson());
        cluster.sharePlan(name, hosts.get(r), Json.compact(p));
        out.add(new TierViews.RankPlan(r, hosts.get(r), name, "shared", null));
      }
    }
    return new TierViews.DistributedPlanAnswer(job, datasetName, world, out);
  }

  /** Whether {@code host} names this node: its cluster address, its URL, or its address and port. */
  boolean isThisHost(String host) {
    String u = url;
    if (u != null && (host.equals(u) || ("http://" + host).equals(u))) {
      return true;
    }
    return config.cluster() != null ? host.equals(config.cluster().host()) : host.equals(config.bindHost());
  }

  /**
   * The plans other nodes shared for this node's ranks that are not installed yet (or changed):
   * installed now (called every second; two calls may overlap, one installs at a time).
   */
  void installSharedPlans() {
    synchronized (sharedPlans) {
      Map<String, String> mine;
      try {
        mine = cluster.plansFor(this::isThisHost);
      } catch (RuntimeException e) {
        return; // the cluster is unreachable for now; the next second tries again
      }
      sharedPlans.keySet().retainAll(mine.keySet());
      double now = clock.getAsDouble();
      for (Map.Entry<String, String> e : mine.entrySet()) {
        String done = sharedPlans.get(e.getKey());
        if (e.getValue().equals(done) || (done != null && done.startsWith("failed ")
            && now - Double.parseDouble(done.substring(7)) < 30)) {
          continue;
        }
        try {
          com.fasterxml.jackson.databind.JsonNode p = Json.parse(e.getValue().getBytes(StandardCharsets.UTF_8));
          List<String> fs = new ArrayList<>();
          p.path("features").forEach(f -> fs.add(f.asText()));
          plans.plan(e.getKey(), p.path("dataset").asText(), fs, PlanProgram.fromJson(p.path("program")),
              p.path("substitutable").asBoolean());
          sharedPlans.put(e.getKey(), e.getValue());
          counters.sharedPlansInstalled.increment();
        } catch (IOException | RuntimeException ex) {
          sharedPlans.put(e.getKey(), "failed " + now);
          LOG.log(System.Logger.Level.WARNING, "the plan " + e.getKey() + " shared by another node is not installed: "
              + ex.getMessage());
        }
      }
    }
  }
}
