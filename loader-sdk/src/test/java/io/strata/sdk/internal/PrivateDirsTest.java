package io.strata.sdk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Directories private to the user, as ssh treats its own: made 0700, or refused with the reason. */
class PrivateDirsTest {
  @TempDir Path tmp;

  @Test
  void aMissingDirectoryIsMadePrivateAndOthersControlAreRefused() throws Exception {
    Path made = PrivateDirs.ensure(tmp.resolve("a/b/cache"));
    assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(made)));
    assertEquals(made, PrivateDirs.ensure(made), "a private one is used as it is");

    Path open = Files.createDirectory(tmp.resolve("open"));
    Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rwxrwxrwx"));
    Path group = Files.createDirectory(tmp.resolve("group"));
    Files.setPosixFilePermissions(group, PosixFilePermissions.fromString("rwxrwx---"));
    Path target = Files.createDirectory(tmp.resolve("target"));
    Path link = Files.createSymbolicLink(tmp.resolve("link"), target);
    Path file = Files.writeString(tmp.resolve("file"), "x");
    for (var c : List.of(List.of(open, "writable by others"), List.of(group, "writable by its group"), List.of(link, "a link"),
        List.of(file, "not a directory"))) {
      IOException e = assertThrows(IOException.class, () -> PrivateDirs.ensure((Path) c.get(0)));
      assertTrue(e.getMessage().startsWith("refusing " + c.get(0) + ": it is " + c.get(1)), e.getMessage());
    }
    assertEquals("rwxrwxrwx", PosixFilePermissions.toString(Files.getPosixFilePermissions(open)), "a refused one is left as it was");
    if (PrivateDirs.uid() == 0) {
      Path theirs = Files.createDirectory(tmp.resolve("theirs"), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      Files.setAttribute(theirs, "unix:uid", 65534, LinkOption.NOFOLLOW_LINKS);
      IOException e = assertThrows(IOException.class, () -> PrivateDirs.ensure(theirs));
      assertTrue(e.getMessage().contains("owned by user 65534, not by this user (0)"), e.getMessage());
    }
  }
}
