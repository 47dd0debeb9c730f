package io.strata.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** CPU time of a running process from {@code /proc/PID/stat} (Linux): user and system, and optionally that of its reaped children. */
final class ProcCpu {
  /** Clock ticks a second of {@code /proc}'s times: USER_HZ, 100 on every Linux architecture Strata runs on. */
  private static final double TICKS = 100.0;

  private ProcCpu() {}

  /** CPU seconds process {@code pid} used (with {@code children}: plus its children that ended and were waited for); 0 when it is gone. */
  static double seconds(long pid, boolean children) {
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
      // The command name (field 2) is in parentheses and may hold spaces: fields are counted after its ')'.
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
      long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]);
      if (children) {
        ticks += Long.parseLong(f[13]) + Long.parseLong(f[14]);
      }
      return ticks / TICKS;
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }

  /** CPU seconds of {@code p} and of its live descendants (a command that runs its work in a child JVM). */
  static double tree(ProcessHandle p) {
    return seconds(p.pid(), false) + p.descendants().mapToDouble(d -> seconds(d.pid(), false)).sum();
  }
}
