package io.strata.node;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.LoadingCache;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.files.Locations;
import io.strata.sdk.files.Manifest;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.Confinement;
import io.strata.sdk.internal.Json;
import io.strata.sdk.internal.SafePaths;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The node's HDD tier: the registry of datasets (name to directory, kept in {@code
 * <home>/datasets.json}), every directory and file confined to the HDD roots, and the open
 * datasets (at most 64, in a cache) handed out directly for quick work or as {@linkplain Lease
 * leases} for long work (promotions, derivations) so that a re-registration or the cache's size
 * bound never closes a dataset under its user.
 *
 * <p>Threads and locks: changes to the registry are serialized on this object's monitor and
 * published as an immutable copy ({@code registryView}) that every reader uses without a lock,
 * the cache's loader included (taking a monitor inside the cache's computation could deadlock).
 * Lease counts are guarded by their own monitor ({@code datasetUsers}), which the cache's removal
 * listener takes; no other lock is taken while holding it except the cache's own.
 */
final class DatasetRegistry implements AutoCloseable {
  static final String REGISTRY = "datasets.json";

  private final Path home;
  private final List<Path> hddRoots;
  @GuardedBy("this")
  private final Map<String, Path> registry = new TreeMap<>();
  /** An immutable copy of {@link #registry}, published on every change, for readers outside the monitor. */
  private volatile Map<String, Path> registryView = Map.of();
  private final Map<String, Long> orcBytes = new ConcurrentHashMap<>();
  private final LoadingCache<String, Dataset> open;

  DatasetRegistry(NodeConfig config) {
    this.home = config.home();
    this.hddRoots = List.copyOf(config.hddRoots());
    this.open = Caffeine.newBuilder()
        .maximumSize(64)
        .removalListener((String name, Dataset ds, com.github.benmanes.caffeine.cache.RemovalCause cause) -> retire(ds))
        .build(this::openDataset);
  }

  /** Whether {@code name} is registered. */
  boolean contains(String name) {
    return registryView.containsKey(name);
  }

  /** The directory {@code name} is registered for, or null. */
  Path directory(String name) {
    return registryView.get(name);
  }

  /** The registered names, sorted (a snapshot). */
  Set<String> names() {
    return registryView.keySet();
  }

  /** The ORC bytes of a registered dataset (0 when unknown). */
  long orcBytes(String name) {
    return orcBytes.getOrDefault(name, 0L);
  }

  /** The ORC bytes of every registered dataset. */
  long totalOrcBytes() {
    long b = 0;
    for (String n : registryView.keySet()) {
      b += orcBytes(n);
    }
    return b;
  }

  /** Datasets open in the cache now. */
  long openCount() {
    return open.estimatedSize();
  }

