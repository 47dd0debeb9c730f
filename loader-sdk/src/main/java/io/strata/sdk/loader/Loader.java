package io.strata.sdk.loader;

import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.dataset.SegmentSource;
import io.strata.sdk.TierStats;
import io.strata.sdk.files.SampleIndex;
import io.strata.sdk.derive.Derivation;
import io.strata.sdk.derive.DerivedStore;
import io.strata.sdk.derive.Spec;
import io.strata.sdk.node.NodeClient;
import io.strata.sdk.node.NodeSegments;
import io.strata.sdk.tier.DerivedChunkSource;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Reads batches of a dataset for a training job: from memory-mapped segments where the features
 * are resident on the SSD tier, from ORC with projection otherwise.
 *
 * <p>Three ways to batch: {@linkplain Builder#sampleBatches random samples} with all their rows
 * (seed 000), {@linkplain Builder#rowBatches row batches} in sequential or shuffled order, and
 * {@linkplain Builder#windows windows} of rows inside one entity with a lookahead for labels (seed
 * 003). Every epoch is a deterministic function of the seed; with {@linkplain Builder#shard
 * sharding}, each rank sees a disjoint part and the ranks together see everything. Batches are
 * assembled ahead on named background threads, at most {@code depth} ahead of the job.
 *
 * <p>Threads: the job's thread calls {@link #next()} (and assembles a batch itself only when the
 * batch cache misses on a restart); each prefetch worker owns a {@link BatchAssembler} with its own
 * readers; with {@linkplain Builder#assemblyThreads assembly threads}, a producer's feature groups
 * are filled on threads of its own, each reader always on the same one. Counters are atomic and
 * the tier statistics are adders; nothing else is shared between workers but the slab pool and
 * the segment source, both thread-safe.
 *
 * <p>{@link Batch#checkpoint()} is the whole state of the loader; a loader built with {@link
 * Builder#resumeFrom} returns exactly the batch after it. With a {@linkplain Builder#batchCache
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

  private Loader(Builder b) throws IOException {
    this.dataset = b.dataset;
    this.features = List.copyOf(b.features);
    if (features.isEmpty()) {
      throw new IllegalArgumentException("choose at least one feature");
    }
    Map<String, DerivedChunkSource> derivedSources = new HashMap<>();
    List<String> storageNames = new ArrayList<>();
    for (String f : features) {
      if (Spec.isDerived(f)) {
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
      node.declarePlan(program, b.substitutable, features.stream().filter(f -> !Spec.isDerived(f)).toList());
    }
    // Slabs for the batches in the prefetch queue and being assembled, the batch the job holds, the
    // one it has let go of but not yet returned (a Python job returns it with its next request),
    // and one in transit.
    this.slabs = new SlabPool(b.depth + b.threads + 4, b.batchMemory);
    this.assemblyThreads = Math.min(b.assemblyThreads == Builder.AUTO ? autoAssemblyThreads(b.threads) : b.assemblyThreads,
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
        assembled, cache, new AtomicInteger(), assemblyThreads, subst == null);
    this.prefetcher = new Prefetcher(name, b.threads, b.depth, cacheRunEnd, end, () -> new BatchAssembler(shared, true),
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

  /** Threads each batch is assembled on (chosen at build when the builder asked for {@link Builder#AUTO}). */
  public int assemblyThreads() {
    return assemblyThreads;
  }

  /** A builder for a loader over {@code dataset}. */
  public static Builder builder(Dataset dataset) {
    return new Builder(dataset);
  }

  private String key() {
    return dataset.name() + "|" + dataset.version() + "|" + features + "|" + plan.describe() + "|" + plan.seed + "|"
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

  /** Configures a {@link Loader}. */
  public static final class Builder {
    private final Dataset dataset;
    private SegmentSource store;
    private List<String> features = List.of();
    private BatchMode mode = BatchMode.SAMPLES;
    private int samplesPerBatch = 512;
    private int batchRows = 4096;
    private int blockRows = 1;
    private boolean blockRowsSet;
    private int windowLength;
    private int lookahead;
    private int stride = 1;
    private int windowsPerBatch;
    private long seed;
    private boolean shuffle = true;
    private int rank;
    private int world = 1;
    private boolean dropLast;
    private int epochs = 1;
    private int depth = 4;
    private int threads = 1;
    private int assemblyThreads = 1;
    private Checkpoint resume;
    private Path cacheRoot;
    private int startEpoch;
    private long cacheMaxBytes = 1L << 30;
    private int cacheLookback = 2;
    private Duration cacheStaleAfter = Duration.ofHours(24);
    private String name;
    private NodeClient nodeClient;
    private String nodeJob;
    private long nodeRefreshMillis = 2000;
    private boolean substitutable;
    private DerivedStore derivedStore;
    private BatchMemory batchMemory = BatchMemory.offHeap();

    private Builder(Dataset dataset) {
      this.dataset = Objects.requireNonNull(dataset, "dataset");
    }

    /** The features to read (projection): column names, or derived specs such as {@code "log1p(price)"}. */
    public Builder features(String... names) {
      this.features = List.of(names);
      return this;
    }

    public Builder features(List<String> names) {
      this.features = List.copyOf(names);
      return this;
    }

    /**
     * Where resident features are read from: a local SSD tier ({@code SegmentStore}) or a cache
     * node; without one, everything comes from ORC.
     */
    public Builder segments(SegmentSource store) {
      this.store = store;
      return this;
    }

    /** Batches of {@code samples} random samples with all their rows; needs the dataset's sample index. */
    public Builder sampleBatches(int samples) {
      this.mode = BatchMode.SAMPLES;
      this.samplesPerBatch = samples;
      return this;
    }

    /**
     * Batches of {@code rows} rows, shuffled or in order. Shuffling permutes single rows unless
     * {@link #shuffleBlock} groups them.
     */
    public Builder rowBatches(int rows, boolean shuffled) {
      this.mode = BatchMode.ROWS;
      this.batchRows = rows;
      this.shuffle = shuffled;
      return this;
    }

    /** Shuffle blocks of {@code rows} consecutive rows instead of single rows (kinder to ORC). */
    public Builder shuffleBlock(int rows) {
      this.blockRows = rows;
      this.blockRowsSet = true;
      return this;
    }

    /**
     * Batches of {@code perBatch} windows: {@code length} consecutive rows of one entity (sample)
     * followed by {@code lookahead} label rows, a window starting every {@code stride} rows.
     */
    public Builder windows(int length, int lookahead, int stride, int perBatch) {
      this.mode = BatchMode.WINDOWS;
      this.windowLength = length;
      this.lookahead = lookahead;
      this.stride = stride;
      this.windowsPerBatch = perBatch;
      return this;
    }

    public Builder seed(long seed) {
      this.seed = seed;
      return this;
    }

    /** Visit units in a random order per epoch (default) or in dataset order. */
    public Builder shuffle(boolean shuffle) {
      this.shuffle = shuffle;
      return this;
    }

    /** Read the part of rank {@code rank} of {@code world} (disjoint, together covering). */
    public Builder shard(int rank, int world) {
      this.rank = rank;
      this.world = world;
      return this;
    }

    /** Drop the last, short batch of each epoch. */
    public Builder dropLast(boolean dropLast) {
      this.dropLast = dropLast;
      return this;
    }

    public Builder epochs(int epochs) {
      if (epochs < 1) {
        throw new IllegalArgumentException("epochs must be at least 1, got " + epochs);
      }
      this.epochs = epochs;
      return this;
    }

    /** {@link #assemblyThreads}: let the loader choose from the cores and the jobs on the host. */
    public static final int AUTO = 0;

    /**
     * Assemble each batch on {@code threads} threads at once, each filling a group of the
     * features of about equal bytes per row (1, the default: one thread per batch; {@link #AUTO}:
     * the host's cores divided among the jobs its node has plans for and this loader's prefetch
     * threads, at most one per feature). The batches are the same either way; splitting shortens
     * each batch's assembly, for a job that waits on one batch at a time or a GPU that wants
     * batches sooner.
     */
    public Builder assemblyThreads(int threads) {
      if (threads < 0 || threads > 256) {
        throw new IllegalArgumentException("assembly threads must be 1 to 256 (or AUTO), got " + threads);
      }
      this.assemblyThreads = threads;
      return this;
    }

    /** Assemble up to {@code depth} batches ahead on {@code threads} background threads. */
    public Builder prefetch(int depth, int threads) {
      if (depth < 1 || threads < 1) {
        throw new IllegalArgumentException("prefetch depth and threads must be at least 1");
      }
      this.depth = depth;
      this.threads = threads;
      return this;
    }

    /**
     * Reads resident features through a cache node as job {@code job}: the node says where chunks
     * live, receives every read and the job's plan, and promotes what jobs share. The loader keeps
     * working (from ORC) while the node is down and re-attaches when it returns.
     */
    public Builder node(NodeClient client, String job) {
      this.nodeClient = Objects.requireNonNull(client, "client");
      this.nodeJob = Objects.requireNonNull(job, "job");
      return this;
    }

    /** How often the loader asks the node where chunks live (default 2 s). */
    public Builder nodeRefresh(long millis) {
      this.nodeRefreshMillis = millis;
      return this;
    }

    /** Lets the node reorder reads within an epoch so that resident chunks come first (declared with the plan). */
    public Builder substitutable(boolean substitutable) {
      this.substitutable = substitutable;
      return this;
    }

    /**
     * The feature store for derived features (specs such as {@code "log1p(price)"} among the
     * features): complete features are read from it; a store that can write computes missing ones
     * once (others asking wait); otherwise they are computed here and the computation recorded.
     */
    public Builder derivedStore(DerivedStore store) {
      this.derivedStore = store;
      return this;
    }

    /**
     * Where batches are assembled (default: {@link BatchMemory#offHeap()}): memory another process
     * maps or a GPU copies from, so that batches reach their consumer without a copy.
     */
    public Builder batchMemory(BatchMemory memory) {
      this.batchMemory = Objects.requireNonNull(memory, "memory");
      return this;
    }

    /** Continue after {@code checkpoint}. */
    public Builder resumeFrom(Checkpoint checkpoint) {
      this.resume = checkpoint;
      return this;
    }

    /**
     * Begin at the first batch of epoch {@code epoch} (what a checkpoint taken there would resume),
     * reading up to the end of the last of {@link #epochs}; a checkpoint given to {@link
     * #resumeFrom} wins. What a PyTorch job's {@code set_epoch} asks for.
     */
    public Builder startEpoch(int epoch) {
      if (epoch < 0) {
        throw new IllegalArgumentException("the start epoch must not be negative, got " + epoch);
      }
      this.startEpoch = epoch;
      return this;
    }

    /** Keep batches in a persistent cache under {@code root} (see {@link #defaultBatchCacheRoot()}). */
    public Builder batchCache(Path root) {
      this.cacheRoot = root;
      return this;
    }

    /** Bounds of the batch cache: total bytes, consumed batches kept, age after which other jobs' files go. */
    public Builder batchCacheLimits(long maxBytes, int lookback, Duration staleAfter) {
      this.cacheMaxBytes = maxBytes;
      this.cacheLookback = lookback;
      this.cacheStaleAfter = staleAfter;
      return this;
    }

    /** Names the prefetch threads. */
    public Builder name(String name) {
      this.name = name;
      return this;
    }

    /**
     * {@code /dev/shm/strata-UID/batches} when /dev/shm is writable, else the same under the
     * temporary directory: a directory private to this user (created 0700; refused, naming the
     * reason, when it is a link, another user's or writable by others).
     */
    public static Path defaultBatchCacheRoot() {
      return BatchCache.defaultRoot();
    }

    Plan plan() {
      return switch (mode) {
        case SAMPLES -> new Plan.Samples(samples("sample batches"), samplesPerBatch, seed, shuffle, rank, world, dropLast);
        case ROWS -> {
          int block = blockRowsSet ? blockRows : (shuffle ? 1 : batchRows);
          if (batchRows % block != 0) {
            throw new IllegalArgumentException("batch rows (" + batchRows + ") must be a multiple of the shuffle block (" + block + ")");
          }
          yield new Plan.Rows(dataset.rows(), block, batchRows / block, seed, shuffle, rank, world, dropLast);
        }
        case WINDOWS -> new Plan.Windows(samples("windows"), windowLength, lookahead, stride, windowsPerBatch, seed,
            shuffle, rank, world, dropLast);
      };
    }

    private SampleIndex samples(String what) {
      return dataset.sampleIndex()
          .orElseThrow(() -> new IllegalArgumentException(
              what + " need a sample index, and dataset " + dataset.name() + " has none (import with --sample-column)"));
    }

    public Loader build() throws IOException {
      return new Loader(this);
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
