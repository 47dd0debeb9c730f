package io.strata.sdk.tiering;

import io.strata.sdk.internal.SafePaths;
import io.strata.sdk.SegmentLease;
import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.strata.sdk.Column;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.tier.SegmentSource;
import io.strata.sdk.files.Manifest;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.format.SegmentInfo;
import io.strata.sdk.format.SegmentMappings;
import io.strata.sdk.format.SegmentWriter;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.Confinement;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * The SSD tier: a directory of segment files and their catalog.
 *
 * <p>Layout: {@code root/<dataset>/<version>/c<chunk>-<columns hash>-<sequence>.arrow}. The catalog is
 * rebuilt from the files' own metadata when the store opens. The first store to open a directory
 * owns it (an exclusive lock on {@value #OWNER_LOCK}, held until it closes): the owner deletes
 * temporary files of interrupted writes and files that fail the structural check (or the
 * checksum check, when asked for), reported in {@link #dropped()}; other stores (a job reading a
 * node's directory) skip them and delete nothing. Segments land read-only (0444). Mapped segments are shared and reference
 * counted ({@link io.strata.sdk.format.SegmentMappings}): {@link #remove} unlinks a file at
 * once, and its mapping stays valid until the last reader releases it, so eviction never pulls
 * data from under a reader.
 *
 * <p>Threads and locks: the catalog is guarded by this object's monitor; the mappings have their
 * own, always taken after this one (never the other way round). Files are mapped and verified
 * outside both, so readers on several threads map different segments in parallel.
 */
public final class SegmentStore implements SegmentSource, AutoCloseable {
  private final Path root;
  private final Confinement confinement;
  private final SegmentFile.Verify verifyOnMap;
  @GuardedBy("this")
  private final Map<String, List<SegmentRef>> byChunk = new HashMap<>();
  @GuardedBy("this")
  private final Map<Path, SegmentRef> byPath = new HashMap<>();
  private final SegmentMappings mappings;
  /** Ends new segment names: microseconds at open, then one more per write (names are never reused). */
  private final AtomicLong writes = new AtomicLong(System.currentTimeMillis() * 1000);
  @GuardedBy("this")
  private final List<String> dropped = new ArrayList<>();
  @GuardedBy("this")
  private long bytes;
  @GuardedBy("this")
  private long generation;
  @GuardedBy("this")
  private boolean closed;

  /** A mapped segment held by a reader until {@link #close()}. */
  public static final class Lease implements SegmentLease {
    private final SegmentMappings.Ref ref;

    private Lease(SegmentMappings.Ref ref) {
      this.ref = ref;
    }

    public SegmentFile file() {
      return ref.file();
    }

    @Override
    public Path path() {
      return ref.path();
    }

    @Override
    public Column column(String name) {
      return ref.column(name);
    }

    @Override
    public Lease share() {
      return new Lease(ref.share());
    }

    @Override
    public void close() {
      ref.close();
    }
  }

  private SegmentStore(Path root, SegmentFile.Verify verifyOnMap, Confinement confinement) {
    this.root = root;
    this.verifyOnMap = verifyOnMap;
    this.confinement = confinement;
    this.mappings = new SegmentMappings("segment store " + root, true);
  }

  /**
   * The real path of segment file {@code p} when it is a regular file in this store's directory
   * (for a library that opens it by name, as a peer's file send does); else an {@link
   * java.nio.file.AccessDeniedException} naming it.
   */
  public Path realSegmentPath(Path p) throws IOException {
    Path real = p.toRealPath();
    if (!real.startsWith(root.toRealPath()) || !Files.isRegularFile(real, LinkOption.NOFOLLOW_LINKS)) {
      throw new AccessDeniedException(p.toString(), null, "is not a segment file in " + root + ": refused");
    }
    return real;
  }

  /** Opens a segment of this store, confined to its directory when the store is. */
  private SegmentFile openSegment(Path p, SegmentFile.Verify verify) throws IOException {
    return SegmentFile.open(p, verify, confinement);
  }

  /**
   * Opens (creating if needed) the store at {@code root} and rebuilds its catalog.
   *
   * @param verifyOnScan check every buffer checksum while rebuilding (slower; used after a crash)
   * @param verifyOnMap when to verify checksums as segments are mapped for reading
   */
  public static SegmentStore open(Path root, boolean verifyOnScan, SegmentFile.Verify verifyOnMap) throws IOException {
    return open(root, verifyOnScan, verifyOnMap, false);
  }

  /**
   * As above; with {@code confined}, every segment the store opens must be a regular file in its
   * directory as opened (no link out, swapped in at any component since), as a node's store,
   * which maps segments on behalf of others, requires.
   */
  public static SegmentStore open(Path root, boolean verifyOnScan, SegmentFile.Verify verifyOnMap, boolean confined)
      throws IOException {
    SafePaths.trusted(root); // no link another user planted on the way: the store deletes and writes in it
    Files.createDirectories(root);
    Path abs = root.toAbsolutePath().normalize();
    SegmentStore s = new SegmentStore(abs, verifyOnMap, confined
        ? Confinement.within(List.of(abs), "the SSD directory " + abs) : Confinement.NONE);
    boolean ok = false;
    try {
      s.lockOwner();
      s.scan(verifyOnScan);
      ok = true;
    } finally {
      if (!ok) {
        s.close();
      }
    }
    return s;
  }

  /** The lock file whose holder owns the directory (cleans it up). */
  public static final String OWNER_LOCK = ".owner.lock";

  private FileChannel ownerChannel;
  private FileLock ownerLock;

  /**
   * Takes the directory's owner lock if no one holds it: the first store to open a directory owns
   * it (a node, a promotion); others (a job reading a node's SSD directory) only read, and never
   * delete another writer's temporary or damaged files.
   */
  private void lockOwner() throws IOException {
    try {
      ownerChannel = FileChannel.open(root.resolve(OWNER_LOCK), StandardOpenOption.CREATE,
          StandardOpenOption.WRITE);
    } catch (FileSystemException e) {
      return; // a directory this process may not write: it only reads
    }
    try {
      ownerLock = ownerChannel.tryLock();
    } catch (OverlappingFileLockException e) {
      ownerLock = null; // another store of this process owns it
    }
    if (ownerLock == null) {
      ownerChannel.close();
      ownerChannel = null;
    }
  }

  /** Whether this store owns its directory (and so cleans it). */
  public boolean owner() {
    return ownerLock != null;
  }

  // Synchronized though it runs before the store is shared (from open): the catalog is the monitor's.
  private synchronized void scan(boolean verify) throws IOException {
    List<Path> files;
    try (Stream<Path> walk = Files.walk(root, 3)) {
      // A confined store sees links too (never followed): its segments are regular files in it, a link there is dropped.
      files = walk.filter(p -> Files.isRegularFile(p) || (confinement.confined() && Files.isSymbolicLink(p))).sorted().toList();
    }
    for (Path p : files) {
      String name = p.getFileName().toString();
      if (name.startsWith(AtomicFiles.TEMP_PREFIX)) {
        if (owner()) {
          Files.deleteIfExists(p);
          dropped.add(p + ": temporary file of an interrupted write");
        }
        continue;
      }
      if (!name.endsWith(".arrow")) {
        continue;
      }
      try (SegmentFile f = openSegment(p, verify ? SegmentFile.Verify.ALWAYS : SegmentFile.Verify.NEVER)) {
        register(new SegmentRef(p, f.info(), f.fileSize()));
      } catch (CorruptFileException | AccessDeniedException e) {
        if (owner()) {
          Files.deleteIfExists(p); // a link itself, never what it names
        }
        dropped.add(e.getMessage());
      }
    }
  }

  /** Problems found while opening: files dropped and why. */
  public synchronized List<String> dropped() {
    return List.copyOf(dropped);
  }

  public Path root() {
    return root;
  }

  private static String key(String dataset, String version, int chunk) {
    return dataset + "\0" + version + "\0" + chunk;
  }

  /**
   * Adds {@code ref} to the catalog. A segment of the same columns of the same chunk that it
   * replaces (written again after an eviction, or left by a crash beside its successor) leaves the
   * catalog, and the owner unlinks it; readers of the old file keep their mapping.
   */
  private synchronized void register(SegmentRef ref) throws IOException {
    SegmentRef old = byPath.put(ref.path(), ref);
    if (old != null) {
      mappings.retire(old.path());
      bytes -= old.bytes();
      byChunk.get(key(old.info().dataset(), old.info().datasetVersion(), old.info().chunk())).remove(old);
    }
    List<SegmentRef> same =
        byChunk.computeIfAbsent(key(ref.info().dataset(), ref.info().datasetVersion(), ref.info().chunk()), k -> new ArrayList<>());
    for (SegmentRef r : List.copyOf(same)) {
      if (r.info().columns().equals(ref.info().columns())) {
        forget(r);
        mappings.retire(r.path());
        if (owner()) {
          Files.deleteIfExists(r.path());
        }
      }
    }
    same.add(ref);
    bytes += ref.bytes();
    generation++;
  }

  @Override
  public synchronized long generation() {
    return generation;
  }

  @Override
  public SegmentLease lease(Dataset dataset, String feature, int chunk) throws IOException {
    Optional<SegmentRef> ref = find(dataset.name(), dataset.version(), feature, chunk);
    if (ref.isEmpty()) {
      return null;
    }
    try {
      return map(ref.get());
    } catch (NoSuchFileException | CorruptFileException e) {
      // Evicted or damaged since the lookup: the HDD tier serves it.
      return null;
    }
  }

  @Override
  public boolean resident(Dataset dataset, String feature, int chunk) {
    return find(dataset.name(), dataset.version(), feature, chunk).isPresent();
  }

  /** Whether the catalog's segment holding {@code feature} of the given chunk is {@code file}. */
  @Override
  public boolean stillResident(Dataset dataset, String feature, int chunk, Path file) {
    return find(dataset.name(), dataset.version(), feature, chunk).map(r -> r.path().equals(file)).orElse(false);
  }

  public synchronized Optional<SegmentRef> find(String dataset, String version, String feature, int chunk) {
    List<SegmentRef> refs = byChunk.get(key(dataset, version, chunk));
    if (refs != null) {
      for (SegmentRef r : refs) {
        if (r.holds(feature)) {
          return Optional.of(r);
        }
      }
    }
    return Optional.empty();
  }

  /** Every segment in the catalog. */
  public synchronized List<SegmentRef> segments() {
    return List.copyOf(byPath.values());
  }

  /** Total bytes of the segments in the catalog. */
  public synchronized long bytes() {
    return bytes;
  }

  /**
   * A new file name for a segment of these columns of this chunk: its name is never reused (a
   * sequence number ends it), so that a process that mapped an evicted segment tells it from the
   * one written after it by the name alone.
   */
  private Path newPathFor(SegmentInfo info) {
    Manifest.checkName(info.dataset());
    if (!info.datasetVersion().matches("[A-Za-z0-9_.-]{1,64}")) {
      throw new IllegalArgumentException("bad dataset version '" + info.datasetVersion() + "'");
    }
    return root.resolve(info.dataset())
        .resolve(info.datasetVersion())
        .resolve(info.fileName(writes.incrementAndGet()));
  }

  /** Writes a segment atomically and adds it to the catalog. */
  public SegmentRef write(SegmentInfo info, SequencedMap<String, Column> columns) throws IOException {
    checkOpen();
    Path path = newPathFor(info);
    long size = SegmentWriter.write(path, info, columns);
    SegmentRef ref = new SegmentRef(path, info, size);
    register(ref);
    return ref;
  }

  /**
   * Lands a segment that {@code body} writes as it arrives (from another node): the complete
   * temporary file must open with every checksum verified and describe exactly {@code expected}
   * (dataset, version, chunk, rows, columns), or it is deleted and this fails naming the problem;
   * only then is it renamed into place (read-only) and added to the catalog. {@code bytes}, the
   * announced size, is checked against the free space first.
   */
  public SegmentRef adopt(SegmentInfo expected, long bytes, AtomicFiles.Body body) throws IOException {
    checkOpen();
    Path path = newPathFor(expected);
    long[] size = new long[1];
    AtomicFiles.write(path, bytes, true, body, written -> {
      try (SegmentFile f = openSegment(written, SegmentFile.Verify.ALWAYS)) {
        if (!f.info().equals(expected)) {
          throw new CorruptFileException(written, "the received segment holds " + f.info() + ", not the expected " + expected);
        }
        size[0] = f.fileSize();
      }
    });
    SegmentRef ref = new SegmentRef(path, expected, size[0]);
    register(ref);
    return ref;
  }

  /**
   * Maps a segment for reading (or shares its mapping); the caller closes the lease when done.
   * Fails with {@link NoSuchFileException} if the segment has been removed, and with {@link
   * CorruptFileException} (dropping the segment) if it is damaged. The file is opened and
   * verified outside this store's monitor.
   */
  public Lease map(SegmentRef ref) throws IOException {
    synchronized (this) {
      checkOpen();
      if (!byPath.containsKey(ref.path())) {
        throw new NoSuchFileException(ref.path().toString(), null, "segment was evicted");
      }
    }
    try {
      return new Lease(mappings.acquire(ref.path(), p -> openSegment(p, verifyOnMap)));
    } catch (CorruptFileException e) {
      drop(ref, e.getMessage());
      throw e;
    }
  }

  /** A damaged segment is never served again: readers fall back to ORC. */
  @SuppressWarnings("ReferenceEquality") // the very reference the caller holds, not an equal one
  private synchronized void drop(SegmentRef ref, String why) throws IOException {
    if (byPath.get(ref.path()) != ref) {
      return; // already removed or replaced
    }
    forget(ref);
    mappings.retire(ref.path());
    generation++;
    if (owner()) {
      Files.deleteIfExists(ref.path());
    }
    dropped.add(why);
  }

  /**
   * Checks the segment a reader found damaged after mapping it (every checksum, on a fresh
   * mapping) and drops it when the check fails; a segment that passes stays.
   */
  @Override
  public void damaged(Dataset dataset, String feature, int chunk, Path file, String problem) {
    SegmentRef ref;
    synchronized (this) {
      ref = byPath.get(file);
    }
    if (ref == null) {
      return;
    }
    String damage = recheck(file, feature, chunk);
    if (damage != null) {
      try {
        drop(ref, damage + " (found by a reader: " + problem + ")");
      } catch (IOException ignored) {
        // Forgotten by the catalog already; the file goes at the next scan.
      }
    }
  }

  /**
   * Checks {@code file} again on a fresh mapping, every checksum: null when it holds {@code
   * feature} of {@code chunk} intact, else what is wrong with it.
   */
  public static String recheck(Path file, String feature, int chunk) {
    try (SegmentFile f = SegmentFile.open(file, SegmentFile.Verify.ALWAYS)) {
      return f.info().chunk() == chunk && f.hasColumn(feature) ? null : file + " does not hold " + feature + " of chunk " + chunk;
    } catch (IOException e) {
      return e.getMessage();
    }
  }

  @GuardedBy("this")
  private void forget(SegmentRef ref) {
    SegmentRef old = byPath.remove(ref.path());
    if (old != null) {
      bytes -= old.bytes();
      List<SegmentRef> list = byChunk.get(key(old.info().dataset(), old.info().datasetVersion(), old.info().chunk()));
      if (list != null) {
        list.remove(old);
      }
    }
  }

  /**
   * Removes a segment: drops it from the catalog and unlinks the file. Readers holding a lease
   * keep a valid mapping until they release it ({@link #unlinkedMappedBytes()} counts it).
   */
  public synchronized void remove(SegmentRef ref) throws IOException {
    forget(ref);
    mappings.retire(ref.path());
    Files.deleteIfExists(ref.path());
  }

  /** Unmaps segments that no reader holds. */
  public void trim() {
    mappings.trim();
  }

  /** Number of mapped segments (held or cached). */
  public int mappedCount() {
    return mappings.size();
  }

  /**
   * Bytes of removed segments that readers still keep mapped: unlinked files whose SSD blocks the
   * file system frees only when the last reader lets go.
   */
  public long unlinkedMappedBytes() {
    return mappings.unlinkedMappedBytes();
  }

  private synchronized void checkOpen() {
    if (closed) {
      throw new IllegalStateException("segment store " + root + " is already closed");
    }
  }

  /** Unmaps every segment that no reader holds; held ones are unmapped when released. */
  @Override
  public synchronized void close() {
    closed = true;
    mappings.close();
    if (ownerChannel != null) {
      try {
        ownerChannel.close(); // releases the owner lock
      } catch (IOException ignored) {
        // Closing a lock file's channel cannot lose data.
      }
      ownerChannel = null;
      ownerLock = null;
    }
  }
}
