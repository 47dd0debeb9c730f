package io.strata.ops.serve;

import com.fasterxml.jackson.databind.node.ArrayNode;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.PrivateDirs;
import io.strata.sdk.loader.BatchMemory;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicInteger;

/** Shared-memory files in one private directory, one per slab, mapped read-write here. */
final class ShmMemory implements BatchMemory, AutoCloseable {
  record Region(int id, long base, long size, Path file, Arena arena) {}

  private final Path dir;
  private final AtomicInteger ids = new AtomicInteger();
  private final ConcurrentSkipListMap<Long, Region> byAddress = new ConcurrentSkipListMap<>();
  private final ConcurrentLinkedQueue<Integer> retired = new ConcurrentLinkedQueue<>();
  private final ConcurrentLinkedQueue<Region> announced = new ConcurrentLinkedQueue<>();

  ShmMemory(Path dir) {
    this.dir = dir;
  }

  /**
   * A new private directory under {@code root} (a directory private to this user: {@link
   * io.strata.sdk.internal.PrivateDirs}); stale ones of dead servers are removed first, never
   * following a link.
   */
  static ShmMemory create(Path root) throws IOException {
    PrivateDirs.check(root);
    removeStale(root);
    Path dir = Files.createTempDirectory(root, LoaderServe.DIR_PREFIX + ProcessHandle.current().pid() + "-",
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    return new ShmMemory(dir);
  }

  private static void removeStale(Path root) {
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(root, LoaderServe.DIR_PREFIX + "*")) {
      for (Path d : ds) {
        String rest = d.getFileName().toString().substring(LoaderServe.DIR_PREFIX.length());
        int dash = rest.indexOf('-');
        try {
          long pid = Long.parseLong(dash < 0 ? rest : rest.substring(0, dash));
          if (ProcessHandle.of(pid).isEmpty() && Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)) {
            AtomicFiles.deleteTree(d);
          }
        } catch (NumberFormatException | IOException ignored) {
          // Not ours, or already gone.
        }
      }
    } catch (IOException ignored) {
      // An unreadable root: nothing to clean.
    }
  }

  Path dir() {
    return dir;
  }

  /** The service closes a batch only when the job gave it back, and never reads it after: no scope per batch. */
  @Override
  public boolean scopedBatches() {
    return false;
  }

  @Override
  public Slab allocate(long bytes) throws IOException {
    int id = ids.getAndIncrement();
    Path file = dir.resolve("slab-" + id);
    Arena arena = Arena.ofShared();
    boolean ok = false;
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
        StandardOpenOption.WRITE)) {
      MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
      Region r = new Region(id, m.address(), bytes, file, arena);
      byAddress.put(r.base(), r);
      announced.add(r);
      ok = true;
      return Slab.of(m, () -> free(r));
    } catch (IOException e) {
      throw new IOException("cannot create shared batch memory " + file + " (" + bytes + " bytes): " + e.getMessage()
          + "; is " + dir.getParent() + " full?", e);
    } finally {
      if (!ok) {
        arena.close();
        Files.deleteIfExists(file);
      }
    }
  }

  private void free(Region r) {
    byAddress.remove(r.base());
    r.arena().close();
    try {
      Files.deleteIfExists(r.file());
    } catch (IOException ignored) {
      // The directory goes when the server ends.
    }
    retired.add(r.id());
  }

  /** The slab holding {@code [address, address + length)}, or null. */
  Region find(long address, long length) {
    Map.Entry<Long, Region> e = byAddress.floorEntry(address);
    if (e == null) {
      return null;
    }
    Region r = e.getValue();
    return address + length <= r.base() + r.size() ? r : null;
  }

  void drainRetired(ArrayNode into) {
    Integer id;
    while ((id = retired.poll()) != null) {
      into.add(id);
    }
  }

  void drainAnnounced(ArrayNode into) {
    Region r;
    while ((r = announced.poll()) != null) {
      into.addArray().add(r.id()).add(r.file().getFileName().toString()).add(r.size());
    }
  }

  @Override
  public void close() throws IOException {
    for (Region r : List.copyOf(byAddress.values())) {
      free(r);
    }
    AtomicFiles.deleteTree(dir);
  }
}
