package io.strata.bench;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A disk that costs what an HDD costs per request, for benchmarks on machines without one: an
 * ext4 file system in a loop device whose reads are throttled by the cgroup v1 blkio controller
 * to {@code iops} requests and {@code bytesPerSecond} per second (a 7,200 rpm disk does about 100
 * random reads per second and 150 MB/s sequentially), with the device's read-ahead at 128 KiB (a
 * common disk default). Only the loop device is throttled, and only while this process is inside
 * the cgroup ({@link #enter()} to {@link #leave()}); what it reads elsewhere runs at full speed.
 *
 * <p>What it models and what it does not: every block request the kernel sends to the device
 * waits its turn in a budget of {@code iops} per second, as a seek would, and bytes flow at most
 * at {@code bytesPerSecond}; requests larger than the device's largest (1.25 MiB for a loop
 * device) count as several, where one seek would do on a real disk (so long reads are charged
 * more than an HDD would charge them), and there is no rotational or seek-distance model. Needs
 * root, {@code losetup}, {@code mkfs.ext4} and {@code /sys/fs/cgroup/blkio}.
 *
 * <p>Not thread-safe: one benchmark thread sets it up, moves the process in and out, and closes
 * it. {@link #close()} undoes every step that succeeded (cgroup, mount, loop device, image), in
 * reverse order, also after a failed {@link #create}.
 */
final class EmulatedHdd implements AutoCloseable {
  static final Path BLKIO = Path.of("/sys/fs/cgroup/blkio");
  static final int READ_AHEAD_KIB = 128;

  private final Path image;
  private final Path mount;
  private final int iops;
  private final long bytesPerSecond;
  private String loop;
  private String device;
  private boolean mounted;
  private Path cgroup;
  /** The blkio cgroup this process was in before {@link #enter()}. */
  private Path home;
  private boolean inside;

  private EmulatedHdd(Path image, Path mount, int iops, long bytesPerSecond) {
    this.image = image;
    this.mount = mount;
    this.iops = iops;
    this.bytesPerSecond = bytesPerSecond;
  }

  /**
   * Why an emulated HDD cannot be built on this machine, or null if it can (root, a writable cgroup
   * v1 blkio controller, loop devices, {@code losetup}, {@code mkfs.ext4}, {@code mount}).
   */
  static String unavailable() {
    if (!Files.isWritable(BLKIO.resolve("cgroup.procs"))) {
      return "no writable cgroup v1 blkio controller (root is needed)";
    }
    if (!Files.exists(Path.of("/dev/loop-control"))) {
      return "no loop devices";
    }
    for (String tool : new String[] {"losetup", "mkfs.ext4", "mount", "umount"}) {
      boolean found = false;
      for (String d : System.getenv().getOrDefault("PATH", "/usr/sbin:/usr/bin:/sbin:/bin").split(":")) {
        found |= !d.isEmpty() && Files.isExecutable(Path.of(d, tool));
      }
      if (!found) {
        return "no " + tool;
      }
    }
    return null;
  }

  /**
   * An emulated HDD of {@code bytes} in {@code dir} (its image file and mount point are created
   * there), or an exception naming what this machine lacks.
   */
  static EmulatedHdd create(Path dir, long bytes, int iops, long bytesPerSecond) throws IOException, InterruptedException {
    if (!Files.isDirectory(BLKIO) || !Files.isWritable(BLKIO.resolve("cgroup.procs"))) {
      throw new IOException("--emulate-hdd needs root and the cgroup v1 blkio controller at " + BLKIO);
    }
    EmulatedHdd hdd = new EmulatedHdd(dir.resolve("hdd.img"), dir.resolve("hdd"), iops, bytesPerSecond);
    boolean ok = false;
    try {
      try (var f = new RandomAccessFile(hdd.image.toFile(), "rw")) {
        f.setLength(bytes);
      }
      run("mkfs.ext4", "-q", "-F", hdd.image.toString());
      hdd.loop = run("losetup", "-f", "--show", hdd.image.toString()).strip();
      String name = Path.of(hdd.loop).getFileName().toString();
      Files.writeString(Path.of("/sys/block", name, "queue", "read_ahead_kb"), Integer.toString(READ_AHEAD_KIB));
      String device = Files.readString(Path.of("/sys/block", name, "dev")).strip();
      hdd.device = device;
      Files.createDirectories(hdd.mount);
      run("mount", hdd.loop, hdd.mount.toString());
      hdd.mounted = true;
      hdd.cgroup = BLKIO.resolve("strata-hdd-" + ProcessHandle.current().pid());
      Files.createDirectory(hdd.cgroup);
      Files.writeString(hdd.cgroup.resolve("blkio.throttle.read_iops_device"), device + " " + iops);
      Files.writeString(hdd.cgroup.resolve("blkio.throttle.read_bps_device"), device + " " + bytesPerSecond);
      ok = true;
      return hdd;
    } finally {
      if (!ok) {
        hdd.close();
      }
    }
  }

  /** Where the emulated disk is mounted. */
  Path root() {
    return mount;
  }

  /** From now on this process's reads from the disk are throttled. */
  void enter() throws IOException {
    if (home == null) {
      home = BLKIO;
      for (String line : Files.readAllLines(Path.of("/proc/self/cgroup"))) {
        String[] p = line.split(":", 3);
        if (p.length == 3 && Arrays.asList(p[1].split(",")).contains("blkio")) {
          home = BLKIO.resolve(p[2].replaceFirst("^/", ""));
        }
      }
    }
    Files.writeString(cgroup.resolve("cgroup.procs"), Long.toString(ProcessHandle.current().pid()));
    inside = true;
  }

  /** This process back in the blkio cgroup it came from: its reads run at the device's speed. */
  void leave() throws IOException {
    if (inside) {
      Files.writeString(home.resolve("cgroup.procs"), Long.toString(ProcessHandle.current().pid()));
      inside = false;
    }
  }

  /**
   * Read requests and bytes the device has served to this process while in the cgroup, as the
   * kernel counts them below the page cache (read-ahead included; a request split into several
   * counts as several): what the disk saw.
   */
  long[] deviceReads() throws IOException {
    return new long[] {readCounter("blkio.throttle.io_serviced"), readCounter("blkio.throttle.io_service_bytes")};
  }

  private long readCounter(String file) throws IOException {
    for (String line : Files.readAllLines(cgroup.resolve(file))) {
      String[] p = line.strip().split("\\s+");
      if (p.length == 3 && p[0].equals(device) && p[1].equals("Read")) {
        return Long.parseLong(p[2]);
      }
    }
    return 0;
  }

  /** What the disk is, for a benchmark's report. */
  String describe() {
    return "loop-mounted ext4 throttled by blkio to " + iops + " requests/s and " + bytesPerSecond / 1_000_000
        + " MB/s, read-ahead " + READ_AHEAD_KIB + " KiB";
  }

  int iops() {
    return iops;
  }

  long bytesPerSecond() {
    return bytesPerSecond;
  }

  @Override
  public void close() throws IOException {
    List<String> failures = new ArrayList<>();
    try {
      leave();
    } catch (IOException e) {
      failures.add("leaving the cgroup: " + e.getMessage());
    }
    if (cgroup != null) {
      try {
        Files.deleteIfExists(cgroup);
      } catch (IOException e) {
        failures.add("removing " + cgroup + ": " + e.getMessage());
      }
    }
    if (mounted && undo(failures, "unmounting " + mount, "umount", mount.toString())) {
      mounted = false;
    }
    if (loop != null && !mounted && undo(failures, "detaching " + loop, "losetup", "-d", loop)) {
      loop = null;
    }
    if (!mounted && loop == null) {
      Files.deleteIfExists(image);
      Files.deleteIfExists(mount);
    }
    if (!failures.isEmpty()) {
      throw new IOException("cleaning up the emulated HDD failed: " + String.join("; ", failures));
    }
  }

  /** Runs one clean-up command; true if it succeeded, else its failure is added to failures. */
  private static boolean undo(List<String> failures, String what, String... cmd) {
    try {
      run(cmd);
      return true;
    } catch (IOException e) {
      failures.add(e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      failures.add("interrupted while " + what);
    }
    return false;
  }

  private static String run(String... cmd) throws IOException, InterruptedException {
    Process p;
    try {
      p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    } catch (IOException e) {
      throw new IOException("--emulate-hdd needs " + cmd[0] + ": " + e.getMessage(), e);
    }
    String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (p.waitFor() != 0) {
      throw new IOException(String.join(" ", cmd) + " failed: " + text.strip());
    }
    return text;
  }
}
