package io.strata.node;

import com.hazelcast.cluster.Member;
import com.hazelcast.cluster.MembershipEvent;
import com.hazelcast.cluster.MembershipListener;
import com.hazelcast.config.Config;
import com.hazelcast.config.JoinConfig;
import com.hazelcast.config.NetworkConfig;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import com.hazelcast.multimap.MultiMap;
import io.strata.sdk.derive.Spec;
import io.strata.sdk.tiering.SegmentRef;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.spi.cluster.hazelcast.ConfigUtil;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A node in a cluster: Vert.x's clustered mode on Hazelcast (the {@code vertx-hazelcast} cluster
 * manager). Members join over TCP to the configured addresses only (no multicast, no discovery),
 * and Hazelcast binds to the configured cluster address alone. The shared state lives in two
 * Hazelcast structures: {@code strata.residency}, a multimap from a feature chunk (dataset,
 * version, feature, chunk) to the node ids holding it, and {@code strata.nodes}, node id to the
 * URL of its API; {@code strata.jobs} and {@code strata.reads}, what each node last published of
 * its planned jobs and of the bytes its jobs read per dataset (entries expire 30 s after their
 * node stopped refreshing them). All keep one backup, so a member's death loses nothing but its
 * own entries. {@code strata.plans} holds the plans of ranks of distributed jobs declared on
 * another node, for the node of each rank's host to install (kept for the plan lease).
 *
 * <p>Failure: a member that dies or is cut off is removed by Hazelcast after 5 s without
 * heartbeats; from then on {@link #holders} no longer names it (every answer is filtered by the
 * live members), and the oldest live member removes its residency entries. A node that comes back
 * is a new member (a new id): it verifies its SSD tier at start and announces what it holds.
 *
 * <p>Threads and locks: announcements, retractions and the clean-up after a member left run in
 * order on one thread, {@code strata-cluster}, behind a bounded queue: {@link #announce} and
 * {@link #retract} never block, and when the queue is full an announcement is dropped (the chunk
 * is then simply not offered to peers; a dropped retraction leaves an entry whose peer read fails
 * with 404 and falls back to ORC). {@link #holders} calls Hazelcast on the caller's thread (the
 * operation timeout bounds it at 5 s). Hazelcast's own threads call the membership listener,
 * which only queues work. No lock of this class is held while calling out.
 */
final class HazelcastCluster implements Cluster {
  /** Hazelcast logs through java.util.logging; only its warnings reach the node's log. */
  private static final Logger HAZELCAST_LOG = Logger.getLogger("com.hazelcast");
  private static final System.Logger LOG = System.getLogger("io.strata.node");
  private static final char SEP = '\u001f';

  private final Vertx vertx;
  private final HazelcastInstance hz;
  private final String self;
  private final MultiMap<String, String> residency;
  private final IMap<String, String> urls;
  private final IMap<String, String> jobs;
  private final IMap<String, Long> reads;
  /** Plans of ranks of distributed jobs, by job name: host, then the plan's JSON. */
  private final IMap<String, String> plans;
  private final AtomicReference<Runnable> nextPublish = new AtomicReference<>();
  /** What this node published last time (its entries that are gone are removed). */
  private Set<String> publishedJobs = Set.of();
  static final int PUBLISHED_TTL_SECONDS = 30;
  private final Map<String, String> urlCache = new ConcurrentHashMap<>();
  private final ThreadPoolExecutor worker;
  private final AtomicLong announced = new AtomicLong();
  private final AtomicLong retracted = new AtomicLong();
  private final AtomicLong membersLeft = new AtomicLong();
  private final AtomicLong cleaned = new AtomicLong();
  private final AtomicLong dropped = new AtomicLong();
  private volatile String lastLeft;
  private volatile boolean closed;

  private HazelcastCluster(Vertx vertx, HazelcastClusterManager manager) {
    this.vertx = vertx;
    this.hz = manager.getHazelcastInstance();
    // The Hazelcast member's id (Vert.x's node id is another): membership events name members by it.
    this.self = hz.getCluster().getLocalMember().getUuid().toString();
    this.residency = hz.getMultiMap("strata.residency");
    this.urls = hz.getMap("strata.nodes");
    this.jobs = hz.getMap("strata.jobs");
    this.reads = hz.getMap("strata.reads");
    this.plans = hz.getMap("strata.plans");
    this.worker = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new ArrayBlockingQueue<>(100_000), r -> {
      Thread t = new Thread(r, "strata-cluster");
      t.setDaemon(true);
      return t;
    }, (r, pool) -> dropped.incrementAndGet());
    hz.getCluster().addMembershipListener(new MembershipListener() {
      @Override
      public void memberAdded(MembershipEvent e) {}

      @Override
      public void memberRemoved(MembershipEvent e) {
        String id = e.getMember().getUuid().toString();
        urlCache.remove(id);
        submit(() -> left(id, e.getMember()));
      }
    });
  }

  /**
   * Joins (or forms) the cluster {@code s} describes and starts a clustered Vert.x with {@code
   * options}; fails with the reason when the cluster address cannot be bound or the join times out.
   */
  static HazelcastCluster join(ClusterSettings s, VertxOptions options) throws IOException {
    HAZELCAST_LOG.setLevel(Level.WARNING);
    Config c = ConfigUtil.loadConfig();
    c.setClusterName(s.name());
    c.setProperty("hazelcast.logging.type", "jdk");
    c.setProperty("hazelcast.phone.home.enabled", "false");
    c.setProperty("hazelcast.shutdownhook.enabled", "false");
    c.setProperty("hazelcast.socket.bind.any", "false");
    c.setProperty("hazelcast.heartbeat.interval.seconds", "1");
    c.setProperty("hazelcast.max.no.heartbeat.seconds", "5");
    c.setProperty("hazelcast.operation.call.timeout.millis", "5000");
    c.setProperty("hazelcast.wait.seconds.before.join", "1");
    c.setProperty("hazelcast.merge.first.run.delay.seconds", "5");
    c.setProperty("hazelcast.merge.next.run.delay.seconds", "5");
    NetworkConfig net = c.getNetworkConfig();
    net.setPort(s.port()).setPortAutoIncrement(false);
    net.getInterfaces().setEnabled(true).setInterfaces(List.of(s.host()));
    JoinConfig join = net.getJoin();
    join.getMulticastConfig().setEnabled(false);
    join.getAutoDetectionConfig().setEnabled(false);
    List<String> members = new ArrayList<>();
    for (String m : s.members()) {
      members.add(m.contains(":") ? m : m + ":" + s.port());
    }
    join.getTcpIpConfig().setEnabled(true).setMembers(members).setConnectionTimeoutSeconds(2);
    HazelcastClusterManager manager = new HazelcastClusterManager(c);
    options.getEventBusOptions().setHost(s.host()).setPort(0);
    try {
      Vertx v = Vertx.builder().with(options).withClusterManager(manager).buildClustered().toCompletionStage()
          .toCompletableFuture().get(120, TimeUnit.SECONDS);
      return new HazelcastCluster(v, manager);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      throw new IOException("cannot join cluster '" + s.name() + "' at " + s.host() + ":" + s.port() + ": " + cause.getMessage(), cause);
    } catch (TimeoutException e) {
      throw new IOException("joining cluster '" + s.name() + "' at " + s.host() + ":" + s.port() + " timed out after 120 s", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while joining cluster '" + s.name() + "'", e);
    }
  }

  /**
   * Removes the entries member {@code id} published: a key scan here rather than a predicate run
   * on the members (which would have to be serialized there).
   */
  private static void removeKeysOf(IMap<String, ?> map, String id) {
    for (String k : List.copyOf(map.keySet())) {
      if (k.startsWith(id + SEP)) {
        map.remove(k);
      }
    }
  }

  private static String key(SegmentRef ref) {
    return Cluster.chunkKey(ref.info().dataset(), ref.info().datasetVersion(), ref.info().columns().getFirst(), ref.info().chunk());
  }

  /** Whether a segment is offered to peers: one feature of a dataset (derived features live in each node's own store). */
  private static boolean shared(SegmentRef ref) {
    return ref.info().columns().size() == 1 && !Spec.looksDerived(ref.info().columns().getFirst());
  }

  private void submit(Runnable r) {
    if (!closed) {
      worker.execute(() -> {
        try {
          r.run();
        } catch (RuntimeException e) {
          if (!closed) {
            LOG.log(System.Logger.Level.WARNING, "cluster update failed: " + e);
          }
        }
      });
    }
  }

  @Override
  public boolean clustered() {
    return true;
  }

  @Override
  public void online(String url, List<SegmentRef> resident) {
    urls.put(self, url);
    for (SegmentRef r : resident) {
      announce(r);
    }
  }

  @Override
  public void announce(SegmentRef ref) {
    if (shared(ref)) {
      submit(() -> {
        residency.put(key(ref), self);
        announced.incrementAndGet();
      });
    }
  }

  @Override
  public void retract(SegmentRef ref) {
    if (shared(ref)) {
      submit(() -> {
        residency.remove(key(ref), self);
        retracted.incrementAndGet();
      });
    }
  }

  /** After a member left: forget its URL, and (on the oldest member) its residency entries. */
  private void left(String id, Member who) {
    membersLeft.incrementAndGet();
    lastLeft = who.getAddress() + " (" + id + ")";
    LOG.log(System.Logger.Level.WARNING, "cluster member " + lastLeft + " left; its chunks are no longer read from it");
    Set<Member> now = hz.getCluster().getMembers();
    if (now.isEmpty() || !now.iterator().next().localMember()) {
      return;
    }
    urls.remove(id);
    removeKeysOf(jobs, id);
    removeKeysOf(reads, id);
    for (Map.Entry<String, String> e : residency.entrySet()) {
      if (e.getValue().equals(id) && residency.remove(e.getKey(), id)) {
        cleaned.incrementAndGet();
      }
    }
  }

  @Override
  public void publish(List<Job> js, Map<String, Long> datasetReadBytes) {
    Runnable r = () -> {
      Set<String> now = new HashSet<>();
      for (Job j : js) {
        String key = self + SEP + j.job();
        now.add(key);
        jobs.put(key, String.join(String.valueOf(SEP), j.host(), j.job(), j.dataset(), Integer.toString(j.features()),
            Long.toString(j.stepsDone()), Long.toString(j.steps()), Long.toString(j.ssdBytes()), Long.toString(j.hddBytes())),
            PUBLISHED_TTL_SECONDS, TimeUnit.SECONDS);
      }
      for (String gone : publishedJobs) {
        if (!now.contains(gone)) {
          jobs.remove(gone);
        }
      }
      publishedJobs = now;
      for (Map.Entry<String, Long> e : datasetReadBytes.entrySet()) {
        reads.put(self + SEP + e.getKey(), e.getValue(), PUBLISHED_TTL_SECONDS, TimeUnit.SECONDS);
      }
    };
    // Only the newest snapshot is sent: one queued at most.
    if (nextPublish.getAndSet(r) == null) {
      submit(() -> {
        Runnable latest = nextPublish.getAndSet(null);
        if (latest != null) {
          latest.run();
        }
      });
    }
  }

  /** Per chunk, how many other nodes hold it (maintained from the residency's entry events). */
  private final Map<String, Integer> othersHolding = new ConcurrentHashMap<>();

  @Override
  public void watchHeldElsewhere(Holders listener) {
    residency.addEntryListener(new com.hazelcast.core.EntryAdapter<String, String>() {
      @Override
      public void entryAdded(com.hazelcast.core.EntryEvent<String, String> e) {
        if (!self.equals(e.getValue())) {
          changed(listener, e.getKey(), +1);
        }
      }

      @Override
      public void entryRemoved(com.hazelcast.core.EntryEvent<String, String> e) {
        String v = e.getOldValue() != null ? e.getOldValue() : e.getValue();
        if (v != null && !self.equals(v)) {
          changed(listener, e.getKey(), -1);
        }
      }
    }, true);
    for (Map.Entry<String, String> e : residency.entrySet()) {
      if (!self.equals(e.getValue())) {
        changed(listener, e.getKey(), +1);
      }
    }
  }

  private void changed(Holders listener, String key, int delta) {
    int[] transition = new int[1];
    othersHolding.compute(key, (k, n) -> {
      int now = Math.max(0, (n == null ? 0 : n) + delta);
      transition[0] = (n == null || n == 0) && now > 0 ? 1 : (n != null && n > 0 && now == 0) ? -1 : 0;
      return now == 0 ? null : now;
    });
    if (transition[0] != 0) {
      String[] p = key.split(String.valueOf(SEP), -1);
      if (p.length == 4) {
        listener.changed(p[0], p[1], p[2], Integer.parseInt(p[3]), transition[0] > 0);
      }
    }
  }

  @Override
  public void sharePlan(String job, String host, String plan) {
    plans.put(job, host + SEP + plan, (long) TierManager.PLAN_LEASE_SECONDS, TimeUnit.SECONDS);
  }

  @Override
  public Map<String, String> plansFor(Predicate<String> isThisHost) {
    Map<String, String> out = new TreeMap<>();
    for (Map.Entry<String, String> e : plans.entrySet()) {
      int at = e.getValue().indexOf(SEP);
      if (at > 0 && isThisHost.test(e.getValue().substring(0, at))) {
        out.put(e.getKey(), e.getValue().substring(at + 1));
      }
    }
    return out;
  }

  private List<Job> clusterJobs() {
    List<Job> out = new ArrayList<>();
    for (String v : jobs.values()) {
      String[] f = v.split(String.valueOf(SEP), -1);
      if (f.length == 8) {
        try {
          out.add(new Job(f[0], f[1], f[2], Integer.parseInt(f[3]), Long.parseLong(f[4]), Long.parseLong(f[5]),
              Long.parseLong(f[6]), Long.parseLong(f[7])));
        } catch (NumberFormatException ignored) {
          // Not ours: skipped.
        }
      }
    }
    out.sort(Comparator.comparing(Job::host).thenComparing(Job::job));
    return out;
  }

  private Map<String, Long> clusterReads() {
    Map<String, Long> out = new TreeMap<>();
    for (Map.Entry<String, Long> e : reads.entrySet()) {
      int at = e.getKey().indexOf(SEP);
      if (at > 0) {
        out.merge(e.getKey().substring(at + 1), e.getValue(), Long::sum);
      }
    }
    return out;
  }

  private Set<String> live() {
    Set<String> ids = new HashSet<>();
    for (Member m : hz.getCluster().getMembers()) {
      ids.add(m.getUuid().toString());
    }
    return ids;
  }

  @Override
  public List<Peer> peers() {
    if (closed) {
      return List.of();
    }
    List<Peer> peers = new ArrayList<>();
    for (String id : live()) {
      String url = id.equals(self) ? null : urlCache.computeIfAbsent(id, urls::get);
      if (url != null) {
        peers.add(new Peer(id, url));
      }
    }
    Collections.shuffle(peers);
    return peers;
  }

  @Override
  public List<Peer> holders(String dataset, String version, String feature, int chunk) {
    if (closed) {
      return List.of();
    }
    Collection<String> ids = residency.get(Cluster.chunkKey(dataset, version, feature, chunk));
    if (ids.isEmpty()) {
      return List.of();
    }
    Set<String> live = live();
    List<Peer> peers = new ArrayList<>();
    for (String id : ids) {
      if (id.equals(self) || !live.contains(id)) {
        continue;
      }
      String url = urlCache.computeIfAbsent(id, urls::get);
      if (url != null) {
        peers.add(new Peer(id, url));
      }
    }
    Collections.shuffle(peers);
    return peers;
  }

  @Override
  public View view() {
    List<String> members = new ArrayList<>();
    for (Member m : hz.getCluster().getMembers()) {
      members.add(m.getAddress().getHost() + ":" + m.getAddress().getPort() + (m.localMember() ? " (this node)" : ""));
    }
    int entries;
    List<Job> js;
    Map<String, Long> rs;
    try {
      entries = residency.size();
      js = clusterJobs();
      rs = clusterReads();
    } catch (RuntimeException e) {
      entries = -1;
      js = List.of();
      rs = Map.of();
    }
    return new View(self, members, entries, announced.get(), retracted.get(), membersLeft.get(), cleaned.get(), dropped.get(),
        lastLeft, js, rs, othersHolding.size());
  }

  @Override
  public Vertx vertx() {
    return vertx;
  }

  /** Stops the cluster thread; leaving the cluster is closing the Vert.x instance (the node does it). */
  @Override
  public void close() {
    closed = true;
    worker.shutdown();
    try {
      worker.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
