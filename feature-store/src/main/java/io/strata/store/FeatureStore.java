package io.strata.store;

import io.strata.sdk.internal.SafePaths;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.sdk.derive.Derivation;
import io.strata.sdk.derive.DerivedStore;
import io.strata.sdk.internal.Json;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.SegmentAllocator;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.stream.Stream;
import org.rocksdb.RocksDB;

/**
 * Derived features computed once and shared by every job, in RocksDB.
 *
 * <p>Layout: column family {@code meta} holds each feature's state ({@link FeatureMeta}, key
 * {@code f:<fingerprint>}), the index from (dataset, version, spec) to fingerprint ({@code n:}),
 * and cached source column checksums ({@code c:}); column family {@code data} holds the encoded
 * chunks ({@code <fingerprint>:<chunk, 8 digits>}), ZSTD-compressed. Every chunk is written
 * together with the feature's progress in one synced write batch, so a killed computation leaves
 * a consistent, resumable feature that is never served until complete.
 *
 * <p>A feature computed elsewhere comes in whole ({@link #ingest}): staged by the Spark promotion
 * job ({@link Staging}, found by name when {@link #useStaging} names the directory) or copied from
 * a peer's store; its chunks go into one SST file under {@code ingest/}, which RocksDB takes in.
 *
 * <p>One process writes (the cache node or a batch job; RocksDB's lock enforces it); others open
 * the store as secondary readers that never block the writer and catch up with it on demand.
 * Jobs in the writer's process that ask for the same fingerprint at the same time wait for one
 * computation ({@link #getOrCompute}).
 *
 * <p>Threads and locks: every call that touches a native handle holds the read side of {@link
 * StoreRocks}' handles lock for that one call (a computation takes it per chunk, not for its whole length; an
 * ingestion holds it while it writes the SST file and hands it to RocksDB); {@link
 * #close()} takes the write side, waits for the calls in flight and closes every handle in
 * dependency order, after which calls fail with {@link IllegalStateException} naming the store.
 * {@code inflight} (one computation per fingerprint) and {@link SourceChecksums} are {@link
 * SingleFlight}s over concurrent maps.
 */
public final class FeatureStore implements DerivedStore, AutoCloseable {
  private final Path dir;
  private final boolean writer;
  /** The RocksDB instance, its layout and the lock that guards its handles ({@link StoreRocks}). */
  private final StoreRocks rocks;
  /** One computation or ingestion a fingerprint at a time in this process. */
  private final SingleFlight<FeatureMeta> inflight = new SingleFlight<>();
  /** Source columns' checksums, cached, one pass a column at a time ({@link #columnChecksum}). */
  private final SourceChecksums checksums;
  private final AtomicLong computations = new AtomicLong();
  private final AtomicLong ingested = new AtomicLong();
  /** Where a batch job stages features this store ingests instead of computing ({@link #useStaging}); null: nowhere. */
  private volatile Path staging;
  /** What jobs computed on the fly, for promotion ({@code usage/}). */
  private final UsageLog usage;
  private FeatureStore(Path dir, boolean writer, RocksHandles rocks) {
    this.dir = dir;
    this.usage = new UsageLog(dir.resolve("usage"));
    this.writer = writer;
    this.rocks = new StoreRocks(dir, writer, rocks);
    this.checksums = new SourceChecksums(this.rocks, writer);
  }

  /**
   * Refuses a store whose directory, or anything in it (RocksDB's files, the usage records), is a
   * link (the directories above it are the operator's choice): RocksDB opens its files by name itself, so the store is confined by what its directory
   * holds when it opens (files RocksDB creates later are its own).
   */
  private static void checkNoLinks(Path dir) throws IOException {
    try (Stream<Path> walk = Files.walk(dir, 3)) {
      for (Path p : (Iterable<Path>) walk::iterator) {
        if (Files.isSymbolicLink(p)) {
          throw new IOException("feature store " + dir + " holds a link (" + p + "): refused; its files are its own");
        }
      }
    }
  }

