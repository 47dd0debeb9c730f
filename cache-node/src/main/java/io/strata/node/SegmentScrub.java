package io.strata.node;

import io.strata.sdk.tiering.SegmentStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.Supplier;

/**
 * The node's background check of its SSD tier, as HDFS's block scanner and Ceph's scrub do for
 * theirs. Two duties:
 *
 * <ul>
 *   <li><b>Sweep</b>, every {@link #SWEEP_MILLIS}: every resident segment's file must still be a
 *       regular file of the size it landed with (one {@code stat} each). A file deleted, replaced
 *       or truncated under the node is found within one sweep.
 *   <li><b>Scrub</b>, at {@code bytesPerSecond} on average: resident segments, one after another
 *       in passes over the tier, are mapped afresh and every checksum verified ({@link
 *       SegmentStore#recheck}). A bit flipped in a value, which a reader that mapped the file
 *       earlier would serve, is found within one pass: SSD bytes ÷ rate, and passes start at
 *       most every {@link #MIN_PASS_MILLIS}.
 * </ul>
 *
 * A finding goes to {@code repair} ({@link TierManager#repair(Residency.Resident, String)}): the
 * segment leaves the tier, jobs on the host learn it as any residency change (their next resolve,
 * prompted by the residency beacon), and it is placed again.
 *
 * <p>Threads and locks: one platform thread, {@code strata-scrub}, does everything here; it reads
 * the resident list as a snapshot (TierState's monitor, briefly) and holds no lock while it reads
 * files. {@link #close} stops it and waits for it.
 */
final class SegmentScrub implements AutoCloseable {
  /** How often every resident file is looked at (a stat each). */
  static final long SWEEP_MILLIS = 5_000;
  /** The shortest time between the starts of two scrub passes (a small tier is not re-read over and over). */
  static final long MIN_PASS_MILLIS = Long.getLong("strata.scrub.minPassMillis", 60_000);
  private static final long TICK_MILLIS = 50;

  private final Supplier<List<Residency.Resident>> residents;
  private final BiConsumer<Residency.Resident, String> repair;
  private final long bytesPerSecond;
  private final long sweepMillis;
  private final long minPassMillis;
  private final TierCounters counters;
  private final Thread thread;
  private volatile boolean closed;

  SegmentScrub(Supplier<List<Residency.Resident>> residents, BiConsumer<Residency.Resident, String> repair, long bytesPerSecond,
      long sweepMillis, long minPassMillis, TierCounters counters) {
    this.minPassMillis = minPassMillis;
    this.residents = residents;
    this.repair = repair;
    this.bytesPerSecond = bytesPerSecond;
    this.sweepMillis = sweepMillis;
    this.counters = counters;
    this.thread = Thread.ofPlatform().name("strata-scrub").daemon().unstarted(this::run);
  }

  void start() {
    thread.start();
  }

  private void run() {
    long nextSweep = System.nanoTime() + sweepMillis * 1_000_000;
    Deque<Residency.Resident> pass = new ArrayDeque<>();
    double credit = 0; // bytes the rate allows now (negative: the last file's debt)
    long nextPass = System.nanoTime();
    long last = System.nanoTime();
    while (!closed) {
      try {
        long now = System.nanoTime();
        if (now >= nextSweep) {
          sweep();
          nextSweep = now + sweepMillis * 1_000_000;
        }
        if (bytesPerSecond > 0) {
          credit = Math.min(credit + (now - last) / 1e9 * bytesPerSecond, Math.max(bytesPerSecond, 1));
          last = now;
          if (pass.isEmpty() && now >= nextPass) {
            pass.addAll(residents.get());
            if (!pass.isEmpty()) {
              nextPass = now + minPassMillis * 1_000_000;
              counters.scrubPasses.increment();
            }
          }
          while (credit >= 0 && !pass.isEmpty() && !closed) {
            Residency.Resident r = pass.poll();
            credit -= r.ref().bytes();
            counters.scrubbedBytes.add(r.ref().bytes());
            String damage = SegmentStore.recheck(r.ref().path(), r.key().feature(), r.key().chunk());
            if (damage != null) {
              repair.accept(r, damage);
            }
          }
        }
        Thread.sleep(TICK_MILLIS);
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException e) {
        // A finding the node could not act on now (a dataset closing): the next sweep or pass looks again.
        System.getLogger("io.strata.node").log(System.Logger.Level.WARNING, "segment scrub: " + e);
      }
    }
  }

  /** One look at every resident file: still there, a regular file, its size as it landed. */
  void sweep() {
    for (Residency.Resident r : residents.get()) {
      String problem;
      try {
        BasicFileAttributes a = Files.readAttributes(r.ref().path(), BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        problem = !a.isRegularFile() ? r.ref().path() + " is no longer a regular file"
            : a.size() != r.ref().bytes() ? r.ref().path() + " changed size (" + r.ref().bytes() + " -> " + a.size() + " bytes)"
            : null;
      } catch (NoSuchFileException e) {
        problem = r.ref().path() + " is gone";
      } catch (IOException e) {
        problem = r.ref().path() + " cannot be read: " + e.getMessage();
      }
      if (problem != null) {
        repair.accept(r, problem);
      }
    }
  }

  @Override
  public void close() {
    closed = true;
    thread.interrupt();
    try {
      thread.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
