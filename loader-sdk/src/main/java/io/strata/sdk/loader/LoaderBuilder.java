package io.strata.sdk.loader;

import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.tier.SegmentSource;
import io.strata.sdk.files.SampleIndex;
import io.strata.sdk.derive.DerivedStore;
import io.strata.sdk.node.NodeClient;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * Configures a {@link Loader} ({@link Loader#builder}): the features, the batching (sample
 * batches, row batches shuffled singly or in blocks, windows), shuffling and sharding, epochs,
 * prefetch and assembly threads, where resident chunks come from (a segment source or a cache
 * node), derived features, the batch cache and exact resume; {@link #build()} checks them as a
 * whole. Not thread-safe: configure on one thread, then build.
 */
public final class LoaderBuilder {
  final Dataset dataset;
  SegmentSource store;
  List<String> features = List.of();
  BatchMode mode = BatchMode.SAMPLES;
  int samplesPerBatch = 512;
  int batchRows = 4096;
  int blockRows = 1;
  boolean blockRowsSet;
  int shuffleChunks;
  int windowLength;
  int lookahead;
  int stride = 1;
  int windowsPerBatch;
  long seed;
  boolean shuffle = true;
  int rank;
  int world = 1;
  boolean dropLast;
  int epochs = 1;
  int depth = 4;
  int threads = 1;
  int assemblyThreads = 1;
  Checkpoint resume;
  Path cacheRoot;
  int startEpoch;
  long cacheMaxBytes = 1L << 30;
  int cacheLookback = 2;
  Duration cacheStaleAfter = Duration.ofHours(24);
  String name;
  NodeClient nodeClient;
  String nodeJob;
  long nodeRefreshMillis = 2000;
  boolean substitutable;
  DerivedStore derivedStore;
  BatchMemory batchMemory = BatchMemory.offHeap();

  LoaderBuilder(Dataset dataset) {
    this.dataset = Objects.requireNonNull(dataset, "dataset");
  }

  /** The features to read (projection): column names, or derived specs such as {@code "log1p(price)"}. */
  public LoaderBuilder features(String... names) {
    this.features = List.of(names);
    return this;
  }

  public LoaderBuilder features(List<String> names) {
    this.features = List.copyOf(names);
    return this;
  }

  /**
   * Where resident features are read from: a local SSD tier ({@code SegmentStore}) or a cache
   * node; without one, everything comes from ORC.
   */
  public LoaderBuilder segments(SegmentSource store) {
    this.store = store;
    return this;
  }

  /** Batches of {@code samples} random samples with all their rows; needs the dataset's sample index. */
  public LoaderBuilder sampleBatches(int samples) {
    this.mode = BatchMode.SAMPLES;
    this.samplesPerBatch = samples;
    return this;
  }

  /**
   * Batches of {@code rows} rows, shuffled or in order. Shuffling permutes single rows unless
   * {@link #shuffleBlock} groups them.
   */
  public LoaderBuilder rowBatches(int rows, boolean shuffled) {
    this.mode = BatchMode.ROWS;
    this.batchRows = rows;
    this.shuffle = shuffled;
    return this;
  }

  /**
   * Shuffle within blocks of {@code chunks} whole chunks, the chunks taken in a shuffled order,
   * instead of across the whole epoch (samples and rows; 0, the default: across the whole epoch).
   * Each epoch then reads every chunk once, a block's chunks together: what a dataset larger than
   * memory and the SSD tier needs from its slow tier, at the price of batches that mix units of
   * {@code chunks} random chunks rather than of the whole dataset (MosaicML Streaming's {@code py1b}
   * shuffle, blocks aligned to chunks). The reader keeps a block's decoded chunks: memory grows
   * with {@code chunks}.
   */
  public LoaderBuilder shuffleChunks(int chunks) {
    if (chunks < 0) {
      throw new IllegalArgumentException("chunks per shuffle block must not be negative, got " + chunks);
    }
    this.shuffleChunks = chunks;
    return this;
  }

  /** Shuffle blocks of {@code rows} consecutive rows instead of single rows (kinder to ORC). */
  public LoaderBuilder shuffleBlock(int rows) {
    this.blockRows = rows;
    this.blockRowsSet = true;
    return this;
  }

  /**
   * Batches of {@code perBatch} windows: {@code length} consecutive rows of one entity (sample)
   * followed by {@code lookahead} label rows, a window starting every {@code stride} rows.
   */
  public LoaderBuilder windows(int length, int lookahead, int stride, int perBatch) {
    this.mode = BatchMode.WINDOWS;
    this.windowLength = length;
    this.lookahead = lookahead;
    this.stride = stride;
    this.windowsPerBatch = perBatch;
    return this;
  }

  public LoaderBuilder seed(long seed) {
    this.seed = seed;
    return this;
  }

  /** Visit units in a random order per epoch (default) or in dataset order. */
  public LoaderBuilder shuffle(boolean shuffle) {
    this.shuffle = shuffle;
    return this;
  }

  /** Read the part of rank {@code rank} of {@code world} (disjoint, together covering). */
  public LoaderBuilder shard(int rank, int world) {
    this.rank = rank;
    this.world = world;
    return this;
  }

  /** Drop the last, short batch of each epoch. */
  public LoaderBuilder dropLast(boolean dropLast) {
    this.dropLast = dropLast;
    return this;
  }

  public LoaderBuilder epochs(int epochs) {
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
  public LoaderBuilder assemblyThreads(int threads) {
    if (threads < 0 || threads > 256) {
      throw new IllegalArgumentException("assembly threads must be 1 to 256 (or AUTO), got " + threads);
    }
    this.assemblyThreads = threads;
    return this;
  }

  /** Assemble up to {@code depth} batches ahead on {@code threads} background threads. */
  public LoaderBuilder prefetch(int depth, int threads) {
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
  public LoaderBuilder node(NodeClient client, String job) {
    this.nodeClient = Objects.requireNonNull(client, "client");
    this.nodeJob = Objects.requireNonNull(job, "job");
    return this;
  }

  /** How often the loader asks the node where chunks live (default 2 s). */
  public LoaderBuilder nodeRefresh(long millis) {
    this.nodeRefreshMillis = millis;
    return this;
  }

  /** Lets the node reorder reads within an epoch so that resident chunks come first (declared with the plan). */
  public LoaderBuilder substitutable(boolean substitutable) {
    this.substitutable = substitutable;
    return this;
  }

  /**
   * The feature store for derived features (specs such as {@code "log1p(price)"} among the
   * features): complete features are read from it; a store that can write computes missing ones
   * once (others asking wait); otherwise they are computed here and the computation recorded.
   */
  public LoaderBuilder derivedStore(DerivedStore store) {
    this.derivedStore = store;
    return this;
  }

  /**
   * Where batches are assembled (default: {@link BatchMemory#offHeap()}): memory another process
   * maps or a GPU copies from, so that batches reach their consumer without a copy.
   */
  public LoaderBuilder batchMemory(BatchMemory memory) {
    this.batchMemory = Objects.requireNonNull(memory, "memory");
    return this;
  }

  /** Continue after {@code checkpoint}. */
  public LoaderBuilder resumeFrom(Checkpoint checkpoint) {
    this.resume = checkpoint;
    return this;
  }

  /**
   * Begin at the first batch of epoch {@code epoch} (what a checkpoint taken there would resume),
   * reading up to the end of the last of {@link #epochs}; a checkpoint given to {@link
   * #resumeFrom} wins. What a PyTorch job's {@code set_epoch} asks for.
   */
  public LoaderBuilder startEpoch(int epoch) {
    if (epoch < 0) {
      throw new IllegalArgumentException("the start epoch must not be negative, got " + epoch);
    }
    this.startEpoch = epoch;
    return this;
  }

  /** Keep batches in a persistent cache under {@code root} (see {@link #defaultBatchCacheRoot()}). */
  public LoaderBuilder batchCache(Path root) {
    this.cacheRoot = root;
    return this;
  }

  /** Bounds of the batch cache: total bytes, consumed batches kept, age after which other jobs' files go. */
  public LoaderBuilder batchCacheLimits(long maxBytes, int lookback, Duration staleAfter) {
    this.cacheMaxBytes = maxBytes;
    this.cacheLookback = lookback;
    this.cacheStaleAfter = staleAfter;
    return this;
  }

  /** Names the prefetch threads. */
  public LoaderBuilder name(String name) {
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
    Plan p = basePlan();
    if (shuffleChunks > 0) {
      if (mode == BatchMode.WINDOWS) {
        throw new IllegalArgumentException("windows cannot be shuffled by chunk blocks; use samples or rows");
      }
      p.shuffleChunkBlocks(shuffleChunks, dataset.table().chunkFirstRows());
    }
    return p;
  }

  private Plan basePlan() {
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
