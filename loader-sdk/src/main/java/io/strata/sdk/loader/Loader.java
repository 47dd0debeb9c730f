package io.strata.sdk.loader;

import io.strata.sdk.Column;
import io.strata.sdk.ColumnBuilder;
import io.strata.sdk.Dataset;
import io.strata.sdk.dataset.SampleIndex;
import io.strata.sdk.derive.DerivedStore;
import io.strata.sdk.derive.Derivation;
import io.strata.sdk.derive.Spec;
import io.strata.sdk.tier.DerivedChunkSource;
import java.util.HashMap;
import java.util.Map;
import io.strata.sdk.tier.TieredReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.SequencedMap;
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
 * batch cache misses on a restart); each prefetch worker owns a {@code Producer} with its own
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
  private final io.strata.sdk.node.NodeSegments node;
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
  private final SlabPool slabs;
  /** Threads that assemble one batch together (each a group of its features); 1: the producer's own. */
  private final int assemblyThreads;
  private final java.util.concurrent.atomic.AtomicInteger assemblerNames = new java.util.concurrent.atomic.AtomicInteger();
  private final TierStats tierStats = new TierStats();
  private final long createdNanos = System.nanoTime();
  private final AtomicLong assembled = new AtomicLong();
  private long fromCache;
  private long firstBatchNanos = -1;
  private long next;
  private Producer fallback;
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
      this.node = new io.strata.sdk.node.NodeSegments(b.nodeClient, b.nodeJob, dataset, storageNames, b.nodeRefreshMillis);
      this.store = node;
    } else {
      this.node = null;
      this.store = b.store;
    }
    this.planHash = key().hashCode();
    this.stepsPerEpoch = plan.stepsPerEpoch();
    this.end = stepsPerEpoch * b.epochs;
    long start = 0;
    if (b.resume != null) {
      if (b.resume.planHash() != planHash) {
        throw new IllegalArgumentException(
            "the checkpoint belongs to a different plan (dataset, features, batching, seed or shard changed)");
      }
      start = Math.min(end, b.resume.epoch() * stepsPerEpoch + b.resume.step());
    }
    this.next = start;
    this.program = PlanProgram.of(plan, b.epochs, start);
    if (node != null) {
      node.declarePlan(program, b.substitutable, features.stream().filter(f -> !Spec.isDerived(f)).toList());
    }
    this.slabs = new SlabPool(b.depth + b.threads + 2, b.batchMemory);
    this.assemblyThreads = Math.min(b.assemblyThreads, features.size());
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
    this.prefetcher = new Prefetcher(name, b.threads, b.depth, cacheRunEnd, end, () -> new Producer(true));
  }

  /** A builder for a loader over {@code dataset}. */
  public static Builder builder(Dataset dataset) {
    return new Builder(dataset);
  }

  private String key() {
    return dataset.name() + "|" + dataset.version() + "|" + features + "|" + plan.describe() + "|" + plan.seed + "|"
        + plan.shuffle + "|" + plan.rank + "/" + plan.world + "|" + plan.dropLast;
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
  public io.strata.sdk.node.NodeSegments node() {
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
          fallback = new Producer(false);
        }
        b = fallback.produce(g);
      }
    } else {
      b = prefetcher.take();
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

  /** Assembles batches; one per worker thread, plus one for cache misses on the job's thread. */
  private final class Producer implements Prefetcher.Producer {
    /** One reader per part of the batch: all features, or feature groups assembled at once. */
    private final TieredReader[] readers;
    /** For each reader, the positions of its features in {@link #features}. */
    private final int[][] positions;
    /**
     * The thread of each reader but the first (which runs on the producer's own thread): a reader
     * always runs on the same thread, as its decoded ORC blocks live in thread-confined memory.
     */
    private final java.util.concurrent.ExecutorService[] partThreads;
    private final boolean writeCache;
    private int orderEpoch = -1;
    private Permutation order;

    Producer(boolean writeCache) {
      this.positions = partition(assemblyThreads);
      this.readers = new TieredReader[positions.length];
      for (int r = 0; r < positions.length; r++) {
        List<String> part = new ArrayList<>();
        for (int i : positions[r]) {
          part.add(features.get(i));
        }
        readers[r] = new TieredReader(dataset, store, part, tierStats, derived);
      }
      this.partThreads = new java.util.concurrent.ExecutorService[readers.length];
      for (int r = 1; r < readers.length; r++) {
        partThreads[r] = java.util.concurrent.Executors.newSingleThreadExecutor(
            t -> Thread.ofPlatform().name("strata-assemble-" + assemblerNames.incrementAndGet()).daemon(true).unstarted(t));
      }
      this.writeCache = writeCache;
    }

    /**
     * Splits the features into {@code parts} groups of about equal bytes per row (longest first
     * onto the lightest group), so that the groups' threads finish together.
     */
    private int[][] partition(int parts) {
      int n = Math.max(1, Math.min(parts, features.size()));
      List<List<Integer>> groups = new ArrayList<>();
      long[] load = new long[n];
      for (int k = 0; k < n; k++) {
        groups.add(new ArrayList<>());
      }
      List<Integer> order = new ArrayList<>();
      for (int i = 0; i < features.size(); i++) {
        order.add(i);
      }
      order.sort((a, c) -> Long.compare(weight(c), weight(a)));
      for (int i : order) {
        int lightest = 0;
        for (int k = 1; k < n; k++) {
          if (load[k] < load[lightest]) {
            lightest = k;
          }
        }
        groups.get(lightest).add(i);
        load[lightest] += weight(i);
      }
      int[][] out = new int[n][];
      for (int k = 0; k < n; k++) {
        out[k] = groups.get(k).stream().sorted().mapToInt(Integer::intValue).toArray();
      }
      return out;
    }

    /** Estimated bytes per row of feature {@code i}: its width, or a guess for strings and lists. */
    private long weight(int i) {
      DerivedChunkSource d = derived.get(features.get(i));
      io.strata.sdk.FeatureType t = d != null ? d.type() : dataset.feature(features.get(i)).type();
      int w = t.kind().width();
      return w > 0 ? w : w == 0 ? 1 : t.isVariableWidth() ? 16 : 64;
    }

    @Override
    public Batch produce(long g) throws IOException {
      int epoch = epochOf(g);
      long step = stepOf(g);
      if (store != null) {
        store.step(g);
        for (TieredReader reader : readers) {
          reader.refresh();
        }
      }
      if (epoch != orderEpoch) {
        order = plan.order(epoch);
        orderEpoch = epoch;
      }
      int units = plan.unitsInStep(step);
      int[] offsets = new int[units + 1];
      long[] ids = new long[units];
      long[] starts = new long[units];
      int rows = 0;
      boolean singleRows = true;
      for (int k = 0; k < units; k++) {
        long u = plan.unit(order, step, k);
        starts[k] = plan.unitStart(u);
        ids[k] = plan.unitId(u);
        offsets[k] = rows;
        int unitRows = plan.unitRows(u);
        singleRows &= unitRows == 1;
        rows = Math.addExact(rows, unitRows);
        offsets[k + 1] = rows;
      }
      SlabPool.Memory memory = slabs.take();
      boolean ok = false;
      try {
        Column[] built = new Column[features.size()];
        if (readers.length == 1) {
          assemble(readers[0], memory, rows, units, starts, offsets, singleRows, positions[0], built);
        } else {
          // Several threads fill one batch: the slab hands out memory to one at a time.
          java.lang.foreign.SegmentAllocator shared = (size, align) -> {
            synchronized (memory) {
              return memory.allocate(size, align);
            }
          };
          int finalRows = rows;
          boolean finalSingle = singleRows;
          List<java.util.concurrent.Future<?>> parts = new ArrayList<>();
          for (int r = 1; r < readers.length; r++) {
            TieredReader reader = readers[r];
            int[] pos = positions[r];
            parts.add(partThreads[r].submit(() -> {
              assemble(reader, shared, finalRows, units, starts, offsets, finalSingle, pos, built);
              return null;
            }));
          }
          Throwable failure = null;
          try {
            assemble(readers[0], shared, rows, units, starts, offsets, singleRows, positions[0], built);
          } catch (IOException | RuntimeException | Error e) {
            failure = e;
          }
          // Every part finishes before the batch's memory can go back to the pool, even when this
          // thread is interrupted meanwhile: a part still writing would write into another batch.
          boolean interrupted = false;
          for (var f : parts) {
            while (true) {
              try {
                f.get();
                break;
              } catch (java.util.concurrent.ExecutionException e) {
                failure = failure == null ? e.getCause() : failure;
                break;
              } catch (InterruptedException e) {
                interrupted = true;
              }
            }
          }
          if (interrupted) {
            Thread.currentThread().interrupt();
            failure = failure == null ? new InterruptedException() : failure;
          }
          if (failure instanceof IOException io) {
            throw io;
          } else if (failure instanceof RuntimeException re) {
            throw re;
          } else if (failure instanceof Error err) {
            throw err;
          } else if (failure != null) {
            throw new java.io.InterruptedIOException("interrupted while assembling batch " + g);
          }
        }
        SequencedMap<String, Column> cols = new LinkedHashMap<>();
        for (int i = 0; i < features.size(); i++) {
          cols.put(features.get(i), built[i]);
        }
        int window = plan instanceof Plan.Windows w ? w.length() : 0;
        int lookahead = plan instanceof Plan.Windows w ? w.lookahead() : 0;
        Batch b = new Batch(epoch, step, planHash, stepsPerEpoch, rows, cols, offsets, ids, window, lookahead,
            Batch.Source.ASSEMBLED, memory);
        assembled.incrementAndGet();
        if (writeCache && cache != null) {
          cache.store(g, b, dataset.name(), dataset.version());
        }
        ok = true;
        return b;
      } finally {
        if (!ok) {
          memory.close();
        }
      }
    }


    /**
     * Assembles the features at {@code pos} of one batch with {@code reader} (whose features they
     * are, in that order) into {@code built}: sized first, then appended unit by unit.
     */
    private void assemble(TieredReader reader, java.lang.foreign.SegmentAllocator allocator, int rows, int units, long[] starts,
        int[] offsets, boolean singleRows, int[] pos, Column[] built) throws IOException {
      List<ColumnBuilder> builders = reader.builders(allocator, rows);
      int n = pos.length;
      long[] dataBytes = new long[n];
      long[] childRows = new long[n];
      long[] childBytes = new long[n];
      boolean allFixed = builders.stream().allMatch(b -> b.type().isFixedWidth());
      if (!allFixed) {
        for (int k = 0; k < units; k++) {
          reader.measure(starts[k], offsets[k + 1] - offsets[k], dataBytes, childRows, childBytes);
        }
        for (int i = 0; i < n; i++) {
          ColumnBuilder b = builders.get(i);
          if (b.type().isVariableWidth()) {
            b.reserve(0, dataBytes[i]);
          } else if (!b.type().isFixedWidth()) {
            b.child().reserve(Math.toIntExact(childRows[i]), childBytes[i]);
          }
        }
      }
      if (singleRows) {
        reader.appendSingleRows(starts, units, builders);
      } else {
        for (int k = 0; k < units; k++) {
          reader.appendRows(starts[k], offsets[k + 1] - offsets[k], builders);
        }
      }
      for (int k = 0; k < pos.length; k++) {
        built[pos[k]] = builders.get(k).build();
      }
    }

    /** Closes every reader on its own thread (confined memory is freed only there), then the threads. */
    @Override
    public void close() throws IOException {
      List<java.util.concurrent.Future<?>> closing = new ArrayList<>();
      for (int r = 1; r < readers.length; r++) {
        TieredReader reader = readers[r];
        closing.add(partThreads[r].submit(() -> {
          reader.close();
          return null;
        }));
        partThreads[r].shutdown();
      }
      IOException failure = null;
      try {
        readers[0].close();
      } catch (IOException e) {
        failure = e;
      }
      for (var f : closing) {
        try {
          f.get(30, java.util.concurrent.TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
          if (failure == null) {
            failure = e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
          }
        } catch (java.util.concurrent.TimeoutException e) {
          failure = failure == null ? new IOException("an assembly thread did not finish within 30 s", e) : failure;
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      if (failure != null) {
        throw failure;
      }
    }
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
    private String mode = "samples";
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
    private long cacheMaxBytes = 1L << 30;
    private int cacheLookback = 2;
    private Duration cacheStaleAfter = Duration.ofHours(24);
    private String name;
    private io.strata.sdk.node.NodeClient nodeClient;
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
      this.mode = "samples";
      this.samplesPerBatch = samples;
      return this;
    }

    /**
     * Batches of {@code rows} rows, shuffled or in order. Shuffling permutes single rows unless
     * {@link #shuffleBlock} groups them.
     */
    public Builder rowBatches(int rows, boolean shuffled) {
      this.mode = "rows";
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
      this.mode = "windows";
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

    /**
     * Assemble each batch on {@code threads} threads at once, each filling a group of the
     * features of about equal bytes per row (1, the default: one thread per batch). The batches
     * are the same either way; splitting shortens each batch's assembly, for a job that waits on
     * one batch at a time or a GPU that wants batches sooner.
     */
    public Builder assemblyThreads(int threads) {
      if (threads < 1 || threads > 256) {
        throw new IllegalArgumentException("assembly threads must be 1 to 256, got " + threads);
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
    public Builder node(io.strata.sdk.node.NodeClient client, String job) {
      this.nodeClient = java.util.Objects.requireNonNull(client, "client");
      this.nodeJob = java.util.Objects.requireNonNull(job, "job");
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

    /** {@code /dev/shm/strata-batches} when /dev/shm is writable, else the temporary directory. */
    public static Path defaultBatchCacheRoot() {
      return BatchCache.defaultRoot();
    }

    Plan plan() {
      return switch (mode) {
        case "samples" -> new Plan.Samples(samples("sample batches"), samplesPerBatch, seed, shuffle, rank, world, dropLast);
        case "rows" -> {
          int block = blockRowsSet ? blockRows : (shuffle ? 1 : batchRows);
          if (batchRows % block != 0) {
            throw new IllegalArgumentException("batch rows (" + batchRows + ") must be a multiple of the shuffle block (" + block + ")");
          }
          yield new Plan.Rows(dataset.rows(), block, batchRows / block, seed, shuffle, rank, world, dropLast);
        }
        case "windows" -> new Plan.Windows(samples("windows"), windowLength, lookahead, stride, windowsPerBatch, seed,
            shuffle, rank, world, dropLast);
        default -> throw new IllegalStateException(mode);
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
