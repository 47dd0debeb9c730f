package io.strata.sdk.internal;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Objects;

/**
 * Where Strata deletes, renames, writes or changes modes: every path walked component by component
 * before anything is changed, so that a link another user planted anywhere on the way cannot turn
 * the change onto a file of someone else's. A process run as root (a node, a relayout, a
 * rollback) is exactly the one such a link is planted for.
 *
 * <p>The rules, as the kernel's {@code protected_symlinks} and OpenSSH's {@code StrictModes} put
 * them:
 * <ul>
 *   <li>{@link #trusted}: a link on the way is followed only when it belongs to root or to this
 *       user and lies in a directory only they can change (owned by root or this user, and
 *       writable by no one else unless sticky, so that no one else can replace the link). Any other
 *       link is refused, with its name and owner.
 *   <li>{@link #privateWay}: as {@link #trusted}, and every directory on the way is owned by root
 *       or this user and writable by no one else unless sticky: what a private directory's
 *       ancestors must be, since whoever can change one of them can move the private directory
 *       away and put a link in its place.
 *   <li>{@link #inside}: below a dataset's directory (its own files, named by its manifest,
 *       {@code relayout.pending} or a previous manifest) no link at all: a dataset's files are
 *       plain files in plain directories.
 *   <li>{@link #deleteInside} and {@link #deleteTree} remove files below a checked directory
 *       through directory handles ({@code openat} with {@code O_NOFOLLOW}, Java's {@link
 *       SecureDirectoryStream}): a directory swapped for a link between a check and the deletion
 *       makes the deletion fail instead of following it.
 * </ul>
 *
 * <p>Paths of other file systems (HDFS, which Strata never writes) are returned as they are.
 * Stateless; thread-safe.
 */
public final class SafePaths {
  /** The most links one walk follows (the kernel's own limit before ELOOP). */
  private static final int MAX_LINKS = 40;

  private SafePaths() {}

  /**
   * The real path of {@code p} (its existing part resolved, the part that does not exist yet
   * appended as named), once every link on the way has been found trusted; an {@link
   * AccessDeniedException} naming the link otherwise.
   */
  public static Path trusted(Path p) throws IOException {
    return walk(p, Mode.TRUSTED);
  }

  /**
   * Where {@code p} leads: its real path as far as it exists (every link followed, a dangling one
   * too), the rest appended as named. What confinement checks, so that a name leading out of the
   * roots is refused alike whether its target exists or not (no existence oracle).
   */
  public static Path resolved(Path p) throws IOException {
    return walk(p, Mode.ANY);
  }

  /**
   * As {@link #trusted}, and every existing directory on the way is owned by root or this user and
   * writable by no one else unless it is sticky: the way to a directory private to this user.
   */
  public static Path privateWay(Path p) throws IOException {
    return walk(p, Mode.PRIVATE);
  }

  /** What a walk checks: nothing, the links on the way, or the links and every directory. */
  private enum Mode { ANY, TRUSTED, PRIVATE }

