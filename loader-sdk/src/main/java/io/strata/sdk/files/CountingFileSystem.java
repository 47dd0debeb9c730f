package io.strata.sdk.files;

import static io.strata.sdk.files.OrcReads.AHEAD;
import static io.strata.sdk.files.OrcReads.AHEAD_WORK;
import static io.strata.sdk.files.OrcReads.DONE;
import static io.strata.sdk.files.OrcReads.DROPPED;
import static io.strata.sdk.files.OrcReads.FOOTERS;
import static io.strata.sdk.files.OrcReads.MAX_READ;
import static io.strata.sdk.files.OrcReads.QUEUED;
import static io.strata.sdk.files.OrcReads.RUNNING;
import static io.strata.sdk.files.OrcReads.SUMS;
import static io.strata.sdk.files.OrcReads.THREAD_BYTES;
import static io.strata.sdk.files.OrcReads.aheadFor;
import static io.strata.sdk.files.OrcReads.count;
import static io.strata.sdk.files.OrcReads.gapBytes;
import static io.strata.sdk.files.OrcReads.key;

import io.strata.sdk.files.OrcReads.Ahead;
import io.strata.sdk.internal.Confinement;
import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntFunction;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSInputStream;
import org.apache.hadoop.fs.FileRange;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;

/**
 * The raw local file system with every opened file's reads counted; with a {@link
 * io.strata.sdk.internal.Confinement}, every file it opens is opened through it. Its streams are
 * where {@link OrcReads}' policy is carried out: vectored reads coalesced (touching ranges, and
 * gaps up to {@link OrcReads#gapBytes} on a disk that seeks), stripes read ahead taken over or
 * waited for, footers and checksums served from the sidecars.
 *
 * <p>Threads: the file system is shared; each stream is used by one reader thread at a time, as
 * orc-core uses its streams (the process-wide state is {@link OrcReads}').
 */
final class CountingFileSystem extends RawLocalFileSystem {
  private final Confinement confinement;

  CountingFileSystem() {
    this(Confinement.NONE);
  }

  CountingFileSystem(Confinement confinement) {
    this.confinement = confinement;
  }

  @Override
  public FSDataInputStream open(Path f, int bufferSize) throws IOException {
    java.nio.file.Path file = nioPath(f);
    FSDataInputStream in = confinement.confined() || Locations.remote(file)
        ? new FSDataInputStream(new ChannelInput(confinement.openRead(file)))
        : super.open(f, bufferSize);
    return new FSDataInputStream(new Counting(in, key(file), file, gapBytes(file)));
  }

  /**
   * A file of a remote file system (a dataset on HDFS or S3) is read through its {@code java.nio} view,
   * so that the same confinement, counting and coalescing apply; what orc-core asks of such a
   * file besides its stream is its length.
   */
  @Override
  public FileStatus getFileStatus(Path f) throws IOException {
    java.nio.file.Path file = nioPath(f);
    if (!Locations.remote(file)) {
      return super.getFileStatus(f);
    }
    BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
    return new FileStatus(a.size(), a.isDirectory(), 1, 128L << 20, a.lastModifiedTime().toMillis(), f);
  }

  @Override
  protected void checkPath(Path path) {
    if (!Locations.remoteScheme(path.toUri().getScheme())) {
      super.checkPath(path);
    }
  }

  /** The {@code java.nio} path of {@code f}: a local file, or a file of a remote file system. */
  private java.nio.file.Path nioPath(Path f) {
    URI u = f.toUri();
    return Locations.remoteScheme(u.getScheme()) ? Locations.remote(u) : pathToFile(f).toPath();
  }


  /** A file's stream over a channel this process opened (a confined open): positioned reads, seeks. */
  private static final class ChannelInput extends FSInputStream {
    private final FileChannel ch;
    private long pos;

    ChannelInput(FileChannel ch) {
      this.ch = ch;
    }

