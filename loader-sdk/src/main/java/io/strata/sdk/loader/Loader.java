package io.strata.sdk.loader;

import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.tier.SegmentSource;
import io.strata.sdk.tier.TierStats;
import io.strata.sdk.derive.Derivation;
import io.strata.sdk.derive.Spec;
import io.strata.sdk.node.NodeSegments;
import io.strata.sdk.tiering.DerivedChunkSource;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Reads batches of a dataset for a training job: from memory-mapped segments where the features
 * are resident on the SSD tier, from ORC with projection otherwise.
 *
 * <p>Three ways to batch: {@linkplain LoaderBuilder#sampleBatches random samples} with all their rows
 * (seed 000), {@linkplain LoaderBuilder#rowBatches row batches} in sequential or shuffled order, and
 * {@linkplain LoaderBuilder#windows windows} of rows inside one entity with a lookahead for labels (seed
 * 003). Every epoch is a deterministic function of the seed; with {@linkplain LoaderBuilder#shard
 * sharding}, each rank sees a disjoint part and the ranks together see everything. Batches are
 * assembled ahead on named background threads, at most {@code depth} ahead of the job.
 *
 * <p>Threads: the job's thread calls {@link #next()} (and assembles a batch itself only when the
 * batch cache misses on a restart); each prefetch worker owns a {@link BatchAssembler} with its own
 * readers; with {@linkplain LoaderBuilder#assemblyThreads assembly threads}, a producer's feature groups
 * are filled on threads of its own, each reader always on the same one. Counters are atomic and
 * the tier statistics are adders; nothing else is shared between workers but the slab pool and
 * the segment source, both thread-safe.
 *
 * <p>{@link Batch#checkpoint()} is the whole state of the loader; a loader built with {@link
 * LoaderBuilder#resumeFrom} returns exactly the batch after it. With a {@linkplain LoaderBuilder#batchCache
 * persistent batch cache}, the batches around the checkpoint are kept in memory-mapped files
 * (under /dev/shm by default) and a restarted loader serves them first, before its readers are
 * ready.
 */
public final class Loader implements AutoCloseable, Iterable<Batch> {
  private static final AtomicInteger LOADERS = new AtomicInteger();

  private final Dataset dataset;
  private final SegmentSource store;
  private final NodeSegments node;
  private final List<String> features;
  private final Map<String, DerivedChunkSource> derived;
  private final Plan plan;
  private final int planHash;
  private final PlanProgram program;
  private final long stepsPerEpoch;
  private final long end;
  private final BatchCache cache;
  private final long cacheRunEnd;
  private final Prefetcher prefetcher;
  /** Substitutable reads: which step each delivered batch is; null when the plan's order is kept. */
  private final Substitution subst;
  private final SlabPool slabs;
  /** Threads that assemble one batch together (each a group of its features); 1: the producer's own. */
  private final int assemblyThreads;
  private final BatchAssembler.Shared shared;
  private final TierStats tierStats = new TierStats();
  private final long createdNanos = System.nanoTime();
  private final AtomicLong assembled = new AtomicLong();
  private long fromCache;
  private long firstBatchNanos = -1;
  private long next;
  private BatchAssembler fallback;
  private boolean closed;

  Loader(LoaderBuilder b) throws IOException {
    Boolean planAhead = planAheadSetting(); // a bad setting refused before anything is opened
    this.dataset = b.dataset;
    this.features = List.copyOf(b.features);
    if (features.isEmpty()) {
      throw new IllegalArgumentException("choose at least one feature");
    }
    Map<String, DerivedChunkSource> derivedSources = new HashMap<>();
    List<String> storageNames = new ArrayList<>();
    for (String f : features) {
      if (Spec.isDerived(dataset, f)) {
        Derivation d = Derivation.of(Spec.parse(f), dataset);
        if (b.nodeClient != null) {
          try {
            b.nodeClient.derive(dataset.name(), d.spec().canonical());
          } catch (IOException e) {
            // Without the node, the feature is computed here.
          }
        }
        derivedSources.put(f, new DerivedFeature(d, b.derivedStore, b.nodeJob != null ? b.nodeJob : b.name));
        storageNames.add(d.spec().canonical());
      } else {
        dataset.feature(f);
        storageNames.add(f);
      }
    }
    this.derived = Map.copyOf(derivedSources);
    this.plan = b.plan();
    if (b.nodeClient != null) {
      this.node = new NodeSegments(b.nodeClient, rankJob(b.nodeJob, plan.rank, plan.world), dataset,
          storageNames, b.nodeRefreshMillis);
      this.store = node;
    } else {
      this.node = null;
      this.store = b.store;
    }
    this.planHash = key().hashCode();
    this.stepsPerEpoch = plan.stepsPerEpoch();
    this.end = stepsPerEpoch * b.epochs;
    long start = 0;
    long planStart = 0;
    // A start epoch is a checkpoint at that epoch's first batch.
    Checkpoint resume = b.resume != null ? b.resume : b.startEpoch > 0 ? new Checkpoint(b.startEpoch, 0, planHash) : null;
    if (resume != null) {
      if (resume.planHash() != planHash) {
        throw new IllegalArgumentException(
            "the checkpoint belongs to a different plan (dataset, features, batching, seed or shard changed)");
      }
      if (resume.ahead() != 0 && !b.substitutable) {
        throw new IllegalArgumentException("the checkpoint was written by a loader with substitutable reads (it delivered steps"
            + " out of order); resume it with substitutable reads");
      }
      planStart = Math.min(end, resume.epoch() * stepsPerEpoch + resume.step());
      start = b.substitutable ? Math.min(end, Substitution.start(resume, stepsPerEpoch)) : planStart;
    }
    if (b.substitutable && b.cacheRoot != null) {
      throw new IllegalArgumentException("substitutable reads change the order of an epoch's batches; the batch cache needs the"
          + " plan's order: use one or the other");
    }
    this.subst = b.substitutable
        ? new Substitution(plan, dataset, store, storageNames, stepsPerEpoch, b.depth, planHash, resume) : null;
    this.next = start;
    this.program = PlanProgram.of(plan, b.epochs, planStart);
    if (node != null) {
      node.declarePlan(program, b.substitutable, features.stream().filter(f -> !Spec.isDerived(dataset, f)).toList());
    }
    // Slabs for the batches in the prefetch queue and being assembled, the batch the job holds, the
    // one it has let go of but not yet returned (a Python job returns it with its next request),
    // and one in transit.
    this.slabs = new SlabPool(b.depth + b.threads + 4, b.batchMemory);
    this.assemblyThreads = Math.min(b.assemblyThreads == LoaderBuilder.AUTO ? autoAssemblyThreads(b.threads) : b.assemblyThreads,
        features.size());
    if (b.cacheRoot != null) {
      cache = new BatchCache(b.cacheRoot, jobKey(), b.cacheMaxBytes, b.cacheLookback, b.cacheStaleAfter);
      cache.cleanTemporaries();
      long run = start;
      while (run < end && cache.has(run)) {
        run++;
      }
      cacheRunEnd = run;
    } else {
      cache = null;
      cacheRunEnd = start;
    }
    String name = "strata-prefetch-" + (b.name != null ? b.name : Integer.toString(LOADERS.incrementAndGet()));
    this.shared = new BatchAssembler.Shared(dataset, store, features, derived, tierStats, plan, planHash, stepsPerEpoch, slabs,
        assembled, cache, new AtomicInteger(), assemblyThreads, subst == null,
        subst == null && (planAhead != null ? planAhead : spareCore(b.threads)));
    // Where the assemblers plan ahead, the prefetch threads take their steps in turns, so that each
    // knows the step it makes next and plans that one (PlanAhead).
    this.prefetcher = plansAhead()
        ? Prefetcher.inTurns(name, b.threads, b.depth, cacheRunEnd, end, () -> new BatchAssembler(shared, true))
        : new Prefetcher(name, b.threads, b.depth, cacheRunEnd, end, () -> new BatchAssembler(shared, true),
            subst == null ? n -> n : subst::choose);
  }

  /**
   * Assembly threads per batch when the job asks the loader to choose: the cores shared among the
   * jobs planned on this host's node (1 without a node) and this loader's prefetch threads.
   */
  private int autoAssemblyThreads(int prefetchThreads) {
    int jobs = node == null ? 1 : Math.max(1, node.jobsPlanned());
    return Math.max(1, Runtime.getRuntime().availableProcessors() / (jobs * prefetchThreads));
  }

  /**
   * The system property {@code strata.loader.planAhead}: whether the assemblers order their next
   * batch of shuffled single rows on a thread of their own ({@link PlanAhead}): {@code true} or
   * {@code false} decide outright; {@code auto} (the default; null here) leaves it to
   * {@link #spareCore}, as it moves work to another core rather than saving it. Substitutable
   * reads never plan ahead: their steps are chosen as batches are claimed.
   */
  private static Boolean planAheadSetting() {
    String setting = System.getProperty("strata.loader.planAhead", "auto");
    return switch (setting) {
      case "true" -> true;
      case "false" -> false;
      case "auto" -> null;
      default -> throw new IllegalArgumentException("strata.loader.planAhead must be auto, true or false, got '" + setting + "'");
    };
  }

  /** Whether the host has a core more than the jobs planned on its node times this loader's prefetch and assembly threads take. */
  private boolean spareCore(int prefetchThreads) {
    int jobs = node == null ? 1 : Math.max(1, node.jobsPlanned());
    return Runtime.getRuntime().availableProcessors() > (long) jobs * prefetchThreads * assemblyThreads;
  }

  /**
   * Whether this loader's assemblers order each next batch of shuffled single rows on a thread of
   * their own while they gather the current one (chosen at build: a core to spare, no substitutable
   * reads; see {@code PlanAhead}).
   */
  public boolean plansAhead() {
    return shared.planAhead() && plan.singleRowUnits();
  }

  /** Threads each batch is assembled on (chosen at build when the builder asked for {@link LoaderBuilder#AUTO}). */
  public int assemblyThreads() {
    return assemblyThreads;
  }

  /** A builder for a loader over {@code dataset}. */
  public static LoaderBuilder builder(Dataset dataset) {
    return new LoaderBuilder(dataset);
  }

  private String key() {
    return dataset.name() + "|" + dataset.version() + "|" + features + "|" + plan.identity() + "|" + plan.seed + "|"
        + (plan.shuffle ? "shuffled/" + Permutation.ALGORITHM : "false") + "|" + plan.rank + "/" + plan.world + "|" + plan.dropLast;
  }

  /**
   * The name a rank of a distributed job has on the node: {@code job@rank} when the plan has more
   * than one rank (two ranks on one host would otherwise replace each other's plan, and a plan
   * declared for the whole job reaches each rank's host under this name), {@code job} otherwise.
   */
  public static String rankJob(String job, int rank, int world) {
    return world > 1 && !job.endsWith("@" + rank) ? job + "@" + rank : job;
  }

  /** Identifies this job's batches in the batch cache. */
  String jobKey() {
    try {
      byte[] h = MessageDigest.getInstance("SHA-256").digest(key().getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(h, 0, 10);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Batches per epoch for this rank. */
  public long stepsPerEpoch() {
    return stepsPerEpoch;
  }

  /** The checkpoint of the next batch {@link #next()} returns. */
  public Checkpoint position() {
    if (subst != null) {
      return subst.position();
    }
    return new Checkpoint((int) (stepsPerEpoch == 0 ? 0 : next / stepsPerEpoch), stepsPerEpoch == 0 ? 0 : next % stepsPerEpoch, planHash);
  }

  /** Bytes and time read per tier by this loader. */
  public TierStats tierStats() {
    return tierStats;
  }

  /**
   * Chunks of derived features this loader computed itself, because neither a store nor the SSD
   * tier held them (zero when every derived chunk was reused).
   */
  public long derivedChunksComputed() {
    long n = 0;
    for (DerivedChunkSource d : derived.values()) {
      if (d instanceof DerivedFeature f) {
        n += f.chunksComputed();
      }
    }
    return n;
  }

  /** Batches served from the persistent batch cache so far. */
  public long batchesFromCache() {
    return fromCache;
  }

  /** Batches assembled from the tiers so far (including prefetched ones not yet returned). */
  public long batchesAssembled() {
    return assembled.get();
  }

  /** Nanoseconds from building the loader to its first batch, or -1 before that. */
  public long timeToFirstBatchNanos() {
    return firstBatchNanos;
  }

  /** The cache node connection, or null when the loader reads a local tier or ORC only. */
  public NodeSegments node() {
    return node;
  }

  /** The batch cache directory of this job, or null without a cache. */
  public Path batchCacheDirectory() {
    return cache == null ? null : cache.dir();
  }

  /** The next batch, or null after the last epoch. The caller closes it. */
  public Batch next() throws IOException {
    if (closed) {
      throw new IllegalStateException("the loader is closed");
    }
    if (next >= end) {
      return null;
    }
    long g = next;
    Batch b = null;
    if (g < cacheRunEnd) {
      b = cache.open(g, epochOf(g), stepOf(g), planHash, stepsPerEpoch);
      if (b != null) {
        fromCache++;
        if (node != null) {
          node.step(g);
        }
      } else {
        if (fallback == null) {
          fallback = new BatchAssembler(shared, false);
        }
        b = fallback.produce(g);
      }
    } else {
      b = prefetcher.take();
      if (subst != null && b != null) {
        subst.delivered(b.epoch(), b.step());
        b.checkpointAfter(subst.position());
      }
    }
    next++;
    if (cache != null) {
      cache.consumed(g);
    }
    if (firstBatchNanos < 0) {
      firstBatchNanos = System.nanoTime() - createdNanos;
    }
    return b;
  }

  private int epochOf(long g) {
    return (int) (g / stepsPerEpoch);
  }

  private long stepOf(long g) {
    return g % stepsPerEpoch;
  }

  @Override
  public Iterator<Batch> iterator() {
    return new Iterator<>() {
      private Batch pending;

      @Override
      public boolean hasNext() {
        if (pending == null) {
          try {
            pending = Loader.this.next();
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }
        return pending != null;
      }

      @Override
      public Batch next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        Batch b = pending;
        pending = null;
        return b;
      }
    };
  }

  /** Stops the prefetch threads and releases memory; batches already returned stay valid until closed. */
  @Override
  public void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true;
    prefetcher.close();
    if (fallback != null) {
      fallback.close();
    }
    slabs.close();
    if (node != null) {
      node.close();
    }
  }


  /**
   * This loader's plan as a program, from the step it started at: what it declares to a cache
   * node, which expands it into the chunks of every step.
   */
  public PlanProgram planProgram() {
    return program;
  }

  @Override
  public String toString() {
    return "Loader[" + dataset.name() + " " + plan.describe() + ", rank " + plan.rank + "/" + plan.world + ", next "
        + position() + "]";
  }

  List<String> features() {
    return new ArrayList<>(features);
  }
}
