package io.strata.bench;

import io.strata.sdk.files.DiskModel;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The slow tier of {@code bench fleet}: an ext4 file system in a file, attached as a loop device
 * with direct I/O (so that the backing file's own page cache holds nothing) and mounted under the
 * work directory, whose reads each side's cgroup throttles to {@link DiskModel#HDD}'s transfer
 * rate and random-read IOPS ({@link SideGroup}). Kept between runs (a given work directory reuses
 * the image and its files); detached and unmounted at close. Where that cannot be done (not root,
 * no loop device, {@code --quick}), a plain directory on the machine's disk, unthrottled, and
 * {@link #why} says so. Not thread-safe; {@link #readBytes} may be called from any thread.
 */
final class SlowTier implements AutoCloseable {
  private final Path mount;
  private final String loop;
  private final String why;

  private SlowTier(Path mount, String loop, String why) {
    this.mount = mount;
    this.loop = loop;
    this.why = why;
  }

  /** The tier for {@code data}: a throttlable loop device of {@code bytes} when {@code throttle}, else a plain directory. */
  static SlowTier open(Path data, long bytes, boolean throttle, PrintWriter log) throws IOException {
    if (!throttle) {
      Path plain = Files.createDirectories(data.resolve("slow-plain"));
      return new SlowTier(plain, null, "a plain directory on the machine's disk, not throttled (--quick, or not root)");
    }
    Path img = data.resolve("slow.img");
    Path mnt = Files.createDirectories(data.resolve("slow"));
    try {
      if (mounted(mnt)) {
        sh("umount", mnt.toString()); // left by a run that was killed
      }
      for (String l : sh("losetup", "-j", img.toString()).lines().toList()) {
        sh("losetup", "-d", l.substring(0, l.indexOf(':')));
      }
      if (!Files.exists(img)) {
        try (RandomAccessFile f = new RandomAccessFile(img.toFile(), "rw")) {
          f.setLength(bytes);
        }
        sh("mkfs.ext4", "-q", "-F", img.toString());
        log.printf("fleet: made a %s ext4 image for the slow tier%n", io.strata.ops.Terminal.bytes(bytes));
      }
      String dev = sh("losetup", "--direct-io=on", "-f", "--show", img.toString()).strip();
      try {
        sh("mount", dev, mnt.toString());
      } catch (IOException e) {
        sh("losetup", "-d", dev);
        throw e;
      }
      return new SlowTier(mnt, dev, null);
    } catch (IOException e) {
      Path plain = Files.createDirectories(data.resolve("slow-plain"));
      log.printf("fleet: no loop device (%s); the slow tier is a plain directory, not throttled%n", e.getMessage());
      return new SlowTier(plain, null, "no loop device could be set up (" + e.getMessage() + "): a plain directory, not throttled");
    }
  }

  private static boolean mounted(Path p) throws IOException {
    for (String l : Files.readAllLines(Path.of("/proc/mounts"))) {
      String[] f = l.split(" ");
      if (f.length > 1 && f[1].equals(p.toString())) {
        return true;
      }
    }
    return false;
  }

  /** Runs a command; its standard output, or an IOException with its last line. */
  static String sh(String... cmd) throws IOException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(false).start();
    try {
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IOException(String.join(" ", cmd) + ": " + err.strip().lines().reduce((a, b) -> b).orElse("failed"));
      }
      return out;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted: " + String.join(" ", cmd), e);
    }
  }

  Path mount() {
    return mount;
  }

  boolean throttled() {
    return loop != null;
  }

  /** Null when the tier is the throttled loop device; else why it is not. */
  String why() {
    return why;
  }

  String describe() {
    return loop != null ? loop + " (ext4 in " + mount.getParent().resolve("slow.img") + ", direct I/O) at " + mount : mount.toString();
  }

  /** The device's major:minor (for the throttle), or null. */
  String devNumbers() throws IOException {
    return loop == null ? null : Files.readString(Path.of("/sys/block", Path.of(loop).getFileName().toString(), "dev")).strip();
  }

  /** {@link DiskModel#HDD}'s sustained transfer rate. */
  long bytesPerSecond() {
    return (long) DiskModel.HDD.bytesPerSecond();
  }

  /** {@link DiskModel#HDD}'s random reads a second: one average seek, half a turn and the command overhead each. */
  long iops() {
    DiskModel m = DiskModel.HDD;
    return Math.round(1.0 / (m.averageSeekMs() / 1e3 + m.latencySeconds() + m.commandOverheadMs() / 1e3));
  }

  /** Bytes read from the tier's device so far (its block device's counters; the whole disk's for a plain directory). */
  long readBytes() throws IOException {
    Path stat;
    if (loop != null) {
      stat = Path.of("/sys/block", Path.of(loop).getFileName().toString(), "stat");
    } else {
      long dev = ((Number) Files.getAttribute(mount, "unix:dev")).longValue();
      stat = Path.of("/sys/dev/block/" + major(dev) + ":" + minor(dev) + "/stat");
      if (!Files.exists(stat)) {
        return 0;
      }
    }
    String[] f = Files.readString(stat).strip().split("\\s+");
    return Long.parseLong(f[2]) * 512;
  }

  /** Read requests the tier's device completed so far (after the block layer merged them; 0 without a loop device). */
  long readRequests() throws IOException {
    if (loop == null) {
      return 0;
    }
    String[] f = Files.readString(Path.of("/sys/block", Path.of(loop).getFileName().toString(), "stat")).strip().split("\\s+");
    return Long.parseLong(f[0]);
  }

  /** The device's queue setting {@code name} ({@code read_ahead_kb}, {@code max_sectors_kb}), or -1. */
  long queueSetting(String name) {
    if (loop == null) {
      return -1;
    }
    try {
      return Long.parseLong(Files.readString(Path.of("/sys/block", Path.of(loop).getFileName().toString(), "queue", name)).strip());
    } catch (IOException | NumberFormatException e) {
      return -1;
    }
  }

  private static long major(long dev) {
    return ((dev >>> 8) & 0xfff) | ((dev >>> 32) & ~0xfffL);
  }

  private static long minor(long dev) {
    return (dev & 0xff) | ((dev >>> 12) & ~0xffL);
  }

  @Override
  public void close() throws IOException {
    if (loop != null) {
      IOException failed = null;
      for (int i = 0; i < 20; i++) {
        try {
          sh("umount", mount.toString());
          failed = null;
          break;
        } catch (IOException busy) {
          failed = busy; // a process of the side still leaving
          try {
            Thread.sleep(250);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            break;
          }
        }
      }
      sh("losetup", "-d", loop);
      if (failed != null) {
        throw failed;
      }
    }
  }
}