  private Dataset openDataset(String name) {
    // Read from the published copy: this runs inside the cache's computation, where taking this
    // object's monitor could deadlock with a thread that holds it and waits for the same entry.
    Path dir = registryView.get(name);
    if (dir == null) {
      throw NodeException.notFound("no dataset '" + name + "' is registered");
    }
    try {
      // Confined again at every open, not only at registration: the directory, or a part of its
      // path, may have become a link out of the roots since (after a restart, say).
      if (!checkInsideRoots(dir.toString()).equals(dir)) {
        throw NodeException.forbidden(dir + " is outside the node's HDD roots " + hddRoots);
      }
      checkManifestInsideRoots(dir);
      Dataset ds = Dataset.open(dir, confinement());
      orcBytes.put(name, ds.manifest().fileBytes());
      return ds;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The open dataset {@code name} (404 if not registered, 409 if it cannot be opened). */
  Dataset dataset(String name) {
    if (!registryView.containsKey(name)) {
      throw NodeException.notFound("no dataset '" + name + "' is registered (strata dataset list shows those that are)");
    }
    try {
      return open.get(name);
    } catch (UncheckedIOException e) {
      throw NodeException.conflict("dataset '" + name + "' cannot be opened: " + e.getCause().getMessage());
    }
  }

  /**
   * Open datasets in use by long work (promotions, derivations), counted, and those the cache
   * dropped (re-registration, size) while in use: closed when their last user lets go, never
   * under a reader. Guarded by its own monitor (the cache's removal listener takes it, so it is
   * never held while waiting for this object's).
   */
  @GuardedBy("datasetUsers")
  private final IdentityHashMap<Dataset, int[]> datasetUsers = new IdentityHashMap<>();
  @GuardedBy("datasetUsers")
  private final Set<Dataset> retiredDatasets = Collections.newSetFromMap(new IdentityHashMap<>());

  /** A dataset held open for one piece of work. */
  final class Lease implements AutoCloseable {
    private final Dataset ds;
    private boolean released;

    private Lease(Dataset ds) {
      this.ds = ds;
    }

    Dataset dataset() {
      return ds;
    }

    @Override
    public void close() {
      synchronized (datasetUsers) {
        if (released) {
          return;
        }
        released = true;
        int[] n = datasetUsers.get(ds);
        if (--n[0] == 0) {
          datasetUsers.remove(ds);
          if (retiredDatasets.remove(ds)) {
            closeQuietly(ds);
          }
        }
      }
    }
  }

  /** The open dataset {@code name}, held open until the lease is closed (404 if not registered). */
  Lease lease(String name) {
    if (!registryView.containsKey(name)) {
      throw NodeException.notFound("no dataset '" + name + "' is registered (strata dataset list shows those that are)");
    }
    synchronized (datasetUsers) {
      Dataset ds;
      try {
        ds = open.get(name);
      } catch (UncheckedIOException e) {
        throw NodeException.conflict("dataset '" + name + "' cannot be opened: " + e.getCause().getMessage());
      }
      datasetUsers.computeIfAbsent(ds, d -> new int[1])[0]++;
      return new Lease(ds);
    }
  }

  /** The cache dropped {@code ds}: closed now if unused, else when its last lease is closed. */
  private void retire(Dataset ds) {
    if (ds == null) {
      return;
    }
    synchronized (datasetUsers) {
      if (datasetUsers.containsKey(ds)) {
        retiredDatasets.add(ds);
        return;
      }
    }
    closeQuietly(ds);
  }

  private static void closeQuietly(Dataset ds) {
    try {
      ds.close();
    } catch (IOException ignored) {
      // Closing a dataset only releases readers.
    }
  }

  /** The real path of {@code dir} if it lies inside an HDD root (after resolving links), else 403. */
  Path checkInsideRoots(String dir) throws IOException {
    if (dir == null || dir.isBlank()) {
      throw NodeException.badRequest("'path' is required: the dataset directory");
    }
    if (dir.indexOf('\0') >= 0) {
      throw NodeException.badRequest("'path' contains a NUL character");
    }
    Path p;
    try {
      p = Locations.dataset(dir);
    } catch (IllegalArgumentException e) { // an InvalidPathException too
      throw NodeException.badRequest("'path' " + e.getMessage());
    }
    if (!p.isAbsolute()) {
      throw NodeException.badRequest("'path' must be absolute, got '" + dir + "'");
    }
    for (Path part : p) {
      if (part.toString().equals("..")) {
        throw NodeException.forbidden("'path' must not contain '..': " + dir);
      }
    }
    // Outside the roots by its name: refused before anything is looked up, so that the answer
    // is the same whether such a directory exists, is readable, or not.
    p = p.normalize();
    if (!inRoots(p, false)) {
      throw NodeException.forbidden(p + " is outside the node's HDD roots " + hddRoots);
    }
    // Where it leads, as far as it exists: a name through a link out of the roots is refused alike
    // whether the rest of it exists or not, so that the answer tells nothing of what lies outside.
    if (!inRoots(resolved(p), true)) {
      throw NodeException.forbidden(p + " is outside the node's HDD roots " + hddRoots);
    }
    if (!Files.isDirectory(p)) {
      throw NodeException.notFound("no dataset directory at " + p);
    }
    Path real = p.toRealPath();
    if (!inRoots(real, true)) {
      throw NodeException.forbidden(p + " is outside the node's HDD roots " + hddRoots);
    }
    return real;
  }

  /**
   * Every file the node opens of a dataset is opened confined to the HDD roots (their real paths
   * now), on every open, not only at registration: a part, sidecar, index or manifest replaced by a
   * link out since is refused as it is opened ({@link Confinement}).
   */
  private Confinement confinement() throws IOException {
    return Confinement.within(hddRoots, "the node's HDD roots");
  }

  /**
   * Whether {@code p} (absolute, normalized) lies in an HDD root; with {@code real}, after resolving
   * links. Only the roots of {@code p}'s own file system are looked at: a local path never asks a
   * name node, and an HDFS path never asks another one. A root of that file system that cannot be
   * reached now (its name node silent or refusing) is said to be so (503), not taken as absent.
   */
  private boolean inRoots(Path p, boolean real) throws IOException {
    for (Path root : hddRoots) {
      if (root.getFileSystem() != p.getFileSystem()) {
        continue;
      }
      if (!real && p.startsWith(root.toAbsolutePath().normalize())) {
        return true;
      }
      Path r;
      try {
        r = root.toRealPath();
      } catch (NoSuchFileException gone) {
        continue;
      } catch (IOException e) {
        if (root.getFileSystem() != java.nio.file.FileSystems.getDefault()) {
          throw NodeException.unavailable("the HDD root " + root + " cannot be reached now (" + e.getMessage() + ")");
        }
        throw e;
      }
      if (p.startsWith(r)) {
        return true;
      }
    }
    return false;
  }

  /** Where {@code p} leads as far as it exists ({@link SafePaths#resolved}; HDFS paths as they are). */
  private static Path resolved(Path p) throws IOException {
    return SafePaths.resolved(p);
  }

  /**
   * Every file the manifest of the dataset in {@code dir} names (ORC parts, the sample index)
   * must lie in an HDD root, by its name and, where it exists, by its real path (no link out). A
   * name outside is refused before anything is opened, so that the answer does not tell whether
   * such a file exists.
   */
  private void checkManifestInsideRoots(Path dir) throws IOException {
    checkManifestInsideRoots(dir, false);
  }

  /** As above; with {@code whole}, every file named must also exist as a regular file (registration). */
  private void checkManifestInsideRoots(Path dir, boolean whole) throws IOException {
    Manifest m;
    try {
      m = Manifest.read(dir, confinement());
    } catch (CorruptFileException | NoSuchFileException e) {
      throw NodeException.badRequest("not a usable dataset: " + e.getMessage());
    }
    List<String[]> named = new ArrayList<>();
    for (int i = 0; i < m.files().size(); i++) {
      named.add(new String[] {"files[" + i + "].path", m.files().get(i).path()});
    }
    if (m.sampleIndex() != null) {
      named.add(new String[] {"sampleIndex.path", m.sampleIndex().path()});
    }
    for (String[] n : named) {
      Path p;
      try {
        p = io.strata.sdk.files.DatasetFiles.resolve(dir, n[1]).toAbsolutePath().normalize();
      } catch (InvalidPathException e) {
        throw NodeException.badRequest("dataset " + dir + ": manifest " + n[0] + " is not a valid path");
      }
      boolean inside = inRoots(p, false) && inRoots(resolved(p), true);
      if (!inside) {
        throw NodeException.forbidden("dataset " + dir + ": manifest " + n[0] + " points outside the node's HDD roots");
      }
      if (whole && !Files.isRegularFile(p)) {
        throw NodeException.badRequest("not a usable dataset: " + dir + ": manifest " + n[0] + " names no file ('" + clip(n[1])
            + "' is " + (Files.exists(p) ? "not a regular file" : "missing") + "; parts are paths relative to the dataset directory)");
      }
    }
  }

  /**
   * What is wrong now with the files of registered dataset {@code name}, or null: its manifest
   * read again, and every file it names still a regular file inside the roots with the size the
   * manifest gives. A dataset open since its registration is listed by this, not by how it was
   * when opened: files damaged, removed or replaced by a link while the node runs show at once.
   * A stat per file; nothing is read.
   */
  String problem(String name) {
    Path dir = registryView.get(name);
    if (dir == null) {
      return null;
    }
    try {
      Manifest m = Manifest.read(dir, confinement());
      for (Manifest.OrcFileInfo f : m.files()) {
        Path p = io.strata.sdk.files.DatasetFiles.resolve(dir, f.path());
        if (!inRoots(resolved(p), true)) {
          return "its file " + f.path() + " points outside the node's HDD roots";
        }
        if (!Files.isRegularFile(p)) {
          return "its file " + f.path() + " is " + (Files.exists(p) ? "not a regular file" : "missing");
        }
        long size = Files.size(p);
        if (size != f.bytes()) {
          return "its file " + f.path() + " has " + size + " bytes, not the " + f.bytes() + " its manifest gives (damaged or replaced)";
        }
        if (f.version() != null && !f.version().equals(io.strata.sdk.files.DatasetFiles.storeVersion(p))) {
          return "its file " + f.path() + " was replaced since the dataset was imported (its version is no longer "
              + f.version() + ")";
        }
      }
      return null;
    } catch (NodeException e) {
      return e.getMessage();
    } catch (IOException | RuntimeException e) {
      return "it cannot be read now: " + e.getMessage();
    }
  }

  private static String clip(String s) {
    return s.length() > 120 ? s.substring(0, 120) + "..." : s;
  }

  /** Registers (or re-registers) the dataset in {@code dir}; returns its name. */
  String register(String dir) throws IOException {
    Path real = checkInsideRoots(dir);
    checkManifestInsideRoots(real, true);
    Dataset ds;
    try {
      ds = Dataset.open(real, confinement());
    } catch (CorruptFileException | NoSuchFileException e) {
      throw NodeException.badRequest("not a usable dataset: " + e.getMessage());
    }
    String name = ds.name();
    synchronized (this) {
      Path old = registry.get(name);
      if (old != null && !old.equals(real)) {
        ds.close();
        throw NodeException.conflict("dataset name '" + name + "' is already registered for " + old);
      }
      registry.put(name, real);
      registryView = Collections.unmodifiableMap(new TreeMap<>(registry));
      orcBytes.put(name, ds.manifest().fileBytes());
      saveRegistry();
    }
    open.invalidate(name);
    ds.close();
    return name;
  }

  private synchronized void saveRegistry() throws IOException {
    ArrayNode a = Json.array();
    registry.forEach((name, dir) -> a.addObject().put("name", name).put("path", dir.toString()));
    AtomicFiles.write(home.resolve(REGISTRY), Json.pretty(a).getBytes(StandardCharsets.UTF_8));
  }

  /** Reads the kept registry; what is wrong with it goes to {@code notes}. */
  synchronized void load(List<String> startupNotes) throws IOException {
    Path f = home.resolve(REGISTRY);
    if (!Files.exists(f)) {
      return;
    }
    JsonNode a;
    try {
      a = Json.parse(Files.readAllBytes(f));
    } catch (IOException e) {
      startupNotes.add(f + " is damaged (" + e.getMessage() + "); datasets must be registered again");
      return;
    }
    for (JsonNode e : a) {
      String name = e.path("name").asText("");
      Path dir;
      try {
        dir = Locations.dataset(e.path("path").asText("/nonexistent")); // a path, or an hdfs:// URI
      } catch (IllegalArgumentException bad) {
        startupNotes.add(f + " names '" + e.path("path").asText() + "' for " + name + " (" + bad.getMessage() + "): not restored");
        continue;
      }
      if (Files.isDirectory(dir)) {
        registry.put(name, dir);
        registryView = Collections.unmodifiableMap(new TreeMap<>(registry));
        try {
          orcBytes.put(name, Manifest.read(dir).fileBytes());
        } catch (IOException | RuntimeException ex) {
          // Reported when the dataset is opened.
        }
      } else {
        startupNotes.add("registered dataset " + name + " is gone from " + dir);
      }
    }
  }


  /** Closes the open datasets (those leased, when their leases close). */
  @Override
  public void close() {
    open.invalidateAll();
    open.cleanUp();
  }
}
