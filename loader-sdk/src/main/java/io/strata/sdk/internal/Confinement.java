package io.strata.sdk.internal;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;

/**
 * Where a process may open files it reads for others: a set of root directories, checked on the
 * file each open actually reaches, not on its name. The node reads datasets under its HDD roots
 * and segments under its SSD directory on behalf of callers; a name checked once (at
 * registration) can later lead elsewhere, through a link planted at any component of its path.
 *
 * <p>How an open is confined (Linux): the file is opened by its name ({@code open(2)}, through
 * the FFM API, following links as any open does), then the kernel's own record of what was
 * opened, the link {@code /proc/self/fd/N}, gives the real path of the open file; it must lie in
 * a root and be a regular file. Only then is the file handed on, as a channel on that same open
 * file (reopened through {@code /proc/self/fd/N}, so no name is looked up again). A link swapped in
 * between the check and the open cannot matter: the check is on the file that was opened. Where
 * the FFM call or {@code /proc} is not available, the real path of the name is checked before the
 * open instead (a race with a link swapped in at that instant remains; the one warning says so).
 *
 * <p>{@link #NONE} confines nothing: a job opening its own user's files. Thread-safe and
 * immutable.
 */
public final class Confinement {
  /** No confinement: every open is a plain one. */
  public static final Confinement NONE = new Confinement(List.of(), "");

  private final List<Path> roots;
  private final String what;

  private Confinement(List<Path> roots, String what) {
    this.roots = roots;
    this.what = what;
  }

  /**
   * Confinement to {@code roots} (their real paths; a root that does not exist is left out),
   * {@code what} naming them in refusals ("the node's HDD roots").
   */
  public static Confinement within(Collection<Path> roots, String what) throws IOException {
    List<Path> real = new ArrayList<>();
    for (Path r : roots) {
      if (r.getFileSystem() != FileSystems.getDefault()) {
        // HDFS: no links, and its name node is not asked here (a silent one would hold every open,
        // local ones too); a file of it is checked by its normalized path as it is opened.
        real.add(r.toAbsolutePath().normalize());
      } else if (Files.isDirectory(r)) {
        real.add(r.toRealPath());
      }
    }
    return new Confinement(List.copyOf(real), what);
  }

  /** Whether opens are checked on the file opened (Linux, native access), not on its name before the open. */
  static boolean checksTheOpenedFile() {
    return Native.AVAILABLE;
  }

  /** Whether this confines anything. */
  public boolean confined() {
    return this != NONE;
  }

