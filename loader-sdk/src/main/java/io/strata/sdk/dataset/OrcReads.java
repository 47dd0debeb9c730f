package io.strata.sdk.dataset;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntFunction;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSInputStream;
import org.apache.hadoop.fs.FileRange;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;

/**
 * The read requests Strata's ORC reading issues to the HDD tier, and their coalescing.
 *
 * <p>orc-core (2.3) hands a stripe's column streams to the file system as a vectored read, one
 * range per stream, and the local file system reads each range on its own: a job projecting five
 * adjacent features still issues one request per stream. The streams of a file opened here are
 * read through {@link Counting#readVectored}, which merges ranges that touch (or overlap) into one
 * read and slices the result, so adjacent columns cost one request per run of columns; that is
 * what makes a relayout ({@link Relayout}) pay on the HDD tier. A stripe footer that a file's
 * sidecar holds ({@link StripeFooters}) is served from memory without a request.
 *
 * <p>Counted where requests leave the reader: each call that reads file bytes is one request,
 * with its bytes. Process-wide totals; take differences around what you measure. Thread-safe
 * (adders).
 */
public final class OrcReads {
  private static final LongAdder REQUESTS = new LongAdder();
  private static final LongAdder BYTES = new LongAdder();

  private OrcReads() {}

  /** Read requests issued so far. */
  public static long requests() {
    return REQUESTS.sum();
  }

  /** Bytes those requests asked for. */
  public static long bytes() {
    return BYTES.sum();
  }

  /** Bytes of a gap between two ranges that one read reads through rather than issuing two. */
  static final long HOLE = Long.getLong("strata.orc.holeBytes", 0);

  /** The most bytes one coalesced read takes. */
  static final int MAX_READ = 64 << 20;

  /** Counts one request of {@code bytes} made outside orc-core (a sidecar, a shape check). */
  static void countRequest(long bytes) {
    count(bytes);
  }

  /**
   * Stripe footers known without a request, by file ({@link #key}): registered by the table that
   * opened the file ({@link StripeFooters}), consulted by every stream orc-core opens on it.
   */
  private static final java.util.concurrent.ConcurrentHashMap<String, StripeFooters> FOOTERS =
      new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * A file as it is now: its absolute path, inode, size and modification time (metadata only, no
   * read). A file replaced under the same name gets another key, so footers registered for the
   * old one never serve the new one.
   */
  static String key(java.nio.file.Path file) throws IOException {
    java.nio.file.Path p = file.toAbsolutePath().normalize();
    java.nio.file.attribute.BasicFileAttributes a =
        java.nio.file.Files.readAttributes(p, java.nio.file.attribute.BasicFileAttributes.class);
    return p + "|" + a.fileKey() + "|" + a.size() + "|" + a.lastModifiedTime().to(java.util.concurrent.TimeUnit.NANOSECONDS);
  }

  static void remember(String key, StripeFooters footers) {
    FOOTERS.put(key, footers);
  }

  /**
   * Stream checksums by file ({@link #key}): registered by the table that opened the file, checked
   * by every stream orc-core opens on it against the bytes it reads.
   */
  private static final java.util.concurrent.ConcurrentHashMap<String, StreamChecksums.File> SUMS =
      new java.util.concurrent.ConcurrentHashMap<>();

  static void remember(String key, StreamChecksums.File sums) {
    SUMS.put(key, sums);
  }

  /** Forgets {@code sums} of the file {@code key} names, unless another table has registered its own since. */
  static void forget(String key, StreamChecksums.File sums) {
    SUMS.remove(key, sums);
  }

  /** Forgets {@code footers} of the file {@code key} names, unless another table has registered its own since. */
  static void forget(String key, StripeFooters footers) {
    FOOTERS.remove(key, footers);
  }

  private static void count(long bytes) {
    REQUESTS.increment();
    BYTES.add(bytes);
    THREAD_BYTES.get()[0] += bytes;
  }

  /** Per thread, the bytes read: reads are issued on the reading thread, so a delta of this is one piece of work's. */
  private static final ThreadLocal<long[]> THREAD_BYTES = ThreadLocal.withInitial(() -> new long[1]);

  /** Bytes read from ORC files by the calling thread since it started. */
  public static long bytesOnThisThread() {
    return THREAD_BYTES.get()[0];
  }

  /**
   * The raw local file system with every opened file's reads counted; with a {@link
   * io.strata.sdk.internal.Confinement}, every file it opens is opened through it.
   */
  static final class CountingFileSystem extends RawLocalFileSystem {
    private final io.strata.sdk.internal.Confinement confinement;

    CountingFileSystem() {
      this(io.strata.sdk.internal.Confinement.NONE);
    }

    CountingFileSystem(io.strata.sdk.internal.Confinement confinement) {
      this.confinement = confinement;
    }

    @Override
    public FSDataInputStream open(Path f, int bufferSize) throws IOException {
      java.nio.file.Path file = pathToFile(f).toPath();
      FSDataInputStream in = confinement.confined() ? new FSDataInputStream(new ChannelInput(confinement.openRead(file)))
          : super.open(f, bufferSize);
      return new FSDataInputStream(new Counting(in, key(file), file));
    }
  }

  /** A file's stream over a channel this process opened (a confined open): positioned reads, seeks. */
  private static final class ChannelInput extends FSInputStream {
    private final java.nio.channels.FileChannel ch;
    private long pos;

    ChannelInput(java.nio.channels.FileChannel ch) {
      this.ch = ch;
    }