  /** Opens (creating if needed) the store in {@code dir} for writing; one process at a time. */
  public static FeatureStore openWriter(Path dir) throws IOException {
    return open(dir, true);
  }

  /** Opens the store in {@code dir} for reading, beside its writer (a RocksDB secondary instance). */
  public static FeatureStore openReader(Path dir) throws IOException {
    if (!Files.isDirectory(dir.resolve("rocksdb"))) {
      throw new NoSuchFileException(dir.toString(), null, "no feature store (it is created by its writer)");
    }
    return open(dir, false);
  }

  private static FeatureStore open(Path dir, boolean writer) throws IOException {
    SafePaths.trusted(dir); // no link another user planted on the way (the store's own files: checkNoLinks)
    Files.createDirectories(dir.resolve("usage"));
    checkNoLinks(dir);
    return new FeatureStore(dir, writer, RocksHandles.open(dir, writer));
  }

  public Path directory() {
    return dir;
  }

  public boolean isWriter() {
    return writer;
  }

  private void requireWriter() {
    if (!writer) {
      throw new IllegalStateException("feature store " + dir + " is open for reading only");
    }
  }

  /** The key of chunk {@code chunk} of feature {@code fingerprint} in the data family. */
  static String dataKey(String fingerprint, int chunk) {
    return StoreRocks.dataKey(fingerprint, chunk);
  }

  // ---------------------------------------------------------------- identity

  /**
   * The content checksum of a source column, computed once per dataset version and cached; threads
   * asking for the same column at once wait for one computation (jobs asking for one derived
   * feature together read its sources once, not once each).
   */
  public long columnChecksum(Dataset ds, String column, Derivation.SourceReader reader) throws IOException {
    return checksums.of(ds, column, reader);
  }

  /** The fingerprint of a derivation (computing and caching source checksums as needed). */
  public String fingerprint(Derivation d, Derivation.SourceReader reader) throws IOException {
    Map<String, Long> sums = new HashMap<>();
    for (String s : d.spec().sources()) {
      sums.put(s, columnChecksum(d.dataset(), s, reader));
    }
    return d.fingerprint(sums);
  }

  // ---------------------------------------------------------------- reads

  public Optional<FeatureMeta> meta(String fingerprint) throws IOException {
    rocks.catchUp();
    byte[] v = rocks.get(rocks.meta(), "f:" + fingerprint);
    return v == null ? Optional.empty() : Optional.of(FeatureMeta.fromJson(Json.parse(v)));
  }

  /** The fingerprint of a complete feature for (dataset, version, canonical spec), if any. */
  public Optional<String> lookup(String dataset, String version, String canonicalSpec) throws IOException {
    rocks.catchUp();
    byte[] v = rocks.get(rocks.meta(), "n:" + dataset + "\0" + version + "\0" + canonicalSpec);
    if (v == null) {
      return Optional.empty();
    }
    String fp = new String(v, StandardCharsets.UTF_8);
    return meta(fp).filter(FeatureMeta::complete).map(FeatureMeta::fingerprint);
  }

  /** A writer computes and stores the feature if needed; a reader answers only if it is complete. */
  @Override
  public String getOrCompute(Derivation d, Derivation.SourceReader reader) throws IOException {
    return writer ? getOrCompute(d, reader, Progress.NONE).fingerprint() : complete(d, reader);
  }

  @Override
  public String complete(Derivation d, Derivation.SourceReader reader) throws IOException {
    String fp = fingerprint(d, reader);
    return meta(fp).filter(FeatureMeta::complete).isPresent() ? fp : null;
  }