  /**
   * {@code base.resolve(rel)}, once {@code rel} is found relative, free of {@code ..}, and no
   * existing component of it below {@code base} a link: the path of one of a dataset's own files.
   * {@code what} names the file in the refusal ("the previous version's file").
   */
  public static Path inside(Path base, String rel, String what) throws IOException {
    Path r = relative(base, rel, what);
    Path cur = base;
    for (Path part : r) {
      cur = cur.resolve(part.toString());
      BasicFileAttributes a;
      try {
        a = Files.readAttributes(cur, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      } catch (NoSuchFileException e) {
        break;
      }
      if (a.isSymbolicLink()) {
        throw new AccessDeniedException(base.resolve(rel).toString(), null,
            what + " passes through a link (" + base.relativize(cur) + "): refused; a dataset's files are plain files");
      }
    }
    return base.resolve(r);
  }

  /**
   * Deletes {@code base/rel} (a file, a link's name, or an empty directory) if it is there, every
   * directory below {@code base} on the way opened without following links; false when there was
   * nothing to delete. A link on the way is refused ({@link AccessDeniedException}).
   */
  public static boolean deleteInside(Path base, String rel, String what) throws IOException {
    Path r = relative(base, rel, what);
    if (base.getFileSystem() != FileSystems.getDefault()) {
      return Files.deleteIfExists(base.resolve(r));
    }
    try (DirectoryStream<Path> top = Files.newDirectoryStream(base)) {
      if (!(top instanceof SecureDirectoryStream<Path> dir)) {
        inside(base, rel, what); // no directory handles here: checked by name, then deleted by name
        return Files.deleteIfExists(base.resolve(r));
      }
      return deleteIn(dir, r, 0, base, what);
    } catch (NoSuchFileException e) {
      return false;
    }
  }

  /** Deletes {@code r}'s last name, {@code dir} being opened at its component {@code i}. */
  private static boolean deleteIn(SecureDirectoryStream<Path> dir, Path r, int i, Path base, String what) throws IOException {
    if (i < r.getNameCount() - 1) {
      SecureDirectoryStream<Path> child;
      try {
        child = dir.newDirectoryStream(r.getName(i), LinkOption.NOFOLLOW_LINKS);
      } catch (NoSuchFileException e) {
        return false;
      } catch (FileSystemException e) {
        throw new AccessDeniedException(base.resolve(r).toString(), null, what + " passes through "
            + r.subpath(0, i + 1) + ", which is not a plain directory (a link?): refused");
      }
      try (child) {
        return deleteIn(child, r, i + 1, base, what);
      }
    }
    Path last = r.getFileName();
    BasicFileAttributes a;
    try {
      a = dir.getFileAttributeView(last, BasicFileAttributeView.class, LinkOption.NOFOLLOW_LINKS).readAttributes();
    } catch (NoSuchFileException e) {
      return false;
    }
    try {
      if (a.isDirectory()) {
        dir.deleteDirectory(last);
      } else {
        dir.deleteFile(last); // a link's name, never what it points to
      }
    } catch (NoSuchFileException e) {
      return false;
    }
    return true;
  }

  /**
   * Deletes {@code dir} and everything under it without following a link inside it (a link is
   * removed, not what it points to); {@code dir} itself, when a link, is removed as a name.
   * Nothing when it does not exist.
   */
  public static void deleteTree(Path dir) throws IOException {
    BasicFileAttributes a;
    try {
      a = Files.readAttributes(dir, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    } catch (NoSuchFileException e) {
      return;
    }
    if (a.isDirectory()) {
      try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
        if (ds instanceof SecureDirectoryStream<Path> s) {
          Object opened = s.getFileAttributeView(BasicFileAttributeView.class).readAttributes().fileKey();
          if (!Objects.equals(opened, a.fileKey())) {
            throw new AccessDeniedException(dir.toString(), null, "was replaced while it was being removed: refused");
          }
          empty(s);
        } else {
          emptyByName(dir);
        }
      }
    }
    Files.deleteIfExists(dir);
  }

  private static void empty(SecureDirectoryStream<Path> s) throws IOException {
    List<Path> names = new ArrayList<>();
    for (Path e : s) {
      names.add(e.getFileName());
    }
    for (Path n : names) {
      BasicFileAttributes a;
      try {
        a = s.getFileAttributeView(n, BasicFileAttributeView.class, LinkOption.NOFOLLOW_LINKS).readAttributes();
      } catch (NoSuchFileException gone) {
        continue;
      }
      try {
        if (a.isDirectory()) {
          try (SecureDirectoryStream<Path> c = s.newDirectoryStream(n, LinkOption.NOFOLLOW_LINKS)) {
            empty(c);
          }
          s.deleteDirectory(n);
        } else {
          s.deleteFile(n);
        }
      } catch (NoSuchFileException gone) {
        // removed meanwhile
      }
    }
  }

  /** Where there are no directory handles: deepest first, by name, links removed as names (never followed). */
  private static void emptyByName(Path dir) throws IOException {
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
      for (Path p : ds) {
        if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
          emptyByName(p);
        }
        Files.deleteIfExists(p);
      }
    }
  }

  private static Path relative(Path base, String rel, String what) throws AccessDeniedException {
    Path r = base.getFileSystem().getPath(rel);
    boolean bad = rel.isEmpty() || r.isAbsolute() || r.getNameCount() == 0;
    for (Path part : r) {
      bad |= part.toString().equals("..") || part.toString().equals(".") || part.toString().isEmpty();
    }
    if (bad) {
      throw new AccessDeniedException(base.resolve(rel).toString(), null, what + " is not a plain relative path inside "
          + base + ": refused");
    }
    return r;
  }

  /** What a walk needs of one component, read without following it. */
  private record Info(int owner, int mode, boolean link, boolean directory) {
    static Info of(Path p) throws IOException {
      var m = Files.readAttributes(p, "unix:uid,mode,isSymbolicLink,isDirectory", LinkOption.NOFOLLOW_LINKS);
      return new Info((Integer) m.get("uid"), (Integer) m.get("mode"), (Boolean) m.get("isSymbolicLink"), (Boolean) m.get("isDirectory"));
    }

    boolean writableByOthers() {
      return (mode & 0022) != 0;
    }

    boolean sticky() {
      return (mode & 01000) != 0;
    }

    String modeText() {
      return String.format("%04o", mode & 07777);
    }
  }

  private static Path walk(Path p, Mode mode) throws IOException {
    boolean strict = mode == Mode.PRIVATE;
    if (p.getFileSystem() != FileSystems.getDefault()) {
      return p;
    }
    Path abs = p.toAbsolutePath();
    Deque<String> rest = new ArrayDeque<>();
    for (Path part : abs) {
      rest.addLast(part.toString());
    }
    int me = PrivateDirs.uid();
    Path cur = abs.getRoot();
    Info curInfo = Info.of(cur);
    if (strict) {
      requireSafeDirectory(p, cur, curInfo, me);
    }
    int links = 0;
    while (!rest.isEmpty()) {
      String name = rest.pollFirst();
      if (name.isEmpty() || name.equals(".")) {
        continue;
      }
      if (name.equals("..")) {
        cur = cur.getParent() == null ? cur : cur.getParent(); // cur is real: its parent by name is its parent
        curInfo = Info.of(cur);
        continue;
      }
      Path next = cur.resolve(name);
      Info a;
      try {
        a = Info.of(next);
      } catch (NoSuchFileException e) {
        // Not there yet: what follows is made by whoever asked, below a directory checked here.
        Path out = next;
        for (String r : rest) {
          if (r.equals("..")) {
            throw new AccessDeniedException(p.toString(), null, "names '..' below " + next + ", which does not exist: refused");
          }
          if (!r.isEmpty() && !r.equals(".")) {
            out = out.resolve(r);
          }
        }
        return out;
      }
      if (a.link()) {
        if (mode != Mode.ANY && !trustedOwner(a.owner(), me)) {
          throw new AccessDeniedException(p.toString(), null, "leads through " + next + ", a link owned by user " + a.owner()
              + " (neither root nor this user): refused; give the real path");
        }
        if (mode != Mode.ANY && (!trustedOwner(curInfo.owner(), me) || (curInfo.writableByOthers() && !curInfo.sticky()))) {
          throw new AccessDeniedException(p.toString(), null, "leads through " + next + ", a link in a directory another user"
              + " can change (" + cur + ", owner " + curInfo.owner() + ", mode " + curInfo.modeText() + "): refused; give the real path");
        }
        if (++links > MAX_LINKS) {
          throw new FileSystemException(p.toString(), null, "has too many levels of links");
        }
        Path target = Files.readSymbolicLink(next);
        List<String> parts = new ArrayList<>();
        for (Path t : target) {
          parts.add(t.toString());
        }
        for (int i = parts.size() - 1; i >= 0; i--) {
          rest.addFirst(parts.get(i));
        }
        if (target.isAbsolute()) {
          cur = target.getRoot();
          curInfo = Info.of(cur);
        }
        continue;
      }
      if (!a.directory() && !rest.isEmpty()) {
        if (mode == Mode.ANY) {
          return next.resolve(String.join("/", rest)); // where it leads, though it cannot be opened
        }
        throw new FileSystemException(p.toString(), null, next + " is not a directory");
      }
      if (strict && a.directory()) {
        requireSafeDirectory(p, next, a, me);
      }
      cur = next;
      curInfo = a;
    }
    return cur;
  }

  private static void requireSafeDirectory(Path p, Path dir, Info a, int me) throws IOException {
    if (!trustedOwner(a.owner(), me)) {
      throw new AccessDeniedException(p.toString(), null, "lies under " + dir + ", owned by user " + a.owner()
          + " (neither root nor this user), who could replace what lies below it: refused");
    }
    if (a.writableByOthers() && !a.sticky()) {
      throw new AccessDeniedException(p.toString(), null, "lies under " + dir + ", which other users can write (mode "
          + a.modeText() + ", not sticky), so they could replace what lies below it: refused");
    }
  }

  private static boolean trustedOwner(int owner, int me) {
    return owner == 0 || (me >= 0 && owner == me);
  }
}