    @Override
    public void seek(long p) throws IOException {
      if (p < 0) {
        throw new java.io.EOFException("cannot seek to " + p);
      }
      pos = p;
    }

    @Override
    public long getPos() {
      return pos;
    }

    @Override
    public boolean seekToNewSource(long targetPos) {
      return false;
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      return read(one, 0, 1) <= 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      int n = read(pos, b, off, len);
      if (n > 0) {
        pos += n;
      }
      return n;
    }

    @Override
    public int read(long position, byte[] b, int off, int len) throws IOException {
      if (len == 0) {
        return 0;
      }
      return ch.read(ByteBuffer.wrap(b, off, len), position);
    }

    @Override
    public int available() throws IOException {
      return (int) Math.min(Integer.MAX_VALUE, Math.max(0, ch.size() - pos));
    }

    @Override
    public void close() throws IOException {
      ch.close();
    }
  }

  /**
   * A file's stream whose reads are counted and whose vectored reads are coalesced; everything
   * else goes to the underlying stream. orc-core reads a stripe's footer twice in a row when it
   * opens a stripe; the last small positioned read is kept, so that an identical repeat costs no
   * request (ORC files are immutable while open: a dataset's files change only by a new version).
   * Used by one reader thread at a time, as orc-core uses its streams.
   */
  private static final class Counting extends FSInputStream {
    /** The largest positioned read kept for an identical repeat. */
    private static final int KEEP = 64 << 10;
    private final FSDataInputStream in;
    private final String file;
    private final java.nio.file.Path path;
    private long keptPosition = -1;
    private byte[] kept;

    Counting(FSDataInputStream in, String file, java.nio.file.Path path) {
      this.in = in;
      this.file = file;
      this.path = path;
    }

    /** Checks the recorded streams that {@code data} (the file's bytes from {@code position}) covers, if any are recorded. */
    private void verify(long position, ByteBuffer data) throws IOException {
      StreamChecksums.File sums = SUMS.get(file);
      if (sums != null) {
        sums.check(path, position, data);
      }
    }

    @Override
    public void seek(long pos) throws IOException {
      in.seek(pos);
    }

    @Override
    public long getPos() throws IOException {
      return in.getPos();
    }

    @Override
    public boolean seekToNewSource(long targetPos) {
      return false;
    }

    @Override
    public int read() throws IOException {
      int b = in.read();
      if (b >= 0) {
        count(1);
      }
      return b;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      int n = in.read(b, off, len);
      if (n > 0) {
        count(n);
      }
      return n;
    }

    @Override
    public int read(long position, byte[] buffer, int offset, int length) throws IOException {
      int n = in.read(position, buffer, offset, length);
      if (n > 0) {
        count(n);
      }
      return n;
    }

    @Override
    public void readFully(long position, byte[] buffer, int offset, int length) throws IOException {
      if (kept != null && position == keptPosition && length == kept.length) {
        System.arraycopy(kept, 0, buffer, offset, length);
        return;
      }
      StripeFooters footers = FOOTERS.get(file);
      byte[] footer = footers == null ? null : footers.at(position, length);
      if (footer != null) {
        System.arraycopy(footer, 0, buffer, offset, length);
        return;
      }
      in.readFully(position, buffer, offset, length);
      count(length);
      verify(position, ByteBuffer.wrap(buffer, offset, length));
      if (length <= KEEP) {
        kept = java.util.Arrays.copyOfRange(buffer, offset, offset + length);
        keptPosition = position;
      }
    }

    @Override
    public void readFully(long position, byte[] buffer) throws IOException {
      readFully(position, buffer, 0, buffer.length);
    }

    /**
     * Reads the ranges sorted by offset, one request per run of ranges that touch or overlap
     * into one buffer from {@code allocate}; each range gets a slice of it.
     */
    @Override
    public void readVectored(List<? extends FileRange> ranges, IntFunction<ByteBuffer> allocate) throws IOException {
      List<FileRange> sorted = new ArrayList<>(ranges);
      sorted.sort(Comparator.comparingLong(FileRange::getOffset));
      int i = 0;
      while (i < sorted.size()) {
        long start = sorted.get(i).getOffset();
        long end = start + sorted.get(i).getLength();
        int j = i + 1;
        while (j < sorted.size() && sorted.get(j).getOffset() <= end + HOLE
            && Math.max(end, sorted.get(j).getOffset() + sorted.get(j).getLength()) - start <= MAX_READ) {
          end = Math.max(end, sorted.get(j).getOffset() + sorted.get(j).getLength());
          j++;
        }
        // One buffer for the run; each range gets a slice of it (no copy, no more memory than the ranges).
        int length = Math.toIntExact(end - start);
        ByteBuffer run = allocate.apply(length);
        if (run.hasArray()) {
          in.readFully(start, run.array(), run.arrayOffset() + run.position(), length);
        } else {
          byte[] bytes = new byte[length];
          in.readFully(start, bytes, 0, length);
          run.duplicate().put(bytes);
        }
        count(length);
        verify(start, run.duplicate().limit(run.position() + length));
        for (int k = i; k < j; k++) {
          FileRange r = sorted.get(k);
          ByteBuffer b = run.duplicate();
          int at = run.position() + Math.toIntExact(r.getOffset() - start);
          b.limit(at + r.getLength()).position(at);
          r.setData(CompletableFuture.completedFuture(b.slice()));
        }
        i = j;
      }
    }

    @Override
    public int available() throws IOException {
      return in.available();
    }

    @Override
    public void close() throws IOException {
      in.close();
    }
  }
}
