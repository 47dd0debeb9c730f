package io.strata.sdk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Links on the way to what Strata changes: followed only where no other user could have planted
 * them, never below a dataset's directory, never by a deletion. The attacker's links are owned by
 * user 65534 (nobody), which needs root to arrange; those cases are skipped otherwise.
 */
class SafePathsTest {
  private static final int NOBODY = 65534;
  @TempDir Path tmp;

  private static void ownedByNobody(Path p) throws IOException {
    Files.setAttribute(p, "unix:uid", NOBODY, LinkOption.NOFOLLOW_LINKS);
  }

  /** The victim: a directory with a file the attacker wants removed or overwritten. */
  private Path victim() throws IOException {
    Path v = Files.createDirectories(tmp.resolve("victim/keep"));
    Files.writeString(v.resolve("precious.txt"), "mine");
    return v;
  }

  @Test
  void aLinkThisUserMadeInItsOwnDirectoryIsFollowedToItsRealPath() throws IOException {
    Path real = Files.createDirectories(tmp.resolve("real/data"));
    Files.createDirectory(tmp.resolve("real/x"));
    Path link = Files.createSymbolicLink(tmp.resolve("mine"), tmp.resolve("real"));
    assertEquals(real.toRealPath(), SafePaths.trusted(link.resolve("data")));
    assertEquals(real.toRealPath().resolve("new/file"), SafePaths.trusted(link.resolve("data/new/file")), "the missing part appended");
    assertEquals(real.toRealPath(), SafePaths.trusted(tmp.resolve("real/x/../data")), "'..' taken against the real directory");
    AccessDeniedException e = assertThrows(AccessDeniedException.class, () -> SafePaths.trusted(tmp.resolve("nope/../real")));
    assertTrue(e.getMessage().contains("names '..' below"), e.getMessage());
  }

  @Test
  void aLinkInADirectoryOthersCanWriteIsRefusedUnlessItIsSticky() throws IOException {
    Path scratch = Files.createDirectory(tmp.resolve("scratch"));
    Files.setPosixFilePermissions(scratch, PosixFilePermissions.fromString("rwxrwxrwx"));
    Path target = Files.createDirectory(tmp.resolve("target"));
    Path link = Files.createSymbolicLink(scratch.resolve("team"), target);
    AccessDeniedException e = assertThrows(AccessDeniedException.class, () -> SafePaths.trusted(link.resolve("keep")));
    assertTrue(e.getMessage().contains("a link in a directory another user can change"), e.getMessage());
    Files.setAttribute(scratch, "unix:mode", 01777);
    assertEquals(target.toRealPath().resolve("keep"), SafePaths.trusted(link.resolve("keep")), "sticky: only its owner removes it");
  }

  @Test
  void anotherUsersLinkAnywhereOnTheWayIsRefusedAndNothingBehindItIsTouched() throws IOException {
    assumeTrue(PrivateDirs.uid() == 0, "needs root to plant a link owned by another user");
    Path victim = victim();
    Path scratch = Files.createDirectory(tmp.resolve("scratch"));
    Files.setAttribute(scratch, "unix:mode", 01777);
    Path team = Files.createSymbolicLink(scratch.resolve("team"), victim.getParent());
    ownedByNobody(team);
    for (Path p : new Path[] {team.resolve("keep"), team.resolve("keep/batches"), team.resolve("keep/x.sock")}) {
      AccessDeniedException e = assertThrows(AccessDeniedException.class, () -> SafePaths.trusted(p));
      assertTrue(e.getMessage().contains("a link owned by user " + NOBODY), e.getMessage());
    }
    // A private directory under it: refused before anything is made or deleted.
    IOException e = assertThrows(IOException.class, () -> PrivateDirs.ensure(team.resolve("keep")));
    assertTrue(e.getMessage().contains("a link owned by user " + NOBODY), e.getMessage());
    // Atomic writes and tree deletions under it likewise.
    assertThrows(AccessDeniedException.class, () -> AtomicFiles.write(team.resolve("keep/precious.txt"), new byte[] {1}));
    assertEquals("mine", Files.readString(victim.resolve("precious.txt")));
    // A directory owned by another user on a private directory's way: they could swap it.
    Path theirs = Files.createDirectory(scratch.resolve("theirs"));
    ownedByNobody(theirs);
    e = assertThrows(IOException.class, () -> PrivateDirs.ensure(theirs.resolve("cache")));
    assertTrue(e.getMessage().contains("owned by user " + NOBODY), e.getMessage());
    assertFalse(Files.exists(theirs.resolve("cache")), "nothing made");
  }