  @Override
  public Column chunk(String fingerprint, int chunk, SegmentAllocator allocator) throws IOException {
    FeatureMeta m = meta(fingerprint).orElseThrow(() -> new IOException("feature " + fingerprint + " is not in " + dir));
    if (!m.complete()) {
      throw new IOException("feature " + fingerprint + " (" + m.spec() + ") is not complete: " + m.done() + " of "
          + m.chunks() + " chunks written; it is not served until it is");
    }
    if (chunk < 0 || chunk >= m.chunks()) {
      throw new IllegalArgumentException("chunk " + chunk + " is outside feature " + fingerprint + " (" + m.chunks() + " chunks)");
    }
    byte[] v = rocks.get(rocks.data(), dataKey(fingerprint, chunk));
    if (v == null) {
      throw new IOException("feature " + fingerprint + " lacks chunk " + chunk + " although it is marked complete");
    }
    try {
      return ColumnCodec.decode(v, allocator);
    } catch (ColumnCodec.CorruptValueException e) {
      throw new IOException("feature " + fingerprint + " chunk " + chunk + " in " + dir + ": " + e.getMessage(), e);
    }
  }

  /**
   * The stored form of chunk {@code chunk} of a complete feature: the bytes a local computation
   * wrote, or a staged chunk ingested (the two are the same bytes for the same fingerprint).
   */
  public byte[] encodedChunk(String fingerprint, int chunk) throws IOException {
    FeatureMeta m = meta(fingerprint).filter(FeatureMeta::complete)
        .orElseThrow(() -> new IOException("feature " + fingerprint + " is not complete in " + dir));
    if (chunk < 0 || chunk >= m.chunks()) {
      throw new IllegalArgumentException("chunk " + chunk + " is outside feature " + fingerprint + " (" + m.chunks() + " chunks)");
    }
    byte[] v = rocks.get(rocks.data(), dataKey(fingerprint, chunk));
    if (v == null) {
      throw new IOException("feature " + fingerprint + " lacks chunk " + chunk + " although it is marked complete");
    }
    return v;
  }

  /** Every feature the store knows, complete or not. */
  public List<FeatureMeta> list() throws IOException {
    return rocks.list();
  }

  // ---------------------------------------------------------------- get-or-compute

  /**
   * The feature of {@code d}, complete: from the store if there, else computed now and stored
   * (resuming a computation that was interrupted). Threads of this process asking for the same
   * fingerprint meanwhile wait for this one computation and get the same result.
   */
  public FeatureMeta getOrCompute(Derivation d, Derivation.SourceReader reader, Progress progress) throws IOException {
    requireWriter();
    Path from = staging;
    if (from != null) {
      // A feature a batch job staged is found by name: its fingerprint comes with it, and the
      // source columns are not read again for their checksums.
      Dataset ds = d.dataset();
      Optional<Staging.Feature> staged = Staging.byName(from, ds.name(), ds.version(), d.spec().canonical());
      if (staged.isPresent()) {
        return ingest(from, staged.get(), progress);
      }
    }
    String fp = fingerprint(d, reader);
    Optional<FeatureMeta> stored = usedIfComplete(fp);
    return stored.isPresent() ? stored.get() : inflight.run(fp, () -> compute(fp, d, reader, progress));
  }

  /** Feature {@code fp} if the store holds it complete, its last use recorded as now; else empty. */
  private Optional<FeatureMeta> usedIfComplete(String fp) throws IOException {
    Optional<FeatureMeta> m = meta(fp);
    if (m.isEmpty() || !m.get().complete()) {
      return Optional.empty();
    }
    FeatureMeta used = m.get().used();
    writeMeta(used);
    return Optional.of(used);
  }

