package io.strata.sdk.tier;

import io.strata.sdk.Column;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.dataset.Manifest;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.format.SegmentInfo;
import io.strata.sdk.format.SegmentWriter;
import io.strata.sdk.internal.AtomicFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.stream.Stream;

/**
 * The SSD tier: a directory of segment files and their catalog.
 *
 * <p>Layout: {@code root/<dataset>/<version>/c<chunk>-<columns hash>.arrow}. The catalog is
 * rebuilt from the files' own metadata when the store opens. The first store to open a directory
 * owns it (an exclusive lock on {@value #OWNER_LOCK}, held until it closes): the owner deletes
 * temporary files of interrupted writes and files that fail the structural check (or the
 * checksum check, when asked for), reported in {@link #dropped()}; other stores (a job reading a
 * node's directory) skip them and delete nothing. Segments land read-only (0444). Mapped segments are shared and reference
 * counted: {@link #remove} unlinks a file at once, and its mapping stays valid until the last
 * reader releases it, so eviction never pulls data from under a reader. Thread-safe: the catalog
 * and the mappings are guarded by this object's monitor.
 */
public final class SegmentStore implements SegmentSource, AutoCloseable {
  private final Path root;
  private final SegmentFile.Verify verifyOnMap;
  private final Map<String, List<SegmentRef>> byChunk = new HashMap<>();
  private final Map<Path, SegmentRef> byPath = new HashMap<>();
  private final Map<Path, Mapping> mapped = new HashMap<>();
  private final List<String> dropped = new ArrayList<>();
  private long bytes;
  private long generation;
  private boolean closed;

  private static final class Mapping {
    final SegmentFile file;
    int refs;
    boolean doomed;

    Mapping(SegmentFile file) {
      this.file = file;
    }
  }

  /** A mapped segment held by a reader until {@link #close()}. */
  public final class Lease implements SegmentSource.Lease {
    private final Path path;
    private final SegmentFile file;
    private boolean released;

    private Lease(Path path, SegmentFile file) {
      this.path = path;
      this.file = file;
    }

    public SegmentFile file() {
      return file;
    }

    @Override
    public Column column(String name) {
      return file.column(name);
    }

    @Override
    public void close() {
      synchronized (SegmentStore.this) {
        if (!released) {
          released = true;
          release(path);
        }
      }
    }
  }

  private SegmentStore(Path root, SegmentFile.Verify verifyOnMap) {
    this.root = root;
    this.verifyOnMap = verifyOnMap;
  }

