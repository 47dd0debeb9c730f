package io.strata.bench;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Every process of one side of {@code bench fleet} in one set of cgroups (v1 hierarchies, as this
 * machine has them): a memory cgroup at the side's limit (page cache included), the slow tier's
 * reads throttled (blkio: bytes and IOPS), one cpuset of every core, and a cpuacct group for the
 * side's CPU time. A process joins them before it runs ({@link #wrap}: a shell that writes its pid
 * into each group, then execs), and its children inherit them. Where the groups cannot be made
 * (not root, no v1 controllers), the processes run unconfined and {@link #describe} says so; their
 * pids are then found as descendants of the processes started ({@link #track}).
 */
final class SideGroup implements AutoCloseable {
  private static final Path V1 = Path.of("/sys/fs/cgroup");
  private final List<Path> dirs;
  private final String why;
  /** Added to by the running side's thread, read by the sampler's: copied on write. */
  private final List<ProcessHandle> tracked = new java.util.concurrent.CopyOnWriteArrayList<>();

  private SideGroup(List<Path> dirs, String why) {
    this.dirs = dirs;
    this.why = why;
  }

  static SideGroup create(String name, long memoryLimit, SlowTier slow, PrintWriter log) {
    List<Path> made = new ArrayList<>();
    try {
      for (String c : List.of("memory", "blkio", "cpuset", "cpuacct")) {
        if (!Files.isDirectory(V1.resolve(c)) || !Files.exists(V1.resolve(c).resolve("cgroup.procs"))) {
          throw new IOException("no v1 " + c + " controller at " + V1.resolve(c));
        }
      }
      for (String c : List.of("memory", "blkio", "cpuset", "cpuacct")) {
        Path d = V1.resolve(c).resolve(name);
        if (Files.isDirectory(d)) {
          killAll(d);
          Files.delete(d);
        }
        Files.createDirectory(d);
        made.add(d);
      }
      Files.writeString(made.get(0).resolve("memory.limit_in_bytes"), Long.toString(memoryLimit));
      String dev = slow.devNumbers();
      if (dev != null) {
        Files.writeString(made.get(1).resolve("blkio.throttle.read_bps_device"), dev + " " + slow.bytesPerSecond());
        Files.writeString(made.get(1).resolve("blkio.throttle.read_iops_device"), dev + " " + slow.iops());
      }
      Files.writeString(made.get(2).resolve("cpuset.cpus"), Files.readString(V1.resolve("cpuset/cpuset.cpus")).strip());
      Files.writeString(made.get(2).resolve("cpuset.mems"), Files.readString(V1.resolve("cpuset/cpuset.mems")).strip());
      return new SideGroup(made, null);
    } catch (IOException | RuntimeException e) {
      for (Path d : made.reversed()) {
        try {
          Files.deleteIfExists(d);
        } catch (IOException ignored) {
          // left for the next run, which removes it first
        }
      }
      log.printf("fleet: no cgroups (%s): the side runs unconfined%n", e.getMessage());
      return new SideGroup(List.of(), "no cgroups (" + e.getMessage() + "): memory, disk and cores not confined");
    }
  }

  /** {@code cmd} run inside the groups: a shell that joins them, then execs it. */
  List<String> wrap(List<String> cmd) {
    if (dirs.isEmpty()) {
      return cmd;
    }
    StringBuilder script = new StringBuilder("for p in");
    for (Path d : dirs) {
      script.append(' ').append(d.resolve("cgroup.procs"));
    }
    script.append("; do echo $$ > \"$p\" || exit 97; done; exec \"$@\"");
    List<String> out = new ArrayList<>(List.of("sh", "-c", script.toString(), "sh"));
    out.addAll(cmd);
    return out;
  }

  /** A process started for the side: its descendants are the side's where no cgroup lists them. */
  void track(Process p) {
    tracked.add(p.toHandle());
  }

  /** The side's processes now. */
  Set<Long> pids() {
    Set<Long> out = new LinkedHashSet<>();
    if (!dirs.isEmpty()) {
      try {
        for (String l : Files.readAllLines(dirs.get(0).resolve("cgroup.procs"))) {
          if (!l.isBlank()) {
            out.add(Long.parseLong(l.strip()));
          }
        }
      } catch (IOException ignored) {
        // read again at the next sample
      }
    }
    for (ProcessHandle h : tracked) {
      if (h.isAlive()) {
        out.add(h.pid());
      }
      h.descendants().forEach(d -> out.add(d.pid()));
    }
    return out;
  }

  /** CPU time of the side's processes (cpuacct), in nanoseconds; 0 without cgroups. */
  long cpuNanos() throws IOException {
    return dirs.isEmpty() ? 0 : Long.parseLong(Files.readString(dirs.get(3).resolve("cpuacct.usage")).strip());
  }

  /** A counter of the memory cgroup's {@code memory.stat} (its {@code total_} form: the group's and below), or -1. */
  long memoryStat(String key) throws IOException {
    if (dirs.isEmpty()) {
      return -1;
    }
    for (String l : Files.readAllLines(dirs.get(0).resolve("memory.stat"))) {
      if (l.startsWith("total_" + key + " ")) {
        return Long.parseLong(l.substring(key.length() + 7).strip());
      }
    }
    return -1;
  }

  /** Kernel-mode CPU time of the side's processes (cpuacct), in nanoseconds; 0 without cgroups. */
  long cpuSystemNanos() throws IOException {
    return dirs.isEmpty() ? 0 : Long.parseLong(Files.readString(dirs.get(3).resolve("cpuacct.usage_sys")).strip());
  }

  /** The memory cgroup's peak (processes and page cache), or -1. */
  long peakBytes() throws IOException {
    return dirs.isEmpty() ? -1 : Long.parseLong(Files.readString(dirs.get(0).resolve("memory.max_usage_in_bytes")).strip());
  }

  /** Processes the kernel killed for the group's limit, or -1 where it does not count them. */
  long oomKills() throws IOException {
    if (dirs.isEmpty()) {
      return -1;
    }
    for (String l : Files.readAllLines(dirs.get(0).resolve("memory.oom_control"))) {
      if (l.startsWith("oom_kill ")) {
        return Long.parseLong(l.substring(9).strip());
      }
    }
    return -1;
  }

  String describe() {
    return why != null ? why : "memory, blkio, cpuset and cpuacct v1 groups " + dirs.get(0).getFileName();
  }

  private static void killAll(Path d) throws IOException {
    for (String l : Files.readAllLines(d.resolve("cgroup.procs"))) {
      if (!l.isBlank()) {
        ProcessHandle.of(Long.parseLong(l.strip())).ifPresent(ProcessHandle::destroyForcibly);
      }
    }
    for (int i = 0; i < 40 && !Files.readString(d.resolve("cgroup.procs")).isBlank(); i++) {
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  @Override
  public void close() throws IOException {
    for (Path d : dirs.reversed()) {
      killAll(d);
      for (int i = 0; i < 50; i++) {
        try {
          Files.deleteIfExists(d);
          break;
        } catch (IOException busy) {
          try {
            Thread.sleep(100);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
          }
        }
      }
    }
  }
}