  /** Computes (or resumes computing) every chunk; each chunk and the progress are one synced write. */
  private FeatureMeta compute(String fp, Derivation d, Derivation.SourceReader reader, Progress progress) throws IOException {
    Path from = staging;
    if (from != null) {
      Optional<Staging.Feature> staged = Staging.feature(from, fp);
      if (staged.isPresent()) {
        return ingestNow(described(staged.get()), staged(from, staged.get()), "staged in " + from, progress);
      }
    }
    computations.incrementAndGet();
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    Dataset ds = d.dataset();
    FeatureMeta m = meta(fp).orElse(null);
    Derivation.Statistics stats;
    if (m == null) {
      long t0 = threads.getCurrentThreadCpuTime();
      stats = d.statistics(reader);
      double statSeconds = (threads.getCurrentThreadCpuTime() - t0) / 1e9;
      m = new FeatureMeta(fp, d.spec().canonical(), ds.name(), ds.directory().toString(), ds.version(), d.type().toString(),
          ds.chunks().size(), 0, false, 0, statSeconds, System.currentTimeMillis(), System.currentTimeMillis(), stats.values());
      writeMeta(m);
    } else {
      stats = new Derivation.Statistics(m.statistics());
    }
    for (int c = m.done(); c < m.chunks(); c++) {
      long t0 = threads.getCurrentThreadCpuTime();
      byte[] value;
      try (Arena arena = Arena.ofConfined()) {
        value = ColumnCodec.encode(d.computeChunk(c, stats, reader, arena));
      }
      double seconds = (threads.getCurrentThreadCpuTime() - t0) / 1e9;
      FeatureMeta next = m.withProgress(c + 1, value.length, seconds);
      rocks.writeChunk(next, value);
      m = next;
      progress.update(c + 1, m.chunks(), "chunks");
    }
    return m;
  }

  /**
   * Takes features a batch job staged under {@code dir} ({@link Staging}) instead of computing
   * them: a feature the store lacks and finds complete there is ingested, never computed. Null
   * turns it off.
   */
  public void useStaging(Path dir) {
    this.staging = dir;
  }

  /**
   * Ingests a complete staged feature: every chunk checked against its header and {@code
   * feature.json}, written into one SST file of the data family, which RocksDB then takes in whole
   * (moved into the database: no write-ahead log, no memtable, no flush later); then the feature's
   * metadata, complete, in one synced write. A damaged chunk fails the ingestion naming its file
   * and nothing of the feature is served; an ingestion killed midway leaves at most a temporary
   * file (removed by the next one) and is done again whole.
   */
  public FeatureMeta ingest(Path stagingDir, Staging.Feature f, Progress progress) throws IOException {
    return ingest(described(f), staged(stagingDir, f), "staged in " + stagingDir, progress);
  }

  /** A staged feature as the store describes a complete one. */
  private static FeatureMeta described(Staging.Feature f) {
    return new FeatureMeta(f.fingerprint(), f.spec(), f.dataset(), f.datasetDir(), f.version(), f.type(), f.chunks(),
        f.chunks(), true, f.bytes(), f.cpuSeconds(), 0, 0, f.statistics());
  }

  /** A staged feature's chunks, each checked against its header and {@code feature.json}. */
  private static ChunkSource staged(Path stagingDir, Staging.Feature f) {
    return (c, reuse) -> Staging.readVerified(stagingDir, f, c, reuse);
  }

  /**
   * Where an ingestion takes a feature's chunks from: chunk {@code chunk}'s stored form, already
   * checked, between the position and the limit of a direct buffer ({@code reuse}, the buffer the
   * previous chunk came in, may be filled again; null at first).
   */
  public interface ChunkSource {
    ByteBuffer chunk(int chunk, ByteBuffer reuse) throws IOException;
  }

  /**
   * Ingests the complete feature {@code described} (a peer's or a staging directory's, {@code
   * from} says which) chunk by chunk from {@code source} into one SST file RocksDB takes in whole,
   * then its metadata, complete, in one synced write (see {@link #ingest(Path, Staging.Feature,
   * Progress)}).
   */
  public FeatureMeta ingest(FeatureMeta described, ChunkSource source, String from, Progress progress) throws IOException {
    requireWriter();
    String fp = described.fingerprint();
    Optional<FeatureMeta> stored = usedIfComplete(fp);
    if (stored.isPresent()) {
      return stored.get();
    }
    // One ingestion (or computation) of a feature at a time in this process: others wait for it.
    return inflight.run(fp, () -> ingestNow(described, source, from, progress));
  }

