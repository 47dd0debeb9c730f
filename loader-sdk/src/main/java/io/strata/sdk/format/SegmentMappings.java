package io.strata.sdk.format;

import io.strata.sdk.SegmentLease;
import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.strata.sdk.Column;
import io.strata.sdk.format.SegmentFile;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Segment files mapped once per path in this process and shared by reference count: the one
 * lifetime both segment sources (a local {@code SegmentStore}, a node's {@code NodeSegments})
 * use. A mapping lives while leases hold it; once {@linkplain #retire retired} (its file evicted
 * and unlinked) it is unmapped when its last lease is released, and until then its bytes count
 * in {@link #unlinkedMappedBytes()}: SSD blocks the file system cannot free yet.
 *
 * <p>Threads and locks: the table of mappings is guarded by this object's monitor, held only for
 * table updates. Files are opened (and checksummed) outside it, so prefetch threads map
 * different segments in parallel; a path being opened has a placeholder entry, and other threads
 * asking for that path wait for it on the monitor rather than open it twice. A path retired
 * while being opened yields a lease on a retired mapping (valid, unmapped at release), never a
 * live entry for a file that is gone. Leases may be released from any thread.
 */
public final class SegmentMappings implements AutoCloseable {
  /** Opens (maps and checks) a segment file; called outside any lock. */
  public interface Opener {
    SegmentFile open(Path path) throws IOException;
  }

  private static final class Entry {
    final Path path;
    SegmentFile file;
    int refs;
    boolean retired;

    Entry(Path path) {
      this.path = path;
    }

    boolean opening() {
      return file == null;
    }
  }

  private final String owner;
  private final boolean keepUnreferenced;
  @GuardedBy("this")
  private final Map<Path, Entry> live = new HashMap<>();
  @GuardedBy("this")
  private final List<Entry> retiredHeld = new ArrayList<>();
  @GuardedBy("this")
  private long unlinkedBytes;
  @GuardedBy("this")
  private boolean closed;

  /**
   * @param owner what the mappings belong to, for messages
   * @param keepUnreferenced keep a mapping whose last lease is released (until {@link #trim()}),
   *     so that the next lease of the same segment does not map and verify it again
   */
  public SegmentMappings(String owner, boolean keepUnreferenced) {
    this.owner = owner;
    this.keepUnreferenced = keepUnreferenced;
  }

  /** A lease on one mapped segment; closing it twice is harmless. */
  public final class Ref implements SegmentLease {
    private final Entry entry;
    private boolean released;

    private Ref(Entry entry) {
      this.entry = entry;
    }

    public SegmentFile file() {
      return entry.file;
    }

    @Override
    public Path path() {
      return entry.path;
    }

    @Override
    public Column column(String feature) {
      return entry.file.column(feature);
    }

    /** Another lease on this mapping; fails once this one is released. */
    @Override
    public Ref share() {
      synchronized (SegmentMappings.this) {
        if (released) {
          throw new IllegalStateException("the lease on " + entry.path + " is already released");
        }
        entry.refs++;
        return new Ref(entry);
      }
    }

    @Override
    public void close() {
      synchronized (SegmentMappings.this) {
        if (!released) {
          released = true;
          release(entry);
        }
      }
    }
  }

  /**
   * A lease on the segment at {@code path}: the existing mapping, or one {@code opener} makes
   * now. Fails with what {@code opener} throws, or {@link IllegalStateException} once closed.
   */
  public Ref acquire(Path path, Opener opener) throws IOException {
    Entry mine;
    synchronized (this) {
      while (true) {
        checkOpen();
        Entry e = live.get(path);
        if (e == null) {
          mine = new Entry(path);
          live.put(path, mine);
          break;
        }
        if (!e.opening()) {
          e.refs++;
          return new Ref(e);
        }
        try {
          wait();
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw new InterruptedIOException("interrupted while " + path + " was being mapped");
        }
      }
    }
    SegmentFile file;
    try {
      file = opener.open(path);
    } catch (IOException | RuntimeException | Error t) {
      synchronized (this) {
        live.remove(path, mine);
        notifyAll();
      }
      throw t;
    }
    synchronized (this) {
      if (closed) {
        live.remove(path, mine);
        notifyAll();
        file.close();
        checkOpen();
      }
      mine.file = file;
      mine.refs = 1;
      if (mine.retired) {
        retiredHeld.add(mine);
        unlinkedBytes += file.fileSize();
      }
      notifyAll();
      return new Ref(mine);
    }
  }

  /**
   * The segment at {@code path} left the tier (its file is or will be unlinked): no new lease
   * shares its mapping, which is unmapped now when unheld, else when its last lease is released.
   */
  public synchronized void retire(Path path) {
    Entry e = live.remove(path);
    if (e == null) {
      return;
    }
    e.retired = true;
    if (e.opening()) {
      return; // its opener finds it retired
    }
    if (e.refs == 0) {
      e.file.close();
    } else {
      retiredHeld.add(e);
      unlinkedBytes += e.file.fileSize();
    }
  }

  @GuardedBy("this")
  private void release(Entry e) {
    e.refs--;
    if (e.refs > 0) {
      return;
    }
    if (e.retired) {
      retiredHeld.remove(e);
      unlinkedBytes -= e.file.fileSize();
      e.file.close();
    } else if (closed || !keepUnreferenced) {
      live.remove(e.path, e);
      e.file.close();
    }
  }

  /** Unmaps the segments no lease holds. */
  public synchronized void trim() {
    live.values().removeIf(e -> {
      if (!e.opening() && e.refs == 0) {
        e.file.close();
        return true;
      }
      return false;
    });
  }

  /** Mapped segments: held or kept, live or retired. */
  public synchronized int size() {
    int n = retiredHeld.size();
    for (Entry e : live.values()) {
      n += e.opening() ? 0 : 1;
    }
    return n;
  }

  /** Bytes of retired (evicted, unlinked) segments that leases still keep mapped. */
  public synchronized long unlinkedMappedBytes() {
    return unlinkedBytes;
  }

  @GuardedBy("this")
  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("the segment mappings of " + owner + " are closed");
    }
  }

  /** Unmaps every unheld segment now and each held one when its lease is released. */
  @Override
  public synchronized void close() {
    closed = true;
    trim();
    notifyAll();
  }
}
