package io.strata.node;

import io.strata.sdk.derive.Spec;
import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.files.OrcReads;
import io.strata.sdk.format.SegmentInfo;
import io.strata.sdk.tiering.DecodedChunks;
import io.strata.sdk.tiering.Promoter;
import io.strata.sdk.tiering.SegmentRef;
import io.strata.sdk.tiering.SegmentStore;
import io.strata.store.FeatureStore;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.DoubleSupplier;

/**
 * The file work of the SSD tier: writing segments (promotions of ORC features and of derived
 * features from the feature store, through the SDK's one promotion path {@link
 * Promoter#promoteChunk}) and unlinking evicted ones. Placements are decided by {@link TierState};
 * this class does them and reports back.
 *
 * <p>Threads and locks: promotions run on {@code strata-promote-N} (a fixed pool with a bounded
 * queue: {@link #submit} refuses rather than blocks, so the tier state may call it under its
 * monitor), rate-limited in bytes per second by a token bucket under this object's monitor, so
 * that promotion never starves the jobs' own reads; unlinking runs on {@code strata-evict}. A
 * promotion holds its dataset by a lease while it reads, and takes the tier state's monitor only
 * to report (never while holding this object's). In a cluster, a promotion first asks {@link
 * Cluster#holders} and copies the chunk from a peer ({@link PeerReads}), decoding ORC only when
 * no peer has it or the copy fails; landed segments are announced and unlinked ones retracted
 * (both queued, never blocking).
 */
