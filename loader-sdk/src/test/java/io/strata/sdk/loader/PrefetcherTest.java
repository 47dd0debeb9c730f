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
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The prefetcher's claims: every step made once and handed out in order, within the window, and,
 * where it reserves each thread's next step, the step a producer is told comes next is the one it
 * makes next, however its threads take turns.
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

    Recording(AtomicLong consumed, int depth, long failAt) {
      this.consumed = consumed;
      this.depth = depth;
      this.failAt = failAt;
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
      // Threads finishing in no fixed order, so that they take turns irregularly.
      long until = System.nanoTime() + ThreadLocalRandom.current().nextLong(20_000, 400_000);
      while (System.nanoTime() < until) {
        Thread.onSpinWait();
      }
      return null; // the batch itself is not what this test looks at
    }

    @Override
    public void close() {}
  }

  private static List<Recording> run(int threads, int depth, long first, long end, boolean reserve, long failAt,
      List<Long> failedSteps) throws IOException {
    AtomicLong consumed = new AtomicLong(first);
    List<Recording> producers = Collections.synchronizedList(new ArrayList<>());
    try (Prefetcher p = new Prefetcher("strata-prefetch-test", threads, depth, first, end, () -> {
      Recording r = new Recording(consumed, depth, failAt);
      producers.add(r);
      return r;
    }, n -> n, reserve)) {
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
  void aReservedStepIsTheOneItsThreadMakesNextAndEveryStepIsMadeOnce() throws IOException {
    for (int threads : new int[] {1, 2, 3}) {
      for (boolean reserve : new boolean[] {false, true}) {
        List<Long> failed = new ArrayList<>();
        List<Recording> producers = run(threads, 4, 5, 205, reserve, 77, failed);
        assertEquals(List.of(77L), failed);
        Map<Long, Integer> made = new HashMap<>();
        long told = 0;
        for (Recording r : producers) {
          assertNull(r.outOfWindow, r.outOfWindow);
          for (int i = 0; i < r.calls.size(); i++) {
            long[] c = r.calls.get(i);
            made.merge(c[0], 1, Integer::sum);
            if (!reserve) {
              assertEquals(-1, c[1], "nothing reserved without reserveNext");
            } else if (c[1] >= 0) {
              told++;
              assertTrue(c[1] > c[0], "the next step comes after this one");
              if (i + 1 < r.calls.size()) {
                assertEquals(c[1], r.calls.get(i + 1)[0], threads + " threads: the step reserved is the one made next");
              }
            }
          }
        }
        assertEquals(200, made.size(), threads + " threads, reserve " + reserve + ": every step made");
        assertTrue(made.values().stream().allMatch(n -> n == 1), "each step made once");
        assertTrue(made.keySet().stream().allMatch(g -> g >= 5 && g < 205));
        if (reserve) {
          // Every step but each thread's first was reserved ahead by the thread that made it.
          assertTrue(told >= 200 - threads, threads + " threads: " + told + " steps told ahead");
        }
      }
    }
  }

  @Test
  void aThreadThatCannotStartFailsTheStepsItWouldHaveMade() {
    try (Prefetcher p = new Prefetcher("strata-prefetch-test", 1, 2, 0, 10, () -> {
      throw new IllegalStateException("no producer");
    }, n -> n, true)) {
      IllegalStateException e = assertThrows(IllegalStateException.class, p::take);
      assertEquals("no producer", e.getMessage());
    }
  }
}
