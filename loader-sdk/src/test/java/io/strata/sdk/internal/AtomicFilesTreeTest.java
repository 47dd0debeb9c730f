package io.strata.sdk.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A tree written by other means is forced to disk file by file, every directory after. */
class AtomicFilesTreeTest {
  @Test
  void everyFileOfATreeIsForcedAndLeftAsItWas(@TempDir Path dir) throws IOException {
    Path root = dir.resolve("layout");
    Files.createDirectories(root.resolve("a/b"));
    Files.createDirectories(root.resolve("empty"));
    Files.write(root.resolve("part-00000.orc"), new byte[] {1, 2, 3});
    Files.write(root.resolve("a/part-00001.orc"), new byte[0]);
    Files.write(root.resolve("a/b/samples.idx"), new byte[] {9});
    assertEquals(3, AtomicFiles.fsyncTree(root));
    assertArrayEquals(new byte[] {1, 2, 3}, Files.readAllBytes(root.resolve("part-00000.orc")));
    assertArrayEquals(new byte[] {9}, Files.readAllBytes(root.resolve("a/b/samples.idx")));
    assertThrows(NoSuchFileException.class, () -> AtomicFiles.fsyncTree(dir.resolve("missing")));
  }
}
