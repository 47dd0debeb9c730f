package io.strata.sdk.format;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The cache node's residency counter in a small mapped file (FORMAT.md §2.6), so that jobs on
 * the same host see at once that segments landed or went, without asking the node: a reader
 * compares the counter with the one its last {@code resolve} answered and resolves again only
 * when it moved.
 *
 * <p>Layout: 16 bytes, the magic {@code STRRES01} then the counter as a little-endian int64 at
 * offset 8, stored with release and read with acquire semantics (an aligned 8-byte access, atomic
 * on every platform Strata runs on). The node opens the file in place (never replaces it), so a
 * reader's mapping stays the node's across restarts.
 *
 * <p>Threads: {@link #publish} from one thread at a time (the node's tier monitor); {@link #get}
 * from any thread of any process. {@link #close} unmaps: no call may follow it.
 */
public final class ResidencyBeacon implements AutoCloseable {
  /** The file's name in the node's SSD directory. */
  public static final String FILE_NAME = ".residency";
  static final int SIZE = 16;
  private static final byte[] MAGIC = "STRRES01".getBytes(StandardCharsets.US_ASCII);
  private static final VarHandle COUNTER = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN).varHandle();

  private final Path path;
  private final Arena arena;
  private final MemorySegment map;

  private ResidencyBeacon(Path path, Arena arena, MemorySegment map) {
    this.path = path;
    this.arena = arena;
    this.map = map;
  }

  /** The node's side: opens (or creates) the beacon in {@code dir}, writable; the counter starts where it was. */
  public static ResidencyBeacon create(Path dir) throws IOException {
    Path p = dir.resolve(FILE_NAME);
    if (Files.exists(p, LinkOption.NOFOLLOW_LINKS) && !Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
      throw new IOException(p + " is not a regular file: the node's residency beacon cannot be written there");
    }
    Arena arena = Arena.ofShared();
    boolean ok = false;
    try (FileChannel ch = FileChannel.open(p, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE,
        LinkOption.NOFOLLOW_LINKS)) {
      if (ch.size() != SIZE) {
        ch.truncate(0);
        ch.write(ByteBuffer.allocate(SIZE), 0);
      }
      MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, SIZE, arena);
      if (m.asSlice(0, MAGIC.length).mismatch(MemorySegment.ofArray(MAGIC)) >= 0) {
        // New, or not a beacon (an interrupted creation): start the counter afresh.
        COUNTER.setRelease(m, 8L, 0L);
        MemorySegment.copy(MAGIC, 0, m, ValueLayout.JAVA_BYTE, 0, MAGIC.length);
      }
      ok = true;
      return new ResidencyBeacon(p, arena, m);
    } finally {
      if (!ok) {
        arena.close();
      }
    }
  }

  /**
   * A job's side: maps the beacon at {@code file} read-only, or returns null when it is absent, not
   * a regular file or not a beacon (a node on another host, or one that has none): the job then
   * relies on the node's answers alone.
   */
  public static ResidencyBeacon open(Path file) {
    if (!file.getFileName().toString().equals(FILE_NAME) || !Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
      return null;
    }
    Arena arena = Arena.ofShared();
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
      if (ch.size() != SIZE) {
        arena.close();
        return null;
      }
      MemorySegment m = ch.map(FileChannel.MapMode.READ_ONLY, 0, SIZE, arena);
      if (m.asSlice(0, MAGIC.length).mismatch(MemorySegment.ofArray(MAGIC)) >= 0) {
        arena.close();
        return null;
      }
      return new ResidencyBeacon(file, arena, m);
    } catch (IOException | RuntimeException e) {
      arena.close();
      return null;
    }
  }

  public Path path() {
    return path;
  }

  /** The counter as last published. */
  public long get() {
    return (long) COUNTER.getAcquire(map, 8L);
  }

  /** Publishes the node's residency counter (node side only). */
  public void publish(long counter) {
    COUNTER.setRelease(map, 8L, counter);
  }

  @Override
  public void close() {
    arena.close();
  }
}
