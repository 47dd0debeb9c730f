package io.strata.node;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The lock that makes one node the owner of its home: taken before the node writes anything there
 * (its running marker, settings, registry, log), held until it closes. A second node on the same
 * home is refused with the first one's pid and writes nothing. An advisory lock on {@code
 * <home>/node.lock} (the kernel drops it when the process dies, however it dies).
 *
 * <p>Threads: taken and released by the node's starting and closing thread.
 */
public final class HomeLock implements AutoCloseable {
  static final String FILE = "node.lock";

  private final FileChannel channel;
  private final FileLock lock;

  private HomeLock(FileChannel channel, FileLock lock) {
    this.channel = channel;
    this.lock = lock;
  }

  /** Takes {@code home}'s lock (the directory is created if missing); IllegalStateException naming the holder when another node has it. */
  public static HomeLock acquire(Path home) throws IOException {
    Files.createDirectories(home);
    FileChannel ch = FileChannel.open(home.resolve(FILE), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
    boolean ok = false;
    try {
      FileLock l;
      try {
        l = ch.tryLock();
      } catch (OverlappingFileLockException e) {
        l = null; // a node of this process holds it
      }
      if (l == null) {
        throw new IllegalStateException("a node is already running from " + home + holder(home) + "; stop it with 'strata node stop'");
      }
      ok = true;
      return new HomeLock(ch, l);
    } finally {
      if (!ok) {
        ch.close();
      }
    }
  }

  /**
   * Refuses (IllegalStateException naming the holder) when a node holds {@code home}'s lock now;
   * takes and drops the lock to look, and writes nothing where there is no lock file yet.
   */
  public static void requireFree(Path home) throws IOException {
    if (Files.isRegularFile(home.resolve(FILE))) {
      acquire(home).close();
    }
  }

  private static String holder(Path home) {
    try {
      String pid = Files.readString(home.resolve(TierManager.RUNNING_MARKER), StandardCharsets.UTF_8).strip();
      return pid.matches("\\d{1,10}") ? " (pid " + pid + ")" : "";
    } catch (IOException e) {
      return "";
    }
  }

  @Override
  public void close() throws IOException {
    try {
      if (lock.isValid()) {
        lock.release();
      }
    } finally {
      channel.close();
    }
  }
}
