package io.strata.sdk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Locale;
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

  /** posix_fadvise(DONTNEED) on {@code file}: its clean pages that no process maps leave the page cache. */
  @SuppressWarnings("restricted")
  private static void dropFromPageCache(Path file) throws Throwable {
    Linker linker = Linker.nativeLinker();
    var open = linker.downcallHandle(linker.defaultLookup().find("open").orElseThrow(),
        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT),
        Linker.Option.firstVariadicArg(2));
    var fadvise = linker.downcallHandle(linker.defaultLookup().find("posix_fadvise").orElseThrow(),
        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
    var close = linker.downcallHandle(linker.defaultLookup().find("close").orElseThrow(),
        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    try (Arena a = Arena.ofConfined()) {
      int fd = (int) open.invokeExact(a.allocateFrom(file.toString()), 0);
      assertTrue(fd >= 0);
      assertEquals(0, (int) fadvise.invokeExact(fd, 0L, 0L, 4));
      assertEquals(0, (int) close.invokeExact(fd));
    }
  }

  @Test
  void willNeedReadsTheRangeAheadAndARandomMappingReadsOnlyThePageAFaultNeeds(@TempDir Path dir) throws Throwable {
    assumeTrue(System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux"), "Linux's page cache");
    Path file = dir.resolve("data");
    byte[] bytes = new byte[16 << 20];
    for (int i = 0; i < bytes.length; i++) {
      bytes[i] = (byte) (i * 7 + (i >>> 12));
    }
    try (FileChannel out = FileChannel.open(file, StandardOpenOption.CREATE_NEW,
        StandardOpenOption.WRITE)) {
      out.write(ByteBuffer.wrap(bytes));
      out.force(true); // clean pages: the page cache drops only those
    }
    dropFromPageCache(file);
    try (Arena arena = Arena.ofConfined(); FileChannel ch = FileChannel.open(file)) {
      MemorySegment map = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), arena);
      assumeTrue(!PageMappings.resident(map, 4 << 20, 4096), "the file system keeps the file in memory (tmpfs?)");
      assertTrue(PageMappings.random(map));
      // A fault on a page not in memory reads that page, not a window around it.
      assertEquals(bytes[2_000_000], map.get(ValueLayout.JAVA_BYTE, 2_000_000));
      assertTrue(PageMappings.resident(map, 2_000_000, 1));
      assertFalse(PageMappings.resident(map, 2_000_000 + 64 * 4096, 4096), "a page 64 pages on was not read with it");
      // WILLNEED reads the range asked (a slice's offsets count from the slice), in pieces of 128 KiB, and no more.
      MemorySegment slice = map.asSlice(8 << 20);
      assertTrue(PageMappings.willNeed(slice, 100, 600 << 10));
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (!PageMappings.resident(map, (8 << 20) + (512 << 10), 4096) && System.nanoTime() < deadline) {
        Thread.onSpinWait();
      }
      for (long at = 0; at < (600 << 10); at += 64 * 4096) {
        long where = (8 << 20) + at;
        while (!PageMappings.resident(map, where, 4096) && System.nanoTime() < deadline) {
          Thread.onSpinWait();
        }
        assertTrue(PageMappings.resident(map, where, 4096), "page at " + where + " read ahead");
      }
      assertFalse(PageMappings.resident(map, (8 << 20) + (2 << 20), 4096), "nothing beyond the range");
      assertEquals(bytes[(8 << 20) + 12345], map.get(ValueLayout.JAVA_BYTE, (8 << 20) + 12345));
      // A range outside the mapping, or empty, is nothing to read.
      assertFalse(PageMappings.willNeed(slice, 9 << 20, 4096));
      assertFalse(PageMappings.willNeed(slice, 0, 0));
    }
  }
}
