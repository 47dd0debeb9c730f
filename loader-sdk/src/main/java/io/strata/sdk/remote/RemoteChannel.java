package io.strata.sdk.remote;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileLock;
import java.nio.channels.NonWritableChannelException;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;

/**
 * A file of a remote file system opened for reading, as a {@link FileChannel}: positioned reads
 * (each a {@link #readFully} of the subclass: a {@code pread} of HDFS, a range GET of S3), a
 * position for relative reads, the size it had when opened. Nothing can be written. Such a file
 * cannot be mapped: {@link #map(MapMode, long, long, Arena)} reads the range into memory of the
 * arena instead (read-only from then on), which is what the SDK maps small files (the sample
 * index) for; the {@link MappedByteBuffer} form is refused.
 *
 * <p>Threads: positioned reads may come from several threads (subclasses' reads are
 * thread-safe); the position is guarded by this channel's monitor.
 */
public abstract class RemoteChannel extends FileChannel {
  /** The most one {@link #readFully} is asked for. */
  protected static final int CHUNK = 8 << 20;
  protected final long size;
  protected final RemotePath path;
  private long position;

  protected RemoteChannel(long size, RemotePath path) {
    this.size = size;
    this.path = path;
  }

  /** Reads exactly {@code n} bytes at {@code at} (within the file) into {@code b}; a file that ended early is an EOFException naming it. */
  protected abstract void readFully(long at, byte[] b, int off, int n) throws IOException;

  @Override
  public synchronized int read(ByteBuffer dst) throws IOException {
    int n = read(dst, position);
    if (n > 0) {
      position += n;
    }
    return n;
  }

  @Override
  public synchronized long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
    long total = 0;
    for (int i = offset; i < offset + length; i++) {
      int n = read(dsts[i]);
      if (n < 0) {
        return total == 0 ? -1 : total;
      }
      total += n;
      if (dsts[i].hasRemaining()) {
        break;
      }
    }
    return total;
  }

  @Override
  public int read(ByteBuffer dst, long at) throws IOException {
    if (at < 0) {
      throw new IllegalArgumentException("negative position " + at + " in " + path);
    }
    ensureOpen();
    if (at >= size) {
      return -1;
    }
    int want = (int) Math.min(dst.remaining(), size - at);
    if (want == 0) {
      return 0;
    }
    if (dst.hasArray()) {
      readFully(at, dst.array(), dst.arrayOffset() + dst.position(), want);
      dst.position(dst.position() + want);
    } else {
      byte[] b = new byte[Math.min(want, CHUNK)];
      int done = 0;
      while (done < want) {
        int n = Math.min(b.length, want - done);
        readFully(at + done, b, 0, n);
        dst.put(b, 0, n);
        done += n;
      }
    }
    return want;
  }

  /** Reads {@code [at, at + length)} into memory of {@code arena}: the mapping this file system cannot give. */
  @Override
  public MemorySegment map(MapMode mode, long at, long length, Arena arena) throws IOException {
    if (mode != MapMode.READ_ONLY) {
      throw new NonWritableChannelException();
    }
    if (at < 0 || length < 0 || at + length > size) {
      throw new IOException("cannot read [" + at + ", " + (at + length) + ") of " + path + " (" + size + " bytes)");
    }
    MemorySegment m = arena.allocate(Math.max(1, length), 4096).asSlice(0, length);
    byte[] b = new byte[(int) Math.min(CHUNK, Math.max(1, length))];
    for (long done = 0; done < length; ) {
      int n = (int) Math.min(b.length, length - done);
      readFully(at + done, b, 0, n);
      MemorySegment.copy(b, 0, m, ValueLayout.JAVA_BYTE, done, n);
      done += n;
    }
    return m.asReadOnly();
  }

  @Override
  public MappedByteBuffer map(MapMode mode, long at, long length) {
    throw new UnsupportedOperationException("a file of " + path.getFileSystem().kind() + " cannot be mapped: " + path);
  }

  @Override
  public synchronized long position() throws IOException {
    ensureOpen();
    return position;
  }

  @Override
  public synchronized FileChannel position(long newPosition) throws IOException {
    if (newPosition < 0) {
      throw new IllegalArgumentException("negative position " + newPosition + " in " + path);
    }
    ensureOpen();
    position = newPosition;
    return this;
  }

  @Override
  public long size() throws IOException {
    ensureOpen();
    return size;
  }

  @Override
  public long transferTo(long at, long count, WritableByteChannel target) throws IOException {
    long done = 0;
    ByteBuffer b = ByteBuffer.allocate((int) Math.min(CHUNK, Math.max(1, count)));
    while (done < count) {
      b.clear().limit((int) Math.min(b.capacity(), count - done));
      int n = read(b, at + done);
      if (n <= 0) {
        break;
      }
      b.flip();
      while (b.hasRemaining()) {
        target.write(b);
      }
      done += n;
    }
    return done;
  }

  @Override
  public int write(ByteBuffer src) {
    throw new NonWritableChannelException();
  }

  @Override
  public long write(ByteBuffer[] srcs, int offset, int length) {
    throw new NonWritableChannelException();
  }

  @Override
  public int write(ByteBuffer src, long at) {
    throw new NonWritableChannelException();
  }

  @Override
  public FileChannel truncate(long newSize) {
    throw new NonWritableChannelException();
  }

  @Override
  public long transferFrom(ReadableByteChannel src, long at, long count) {
    throw new NonWritableChannelException();
  }

  @Override
  public void force(boolean metaData) {
    // nothing written
  }

  @Override
  public FileLock lock(long at, long length, boolean shared) {
    throw new UnsupportedOperationException("a file of " + path.getFileSystem().kind() + " cannot be locked: " + path);
  }

  @Override
  public FileLock tryLock(long at, long length, boolean shared) {
    throw new UnsupportedOperationException("a file of " + path.getFileSystem().kind() + " cannot be locked: " + path);
  }

  protected void ensureOpen() throws IOException {
    if (!isOpen()) {
      throw new ClosedChannelException();
    }
  }
}
