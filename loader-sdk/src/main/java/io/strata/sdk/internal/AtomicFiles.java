package io.strata.sdk.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Crash-safe file replacement: write a temporary file in the target's directory, fsync it, rename
 * it over the target, fsync the directory. A reader sees either the old file or the complete new
 * one, never a prefix. Temporary files start with {@link #TEMP_PREFIX} and may be deleted by
 * whoever finds them at start-up.
 */
public final class AtomicFiles {
  /** Prefix of temporary files; a directory scan skips and cleans them. */
  public static final String TEMP_PREFIX = ".tmp-";

  private AtomicFiles() {}

  /** Writes the contents that {@code body} produces into {@code target}, atomically. */
  public interface Body {
    void writeTo(FileChannel channel) throws IOException;
  }

  /**
   * Writes {@code target} atomically. {@code expectedBytes}, when positive, is checked against the
   * usable space first so that a full disk fails before anything is written.
   */
  public static void write(Path target, long expectedBytes, Body body) throws IOException {
    write(target, expectedBytes, false, body);
  }

  /**
   * Writes {@code target} atomically; with {@code readOnly} the file lands read-only for everyone
   * (mode 0444 where the file system has POSIX permissions), so no process rewrites it in place.
   */
  public static void write(Path target, long expectedBytes, boolean readOnly, Body body) throws IOException {
    write(target, expectedBytes, readOnly, body, null);
  }

  /** Checks a written temporary file before it is renamed into place; throwing keeps it from landing. */
  @FunctionalInterface
  public interface Check {
    void check(Path written) throws IOException;
  }

  /**
   * As above, and {@code check} (when not null) examines the complete temporary file after it was
   * forced to disk and before the rename: a file that fails it never appears under {@code target}.
   */
  public static void write(Path target, long expectedBytes, boolean readOnly, Body body, Check check) throws IOException {
    // The directory's way checked first: a link another user planted above it is refused, not
    // followed (SafePaths); the name written is then the real one.
    Path dir = SafePaths.trusted(target.toAbsolutePath().getParent());
    target = dir.resolve(target.getFileName().toString());
    Files.createDirectories(dir);
    if (expectedBytes > 0) {
      requireSpace(dir, expectedBytes, target);
    }
    Path temp =
        dir.resolve(
            TEMP_PREFIX
                + target.getFileName()
                + "-"
                + Long.toHexString(ThreadLocalRandom.current().nextLong()));
    boolean done = false;
    try {
      try (FileChannel ch =
          FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
        body.writeTo(ch);
        ch.force(true);
      }
      if (check != null) {
        check.check(temp);
      }
      if (readOnly && Files.getFileStore(temp).supportsFileAttributeView(PosixFileAttributeView.class)) {
        Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("r--r--r--"));
      }
      try {
        Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        throw new IOException("cannot rename atomically within " + dir + ": " + e.getMessage(), e);
      }
      fsyncDirectory(dir);
      done = true;
    } catch (IOException e) {
      if (isNoSpace(e)) {
        throw new IOException(
            "writing " + target + " failed: no space left on the device holding " + dir, e);
      }
      throw e;
    } finally {
      if (!done) {
        Files.deleteIfExists(temp);
      }
    }
  }

  /** Writes {@code bytes} into {@code target} atomically. */
  public static void write(Path target, byte[] bytes) throws IOException {
    write(
        target,
        bytes.length,
        ch -> {
          writeFully(ch, ByteBuffer.wrap(bytes));
        });
  }

  /** Writes all of {@code buffer} to the channel at its current position. */
  public static void writeFully(FileChannel ch, ByteBuffer buffer) throws IOException {
    while (buffer.hasRemaining()) {
      ch.write(buffer);
    }
  }

  /** Fails with a clear message when the file store holding {@code dir} lacks {@code bytes}. */
  public static void requireSpace(Path dir, long bytes, Path forWhat) throws IOException {
    FileStore store = Files.getFileStore(dir);
    long usable = store.getUsableSpace();
    if (usable < bytes) {
      throw new IOException(
          "not enough space to write "
              + forWhat
              + ": needs "
              + bytes
              + " bytes, "
              + usable
              + " usable on "
              + store);
    }
  }

  /** Flushes a directory's entries (renames, creations, deletions) to disk. */
  public static void fsyncDirectory(Path dir) throws IOException {
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    }
  }

  /**
   * Forces every file under {@code dir} to disk, then every directory's entries, deepest first:
   * what a tree written by other means (a library's writer that never syncs) needs before one
   * rename makes it visible, so that a crash after the rename cannot leave it with empty or short
   * files. Returns the files forced.
   */
  public static int fsyncTree(Path dir) throws IOException {
    int files = 0;
    List<Path> dirs = new ArrayList<>();
    try (var walk = Files.walk(dir)) {
      for (Path p : walk.toList()) {
        if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
          dirs.add(p);
        } else if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
          try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
            ch.force(true);
          }
          files++;
        }
      }
    }
    for (int i = dirs.size() - 1; i >= 0; i--) {
      fsyncDirectory(dirs.get(i));
    }
    return files;
  }

  static boolean isNoSpace(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      String m = t.getMessage();
      if (m != null && (m.contains("No space left") || m.contains("Disk quota exceeded"))) {
        return true;
      }
    }
    return false;
  }

  /**
   * Deletes {@code dir} and everything under it, following no link inside it ({@link
   * SafePaths#deleteTree}); nothing when it does not exist.
   */
  public static void deleteTree(Path dir) throws IOException {
    SafePaths.deleteTree(dir);
  }
}
