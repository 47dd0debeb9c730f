package io.strata.sdk.internal;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Lets go of the pages a read-only file mapping has touched, without unmapping it: after a
 * checksum pass over a whole segment, every page of the file is mapped into the process, and
 * counts in its resident and proportional set sizes (what a host's memory accounting sees), though
 * the process goes on to read a few columns of it. {@code madvise(MADV_DONTNEED)} on a shared,
 * read-only file mapping drops the page-table entries only: the data stays in the page cache, and
 * the next read of a page maps it again. Linux only; elsewhere (or if the call is refused) nothing
 * happens.
 *
 * <p>Threads: stateless; the handle is looked up once.
 */
public final class PageMappings {
  private static final int MADV_DONTNEED = 4;
  private static final MethodHandle MADVISE = lookup();

  private PageMappings() {}

  @SuppressWarnings("restricted")
  private static MethodHandle lookup() {
    if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
      return null;
    }
    try {
      Linker linker = Linker.nativeLinker();
      return linker.defaultLookup().find("madvise").map(a -> linker.downcallHandle(a,
          FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT)))
          .orElse(null);
    } catch (RuntimeException | LinkageError e) {
      return null;
    }
  }

  /**
   * Drops this process's mappings of the pages of {@code mapped} (a read-only mapping of a file;
   * its start page-aligned, as a mapping's is); returns whether the system did.
   */
  public static boolean release(MemorySegment mapped) {
    if (MADVISE == null || mapped.byteSize() == 0 || (mapped.address() & 4095) != 0) {
      return false;
    }
    try {
      return (int) MADVISE.invokeExact(mapped, mapped.byteSize(), MADV_DONTNEED) == 0;
    } catch (Throwable e) {
      return false;
    }
  }
}
