package io.strata.ops;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** A memory cgroup (v2 or v1) limiting a group of benchmark processes, page cache included. */
public final class MemoryCgroup implements AutoCloseable {
  private static final Path V2 = Path.of("/sys/fs/cgroup");
  private static final Path V1 = Path.of("/sys/fs/cgroup/memory");
  private final Path dir;
  private final boolean v2;

  private MemoryCgroup(Path dir, boolean v2) {
    this.dir = dir;
    this.v2 = v2;
  }

  public static MemoryCgroup create(String name, long limitBytes) throws IOException {
    boolean v2 = Files.exists(V2.resolve("cgroup.controllers"));
    Path dir = (v2 ? V2 : V1).resolve(name);
    try {
      Files.createDirectories(dir);
      Files.writeString(dir.resolve(v2 ? "memory.max" : "memory.limit_in_bytes"), Long.toString(limitBytes));
    } catch (IOException e) {
      throw new IOException("cannot create a memory cgroup at " + dir + " (needs root and a memory controller): " + e.getMessage(), e);
    }
    // Start cold: pages cached before the run would not be charged to the group.
    try {
      Files.writeString(Path.of("/proc/sys/vm/drop_caches"), "1");
    } catch (IOException ignored) {
      // Not allowed here: the run starts with whatever is cached.
    }
    return new MemoryCgroup(dir, v2);
  }

  public void add(long pid) throws IOException {
    Files.writeString(dir.resolve("cgroup.procs"), Long.toString(pid));
  }

  public long peakBytes() throws IOException {
    Path p = dir.resolve(v2 ? "memory.peak" : "memory.max_usage_in_bytes");
    return Files.exists(p) ? Long.parseLong(Files.readString(p).strip()) : -1;
  }

  /** How often the group hit its limit (v1 failcnt; v2 the 'max' events). */
  public long limitHits() throws IOException {
    if (!v2) {
      return Long.parseLong(Files.readString(dir.resolve("memory.failcnt")).strip());
    }
    for (String l : Files.readAllLines(dir.resolve("memory.events"))) {
      if (l.startsWith("max ")) {
        return Long.parseLong(l.substring(4).strip());
      }
    }
    return 0;
  }

  @Override
  public void close() throws IOException {
    for (int i = 0; i < 50; i++) {
      try {
        Files.deleteIfExists(dir);
        return;
      } catch (IOException busy) {
        try {
          Thread.sleep(100); // The killed processes are still leaving the group.
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }
}