  @Test
  void aPrivateDirectoryUnderADirectoryOthersCanWriteIsRefused() throws IOException {
    Path open = Files.createDirectory(tmp.resolve("open"));
    Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rwxrwxrwx"));
    IOException e = assertThrows(IOException.class, () -> PrivateDirs.ensure(open.resolve("a/cache")));
    assertTrue(e.getMessage().contains("which other users can write"), e.getMessage());
    assertFalse(Files.exists(open.resolve("a")), "nothing made");
    Files.setAttribute(open, "unix:mode", 01777);
    Path made = PrivateDirs.ensure(open.resolve("a/cache"));
    assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(made)));
  }

  @Test
  void aDeletionInsideADirectoryNeverPassesThroughALink() throws IOException {
    Path victim = victim();
    Path dataset = Files.createDirectories(tmp.resolve("ds/layout-a"));
    Files.writeString(dataset.resolve("part-0.orc"), "x");
    Files.createSymbolicLink(dataset.getParent().resolve("lnk2"), victim);
    Path ds = dataset.getParent();
    AccessDeniedException e = assertThrows(AccessDeniedException.class, () -> SafePaths.deleteInside(ds, "lnk2/precious.txt", "a file"));
    assertTrue(e.getMessage().contains("not a plain directory (a link?)"), e.getMessage());
    assertTrue(Files.exists(victim.resolve("precious.txt")), "the victim's file is still there");
    for (String bad : new String[] {"../victim/keep/precious.txt", "/etc/passwd", "layout-a/../../x", ""}) {
      assertThrows(AccessDeniedException.class, () -> SafePaths.deleteInside(ds, bad, "a file"), bad);
    }
    e = assertThrows(AccessDeniedException.class, () -> SafePaths.inside(ds, "lnk2/precious.txt", "a file"));
    assertTrue(e.getMessage().contains("passes through a link (lnk2)"), e.getMessage());
    assertTrue(SafePaths.deleteInside(ds, "layout-a/part-0.orc", "a file"));
    assertFalse(SafePaths.deleteInside(ds, "layout-a/part-0.orc", "a file"), "gone already");
    assertTrue(SafePaths.deleteInside(ds, "layout-a", "a file"), "an empty directory");
    assertTrue(SafePaths.deleteInside(ds, "lnk2", "a file"), "a link goes as a name");
    assertTrue(Files.exists(victim.resolve("precious.txt")));
  }

  @Test
  void aTreeIsDeletedWithoutFollowingTheLinksInIt() throws IOException {
    Path victim = victim();
    Path tree = Files.createDirectories(tmp.resolve("tree/a/b"));
    Files.writeString(tree.resolve("f"), "x");
    Files.createSymbolicLink(tree.resolve("out"), victim);
    Files.createSymbolicLink(tmp.resolve("tree/file-link"), victim.resolve("precious.txt"));
    SafePaths.deleteTree(tmp.resolve("tree"));
    assertFalse(Files.exists(tmp.resolve("tree"), LinkOption.NOFOLLOW_LINKS));
    assertEquals("mine", Files.readString(victim.resolve("precious.txt")));
    // The tree itself a link: the name goes, not the tree it points to.
    Path link = Files.createSymbolicLink(tmp.resolve("treelink"), victim);
    SafePaths.deleteTree(link);
    assertFalse(Files.exists(link, LinkOption.NOFOLLOW_LINKS));
    assertEquals("mine", Files.readString(victim.resolve("precious.txt")));
  }
}