final class PromotionQueue implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger("io.strata.node");

  private final NodeConfig config;
  private final SegmentStore store;
  private final FeatureStore features;
  private final DatasetRegistry datasets;
  private final TierState state;
  private final TierCounters counters;
  private final NodeMetrics metrics;
  private final DoubleSupplier clock;
  private final Cluster cluster;
  private final PeerReads peers;
  private final ThreadPoolExecutor promoter;
  private final ThreadPoolExecutor evictor;
  @GuardedBy("this")
  private double tokens;
  @GuardedBy("this")
  private double lastRefill = Double.NaN;
  private volatile boolean closed;

  PromotionQueue(NodeConfig config, SegmentStore store, FeatureStore features, DatasetRegistry datasets, TierState state,
      TierCounters counters, NodeMetrics metrics, DoubleSupplier clock, Cluster cluster) {
    this.config = config;
    this.cluster = cluster;
    this.peers = cluster.clustered() ? new PeerReads(config.token(), counters) : null;
    this.store = store;
    this.features = features;
    this.datasets = datasets;
    this.state = state;
    this.counters = counters;
    this.metrics = metrics;
    this.clock = clock;
    AtomicInteger n = new AtomicInteger();
    this.promoter = new ThreadPoolExecutor(config.promotionThreads(), config.promotionThreads(), 30, TimeUnit.SECONDS,
        new ArrayBlockingQueue<>(1024), r -> daemon(r, "strata-promote-" + n.incrementAndGet()));
    this.evictor = new ThreadPoolExecutor(1, 1, 30, TimeUnit.SECONDS, new ArrayBlockingQueue<>(4096),
        r -> daemon(r, "strata-evict"), new ThreadPoolExecutor.CallerRunsPolicy());
    this.tokens = config.promotionBytesPerSecond();
  }

  private static Thread daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }

  /** Queues the promotion of one feature chunk; false if the queue is full or closed. Never blocks. */
  boolean submit(int key, KeySpace.KeyInfo info) {
    if (closed) {
      return false;
    }
    try {
      promoter.execute(() -> promote(key, info));
      return true;
    } catch (RejectedExecutionException e) {
      return false;
    }
  }

  /** Unlinks an evicted segment on the evicting thread (mapped copies stay readable until unmapped); peers stop reading it here. */
  void unlink(SegmentRef ref) {
    cluster.retract(ref);
    evictor.execute(() -> removeQuietly(ref));
  }

  /** Runs on a promotion thread: decode one feature chunk (from ORC, or the feature store) and write its segment. */
  private void promote(int key, KeySpace.KeyInfo info) {
    try (DatasetRegistry.Lease lease = datasets.lease(info.dataset())) {
      Dataset ds = lease.dataset();
      if (!ds.version().equals(info.version())) {
        throw new IOException("dataset " + info.dataset() + " changed version");
      }
      boolean derived = Spec.isDerived(ds, info.feature());
      long t0 = System.nanoTime();
      Promoter.ChunkSource source;
      if (derived) {
        String fp = features.lookup(ds.name(), ds.version(), info.feature())
            .orElseThrow(() -> new IOException("derived feature " + info.feature() + " is no longer in the feature store"));
        source = storedFeature(fp, info.feature());
      } else {
        source = Promoter.ChunkSource.orc(ds);
      }
      SegmentRef ref = derived ? null : fromPeer(ds, info);
      DecodedChunks.Lease decoded = ref == null && !derived
          ? DecodedChunks.take(ds.name(), ds.version(), info.chunk(), info.feature()) : null;
      if (decoded != null) {
        // A job's reader in this JVM decoded the whole chunk just now: write that, read nothing.
        try (decoded) {
          SequencedMap<String, Column> cols = new LinkedHashMap<>();
          cols.put(info.feature(), decoded.column());
          ref = Promoter.promoteChunk(ds, store, info.chunk(), List.of(info.feature()), (c, f, a) -> cols, this::throttle);
        }
        counters.promotionsFromReaders.increment();
      }
      if (ref == null) {
        long orc0 = OrcReads.bytesOnThisThread();
        long w0 = System.nanoTime();
        ref = Promoter.promoteChunk(ds, store, info.chunk(), List.of(info.feature()), source, this::throttle);
        if (!derived) {
          counters.promotionOrcBytes.add(OrcReads.bytesOnThisThread() - orc0);
          counters.orcSegmentBytes.add(ref.bytes());
          counters.orcNanos.add(System.nanoTime() - w0);
        }
      }
      metrics.promotions(derived).record(System.nanoTime() - t0, TimeUnit.NANOSECONDS);
      if (state.landed(key, ref)) {
        cluster.announce(ref);
      } else {
        unlink(ref); // evicted while being written
      }
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt(); // the pool is shutting down
      }
      String what = info.dataset() + "/" + info.feature() + " chunk " + info.chunk();
      state.unplace(key);
      counters.promotionFailures.increment();
      counters.lastPromotionFailure = what + ": " + e.getMessage();
      if (!closed) {
        LOG.log(System.Logger.Level.WARNING, "promotion of " + what + " failed; it is served from ORC: " + e);
      }
    }
  }

  /** In a cluster: the chunk copied from a peer that holds it (verified), or null to decode it from ORC. */
  private SegmentRef fromPeer(Dataset ds, KeySpace.KeyInfo info) throws InterruptedException {
    if (peers == null) {
      return null;
    }
    List<Cluster.Peer> holders;
    try {
      holders = cluster.holders(ds.name(), ds.version(), info.feature(), info.chunk());
    } catch (RuntimeException e) {
      counters.peerFailures.increment();
      counters.lastPeerFailure = "residency lookup: " + e.getMessage();
      return null;
    }
    if (holders.isEmpty()) {
      return null;
    }
    ChunkInfo c = ds.chunks().get(info.chunk());
    SegmentInfo expected = new SegmentInfo(ds.name(), ds.version(), info.chunk(), c.firstRow(), c.endRow(), List.of(info.feature()));
    return peers.fetch(holders, expected, store, this::throttle);
  }

  /** This node's peer reads (null alone): derivations copy peers' derived features through them. */
  PeerReads peerReads() {
    return peers;
  }

  /**
   * Puts every chunk of a derived feature of {@code ds} on the SSD tier while the budget has room,
   * on the calling thread (a derivation job's); returns the segments written.
   */
  int placeDerived(Dataset ds, String canonical, String fingerprint) throws IOException {
    int placed = 0;
    for (int c = 0; c < ds.chunks().size(); c++) {
      int k = state.key(ds, canonical, c);
      if (!state.reserve(k)) {
        continue;
      }
      try {
        SegmentRef ref = Promoter.promoteChunk(ds, store, c, List.of(canonical), storedFeature(fingerprint, canonical),
            this::throttle);
        if (state.landed(k, ref)) {
          placed++;
        } else {
          unlink(ref);
        }
      } catch (IOException | RuntimeException e) {
        state.unplace(k);
        throw e;
      } catch (InterruptedException e) {
        state.unplace(k);
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("placing " + canonical + " on the SSD tier was interrupted at chunk " + c);
      }
    }
    return placed;
  }

  /** Chunks of a derived feature from the feature store, named {@code name} in their segments. */
  private Promoter.ChunkSource storedFeature(String fingerprint, String name) {
    return (chunk, names, arena) -> {
      SequencedMap<String, Column> cols = new LinkedHashMap<>();
      cols.put(name, features.chunk(fingerprint, chunk, arena));
      return cols;
    };
  }

  /** Waits until the promotion rate limit allows {@code bytes} more. */
  private void throttle(long bytes) throws InterruptedException {
    long rate = config.promotionBytesPerSecond();
    if (rate <= 0) {
      return;
    }
    while (true) {
      long wait;
      synchronized (this) {
        double t = clock.getAsDouble();
        if (!Double.isNaN(lastRefill)) {
          tokens = Math.min(rate, tokens + (t - lastRefill) * rate);
        }
        lastRefill = t;
        if (tokens >= Math.min(bytes, rate)) {
          tokens -= bytes;
          return;
        }
        wait = (long) Math.ceil((Math.min(bytes, rate) - tokens) * 1000.0 / rate);
      }
      Thread.sleep(Math.max(1, wait));
    }
  }

  private void removeQuietly(SegmentRef ref) {
    try {
      store.remove(ref);
    } catch (IOException ignored) {
      // The file is gone from the catalog; a failed unlink is retried at the next start-up scan.
    }
  }

  /** Whether no promotion is running or queued and no unlink is waiting. */
  boolean idle() {
    return promoter.getActiveCount() == 0 && promoter.getQueue().isEmpty() && evictor.getActiveCount() == 0
        && evictor.getQueue().isEmpty();
  }

  /** Stops taking work and waits (up to 30 s per pool) for what runs to finish. */
  @Override
  public void close() {
    closed = true;
    promoter.shutdown();
    evictor.shutdown();
    try {
      promoter.awaitTermination(30, TimeUnit.SECONDS);
      evictor.awaitTermination(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (peers != null) {
      peers.close();
    }
  }
}