  /** Whether the real path {@code real} lies in a root. */
  public boolean contains(Path real) {
    for (Path r : roots) {
      if (r.getFileSystem() == real.getFileSystem() && real.startsWith(r)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Opens {@code file} for reading: a regular file that lies, as opened, in a root. Refusal: an
   * {@link AccessDeniedException} naming the file and the roots; a missing file: {@link
   * NoSuchFileException}.
   */
  public FileChannel openRead(Path file) throws IOException {
    if (!confined()) {
      return FileChannel.open(file, StandardOpenOption.READ);
    }
    if (file.getFileSystem() != FileSystems.getDefault()) {
      // A file of another file system (HDFS: no links, no descriptors to ask): its real path is its
      // normalized absolute path, checked before the open.
      Path real = file.toRealPath();
      check(file, real, Files.isRegularFile(real));
      return FileChannel.open(real, StandardOpenOption.READ);
    }
    if (Native.AVAILABLE) {
      return Native.openConfined(this, file);
    }
    Path real;
    try {
      real = file.toRealPath();
    } catch (NoSuchFileException e) {
      if (!leadsInside(file)) {
        throw new AccessDeniedException(file.toString(), null, "leads outside " + what + " (a link?): refused");
      }
      throw e;
    }
    check(file, real, Files.isRegularFile(real));
    return FileChannel.open(real, StandardOpenOption.READ);
  }

  /** Reads all of {@code file}, opened as {@link #openRead} opens it. */
  public byte[] readAllBytes(Path file) throws IOException {
    try (FileChannel ch = openRead(file)) {
      long size = ch.size();
      if (size > Integer.MAX_VALUE - 16) {
        throw new IOException(file + " is too large to read whole (" + size + " bytes)");
      }
      ByteBuffer b = ByteBuffer.allocate((int) size);
      while (b.hasRemaining() && ch.read(b, b.position()) >= 0) {
        // reads until full or the end
      }
      return b.position() == b.capacity() ? b.array() : Arrays.copyOf(b.array(), b.position());
    }
  }

  /** Whether {@code file} leads, as far as it exists, into a root (its links followed, a dangling one too). */
  private boolean leadsInside(Path file) {
    try {
      return contains(SafePaths.resolved(file));
    } catch (IOException e) {
      return false;
    }
  }

  private void check(Path file, Path real, boolean regular) throws AccessDeniedException {
    if (!contains(real)) {
      throw new AccessDeniedException(file.toString(), null, "leads outside " + what + " (a link?): refused");
    }
    if (!regular) {
      throw new AccessDeniedException(file.toString(), null, "is not a regular file: refused");
    }
  }

  /** The libc calls: {@code open(2)} with errno, {@code close(2)} (restricted methods: native access is the SDK's). */
  @SuppressWarnings("restricted")
  private static final class Native {
    static final boolean AVAILABLE;
    static final MethodHandle OPEN;
    static final MethodHandle CLOSE;
    static final StructLayout STATE;
    static final VarHandle ERRNO;
    // open(2) flags, the same on Linux x86-64 and aarch64.
    static final int O_RDONLY = 0;
    static final int O_NOCTTY = 0x100;
    static final int O_NONBLOCK = 0x800;
    static final int O_CLOEXEC = 0x80000;
    static final int ENOENT = 2;
    static final int EACCES = 13;
    static final int ENOTDIR = 20;
    static final int ELOOP = 40;

    static {
      boolean ok = false;
      MethodHandle open = null;
      MethodHandle close = null;
      StructLayout state = null;
      VarHandle errno = null;
      try {
        if (Files.isDirectory(Path.of("/proc/self/fd"))) {
          Linker linker = Linker.nativeLinker();
          state = Linker.Option.captureStateLayout();
          errno = state.varHandle(MemoryLayout.PathElement.groupElement("errno"));
          open = linker.downcallHandle(linker.defaultLookup().find("open").orElseThrow(),
              FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
              Linker.Option.captureCallState("errno"), Linker.Option.firstVariadicArg(2));
          close = linker.downcallHandle(linker.defaultLookup().find("close").orElseThrow(),
              FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
          ok = true;
        }
      } catch (RuntimeException | LinkageError e) { // IllegalCallerException: native access denied
        System.getLogger("io.strata").log(System.Logger.Level.WARNING, "confined opens check a file's real path before"
            + " opening it, not the opened file (" + e + "); run with --enable-native-access=ALL-UNNAMED");
      }
      AVAILABLE = ok;
      OPEN = open;
      CLOSE = close;
      STATE = state;
      ERRNO = errno;
    }

    static FileChannel openConfined(Confinement c, Path file) throws IOException {
      int fd;
      int err;
      try (Arena a = Arena.ofConfined()) {
        MemorySegment state = a.allocate(STATE);
        MemorySegment name = a.allocateFrom(file.toAbsolutePath().toString());
        fd = (int) OPEN.invokeExact(state, name, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0);
        err = (int) ERRNO.get(state, 0L);
      } catch (Throwable t) {
        throw new IOException("cannot open " + file + ": " + t, t);
      }
      if (fd < 0) {
        if ((err == ENOENT || err == ENOTDIR) && !c.leadsInside(file)) {
          // A name leading out of the roots is refused alike whether its target exists or not.
          throw new AccessDeniedException(file.toString(), null, "leads outside " + c.what + " (a link?): refused");
        }
        throw switch (err) {
          case ENOENT, ENOTDIR -> new NoSuchFileException(file.toString());
          case EACCES -> new AccessDeniedException(file.toString());
          case ELOOP -> new FileSystemException(file.toString(), null, "too many levels of links");
          default -> new FileSystemException(file.toString(), null, "cannot open (errno " + err + ")");
        };
      }
      try {
        Path link = Path.of("/proc/self/fd/" + fd);
        Path real = Files.readSymbolicLink(link);
        boolean regular = Files.readAttributes(link, BasicFileAttributes.class).isRegularFile();
        if (real.toString().endsWith(" (deleted)")) {
          throw new NoSuchFileException(file.toString(), null, "was removed as it was opened");
        }
        c.check(file, real, regular);
        return FileChannel.open(link, StandardOpenOption.READ);
      } finally {
        try {
          int ignored = (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
          // The descriptor is gone either way.
        }
      }
    }
  }
}
