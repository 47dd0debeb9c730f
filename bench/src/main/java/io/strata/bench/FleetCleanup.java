package io.strata.bench;

import java.io.IOException;

/**
 * Unmounts the slow tier and ends the side's processes when the bench itself is stopped (Ctrl-C,
 * SIGTERM), which would otherwise leave the loop device mounted and the cgroups populated; the
 * next run cleans up either way.
 */
final class FleetCleanup implements AutoCloseable {
  private final Thread hook;

  FleetCleanup(SlowTier slow) {
    hook = Thread.ofPlatform().name("strata-fleet-cleanup").unstarted(() -> {
      ProcessHandle.current().descendants().forEach(ProcessHandle::destroyForcibly);
      try {
        slow.close();
      } catch (IOException ignored) {
        // the next run unmounts what is left
      }
    });
    Runtime.getRuntime().addShutdownHook(hook);
  }

  @Override
  public void close() {
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException shuttingDown) {
      // the hook runs
    }
  }
}
