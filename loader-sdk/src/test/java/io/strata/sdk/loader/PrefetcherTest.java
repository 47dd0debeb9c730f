package io.strata.sdk.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The prefetcher's two ways of sharing steps among its threads: claimed as threads come free, or
 * in turns; either way every step made once and handed out in order, within the window, an error
 * at its own step; in turns, the step a producer is told comes next is the one it makes next, and
 * as many steps are made at once as the window allows.
 */
@Timeout(120) // a step claimed and never made would leave the consumer waiting
class PrefetcherTest {
  /** What one producer was asked for, in order: (g, next) pairs. */
  private static final class Recording implements Prefetcher.Producer {
    final List<long[]> calls = new ArrayList<>();
    final AtomicLong consumed;
    final int depth;
    final long failAt;
    volatile String outOfWindow;
    /** Producers making a step at this moment, and the most there were, shared by a run's producers. */
    final AtomicInteger inFlight;
    final AtomicInteger mostInFlight;

    Recording(AtomicLong consumed, int depth, long failAt, AtomicInteger inFlight, AtomicInteger mostInFlight) {
      this.consumed = consumed;
      this.depth = depth;
      this.failAt = failAt;
      this.inFlight = inFlight;
      this.mostInFlight = mostInFlight;
    }

    @Override
    public Batch produce(long g, long next) throws IOException {
      // The consumer's counter is advanced after take returns, so it may lag by one.
      if (g >= consumed.get() + depth + 1) {
        outOfWindow = "step " + g + " made with " + consumed.get() + " consumed and a depth of " + depth;
      }
      calls.add(new long[] {g, next});
      if (g == failAt) {
        throw new IOException("step " + g + " failed");
      }
      mostInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
      try {
        // Threads finishing in no fixed order, so that they take turns irregularly.
        Thread.sleep(0, ThreadLocalRandom.current().nextInt(100_000, 600_000));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        inFlight.decrementAndGet();
      }
      return null; // the batch itself is not what this test looks at
    }

    @Override
    public void close() {}
  }

  private static List<Recording> run(int threads, int depth, long first, long end, boolean inTurns, long failAt,
      List<Long> failedSteps, AtomicInteger mostInFlight) throws IOException {
    AtomicLong consumed = new AtomicLong(first);
    AtomicInteger inFlight = new AtomicInteger();
    List<Recording> producers = Collections.synchronizedList(new ArrayList<>());
    Supplier<Prefetcher.Producer> make = () -> {
      Recording r = new Recording(consumed, depth, failAt, inFlight, mostInFlight);
      producers.add(r);
      return r;
    };
    try (Prefetcher p = inTurns ? Prefetcher.inTurns("strata-prefetch-test", threads, depth, first, end, make)
        : new Prefetcher("strata-prefetch-test", threads, depth, first, end, make)) {
      for (long g = first; g < end; g++) {
        try {
          assertNull(p.take());
        } catch (IOException e) {
          assertEquals("step " + g + " failed", e.getMessage(), "an error is handed out at its own step");
          failedSteps.add(g);
        }
        consumed.incrementAndGet();
      }
    }
    return producers;
  }

  @Test
  void inTurnsEachThreadIsToldTheStepItMakesNextAndEveryStepIsMadeOnce() throws IOException {
    for (int threads : new int[] {1, 2, 3}) {
      for (boolean inTurns : new boolean[] {false, true}) {
        List<Long> failed = new ArrayList<>();
        List<Recording> producers = run(threads, 4, 5, 205, inTurns, 77, failed, new AtomicInteger());
        assertEquals(List.of(77L), failed);
        Map<Long, Integer> made = new HashMap<>();
        for (Recording r : producers) {
          assertNull(r.outOfWindow, r.outOfWindow);
          for (int i = 0; i < r.calls.size(); i++) {
            long[] c = r.calls.get(i);
            made.merge(c[0], 1, Integer::sum);
            if (!inTurns) {
              assertEquals(-1, c[1], "no next step when threads claim steps as they come free");
            } else if (i + 1 < r.calls.size()) {
              assertEquals(c[0] + threads, c[1], threads + " threads: a thread's steps are its turns");
              assertEquals(c[1], r.calls.get(i + 1)[0], threads + " threads: the step told is the one made next");
            } else {
              assertEquals(-1, c[1], "a thread's last step has no next");
            }
          }
        }
        assertEquals(200, made.size(), threads + " threads, in turns " + inTurns + ": every step made");
        assertTrue(made.values().stream().allMatch(n -> n == 1), "each step made once");
        assertTrue(made.keySet().stream().allMatch(g -> g >= 5 && g < 205));
      }
    }
  }

  @Test
  void asManyStepsAreMadeAtOnceAsTheWindowAllows() throws IOException {
    // A window as deep as the threads: both threads make steps at the same time, whichever way they
    // share them (a thread holding a step another could make meanwhile would leave the other idle).
    for (boolean inTurns : new boolean[] {false, true}) {
      AtomicInteger most = new AtomicInteger();
      List<Recording> producers = run(2, 2, 0, 200, inTurns, -1, new ArrayList<>(), most);
      assertEquals(2, most.get(), "in turns " + inTurns + ": two steps made at once");
      if (inTurns) {
        for (Recording r : producers) {
          assertEquals(100, r.calls.size(), "each thread makes its turns");
        }
      }
    }
  }

  @Test
  void aThreadThatCannotStartFailsTheStepsItWouldHaveMade() throws IOException {
    try (Prefetcher p = new Prefetcher("strata-prefetch-test", 1, 2, 0, 10, () -> {
      throw new IllegalStateException("no producer");
    })) {
      IllegalStateException e = assertThrows(IllegalStateException.class, p::take);
      assertEquals("no producer", e.getMessage());
    }
    // In turns, the steps of the thread that could not start fail, the others' arrive.
    AtomicLong consumed = new AtomicLong();
    AtomicInteger started = new AtomicInteger();
    try (Prefetcher p = Prefetcher.inTurns("strata-prefetch-test", 2, 4, 0, 6, () -> {
      if (started.getAndIncrement() == 1) {
        throw new IllegalStateException("no second producer");
      }
      return new Recording(consumed, 4, -1, new AtomicInteger(), new AtomicInteger());
    })) {
      int failures = 0;
      for (int g = 0; g < 6; g++) {
        try {
          assertNull(p.take());
        } catch (IllegalStateException e) {
          assertEquals("no second producer", e.getMessage());
          failures++;
        }
        consumed.incrementAndGet();
      }
      assertEquals(3, failures, "the three steps of the thread that could not start");
      assertNull(p.take(), "after the last");
    }
  }
}
