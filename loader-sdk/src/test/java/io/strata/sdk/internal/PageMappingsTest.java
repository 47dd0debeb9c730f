package io.strata.sdk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PageMappingsTest {
  /** The resident kilobytes of the mapping that holds {@code address}, from /proc/self/smaps. */
  private static long residentKb(long address) throws IOException {
    List<String> lines = Files.readAllLines(Path.of("/proc/self/smaps"));
    boolean in = false;
    for (String l : lines) {
      if (l.matches("^[0-9a-f]+-[0-9a-f]+ .*")) {
        String[] range = l.substring(0, l.indexOf(' ')).split("-");
        in = Long.parseUnsignedLong(range[0], 16) <= address && address < Long.parseUnsignedLong(range[1], 16);
      } else if (in && l.startsWith("Rss:")) {
        return Long.parseLong(l.replaceAll("[^0-9]", ""));
      }
    }
    throw new AssertionError("no mapping holds " + Long.toHexString(address));
  }

  @Test
  void aReadOnlyMappingLetsGoOfItsPagesAndStillReadsTheSame(@TempDir Path dir) throws IOException {
    assumeTrue(Files.isReadable(Path.of("/proc/self/smaps")), "needs Linux's /proc/self/smaps");
    Path file = dir.resolve("data");
    byte[] bytes = new byte[8 << 20];
    for (int i = 0; i < bytes.length; i++) {
      bytes[i] = (byte) (i * 31 + (i >>> 12));
    }
    Files.write(file, bytes);
    try (Arena arena = Arena.ofConfined(); FileChannel ch = FileChannel.open(file)) {
      MemorySegment map = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), arena);
      long sum = 0;
      for (long at = 0; at < map.byteSize(); at += 4096) {
        sum += map.get(ValueLayout.JAVA_BYTE, at);
      }
      long before = residentKb(map.address());
      assertTrue(before >= 7 << 10, "every page read, " + before + " KiB resident");
      assertTrue(PageMappings.release(map));
      long after = residentKb(map.address());
      assertTrue(after < 1 << 10, "after the release " + after + " KiB are still resident");
      long again = 0;
      for (long at = 0; at < map.byteSize(); at += 4096) {
        again += map.get(ValueLayout.JAVA_BYTE, at);
      }
      assertEquals(sum, again);
      assertEquals(bytes[5_000_001], map.get(ValueLayout.JAVA_BYTE, 5_000_001));
    }
  }
}
