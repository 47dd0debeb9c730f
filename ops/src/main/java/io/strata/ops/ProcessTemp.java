package io.strata.ops;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.time.Instant;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A temporary directory of this process's own, {@code <java.io.tmpdir>/strata-<user>/<pid>-<start>},
 * made this JVM's {@code java.io.tmpdir} before any command runs.
 *
 * <p>Why: the libraries a Strata process runs unpack native code and caches into the temporary
 * directory and remove them only when the JVM exits normally: RocksDB's JNI library (17 MB a
 * process), brotli4j's (loaded by Netty's HTTP compression), Vert.x's file cache. A node, loader
 * or job killed with SIGKILL, by the OOM killer or by a preempting scheduler leaves them behind,
 * and a host that restarts jobs all day fills its {@code /tmp} (one day of this project's own test
 * runs left 115 RocksDB libraries, 1.9 GB). Each Strata process therefore unpacks into its own
 * directory, and every Strata process that starts removes the directories of processes that are
 * gone (a process is the same only with the same pid and start time, so a reused pid does not
 * keep a dead one's files). A normal exit removes its own.
 *
 * <p>What must outlive the process goes in the shared temporary directory, kept as {@code
 * strata.sharedTmpdir} (the loader's batch cache where {@code /dev/shm} is not writable).
 *
 * <p>Best effort and safe by default: when the per-user directory cannot be made private to this
 * user (it is a link, another user owns it, permissions cannot be set), nothing changes and the
 * libraries use the temporary directory as before.
 *
 * <p>Threads: {@link #claim} runs once, on the main thread, before any other Strata code; the sweep
 * tolerates other processes sweeping the same directory at the same time.
 */
final class ProcessTemp {
  private static final Pattern NAME = Pattern.compile("(\\d+)-(\\d+)");

  private ProcessTemp() {}

  /** Makes and claims this process's directory, removes dead processes' ones; null when it cannot. */
  static Path claim() {
    try {
      Path base = Path.of(System.getProperty("java.io.tmpdir"));
      Path root = base.resolve("strata-" + System.getProperty("user.name").replaceAll("[^A-Za-z0-9._-]", "_"));
      if (!Files.isDirectory(root, LinkOption.NOFOLLOW_LINKS)) {
        Files.createDirectories(root, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      }
      UserPrincipal me =
          root.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(System.getProperty("user.name"));
      if (Files.isSymbolicLink(root) || !Files.getOwner(root, LinkOption.NOFOLLOW_LINKS).equals(me)) {
        return null;
      }
      Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("rwx------"));
      sweep(root);
      ProcessHandle self = ProcessHandle.current();
      Path own = root.resolve(self.pid() + "-" + start(self).orElse(0L));
      Files.createDirectories(own);
      // What must outlive the process (the loader's batch cache where /dev/shm is not writable)
      // goes in the shared one.
      System.setProperty("strata.sharedTmpdir", base.toString());
      System.setProperty("java.io.tmpdir", own.toString());
      Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().name("strata-temp-cleanup").unstarted(() -> {
        try {
          Processes.deleteTree(own);
        } catch (IOException | RuntimeException e) {
          // the next Strata process to start removes it
        }
      }));
      return own;
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  /** Removes the directories of processes that are gone. */
  static void sweep(Path root) throws IOException {
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(root)) {
      for (Path p : ds) {
        Matcher m = NAME.matcher(p.getFileName().toString());
        if (m.matches() && gone(Long.parseLong(m.group(1)), Long.parseLong(m.group(2)))) {
          try {
            Processes.deleteTree(p);
          } catch (IOException e) {
            // another process is removing it too, or a file in it is not ours: leave it
          }
        }
      }
    }
  }

  /** Whether process {@code pid}, started at {@code start} (epoch ms; 0 unknown), has exited. */
  private static boolean gone(long pid, long start) {
    Optional<ProcessHandle> h = ProcessHandle.of(pid);
    if (h.isEmpty() || !h.get().isAlive()) {
      return true;
    }
    Optional<Long> now = start(h.get());
    return start != 0 && now.isPresent() && now.get() != start; // the pid went to another process
  }

  private static Optional<Long> start(ProcessHandle h) {
    return h.info().startInstant().map(Instant::toEpochMilli);
  }
}
