package io.strata.node;

import io.strata.sdk.tiering.SegmentRef;
import io.vertx.core.Vertx;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * What a node knows of the other nodes of its cluster: who holds which feature chunk on its SSD
 * tier, and at which URL each member serves. {@link #ALONE} is the node without a cluster (the
 * default: nothing is shared, nothing is looked up); {@link HazelcastCluster} is the clustered one.
 *
 * <p>Threads: {@link #announce} and {@link #retract} never block (they queue), so the promotion
 * and eviction threads may call them; {@link #holders} may wait on the network (bounded) and runs
 * on promotion or API worker threads only, never under the tier state's monitor.
 */
interface Cluster extends AutoCloseable {
  /** A member of the cluster that holds a chunk: its node id and the base URL of its API. */
  record Peer(String nodeId, String url) {}

  /** A planned job on some node of the cluster, as that node last published it. */
  record Job(String host, String job, String dataset, int features, long stepsDone, long steps, long ssdBytes, long hddBytes) {}

  /**
   * The cluster as the status shows it: members, residency entries, counts of what happened, the
   * planned jobs of every node, and the bytes read per dataset across the cluster (its popularity).
   */
  record View(String nodeId, List<String> members, int holders, long announced, long retracted, long membersLeft,
      long cleaned, long dropped, String lastLeft, List<Job> jobs, Map<String, Long> datasetReadBytes,
      int heldByOthers) {}

  /** The node alone. */
  Cluster ALONE = new Cluster() {
    @Override
    public boolean clustered() {
      return false;
    }

    @Override
    public void online(String url, List<SegmentRef> resident) {}

    @Override
    public void announce(SegmentRef ref) {}

    @Override
    public void retract(SegmentRef ref) {}

    @Override
    public List<Peer> holders(String dataset, String version, String feature, int chunk) {
      return List.of();
    }

    @Override
    public List<Peer> peers() {
      return List.of();
    }

    @Override
    public void publish(List<Job> jobs, Map<String, Long> datasetReadBytes) {}

    @Override
    public void watchHeldElsewhere(Holders listener) {}

    @Override
    public void sharePlan(String job, String host, String plan) {
      throw new IllegalStateException("not in a cluster");
    }

    @Override
    public Map<String, String> plansFor(Predicate<String> isThisHost) {
      return Map.of();
    }

    @Override
    public View view() {
      return null;
    }

    @Override
    public Vertx vertx() {
      return null;
    }

    @Override
    public void close() {}
  };

  boolean clustered();

  /** A feature chunk as the cluster names it: dataset, version, feature and chunk, separated by U+001F. */
  static String chunkKey(String dataset, String version, String feature, int chunk) {
    return dataset + '\u001f' + version + '\u001f' + feature + '\u001f' + chunk;
  }

  /** The node listens at {@code url} and holds {@code resident} (verified): tell the cluster. */
  void online(String url, List<SegmentRef> resident);

  /** A segment landed on this node's SSD tier (a single-feature segment of a dataset's feature; others are not shared). */
  void announce(SegmentRef ref);

  /** A segment left this node's SSD tier. */
  void retract(SegmentRef ref);

  /** Live members other than this one that hold {@code feature} of {@code chunk}, in a random order. */
  List<Peer> holders(String dataset, String version, String feature, int chunk);

  /** The other live nodes that announced their URL, in random order (none alone). */
  List<Peer> peers();

  /**
   * This node's planned jobs and bytes read per dataset, for the other nodes to see (called every
   * second; never blocks: a newer call replaces one not yet sent).
   */
  void publish(List<Job> jobs, Map<String, Long> datasetReadBytes);

  /** Told when a chunk becomes held by at least one other node, or by none any more. */
  @FunctionalInterface
  interface Holders {
    void changed(String dataset, String version, String feature, int chunk, boolean heldElsewhere);
  }

  /**
   * Calls {@code listener} (on the cluster's event threads) for every chunk other nodes hold now
   * and whenever that changes.
   */
  void watchHeldElsewhere(Holders listener);

  /**
   * A plan for the node on {@code host} (a rank of a distributed job declared elsewhere), as JSON;
   * kept in the cluster for the plan lease. Blocks on the cluster (an API worker calls it).
   */
  void sharePlan(String job, String host, String plan);

  /** The shared plans (job name to JSON) whose host {@code isThisHost} accepts. */
  Map<String, String> plansFor(Predicate<String> isThisHost);

  /** Members, residency entries and the counts of what happened; null when alone. */
  View view();

  /** The clustered Vert.x instance the node runs on; null when alone. */
  Vertx vertx();

  @Override
  void close();
}