  /**
   * Opens (creating if needed) the store at {@code root} and rebuilds its catalog.
   *
   * @param verifyOnScan check every buffer checksum while rebuilding (slower; used after a crash)
   * @param verifyOnMap when to verify checksums as segments are mapped for reading
   */
  public static SegmentStore open(Path root, boolean verifyOnScan, SegmentFile.Verify verifyOnMap) throws IOException {
    Files.createDirectories(root);
    SegmentStore s = new SegmentStore(root.toAbsolutePath().normalize(), verifyOnMap);
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

  private java.nio.channels.FileChannel ownerChannel;
  private java.nio.channels.FileLock ownerLock;

  /**
   * Takes the directory's owner lock if no one holds it: the first store to open a directory owns
   * it (a node, a promotion); others (a job reading a node's SSD directory) only read, and never
   * delete another writer's temporary or damaged files.
   */
  private void lockOwner() throws IOException {
    try {
      ownerChannel = java.nio.channels.FileChannel.open(root.resolve(OWNER_LOCK), java.nio.file.StandardOpenOption.CREATE,
          java.nio.file.StandardOpenOption.WRITE);
    } catch (java.nio.file.FileSystemException e) {
      return; // a directory this process may not write: it only reads
    }
    try {
      ownerLock = ownerChannel.tryLock();
    } catch (java.nio.channels.OverlappingFileLockException e) {
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

  private void scan(boolean verify) throws IOException {
    List<Path> files;
    try (Stream<Path> walk = Files.walk(root, 3)) {
      files = walk.filter(Files::isRegularFile).sorted().toList();
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
      try (SegmentFile f = SegmentFile.open(p, verify ? SegmentFile.Verify.ALWAYS : SegmentFile.Verify.NEVER)) {
        register(new SegmentRef(p, f.info(), f.fileSize()));
      } catch (CorruptFileException e) {
        if (owner()) {
          Files.deleteIfExists(p);
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

  private synchronized void register(SegmentRef ref) {
    SegmentRef old = byPath.put(ref.path(), ref);
    if (old != null) {
      bytes -= old.bytes();
      byChunk.get(key(old.info().dataset(), old.info().datasetVersion(), old.info().chunk())).remove(old);
    }
    byChunk
        .computeIfAbsent(key(ref.info().dataset(), ref.info().datasetVersion(), ref.info().chunk()), k -> new ArrayList<>())
        .add(ref);
    bytes += ref.bytes();
    generation++;
  }

  @Override
  public synchronized long generation() {
    return generation;
  }

  @Override
  public SegmentSource.Lease lease(io.strata.sdk.Dataset dataset, String feature, int chunk) throws IOException {
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

  /** A segment holding {@code feature} of the given chunk, if any. */
  @Override
  public boolean stillResident(io.strata.sdk.Dataset dataset, String feature, int chunk) {
    return find(dataset.name(), dataset.version(), feature, chunk).isPresent();
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

  /** The file a segment of these columns of this chunk is written to. */
  public Path pathFor(SegmentInfo info) {
    Manifest.checkName(info.dataset());
    if (!info.datasetVersion().matches("[A-Za-z0-9_.-]{1,64}")) {
      throw new IllegalArgumentException("bad dataset version '" + info.datasetVersion() + "'");
    }
    return root.resolve(info.dataset())
        .resolve(info.datasetVersion())
        .resolve(String.format("c%06d-%s.arrow", info.chunk(), columnsHash(info.columns())));
  }

  private static String columnsHash(List<String> columns) {
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      for (String c : columns) {
        sha.update(c.getBytes(StandardCharsets.UTF_8));
        sha.update((byte) 0);
      }
      return HexFormat.of().formatHex(sha.digest(), 0, 6);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Writes a segment atomically and adds it to the catalog. */
  public SegmentRef write(SegmentInfo info, SequencedMap<String, Column> columns) throws IOException {
    checkOpen();
    Path path = pathFor(info);
    long size = SegmentWriter.write(path, info, columns);
    SegmentRef ref = new SegmentRef(path, info, size);
    register(ref);
    return ref;
  }

  /**
   * Maps a segment for reading; the caller closes the lease when done. Fails with
   * {@link NoSuchFileException} if the segment has been removed.
   */
  public synchronized Lease map(SegmentRef ref) throws IOException {
    checkOpen();
    Mapping m = mapped.get(ref.path());
    if (m == null || m.doomed) {
      if (!byPath.containsKey(ref.path())) {
        throw new NoSuchFileException(ref.path().toString(), null, "segment was evicted");
      }
      SegmentFile f;
      try {
        f = SegmentFile.open(ref.path(), verifyOnMap);
      } catch (CorruptFileException e) {
        // A damaged segment is never served: drop it so that readers fall back to ORC.
        forget(ref);
        if (owner()) {
          Files.deleteIfExists(ref.path());
        }
        dropped.add(e.getMessage());
        throw e;
      }
      m = new Mapping(f);
      mapped.put(ref.path(), m);
    }
    m.refs++;
    return new Lease(ref.path(), m.file);
  }

  private void release(Path path) {
    Mapping m = mapped.get(path);
    if (m == null) {
      return;
    }
    m.refs--;
    if (m.refs == 0 && (m.doomed || closed)) {
      mapped.remove(path);
      m.file.close();
    }
  }

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
   * keep a valid mapping until they release it.
   */
  public synchronized void remove(SegmentRef ref) throws IOException {
    forget(ref);
    Mapping m = mapped.get(ref.path());
    if (m != null) {
      m.doomed = true;
      if (m.refs == 0) {
        mapped.remove(ref.path());
        m.file.close();
      }
    }
    Files.deleteIfExists(ref.path());
  }

  /** Unmaps segments that no reader holds. */
  public synchronized void trim() {
    mapped.entrySet().removeIf(e -> {
      if (e.getValue().refs == 0) {
        e.getValue().file.close();
        return true;
      }
      return false;
    });
  }

  /** Number of mapped segments (held or cached). */
  public synchronized int mappedCount() {
    return mapped.size();
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
    trim();
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
