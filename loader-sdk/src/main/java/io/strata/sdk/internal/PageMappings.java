package io.strata.sdk.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Locale;

/**
 * Advice to the kernel about the pages of read-only file mappings (segments), Linux only;
 * elsewhere, or if a call is refused, nothing happens and the answers are the neutral ones.
 *
 * <ul>
 *   <li>{@link #release}: lets go of the pages a mapping has touched, without unmapping it. After a
 *       checksum pass over a whole segment every page of the file is mapped into the process and
 *       counts in its resident and proportional set sizes (what a host's memory accounting sees),
 *       though the process goes on to read a few columns of it. {@code madvise(MADV_DONTNEED)} on a
 *       shared, read-only file mapping drops the page-table entries only: the data stays in the page
 *       cache, and the next read of a page maps it again.
 *   <li>{@link #random}: a page fault on a page not in memory reads that page only, not the
 *       device's read-around window (8 MiB on the machine BENCHMARKS.md reports) around it.
 *   <li>{@link #resident}: whether a byte range is in memory ({@code mincore}).
 *   <li>{@link #willNeed}: asks the kernel to read a byte range now, asynchronously ({@code
 *       MADV_WILLNEED}), so that many ranges are read at once and exactly those: a page fault on a
 *       page not in memory reads it synchronously, with the device's whole read-around window
 *       around it (8 MiB here), which for short ranges of a batch reads mostly what no one asked for.
 * </ul>
 *
 * <p>Threads: stateless; the handles are looked up once.
 */
public final class PageMappings {
  private static final int MADV_RANDOM = 1;
  private static final int MADV_SEQUENTIAL = 2;
  /** The most one WILLNEED call asks for: the kernel reads at most the device's read-ahead window of a call (128 KiB by default). */
  private static final long WILLNEED_STEP = 128 << 10;
  private static final int MADV_WILLNEED = 3;
  private static final int MADV_DONTNEED = 4;
  private static final long PAGE = 4096;
  /** Pages {@link #resident} looks at, at most (the first ones of a longer range). */
  private static final int RESIDENT_PAGES = 64;
  private static final MethodHandle MADVISE = lookup("madvise");
  private static final MethodHandle MINCORE = lookup("mincore");
  /** Each thread's {@code mincore} answer, one byte a page (freed with the thread's last reference). */
  private static final ThreadLocal<MemorySegment> VECTOR = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(RESIDENT_PAGES));

  private PageMappings() {}

  @SuppressWarnings("restricted")
  private static MethodHandle lookup(String name) {
    if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")) {
      return null;
    }
    try {
      Linker linker = Linker.nativeLinker();
      FunctionDescriptor d = name.equals("madvise")
          ? FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT)
          : FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS);
      return linker.defaultLookup().find(name).map(a -> linker.downcallHandle(a, d)).orElse(null);
    } catch (RuntimeException | LinkageError e) {
      return null;
    }
  }

  /**
   * Drops this process's mappings of the pages of {@code mapped} (a read-only mapping of a file;
   * its start page-aligned, as a mapping's is); returns whether the system did.
   */
  public static boolean release(MemorySegment mapped) {
    return advise(mapped, MADV_DONTNEED);
  }

  /**
   * Drops this process's mappings of the whole pages inside {@code mapped} (a read-only file
   * mapping, or a slice of one, at any alignment: pages it shares with bytes on either side are
   * kept); the file's pages stay in the page cache, and a later read maps them again. Returns
   * whether the system did (true when no whole page lies inside).
   */
  public static boolean releaseInside(MemorySegment mapped) {
    if (MADVISE == null || mapped == null || mapped.equals(MemorySegment.NULL) || !mapped.isNative()) {
      return false;
    }
    long first = (mapped.address() + PAGE - 1) & -PAGE;
    long last = (mapped.address() + mapped.byteSize()) & -PAGE;
    if (last <= first) {
      return true;
    }
    try {
      return (int) MADVISE.invokeExact(MemorySegment.ofAddress(first), last - first, MADV_DONTNEED) == 0;
    } catch (Throwable e) {
      return false;
    }
  }

  /**
   * Advises that {@code mapped} (a read-only file mapping, its start page-aligned) is read at random:
   * a fault reads the page it needs and no read-around; returns whether the system took the advice.
   * Whoever reads a long span of it cold reads that span ahead itself ({@link #willNeed}).
   */
  public static boolean random(MemorySegment mapped) {
    return advise(mapped, MADV_RANDOM);
  }

  /** Advises that {@code mapped} is read from start to end (as a checksum pass does): aggressive read-ahead. */
  public static boolean sequential(MemorySegment mapped) {
    return advise(mapped, MADV_SEQUENTIAL);
  }

  private static boolean advise(MemorySegment mapped, int advice) {
    if (MADVISE == null || mapped.byteSize() == 0 || (mapped.address() & (PAGE - 1)) != 0) {
      return false;
    }
    try {
      return (int) MADVISE.invokeExact(mapped, mapped.byteSize(), advice) == 0;
    } catch (Throwable e) {
      return false;
    }
  }

  /**
   * Asks the kernel to read bytes {@code [from, from + length)} of {@code mapped} (a read-only file
   * mapping, or a slice of one) into memory now, without waiting; the range is clipped to the
   * segment and widened to whole pages, and asked for 128 KiB a call (the kernel reads no more than
   * its read-ahead window of one call). Returns whether the system took the advice.
   */
  public static boolean willNeed(MemorySegment mapped, long from, long length) {
    long[] span = pages(mapped, from, length);
    if (MADVISE == null || span == null) {
      return false;
    }
    try {
      for (long at = 0; at < span[1]; at += WILLNEED_STEP) {
        if ((int) MADVISE.invokeExact(MemorySegment.ofAddress(span[0] + at), Math.min(WILLNEED_STEP, span[1] - at),
            MADV_WILLNEED) != 0) {
          return false;
        }
      }
      return true;
    } catch (Throwable e) {
      return false;
    }
  }

  /**
   * Whether every page of bytes {@code [from, from + length)} of {@code mapped} is in memory (of a
   * long range, its first 64 pages are looked at); true when the system cannot tell.
   */
  public static boolean resident(MemorySegment mapped, long from, long length) {
    long[] span = pages(mapped, from, length);
    if (MINCORE == null || span == null) {
      return true;
    }
    long bytes = Math.min(span[1], RESIDENT_PAGES * PAGE);
    int pages = (int) (bytes / PAGE);
    MemorySegment vec = VECTOR.get();
    try {
      if ((int) MINCORE.invokeExact(MemorySegment.ofAddress(span[0]), bytes, vec) != 0) {
        return true;
      }
      for (int i = 0; i < pages; i++) {
        if ((vec.get(ValueLayout.JAVA_BYTE, i) & 1) == 0) {
          return false;
        }
      }
      return true;
    } catch (Throwable e) {
      return true;
    }
  }

  /** The whole pages ({address, bytes}) covering bytes [from, from + length) of {@code mapped}, clipped to it; null when empty. */
  private static long[] pages(MemorySegment mapped, long from, long length) {
    if (mapped == null || mapped.equals(MemorySegment.NULL) || !mapped.isNative()) {
      return null;
    }
    long start = Math.max(0, from);
    long end = Math.min(mapped.byteSize(), from + Math.max(0, length));
    if (end <= start) {
      return null;
    }
    long first = (mapped.address() + start) & -PAGE;
    long last = (mapped.address() + end + PAGE - 1) & -PAGE;
    return new long[] {first, last - first};
  }
}
