package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.strata.sdk.internal.PrivateDirs;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 51's second probe, as it was run: another user (nobody) plants a link in a shared
 * scratch directory pointing at a victim's directory; every command run as root with a path
 * through it refuses, and nothing in the victim's directory is deleted, written or changed.
 */
class PlantedLinksTest {
  @TempDir Path tmp;

  @Test
  void everyCommandRefusesAPathThroughAnotherUsersLinkAndLeavesTheVictimAlone() throws IOException {
    assumeTrue(PrivateDirs.uid() == 0, "needs root to plant a link owned by another user");
    Path victim = Files.createDirectories(tmp.resolve("victim/keep"));
    Files.setPosixFilePermissions(victim, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    Path stale = Files.writeString(victim.resolve("stale1"), "three days old");
    Files.setLastModifiedTime(stale, FileTime.from(Instant.now().minus(3, ChronoUnit.DAYS)));
    Path scratch = Files.createDirectory(tmp.resolve("scratch"));
    Files.setAttribute(scratch, "unix:mode", 01777);
    Path team = Files.createSymbolicLink(scratch.resolve("team"), victim.getParent());
    Files.setAttribute(team, "unix:uid", 65534, LinkOption.NOFOLLOW_LINKS);

    Path ds = tmp.resolve("ds");
    assertEquals(0, Cli.run("dataset", "generate", "--out", ds.toString(), "--rows", "3000", "--features", "4",
        "--rows-per-chunk", "1000").code());
    List<List<String>> commands = List.of(
        List.of("dataset", "generate", "--out", team + "/keep/ds", "--rows", "3000", "--features", "4"),
        List.of("dataset", "generate", "--out", team + "/keep/pq", "--rows", "3000", "--features", "4", "--format", "parquet"),
        List.of("promote", "--ssd", team + "/keep/ssd", "--dataset", ds.toString()),
        List.of("loader", "run", "--dataset", ds.toString(), "--batch-cache", team + "/keep", "--max-batches", "2"),
        List.of("loader", "run", "--dataset", ds.toString(), "--dump-batches", team + "/keep/dump", "--max-batches", "2"),
        List.of("loader", "run", "--dataset", ds.toString(), "--ready-file", team + "/keep/stale1", "--max-batches", "2"));
    for (List<String> c : commands) {
      Cli.Result r = Cli.run(c.toArray(String[]::new));
      assertEquals(1, r.code(), c + ": " + r.out() + r.err());
      assertTrue(r.err().contains("a link owned by user 65534"), c + ": " + r.err());
      assertEquals(1, r.err().strip().lines().count(), c + " answers in one line: " + r.err());
    }
    try (Stream<Path> s = Files.list(victim)) {
      assertEquals(List.of(stale), s.toList(), "nothing written into the victim's directory");
    }
    assertEquals("three days old", Files.readString(stale));
    assertEquals("rwx------", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(victim)));
    assertFalse(Files.exists(scratch.resolve("ds")));
  }
}
