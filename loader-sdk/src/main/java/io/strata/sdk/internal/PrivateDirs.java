package io.strata.sdk.internal;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * Directories a process keeps for its user alone in places every user shares ({@code /dev/shm},
 * the temporary directory): the loader's batch cache, the loader service's socket and its
 * shared-memory slabs. As ssh and tmux treat theirs: created {@code 0700}; an existing one is used
 * only when it is a real directory (not a link), owned by this user and writable by no one else;
 * otherwise refused with the reason, and nothing in it is read, written or deleted. Another user
 * who plants a directory or a link under the expected name can then neither see our files nor
 * have us delete theirs. The way to it is checked too ({@link SafePaths#privateWay}): every
 * directory above it owned by root or this user and writable by no one else unless sticky, every
 * link on the way this user's or root's, so that no one can move the directory away and put a link
 * in its place. Stateless; thread-safe.
 */
public final class PrivateDirs {
  private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rwx------");

  private PrivateDirs() {}

  /** This process's user id (the owner of {@code /proc/self}), or -1 where it cannot be read. */
  public static int uid() {
    try {
      return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /**
   * This user's directory under the shared memory file system ({@code /dev/shm/strata-UID}) or,
   * where that is not writable, under the temporary directory processes share ({@code
   * strata.sharedTmpdir}, else {@code java.io.tmpdir}); made private, or refused.
   */
  public static Path userRoot() throws IOException {
    Path shm = Path.of("/dev/shm");
    Path base = Files.isDirectory(shm) && Files.isWritable(shm) ? shm
        : Path.of(System.getProperty("strata.sharedTmpdir", System.getProperty("java.io.tmpdir")));
    int uid = uid();
    return ensure(base.resolve("strata-" + (uid >= 0 ? Integer.toString(uid) : System.getProperty("user.name"))));
  }

  /**
   * {@code dir}, created {@code 0700} if missing (its parents as usual), or as it is when it is
   * already private to this user; an {@link IOException} saying why it is refused otherwise.
   */
  public static Path ensure(Path dir) throws IOException {
    Path named = dir.toAbsolutePath().normalize();
    if (named.getParent() == null) {
      throw new IOException("refusing " + named + " as a private directory: it is the root");
    }
    // The way to it, checked before anything is made (no link another user could have planted,
    // no directory another user could change), made, and checked again: a name planted in a
    // sticky directory between the two is found by the second look.
    Path parent = SafePaths.privateWay(named.getParent());
    if (!Files.isDirectory(parent, LinkOption.NOFOLLOW_LINKS)) {
      Files.createDirectories(parent);
      parent = SafePaths.privateWay(parent);
    }
    Path d = parent.resolve(named.getFileName().toString());
    if (!Files.exists(d, LinkOption.NOFOLLOW_LINKS)) {
      try {
        Files.createDirectory(d, PosixFilePermissions.asFileAttribute(OWNER_ONLY));
        // The umask may have taken more than group and others' bits: the owner's are needed.
        Files.setPosixFilePermissions(d, OWNER_ONLY);
      } catch (FileAlreadyExistsException raced) {
        // Made meanwhile (by another of our processes, or by someone else): checked below like any other.
      }
    }
    check(d);
    return d;
  }

  /** Refuses {@code dir} unless it is a real directory owned by this user and writable by no one else. */
  public static void check(Path dir) throws IOException {
    PosixFileAttributes a = Files.readAttributes(dir, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    String fix = "; remove it, or give a directory only you can write (it is created 0700)";
    if (a.isSymbolicLink() || !a.isDirectory()) {
      throw new IOException("refusing " + dir + ": it is " + (a.isSymbolicLink() ? "a link" : "not a directory") + fix);
    }
    int owner = (Integer) Files.getAttribute(dir, "unix:uid", LinkOption.NOFOLLOW_LINKS);
    int me = uid();
    if (me >= 0 && owner != me) {
      throw new IOException("refusing " + dir + ": it is owned by user " + owner + ", not by this user (" + me + ")" + fix);
    }
    Set<PosixFilePermission> p = a.permissions();
    if (p.contains(PosixFilePermission.GROUP_WRITE) || p.contains(PosixFilePermission.OTHERS_WRITE)) {
      throw new IOException("refusing " + dir + ": it is writable by " + (p.contains(PosixFilePermission.OTHERS_WRITE) ? "others" : "its group")
          + " (" + PosixFilePermissions.toString(p) + "); chmod 700 it" + fix.substring(fix.indexOf(',')));
    }
  }
}