    @Override
    public void seek(long p) throws IOException {
      if (p < 0) {
        throw new EOFException("cannot seek to " + p);
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
    /** Bytes of a gap between two ranges that one read reads through ({@link OrcReads#gapBytes}). */
    private final long gap;
    private long keptPosition = -1;
    private byte[] kept;

    Counting(FSDataInputStream in, String file, java.nio.file.Path path, long gap) {
      this.in = in;
      this.file = file;
      this.path = path;
      this.gap = gap;
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
      long at = in.getPos();
      int b = in.read();
      if (b >= 0) {
        count(path, at, 1);
      }
      return b;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      long at = in.getPos();
      int n = in.read(b, off, len);
      if (n > 0) {
        count(path, at, n);
      }
      return n;
    }

    @Override
    public int read(long position, byte[] buffer, int offset, int length) throws IOException {
      int n = in.read(position, buffer, offset, length);
      if (n > 0) {
        count(path, position, n);
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
      count(path, position, length);
      verify(position, ByteBuffer.wrap(buffer, offset, length));
      if (length <= KEEP) {
        kept = Arrays.copyOfRange(buffer, offset, offset + length);
        keptPosition = position;
      }
    }

    @Override
    public void readFully(long position, byte[] buffer) throws IOException {
      readFully(position, buffer, 0, buffer.length);
    }

    /**
     * Reads the ranges sorted by offset, one request per run of ranges that touch, overlap or lie
     * at most {@link #gap} bytes apart, into one buffer from {@code allocate}; each range gets a slice of it.
     */
    @Override
    public void readVectored(List<? extends FileRange> ranges, IntFunction<ByteBuffer> allocate) throws IOException {
      List<FileRange> sorted = new ArrayList<>(ranges);
      sorted.sort(Comparator.comparingLong(FileRange::getOffset));
      Ahead work = AHEAD_WORK.get();
      if (work != null && !work.state.compareAndSet(QUEUED, RUNNING) && work.state.get() != RUNNING) {
        throw new IOException("read-ahead dropped"); // a reader got there first
      }
      Ahead taken = null;
      int i = 0;
      while (i < sorted.size()) {
        long start = sorted.get(i).getOffset();
        long end = start + sorted.get(i).getLength();
        int j = i + 1;
        while (j < sorted.size() && sorted.get(j).getOffset() <= end + gap
            && Math.max(end, sorted.get(j).getOffset() + sorted.get(j).getLength()) - start <= MAX_READ) {
          end = Math.max(end, sorted.get(j).getOffset() + sorted.get(j).getLength());
          j++;
        }
        // One buffer for the run; each range gets a slice of it (no copy, no more memory than the ranges).
        int length = Math.toIntExact(end - start);
        Ahead a = work == null ? aheadFor(file, start, end) : null;
        ByteBuffer run = a == null ? null : fromAhead(a, start, end);
        if (a != null) {
          taken = a;
        }
        if (run != null) {
          THREAD_BYTES.get()[0] += length; // read for this thread by the read-ahead: its work's bytes
        } else {
          run = allocate.apply(length);
          if (run.hasArray()) {
            in.readFully(start, run.array(), run.arrayOffset() + run.position(), length);
          } else {
            byte[] bytes = new byte[length];
            in.readFully(start, bytes, 0, length);
            run.duplicate().put(bytes);
          }
          count(path, start, length);
          if (work != null) {
            byte[] copy = new byte[length];
            run.duplicate().get(copy);
            work.keep(start, copy);
          }
        }
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
      if (work != null) {
        work.finish();
      }
      if (taken != null) {
        AHEAD.remove(taken); // its region read: what it holds goes with the reader's buffers
      }
    }

    /**
     * The run {@code [start, end)} from the stripe {@code a} read ahead, waiting for it if it is
     * reading; null where it does not hold the run (not started yet: then dropped; failed).
     */
    private ByteBuffer fromAhead(Ahead a, long start, long end) throws IOException {
      if (a.state.compareAndSet(QUEUED, DROPPED)) {
        AHEAD.remove(a);
        return null;
      }
      try {
        a.read.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted waiting for a read-ahead of " + path);
      }
      return a.state.get() == DONE ? a.take(start, Math.toIntExact(end - start)) : null;
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
