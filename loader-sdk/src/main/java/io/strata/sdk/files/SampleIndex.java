package io.strata.sdk.files;

import io.strata.sdk.CorruptFileException;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.Confinement;
import io.strata.sdk.internal.Le;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * The sample index of a dataset whose rows are events grouped and sorted by sample (seed 000's
 * dimensions table): {@code sample_id -> [start_row, end_row)}, memory-mapped.
 *
 * <p>File layout (little-endian): magic {@code STRATAIX}, int32 version (1), int32 reserved (0),
 * int64 count, then {@code count} entries of {@code (int64 sample_id, int64 start_row, int64
 * end_row)} sorted by sample id, then int32 CRC32C of everything before it and the 4 bytes
 * {@code IEND}.
 */
public final class SampleIndex implements AutoCloseable {
  private static final byte[] MAGIC = "STRATAIX".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] END = "IEND".getBytes(StandardCharsets.US_ASCII);
  private static final int VERSION = 1;
  private static final int HEADER = 24;
  private static final int ENTRY = 24;
  private static final ValueLayout.OfLong LONG = Le.LONG;

  private final Path path;
  private final Arena arena;
  private final MemorySegment entries;
  private final long count;

  private SampleIndex(Path path, Arena arena, MemorySegment entries, long count) {
    this.path = path;
    this.arena = arena;
    this.entries = entries;
    this.count = count;
  }

  /** Writes an index atomically; {@code ids} must be strictly increasing. */
  public static void write(Path file, long[] ids, long[] starts, long[] ends, int count) throws IOException {
    for (int i = 0; i < count; i++) {
      if (ends[i] < starts[i] || (i > 0 && (ids[i] <= ids[i - 1] || starts[i] < ends[i - 1]))) {
        throw new IllegalArgumentException("sample index entry " + i + " is out of order");
      }
    }
    ByteBuffer buf = ByteBuffer.allocate(HEADER + ENTRY * count + 8).order(ByteOrder.LITTLE_ENDIAN);
    buf.put(MAGIC).putInt(VERSION).putInt(0).putLong(count);
    for (int i = 0; i < count; i++) {
      buf.putLong(ids[i]).putLong(starts[i]).putLong(ends[i]);
    }
    CRC32C crc = new CRC32C();
    crc.update(buf.array(), 0, buf.position());
    buf.putInt((int) crc.getValue()).put(END);
    AtomicFiles.write(file, buf.array());
  }

  /** Maps and validates an index file. */
  public static SampleIndex open(Path file) throws IOException {
    return open(file, Confinement.NONE);
  }

  /** Maps and validates an index file, the open confined by {@code confinement}. */
  public static SampleIndex open(Path file, Confinement confinement) throws IOException {
    Arena arena = Arena.ofShared();
    boolean ok = false;
    try (FileChannel ch = confinement.openRead(file)) {
      long size = ch.size();
      if (size < HEADER + 8) {
        throw new CorruptFileException(file, "sample index is truncated (" + size + " bytes)");
      }
      MemorySegment map = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
      if (!Arrays.equals(map.asSlice(0, 8).toArray(ValueLayout.JAVA_BYTE), MAGIC)) {
        throw new CorruptFileException(file, "not a Strata sample index (bad magic)");
      }
      int version = map.get(Le.INT, 8);
      if (version != VERSION) {
        throw new CorruptFileException(file, "sample index version " + version + " is not supported (this build reads 1)");
      }
      long count = map.get(LONG, 16);
      if (count < 0 || HEADER + ENTRY * count + 8 != size) {
        throw new CorruptFileException(file, "sample index of " + size + " bytes cannot hold " + count + " entries (truncated?)");
      }
      CRC32C crc = new CRC32C();
      crc.update(map.asSlice(0, size - 8).asByteBuffer());
      int stored = map.get(Le.INT, size - 8);
      if (stored != (int) crc.getValue()
          || !Arrays.equals(map.asSlice(size - 4, 4).toArray(ValueLayout.JAVA_BYTE), END)) {
        throw new CorruptFileException(file, "sample index checksum mismatch: the file is damaged");
      }
      SampleIndex index = new SampleIndex(file, arena, map.asSlice(HEADER, ENTRY * count), count);
      ok = true;
      return index;
    } finally {
      if (!ok) {
        arena.close();
      }
    }
  }

  /** Number of samples. */
  public long size() {
    return count;
  }

  private void check(long ordinal) {
    if (ordinal < 0 || ordinal >= count) {
      throw new IndexOutOfBoundsException("sample ordinal " + ordinal + " outside index of " + count + " samples");
    }
  }

  public long sampleId(long ordinal) {
    check(ordinal);
    return entries.get(LONG, ordinal * ENTRY);
  }

  /** First row of the sample at {@code ordinal}. */
  public long start(long ordinal) {
    check(ordinal);
    return entries.get(LONG, ordinal * ENTRY + 8);
  }

  /** One past the last row of the sample at {@code ordinal}. */
  public long end(long ordinal) {
    check(ordinal);
    return entries.get(LONG, ordinal * ENTRY + 16);
  }

  /** The ordinal of {@code sampleId}, or -1 if absent. */
  public long find(long sampleId) {
    long lo = 0;
    long hi = count - 1;
    while (lo <= hi) {
      long mid = (lo + hi) >>> 1;
      long id = entries.get(LONG, mid * ENTRY);
      if (id < sampleId) {
        lo = mid + 1;
      } else if (id > sampleId) {
        hi = mid - 1;
      } else {
        return mid;
      }
    }
    return -1;
  }

  /** The ordinal of the sample holding {@code row}, or -1 if no sample does. */
  public long ordinalOfRow(long row) {
    long lo = 0;
    long hi = count - 1;
    long found = -1;
    while (lo <= hi) {
      long mid = (lo + hi) >>> 1;
      if (entries.get(LONG, mid * ENTRY + 8) <= row) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found >= 0 && row < end(found) ? found : -1;
  }

  public Path path() {
    return path;
  }

  @Override
  public void close() {
    if (arena.scope().isAlive()) {
      arena.close();
    }
  }
}
