package io.strata.sdk.node;

import io.strata.sdk.SegmentLease;
import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.Column;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.tier.SegmentSource;
import io.strata.sdk.tier.Tier;
import io.strata.sdk.format.ResidencyBeacon;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.format.SegmentMappings;
import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The SSD tier as a cache node sees it, for one job on one dataset: residency comes from the
 * node ({@code resolve}, refreshed every {@code refreshMillis}, and as soon as the node's
 * residency counter moves: read from its beacon file where the node is on this host, at most
 * every {@value #BEACON_REFRESH_MILLIS} ms, else from a read report's answer), segments are mapped locally
 * (shared, reference counted), and every read is aggregated and reported to the node in the
 * background, with the job's plan declared up front.
 *
 * <p>When the node is down, resolving fails: chunks already mapped keep being read from their
 * segments (a mapping stays valid after the file is unlinked), the rest come from ORC, reports are
 * dropped, and every refresh tries again; when the node answers again the plan is declared anew.
 */
public final class NodeSegments implements SegmentSource, AutoCloseable {
  private final NodeClient client;
  private final String job;
  private final Dataset dataset;
  private final List<String> features;
  private final long refreshMillis;
  private final Map<String, Path> residency = new HashMap<>();
  private final SegmentMappings mappings;
  /** Bytes read since the last report, by feature, chunk and tier (called for every row a sample batch gathers: no strings made). */
  private final Map<ReadKey, long[]> pendingReads = new LinkedHashMap<>();

  private record ReadKey(String feature, int chunk, Tier tier) {}
  private final AtomicLong generation = new AtomicLong();
  private final Thread reporter;
  private Plan plan;
  private volatile boolean connected;
  private volatile boolean closed;
  private long lastRefresh;
  private String lastError;

  private record Plan(NodePlan program, boolean substitutable, List<String> features) {}

  /** The highest global step a reader of this job has started (-1 before the first). */
  private final AtomicLong step = new AtomicLong(-1);
  private long reportedStep = -1;
  private long reportedUnlinked;
  /** The node's residency counter as of the last resolve; a report answering another one makes the next read resolve again. */
  private volatile long resolvedResidency = -1;
  /** The node's residency counter, mapped (null: the node has none on this host). */
  private ResidencyBeacon beacon;
  /** The beacon's value when it last made a read resolve again. */
  private long beaconSeen = -1;
  /**
   * The shortest time between two resolves the beacon causes. Segments land and go many times a
   * second on a busy node; a job resolving on every change would spend its time asking. On
   * `bench policy-live`, resolving on the node's report answers alone (every 250 ms) lost the
   * live node 5 to 6 points of its byte hit ratio against its own replay; 25 ms lost none.
   */
  static final long BEACON_REFRESH_MILLIS = 20;
  private final AtomicLong readsReported = new AtomicLong();

  /**
   * Attaches to the node for {@code job} reading {@code features} of {@code dataset}. Does not
   * fail when the node is down; {@link #connected()} says whether it answered.
   */
  public NodeSegments(NodeClient client, String job, Dataset dataset, List<String> features, long refreshMillis) {
    this.client = client;
    this.job = job;
    this.dataset = dataset;
    this.features = List.copyOf(features);
    this.refreshMillis = refreshMillis;
    this.mappings = new SegmentMappings("job " + job + " on " + client.url(), false);
    refresh();
    this.reporter = Thread.ofPlatform().name("strata-node-reporter-" + job).daemon(true).start(this::reportLoop);
  }

  /**
   * Declares the job's plan over {@code planFeatures} (the raw features: derived ones are served
   * whole) now, and again, from the job's current step, whenever the node comes back or has
   * forgotten it (restart, lease expired).
   */
  public synchronized void declarePlan(NodePlan program, boolean substitutable, List<String> planFeatures) {
    plan = new Plan(program, substitutable, List.copyOf(planFeatures));
    sendPlan();
  }

  /** Jobs with plans on the node when this job last declared its own (0: not known). */
  private volatile int jobsPlanned;

  /** Jobs with plans on the node (this one included) when this job declared its plan; 0 when not known. */
  public int jobsPlanned() {
    return jobsPlanned;
  }

  private synchronized void sendPlan() {
    if (connected && plan != null && !plan.features().isEmpty()) {
      long at = Math.max(plan.program().startStep(), step.get());
      try {
        JsonNode answer = client.declarePlan(job, dataset.name(), plan.features(), plan.program().from(at), plan.substitutable());
        jobsPlanned = answer.path("jobsPlanned").asInt(0);
      } catch (NodeClient.NodeRequestException e) {
        // The node refused the plan (too large to expand, say): the job reads on without one.
        lastError = "the node refused the plan: " + e.getMessage();
        plan = null;
      } catch (IOException e) {
        disconnected(e);
      }
    }
  }

  @Override
  public void step(long g) {
    step.accumulateAndGet(g, Math::max);
  }

  /** Reads reported to the node and accepted (one per feature chunk and report). */
  public long readsReported() {
    return readsReported.get();
  }

  public boolean connected() {
    return connected;
  }

  /** The last error from the node, or null. */
  public synchronized String lastError() {
    return lastError;
  }

  private synchronized void disconnected(IOException e) {
    connected = false;
    lastError = e.getMessage();
  }

  /** Asks the node where the features live now. */
  public void refresh() {
    JsonNode r;
    try {
      r = client.resolve(job, dataset.name(), features, null);
    } catch (IOException e) {
      disconnected(e);
      synchronized (this) {
        lastRefresh = System.currentTimeMillis();
      }
      return;
    }
    boolean wasConnected;
    resolvedResidency = r.path("residency").asLong(-1);
    String beaconFile = r.path("residencyFile").asText(null);
    synchronized (this) {
      if (beaconFile != null && beacon == null && !closed) {
        beacon = ResidencyBeacon.open(Path.of(beaconFile));
      }
    }
    Map<String, Path> next = new HashMap<>();
    if (r.path("version").asText().equals(dataset.version())) {
      for (JsonNode s : r.path("segments")) {
        Path p = Path.of(s.path("path").asText());
        int chunk = s.path("chunk").asInt();
        for (JsonNode f : s.path("features")) {
          next.put(f.asText() + "\0" + chunk, p);
        }
      }
    }
    synchronized (this) {
      wasConnected = connected;
      connected = true;
      lastRefresh = System.currentTimeMillis();
      if (!next.equals(residency)) {
        // Segments the node no longer lists were evicted: their mappings are retired (unmapped
        // once readers let go, counted as unlinked-but-mapped until then).
        Set<Path> kept = new HashSet<>(next.values());
        for (Path gone : residency.values()) {
          if (!kept.contains(gone)) {
            mappings.retire(gone);
          }
        }
        residency.clear();
        residency.putAll(next);
        generation.incrementAndGet();
      }
    }
    if (!wasConnected) {
      sendPlan();
    }
  }

  @Override
  public long generation() {
    boolean due;
    synchronized (this) {
      long now = System.currentTimeMillis();
      due = !closed && now - lastRefresh >= refreshMillis;
      if (!due && !closed && beacon != null && now - lastRefresh >= BEACON_REFRESH_MILLIS) {
        // A frozen beacon (a node gone, a file replaced) never differs from what it showed last.
        long b = beacon.get();
        due = b != beaconSeen && b != resolvedResidency;
        beaconSeen = b;
      }
      if (due) {
        lastRefresh = now;
      }
    }
    if (due) {
      refresh();
    }
    return generation.get();
  }

  /** Whether the node still lists the chunk in {@code file} (as of the last refresh; true while the node is unreachable). */
  @Override
  public synchronized boolean stillResident(Dataset ds, String feature, int chunk, Path file) {
    return !connected || file.equals(residency.get(feature + "\0" + chunk));
  }

  @Override
  public synchronized boolean resident(Dataset ds, String feature, int chunk) {
    return residency.containsKey(feature + "\0" + chunk);
  }

  @Override
  public SegmentLease lease(Dataset ds, String feature, int chunk) throws IOException {
    Path p;
    synchronized (this) {
      p = residency.get(feature + "\0" + chunk);
    }
    if (p == null) {
      return null;
    }
    SegmentMappings.Ref ref;
    try {
      ref = mappings.acquire(p, path -> {
        SegmentFile f = SegmentFile.open(path, SegmentFile.Verify.FIRST_OPEN);
        if (!f.info().dataset().equals(ds.name()) || !f.info().datasetVersion().equals(ds.version())
            || f.info().chunk() != chunk) {
          f.close();
          throw new CorruptFileException(path, "holds " + f.info().dataset() + " " + f.info().datasetVersion() + " chunk "
              + f.info().chunk() + ", not chunk " + chunk + " of " + ds.name() + " " + ds.version());
        }
        return f;
      });
    } catch (NoSuchFileException e) {
      // Evicted since the node answered, or deleted under the node: the HDD tier serves it, and
      // the node is told (a node still listing a file that is gone drops it and places it again).
      damaged(ds, feature, chunk, p, "the segment file is gone: " + p);
      return null;
    } catch (CorruptFileException e) {
      // Damaged: the HDD tier serves it, and the node checks the file.
      damaged(ds, feature, chunk, p, e.getMessage());
      return null;
    }
    if (!ref.file().hasColumn(feature)) {
      ref.close();
      synchronized (this) {
        residency.remove(feature + "\0" + chunk);
      }
      return null;
    }
    return ref;
  }

  /**
   * A reader found the segment damaged after mapping it: no reader of this job maps it again
   * (until the node lists a new one), and the node is asked to check it, which drops it if damaged.
   */
  @Override
  public void damaged(Dataset ds, String feature, int chunk, Path file, String problem) {
    synchronized (this) {
      residency.values().removeIf(file::equals);
      mappings.retire(file);
      generation.incrementAndGet();
    }
    if (connected) {
      try {
        client.checkSegment(ds.name(), feature, chunk, problem);
      } catch (IOException e) {
        disconnected(e);
      }
    }
  }

  /**
   * Bytes of segments the node evicted that this job still keeps mapped (until its readers move
   * on): reported with the reads, so the node counts SSD space that is not free yet.
   */
  public long unlinkedMappedBytes() {
    return mappings.unlinkedMappedBytes();
  }

  @Override
  public void read(Dataset ds, String feature, int chunk, long bytes, Tier tier) {
    synchronized (pendingReads) {
      long[] a = pendingReads.computeIfAbsent(new ReadKey(feature, chunk, tier), k -> new long[1]);
      a[0] += bytes;
    }
  }

  /**
   * Reports reads every 250 ms until closed. Close wakes it through {@code pendingReads}' monitor
   * rather than by interrupting it: an interrupt during a report abandons the HTTP request while
   * the node may still receive it, after the job has ended its plan.
   */
  private void reportLoop() {
    while (!closed) {
      synchronized (pendingReads) {
        try {
          if (!closed) {
            pendingReads.wait(250);
          }
        } catch (InterruptedException e) {
          return;
        }
      }
      if (!closed) {
        flush();
      }
    }
  }

  private final Object flushLock = new Object();

  /**
   * Sends the reads aggregated since the last report; dropped when the node is down. One report
   * at a time: a caller's flush returns after any report in flight (so {@link #readsReported}
   * then counts every read made before the call).
   */
  public void flush() {
    synchronized (flushLock) {
      flushNow();
    }
  }

  private void flushNow() {
    List<NodeClient.Read> reads = new ArrayList<>();
    synchronized (pendingReads) {
      for (Map.Entry<ReadKey, long[]> e : pendingReads.entrySet()) {
        ReadKey k = e.getKey();
        reads.add(new NodeClient.Read(k.feature(), k.chunk(), e.getValue()[0], k.tier()));
      }
      pendingReads.clear();
    }
    long at = step.get();
    long unlinked = mappings.unlinkedMappedBytes();
    if ((reads.isEmpty() && at == reportedStep && unlinked == reportedUnlinked) || !connected) {
      return;
    }
    try {
      JsonNode r = client.reportReads(job, dataset.name(), reads, at, unlinked);
      reportedStep = at;
      reportedUnlinked = unlinked;
      readsReported.addAndGet(reads.size());
      if (r.has("residency") && r.path("residency").asLong() != resolvedResidency) {
        synchronized (this) {
          lastRefresh = 0; // segments landed or went: the next read resolves again
        }
      }
      if (plan != null && r.has("planned") && !r.path("planned").asBoolean()) {
        sendPlan(); // the node forgot the plan (it expired while this job was silent)
      }
    } catch (IOException e) {
      disconnected(e);
    }
  }

  /** Flushes reads, ends the plan on the node and unmaps every segment. */
  @Override
  public void close() {
    closed = true;
    synchronized (pendingReads) {
      pendingReads.notifyAll();
    }
    try {
      // A report in flight finishes first, so the last flush below comes after it.
      reporter.join(30_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    flush();
    if (connected && plan != null) {
      try {
        client.endPlan(job);
      } catch (IOException ignored) {
        // The node forgets plans on restart anyway.
      }
    }
    mappings.close();
    synchronized (this) {
      if (beacon != null) {
        beacon.close();
        beacon = null;
      }
    }
  }
}
