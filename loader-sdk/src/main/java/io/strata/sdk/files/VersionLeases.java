package io.strata.sdk.files;

import io.strata.sdk.internal.SafePaths;
import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.Map;

/**
 * Who still reads a version of a dataset: every open {@link io.strata.sdk.dataset.Dataset} (a job's, or a
 * node's for a registered dataset) holds a shared lock on {@code .strata-readers/<version>} in
 * the dataset directory, and a relayout removes the files of a version it replaced only when it
 * can take that lock exclusively, that is when no process reads the version any more; until then
 * they stay listed in {@code relayout.pending} (FORMAT.md §1.1) for the next relayout or rollback.
 *
 * <p>The lock is the kernel's ({@code flock}-style advisory locks through {@link FileChannel#lock}),
 * so a process that dies lets go of it. A process holds one lock per version file however many
 * datasets it opens on it (the JVM allows one per file and process): a count per file, guarded by
 * this class's monitor. A reader that cannot open the file (no such file and a directory it may not
 * write) reads without a lease; the relayout writes each new version's file, readable by all, so
 * that readers without write access can lease it.
 */
public final class VersionLeases {
  /** The directory of lease files, in the dataset directory. */
  public static final String DIR = ".strata-readers";

  private static final class Held {
    final FileChannel channel;
    final FileLock lock;
    int count;

    Held(FileChannel channel, FileLock lock) {
      this.channel = channel;
      this.lock = lock;
    }
  }

  /** The lease files this process holds, by path. Guarded by the class. */
  @GuardedBy("VersionLeases.class")
  private static final Map<Path, Held> HELD = new HashMap<>();

  private VersionLeases() {}

  private static Path file(Path dir, String version) {
    if (!version.matches("[A-Za-z0-9][A-Za-z0-9._-]{0,127}")) {
      throw new IllegalArgumentException("not a dataset version: '" + version + "'");
    }
    Path d = dir.toAbsolutePath().normalize();
    try {
      d = d.toRealPath(); // one file per dataset however it is reached (a link to it leases the same file)
    } catch (IOException e) {
      // not there (yet): its path as given
    }
    return d.resolve(DIR).resolve(version);
  }

  /** A lease on {@code version} of the dataset in {@code dir}; close it when done reading. */
  public static AutoCloseable acquire(Path dir, String version) {
    if (Locations.remote(dir)) {
      return () -> {}; // read-only to Strata: no relayout ever replaces a version there
    }
    Path f = file(dir, version);
    synchronized (VersionLeases.class) {
      Held h = HELD.get(f);
      if (h == null) {
        h = open(f);
        if (h == null) {
          return () -> {};
        }
        HELD.put(f, h);
      }
      h.count++;
    }
    boolean[] closed = {false};
    return () -> release(f, closed);
  }

  /** Opens and share-locks {@code f} (created if it can be); null where it cannot be opened. */
  private static Held open(Path f) {
    FileChannel ch = null;
    try {
      try {
        leaseDirectory(f);
        ch = FileChannel.open(f, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE,
            LinkOption.NOFOLLOW_LINKS);
      } catch (IOException e) {
        // A dataset this user may read, not write (a link where the lease directory or file should be: no lease).
        ch = FileChannel.open(requirePlain(f), StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
      }
      return new Held(ch, ch.lock(0, Long.MAX_VALUE, true));
    } catch (IOException | RuntimeException e) {
      if (ch != null) {
        try {
          ch.close();
        } catch (IOException ignored) {
          // nothing held
        }
      }
      return null;
    }
  }

  private static void release(Path f, boolean[] closed) throws IOException {
    synchronized (VersionLeases.class) {
      if (closed[0]) {
        return;
      }
      closed[0] = true;
      Held h = HELD.get(f);
      if (h == null || --h.count > 0) {
        return;
      }
      HELD.remove(f);
      try {
        h.lock.release();
      } finally {
        h.channel.close();
      }
    }
  }

  /**
   * Whether a process (this one included) holds a lease on {@code version}: its file cannot be
   * locked exclusively. False where no file was ever made for it (no reader could lease it).
   */
  public static boolean inUse(Path dir, String version) throws IOException {
    Path f = file(dir, version);
    synchronized (VersionLeases.class) {
      if (HELD.containsKey(f)) {
        return true;
      }
      try (FileChannel ch = FileChannel.open(requirePlain(f), StandardOpenOption.READ, StandardOpenOption.WRITE,
          LinkOption.NOFOLLOW_LINKS)) {
        FileLock l = ch.tryLock();
        if (l == null) {
          return true;
        }
        l.release();
        return false;
      } catch (NoSuchFileException e) {
        return false;
      } catch (OverlappingFileLockException e) {
        return true;
      }
    }
  }

  /** Makes the lease directory of {@code f} exist as a plain directory; refuses it when it is a link or not a directory. */
  private static void leaseDirectory(Path f) throws IOException {
    Path d = f.getParent();
    if (!Files.exists(d, LinkOption.NOFOLLOW_LINKS)) {
      try {
        Files.createDirectory(d);
      } catch (java.nio.file.FileAlreadyExistsException raced) {
        // made meanwhile: checked below
      }
    }
    if (!Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)) {
      throw new AccessDeniedException(d.toString(), null, "is not a plain directory (a link?): refused as the dataset's lease directory");
    }
  }

  /** {@code f}, once neither it nor its lease directory is a link. */
  private static Path requirePlain(Path f) throws IOException {
    if (Files.isSymbolicLink(f.getParent()) || Files.isSymbolicLink(f)) {
      throw new AccessDeniedException(f.toString(), null, "is reached through a link: refused as a lease file");
    }
    return f;
  }

  /** Makes the lease file of {@code version} exist, readable by every user, for readers that may not create it. */
  public static void prepare(Path dir, String version) throws IOException {
    Path f = file(dir, version);
    leaseDirectory(f);
    if (!Files.exists(f, LinkOption.NOFOLLOW_LINKS)) {
      Files.createFile(f);
    }
    requirePlain(f);
    try {
      // Never through a link: the directory and the file were just found plain, and each mode is set on the name itself.
      Files.getFileAttributeView(f, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
          .setPermissions(PosixFilePermissions.fromString("rw-r--r--"));
      Files.getFileAttributeView(f.getParent(), PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
          .setPermissions(PosixFilePermissions.fromString("rwxr-xr-x"));
    } catch (UnsupportedOperationException | NullPointerException e) {
      // not a POSIX file system: its defaults apply
    }
  }

  /** Removes the lease file of {@code version}, whose files are gone (nothing if absent or held). */
  public static void forget(Path dir, String version) throws IOException {
    Path f = file(dir, version);
    synchronized (VersionLeases.class) {
      if (!HELD.containsKey(f)) {
        SafePaths.deleteInside(f.getParent().getParent(), DIR + "/" + version, "the lease file of version " + version);
      }
    }
  }
}
