package io.strata.sdk.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Confined opens: what the open reaches must be a regular file in a root, whatever its name says. */
class ConfinementTest {
  @TempDir Path root;
  @TempDir Path outside;

  @Test
  void aFileInTheRootOpensAndEveryWayOutIsRefused() throws Exception {
    assertTrue(Confinement.checksTheOpenedFile(), "on Linux with native access, the opened file itself is checked");
    Confinement c = Confinement.within(List.of(root), "the test root");
    byte[] inside = "inside".getBytes(StandardCharsets.UTF_8);
    Files.createDirectories(root.resolve("d"));
    Files.write(root.resolve("d/part.orc"), inside);
    assertArrayEquals(inside, c.readAllBytes(root.resolve("d/part.orc")));
    // A link inside the root to a file inside it is fine: it is the file reached that counts.
    Files.createSymbolicLink(root.resolve("alias.orc"), root.resolve("d/part.orc"));
    assertArrayEquals(inside, c.readAllBytes(root.resolve("alias.orc")));

    Path secret = Files.writeString(outside.resolve("secret.orc"), "secret");
    Files.createDirectories(outside.resolve("d"));
    Files.writeString(outside.resolve("d/part.orc"), "outside");
    // The file replaced by a link out.
    Files.createSymbolicLink(root.resolve("link.orc"), secret);
    // A directory on the way replaced by a link out (the file's own name is as before).
    Files.createSymbolicLink(root.resolve("e"), outside.resolve("d"));
    for (Path p : List.of(root.resolve("link.orc"), root.resolve("e/part.orc"))) {
      AccessDeniedException e = assertThrows(AccessDeniedException.class, () -> c.openRead(p), p.toString());
      assertTrue(e.getMessage().contains("leads outside the test root"), e.getMessage());
      assertTrue(e.getMessage().contains(p.toString()), "names the file: " + e.getMessage());
    }
    // Not a regular file.
    assertThrows(AccessDeniedException.class, () -> c.openRead(root.resolve("d")));
    new ProcessBuilder("mkfifo", root.resolve("fifo").toString()).start().waitFor();
    if (Files.exists(root.resolve("fifo"))) {
      AccessDeniedException e = assertThrows(AccessDeniedException.class, () -> c.openRead(root.resolve("fifo")));
      assertTrue(e.getMessage().contains("not a regular file"), e.getMessage());
    }
    assertThrows(NoSuchFileException.class, () -> c.openRead(root.resolve("missing.orc")));
    // Unconfined, the same names open as they always did.
    try (FileChannel ch = Confinement.NONE.openRead(root.resolve("link.orc"))) {
      assertEquals(6, ch.size());
    }
  }
}