  /** The ingestion itself; the caller holds the feature's single flight ({@link SingleFlight}). */
  private FeatureMeta ingestNow(FeatureMeta described, ChunkSource source, String from, Progress progress) throws IOException {
    String fp = described.fingerprint();
    Optional<FeatureMeta> have = meta(fp);
    if (have.isPresent() && have.get().complete()) {
      return have.get(); // another thread finished it before this one began
    }
    ingested.incrementAndGet();
    int chunks = described.chunks();
    Path sst = dir.resolve("ingest").resolve(fp + ".sst");
    Files.createDirectories(sst.getParent());
    Files.deleteIfExists(sst);
    long bytes = 0;
    try {
      if (chunks > 0) {
        bytes = rocks.ingestSst(sst, fp, from, chunks, source, progress);
      }
    } finally {
      Files.deleteIfExists(sst);
    }
    long now = System.currentTimeMillis();
    FeatureMeta done = new FeatureMeta(fp, described.spec(), described.dataset(), described.datasetDir(), described.version(),
        described.type(), chunks, chunks, true, bytes, described.computeSeconds(), now, now, described.statistics());
    rocks.writeChunk(done, null);
    return done;
  }

  /**
   * Checks a chunk's stored form another store sent (its format and its CRC32C, FORMAT.md §4.2);
   * an IOException saying what is wrong with it otherwise.
   */
  public static void checkEncoded(byte[] value) throws IOException {
    try (Arena arena = Arena.ofConfined()) {
      ColumnCodec.decode(value, arena);
    } catch (ColumnCodec.CorruptValueException e) {
      throw new IOException(e.getMessage(), e);
    }
  }

  /** Whether the staging directory ({@link #useStaging}) holds {@code spec} (canonical) of this version of {@code ds} complete. */
  public boolean hasStaged(Dataset ds, String spec) throws IOException {
    Path from = staging;
    return from != null && Staging.byName(from, ds.name(), ds.version(), spec).isPresent();
  }

  /** Features this process ingested (staged, or a peer's) instead of computing them. */
  public long ingestions() {
    return ingested.get();
  }

  private void writeMeta(FeatureMeta m) throws IOException {
    if (writer) {
      rocks.putMeta(m);
    }
  }

  /** Computations started by this process (a feature computed once counts once). */
  public long computations() {
    return computations.get();
  }

  // ---------------------------------------------------------------- garbage collection

  /**
   * Deletes features whose dataset version is no longer current ({@code currentVersion} maps a
   * dataset name to its version, empty when the dataset is gone), incomplete features older than
   * {@code staleAfter}, and complete ones unused for {@code unusedFor}. Returns the fingerprints deleted.
   */
  public List<String> gc(Function<String, Optional<String>> currentVersion, Duration staleAfter, Duration unusedFor)
      throws IOException {
    requireWriter();
    long now = System.currentTimeMillis();
    List<String> deleted = new ArrayList<>();
    for (FeatureMeta m : list()) {
      Optional<String> v = currentVersion.apply(m.dataset());
      boolean stale = v.isEmpty() || !v.get().equals(m.version());
      boolean abandoned = !m.complete() && now - m.lastUsedMillis() > staleAfter.toMillis() && !inflight.running(m.fingerprint());
      boolean unused = m.complete() && now - m.lastUsedMillis() > unusedFor.toMillis();
      if (stale || abandoned || unused) {
        rocks.delete(m);
        deleted.add(m.fingerprint());
      }
    }
    return deleted;
  }

  // ---------------------------------------------------------------- usage log

  /** Appends one record to this process's usage log ({@link UsageLog}); never fails the job. */
  @Override
  public void recordUsage(Usage u) {
    usage.append(u);
  }

  /** Every usage record of every process; lines that do not parse (a crash mid-write) are skipped. */
  public List<Usage> usage() throws IOException {
    return usage.readAll();
  }

  /**
   * Closes every native handle in dependency order, once the calls in flight have returned; later
   * calls fail with {@link IllegalStateException} naming the store. Idempotent.
   */
  @Override
  public void close() {
    rocks.close();
  }
}
