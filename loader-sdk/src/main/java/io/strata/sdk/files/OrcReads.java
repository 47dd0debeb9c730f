package io.strata.sdk.files;

import io.strata.sdk.s3.S3FileSystems;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.fs.Path;

/**
 * The read requests Strata's ORC reading issues to the HDD tier, and their coalescing.
 *
 * <p>orc-core (2.3) hands a stripe's column streams to the file system as a vectored read, one
 * range per stream, and the local file system reads each range on its own: a job projecting five
 * adjacent features still issues one request per stream. The streams of a file opened here are
 * read through {@link CountingFileSystem}, whose streams' vectored reads merge ranges that touch (or overlap) into one
 * read and slices the result, so adjacent columns cost one request per run of columns; that is
 * what makes a relayout ({@link Relayout}) pay on the HDD tier. On a disk that seeks, ranges a
 * short gap apart are read as one request too, the gap read through ({@link #gapBytes}: by
 * default, on a device the kernel calls rotational, gaps up to {@link DiskModel#HDD}'s break-even,
 * where reading the gap costs what a seek does). A stripe footer that a file's
 * sidecar holds ({@link StripeFooters}) is served from memory without a request.
 *
 * <p>Counted where requests leave the reader: each call that reads file bytes is one request,
 * with its bytes. Process-wide totals; take differences around what you measure; a {@link
 * Recording} keeps every request (file, offset, length) for a replay on a {@link DiskModel}.
 *
 * <p>Threads and locks. Counters are adders; the gap setting and the recording are volatile
 * fields, a recording's list has its own lock. Stripes read ahead ({@link #readAhead}) are read on
 * one daemon thread of the process, {@code strata-orc-read-ahead}, four queued at most: each is an
 * {@link Ahead} in a copy-on-write list with an atomic state (queued, running, done, dropped). A
 * reader whose run lies in a queued stripe's region drops it (one compare-and-set) and reads
 * itself; in a running one it waits on the stripe's latch, which never waits on anything the
 * reader holds (the read-ahead opens its stripe with an ORC reader of its own, not the table's
 * monitor). A stripe read ahead leaves the list when a reader reads its region, when its table
 * closes, or when newer ones push it out.
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

  /**
   * The gap setting: {@code strata.orc.gapBytes}, "auto" (the default) or a number of bytes; or
   * what {@link #setGapBytes} set last (-1: auto).
   */
  static volatile long gapOverride = parseGap(System.getProperty("strata.orc.gapBytes", "auto"));

  private static long parseGap(String v) {
    if (v.equals("auto")) {
      return -1;
    }
    try {
      long n = Long.parseLong(v.strip());
      if (n >= 0) {
        return n;
      }
    } catch (NumberFormatException e) {
      // below
    }
    throw new IllegalArgumentException("strata.orc.gapBytes is 'auto' or a number of bytes >= 0, not '" + v + "'");
  }

  /**
   * Sets the bytes of a gap between two ranges of a vectored read that one request reads through
   * rather than issuing two, for files opened from now on, process-wide: a number of bytes (0:
   * merge only ranges that touch), or -1 for the default, "auto": {@link DiskModel#HDD}'s
   * break-even gap on a file whose block device the kernel calls rotational, 0 elsewhere. The
   * same as the {@code strata.orc.gapBytes} system property ("auto" or bytes).
   */
  public static void setGapBytes(long bytes) {
    if (bytes < -1) {
      throw new IllegalArgumentException("a gap is -1 (auto) or bytes >= 0, not " + bytes);
    }
    gapOverride = bytes;
  }

  /** Per root directory (absolute, normalized), the gap its files' reads read through: the disk under it as its owner set it. */
  private static final ConcurrentHashMap<java.nio.file.Path, Long> ROOT_GAPS = new ConcurrentHashMap<>();

  /**
   * Sets the gap the reads of files under {@code root} read through, whatever device the kernel
   * reports: the break-even of the disk under it ({@link DiskModel#breakEvenGapBytes}, from its
   * figures: a drive slower than {@link DiskModel#HDD}, or an inner zone, is worth reading through
   * less), or 0 for none; -1 forgets the root (back to auto). The longest root holding a file
   * wins; a process-wide setting ({@link #setGapBytes(long)}, the system property) wins over all.
   */
  public static void setGapBytes(java.nio.file.Path root, long bytes) {
    if (bytes < -1) {
      throw new IllegalArgumentException("a gap is -1 (auto) or bytes >= 0, not " + bytes);
    }
    java.nio.file.Path key = root.toAbsolutePath().normalize();
    if (bytes < 0) {
      ROOT_GAPS.remove(key);
    } else {
      ROOT_GAPS.put(key, bytes);
    }
  }

  /** The gap reads of {@code file} read through ({@link #setGapBytes}). */
  public static long gapBytes(java.nio.file.Path file) {
    long g = gapOverride;
    if (g >= 0) {
      return g;
    }
    if (!ROOT_GAPS.isEmpty()) {
      java.nio.file.Path p = file.toAbsolutePath().normalize();
      java.nio.file.Path best = null;
      for (java.nio.file.Path root : ROOT_GAPS.keySet()) {
        if (p.startsWith(root) && (best == null || root.getNameCount() > best.getNameCount())) {
          best = root;
        }
      }
      Long set = best == null ? null : ROOT_GAPS.get(best);
      if (set != null) {
        return set;
      }
    }
    if (S3FileSystems.isS3(file)) {
      return S3FileSystems.gapBytes(file); // a request's first byte costs what one connection moves meanwhile
    }
    return rotational(file) ? DiskModel.HDD.breakEvenGapBytes() : 0;
  }

  /** Whether the kernel calls {@code file}'s block device rotational, by device number; false where it cannot tell. */
  private static final ConcurrentHashMap<Long, Boolean> ROTATIONAL =
      new ConcurrentHashMap<>();

  static boolean rotational(java.nio.file.Path file) {
    long dev;
    try {
      dev = ((Number) Files.getAttribute(file, "unix:dev")).longValue();
    } catch (IOException | UnsupportedOperationException | IllegalArgumentException | ClassCastException e) {
      return false;
    }
    return ROTATIONAL.computeIfAbsent(dev, d -> {
      // Linux's dev_t: major in bits 8-19 and 32-43, minor in bits 0-7 and 20-31.
      long major = ((d >>> 8) & 0xfff) | ((d >>> 32) & ~0xfffL);
      long minor = (d & 0xff) | ((d >>> 12) & ~0xffL);
      java.nio.file.Path sys = java.nio.file.Path.of("/sys/dev/block/" + major + ":" + minor);
      for (java.nio.file.Path q : new java.nio.file.Path[] {sys.resolve("queue/rotational"), sys.resolve("../queue/rotational")}) {
        try {
          return Files.readString(q).strip().equals("1");
        } catch (IOException e) {
          // a partition's queue is its disk's, one level up; no entry: not a block device (tmpfs, overlay)
        }
      }
      return false;
    });
  }

  /**
   * One read request as it left the reader: the file, where in it, how many bytes, and whether the
   * read-ahead thread issued it (reading a stripe ahead while the reader decodes the one before).
   */
  public record Request(java.nio.file.Path file, long offset, long length, boolean ahead) {}

  /** The requests of every thread while a {@link Recording} is open (null: none). */
  private static volatile Recording recording;
  /** Held to start or end a recording. */
  private static final Object RECORDING_LOCK = new Object();

  /**
   * Records every request the process's ORC reading issues until closed (one recording at a
   * time; a benchmark's, which replays them on a {@link DiskModel}).
   */
  public static final class Recording implements AutoCloseable {
    private final List<Request> requests = new ArrayList<>();

    private Recording() {}

    private synchronized void add(Request r) {
      requests.add(r);
    }

    /** The requests so far, in the order they were issued. */
    public synchronized List<Request> requests() {
      return List.copyOf(requests);
    }

    @Override
    public void close() {
      synchronized (RECORDING_LOCK) {
        if (recording == this) {
          recording = null;
        }
      }
    }
  }

  /** Starts recording; refused while another recording is open. */
  public static Recording record() {
    synchronized (RECORDING_LOCK) {
      if (recording != null) {
        throw new IllegalStateException("ORC read requests are already being recorded");
      }
      Recording r = new Recording();
      recording = r;
      return r;
    }
  }

  /** The most bytes one coalesced read takes. */
  static final int MAX_READ = 64 << 20;

  /** Counts one request of {@code bytes} at {@code offset} of {@code file} made outside orc-core (a sidecar, a shape check). */
  static void countRequest(java.nio.file.Path file, long offset, long bytes) {
    count(file, offset, bytes);
  }

  /**
   * Stripe footers known without a request, by file ({@link #key}): registered by the table that
   * opened the file ({@link StripeFooters}), consulted by every stream orc-core opens on it.
   */
  static final ConcurrentHashMap<String, StripeFooters> FOOTERS =
      new ConcurrentHashMap<>();

  /**
   * A file as it is now: its absolute path, inode, size and modification time (metadata only, no
   * read). A file replaced under the same name gets another key, so footers registered for the
   * old one never serve the new one.
   */
  static String key(java.nio.file.Path file) throws IOException {
    java.nio.file.Path p = file.toAbsolutePath().normalize();
    BasicFileAttributes a =
        Files.readAttributes(p, BasicFileAttributes.class);
    return p + "|" + a.fileKey() + "|" + a.size() + "|" + a.lastModifiedTime().to(TimeUnit.NANOSECONDS);
  }

  static void remember(String key, StripeFooters footers) {
    FOOTERS.put(key, footers);
  }

  /**
   * Stream checksums by file ({@link #key}): registered by the table that opened the file, checked
   * by every stream orc-core opens on it against the bytes it reads.
   */
  static final ConcurrentHashMap<String, StreamChecksums.File> SUMS =
      new ConcurrentHashMap<>();

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

  static void count(java.nio.file.Path file, long offset, long bytes) {
    Recording r = recording;
    if (r != null) {
      r.add(new Request(file, offset, bytes, AHEAD_WORK.get() != null));
    }
    REQUESTS.increment();
    BYTES.add(bytes);
    THREAD_BYTES.get()[0] += bytes;
  }

  /** Per thread, the bytes read: reads are issued on the reading thread, so a delta of this is one piece of work's. */
  static final ThreadLocal<long[]> THREAD_BYTES = ThreadLocal.withInitial(() -> new long[1]);

  /**
   * Bytes read from ORC files for the calling thread since it started: its own reads and the
   * stripes it took from the read-ahead (whose requests the read-ahead thread counted).
   */
  public static long bytesOnThisThread() {
    return THREAD_BYTES.get()[0];
  }

  // ------------------------------------------------------------------------------ read-ahead

  /** A read that may fail with an I/O error (the read-ahead thread's work). */
  interface IoWork {
    void run() throws IOException;
  }

  static final int QUEUED = 0;
  static final int RUNNING = 1;
  static final int DONE = 2;
  static final int DROPPED = 3;

  /**
   * One stripe read ahead: the file (its {@link #key}) and the byte region its reads fall in; the
   * runs the read-ahead thread read there, kept until a reader of that stripe takes them.
   */
  static final class Ahead {
    final String file;
    final long from;
    final long to;
    final AtomicInteger state = new AtomicInteger(QUEUED);
    /** Counted down when the read-ahead's reads are done (or it ended without them). */
    final CountDownLatch read = new CountDownLatch(1);
    private final List<long[]> spans = new ArrayList<>();
    private final List<byte[]> data = new ArrayList<>();

    Ahead(String file, long from, long to) {
      this.file = file;
      this.from = from;
      this.to = to;
    }

    boolean covers(String f, long start, long end) {
      return file.equals(f) && start >= from && end <= to;
    }

    synchronized void keep(long start, byte[] bytes) {
      spans.add(new long[] {start, start + bytes.length});
      data.add(bytes);
    }

    /** The bytes {@code [start, start + length)} if one run read ahead holds them all, else null. */
    synchronized ByteBuffer take(long start, int length) {
      for (int i = 0; i < spans.size(); i++) {
        long[] s = spans.get(i);
        if (start >= s[0] && start + length <= s[1]) {
          return ByteBuffer.wrap(data.get(i), Math.toIntExact(start - s[0]), length).slice();
        }
      }
      return null;
    }

    void finish() {
      state.compareAndSet(RUNNING, DONE);
      read.countDown();
    }
  }

  /** Stripes read ahead and not yet taken: at most {@link #AHEAD_MAX}, the oldest dropped first. */
  static final CopyOnWriteArrayList<Ahead> AHEAD = new CopyOnWriteArrayList<>();
  private static final int AHEAD_MAX = 4;
  /**
   * The largest stripe read ahead: a sixteenth of the heap, 32 MiB at most (its runs are held twice
   * while it is read: orc-core's buffers and the copy kept; four may wait), so that read-ahead never
   * makes a small heap run out.
   */
  static final long AHEAD_STRIPE_MAX = Math.min(32L << 20, Runtime.getRuntime().maxMemory() / 16);
  /** On the read-ahead thread, the stripe it is reading. */
  static final ThreadLocal<Ahead> AHEAD_WORK = new ThreadLocal<>();
  /** One daemon thread, started on the first read-ahead and gone after 30 s idle; 4 waiting at most. */
  private static final ThreadPoolExecutor AHEAD_THREAD = new ThreadPoolExecutor(1, 1,
      30, TimeUnit.SECONDS, new ArrayBlockingQueue<>(AHEAD_MAX), r -> {
        Thread t = new Thread(r, "strata-orc-read-ahead");
        t.setDaemon(true);
        return t;
      });

  static {
    AHEAD_THREAD.allowCoreThreadTimeOut(true);
  }

  /**
   * Reads a stripe ahead: {@code work} (which opens a reader of the stripe, so that orc-core
   * issues exactly the reads it will issue again) runs on the read-ahead thread; its reads in
   * {@code [from, to)} of {@code file} are kept for the next reader of that region, which takes
   * them instead of reading (or, if the read-ahead has not started yet, drops it and reads itself).
   * A read-ahead that fails costs nothing but its reads: the reader reads for itself.
   */
  static void readAhead(String file, long from, long to, IoWork work) {
    for (Ahead old : AHEAD) {
      if (old.file.equals(file) && old.from == from) {
        return; // already on its way
      }
    }
    Ahead a = new Ahead(file, from, to);
    AHEAD.add(a);
    for (Ahead old : AHEAD) { // a snapshot, oldest first: other threads may remove meanwhile
      if (AHEAD.size() <= AHEAD_MAX) {
        break;
      }
      drop(old);
    }
    try {
      AHEAD_THREAD.execute(() -> {
        AHEAD_WORK.set(a);
        try {
          if (a.state.get() == QUEUED) {
            work.run();
          }
        } catch (IOException | RuntimeException e) {
          // the reader reads for itself
        } finally {
          AHEAD_WORK.remove();
          if (a.state.get() != DONE) {
            drop(a);
          }
          a.read.countDown();
        }
      });
    } catch (RejectedExecutionException e) {
      drop(a);
    }
  }

  private static void drop(Ahead a) {
    a.state.compareAndSet(QUEUED, DROPPED);
    AHEAD.remove(a);
  }

  /** The stripe read ahead whose region holds {@code [start, end)} of {@code file}, or null. */
  static Ahead aheadFor(String file, long start, long end) {
    for (Ahead a : AHEAD) {
      if (a.covers(file, start, end)) {
        return a;
      }
    }
    return null;
  }

  /**
   * Forgets the stripes of {@code file} (its {@link #key}) read ahead and not taken: its table
   * closed. One being read finishes unseen.
   */
  static void dropAhead(String file) {
    for (Ahead a : AHEAD) {
      if (a.file.equals(file)) {
        drop(a);
      }
    }
  }

  /**
   * Waits up to {@code millis} for the read-ahead thread to finish what it was given (tests: a
   * stripe being read when its table closed "finishes unseen", its reads counted in whatever
   * recording is open by then); whether it did.
   */
  static boolean awaitAheadIdle(long millis) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    while (AHEAD_THREAD.getActiveCount() > 0 || !AHEAD_THREAD.getQueue().isEmpty()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(5);
    }
    return true;
  }

  /** Stripes of the file at {@code path} read ahead and waiting to be taken (tests). */
  static int aheadWaiting(java.nio.file.Path path) {
    String prefix = path.toAbsolutePath().normalize() + "|";
    return (int) AHEAD.stream().filter(a -> a.file.startsWith(prefix)).count();
  }
}
