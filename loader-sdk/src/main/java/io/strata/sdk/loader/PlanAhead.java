package io.strata.sdk.loader;

import io.strata.sdk.format.GatherOrder;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.LongAdder;

/**
 * The order of a batch assembler's next batch of shuffled single rows, worked out on a core of
 * its own while the assembler gathers the current one: the rows (the epoch's permutation applied
 * to the step's positions) and their {@link GatherOrder}, about a seventh of such a batch's cost
 * on one thread. The role a sampler in the main process plays for a PyTorch {@code DataLoader}
 * whose workers only fetch. A loader uses it only where the host has a core its assembly threads
 * leave free (see {@code Loader}), as it moves work, not removes it.
 *
 * <p>The step planned is the one the assembler makes next: where its loader plans ahead, the
 * prefetch threads take their steps in turns ({@code Prefetcher.inTurns}), so each knows its next
 * (until 2026-11-27 threads claimed steps as they came free and the step was guessed as this one
 * plus the prefetch threads, which missed 44 % of the steps with two threads). A batch with no
 * plan, or a plan of another step, is ordered on the assembler's own thread as before (a thread's
 * first batch; a plan that failed), never a wrong batch: both paths run the same code on the same
 * inputs, so the batches are the same whether or not a plan was taken.
 *
 * <p>Threads: one per instance, named {@code strata-plan-N}; its owner (one assembler, one thread
 * at a time) calls {@link #take} and {@link #plan} alternately. Two gather orders take turns: the
 * one handed out by {@link #take} is the owner's until its next {@code take}, the other is
 * written by the planning thread meanwhile; at most one plan is pending, so the planning thread
 * never writes an order its owner holds. {@link Future#get} hands a plan over (happens-before).
 * The planning thread has its own {@link Permutation}s (their scratch arrays are one thread's).
 */
final class PlanAhead implements AutoCloseable {
  /** A planned batch: its step, rows (the batch's unit ids from then on) and gather order. */
  record Planned(long step, long[] rows, GatherOrder order) {}

  /** Plans taken by assemblers, every loader of the process (tests read it). */
  private static final LongAdder TAKEN = new LongAdder();

  private final Plan plan;
  private final long stepsPerEpoch;
  private final long[] chunkFirstRows;
  private final long totalRows;
  private final ExecutorService thread;
  private final GatherOrder[] orders = {new GatherOrder(), new GatherOrder()};
  /** The order the next plan writes: the one {@link #take} did not hand out last. */
  private int nextOrder;
  private Future<Planned> pending;
  // The planning thread's own.
  private EpochOrder permutation;
  private int permutationEpoch = -1;

  PlanAhead(Plan plan, long stepsPerEpoch, long[] chunkFirstRows, long totalRows, String threadName) {
    this.plan = plan;
    this.stepsPerEpoch = stepsPerEpoch;
    this.chunkFirstRows = chunkFirstRows;
    this.totalRows = totalRows;
    this.thread = Executors.newSingleThreadExecutor(t -> Thread.ofPlatform().name(threadName).daemon(true).unstarted(t));
  }

  /**
   * The plan of step {@code g} if the pending one is it (waiting for it to finish), else null:
   * the caller then orders the batch itself. A plan that failed is also null (the caller's own
   * ordering fails the same way, with its message).
   */
  Planned take(long g) {
    Future<Planned> f = pending;
    if (f == null) {
      return null;
    }
    Planned p;
    try {
      p = f.get();
    } catch (ExecutionException e) {
      p = null;
    } catch (InterruptedException e) {
      // Left running into the order the next plan does not write (nextOrder has moved on); the
      // planning thread runs one plan at a time, so it finishes before the next plan starts.
      Thread.currentThread().interrupt();
      p = null;
    }
    pending = null;
    if (p != null && p.step() == g) {
      TAKEN.increment();
      return p;
    }
    return null;
  }

  /** Plans taken so far in this process. */
  static long taken() {
    return TAKEN.sum();
  }

  /** Starts planning step {@code g} on the planning thread. */
  void plan(long g) {
    if (pending != null) {
      throw new IllegalStateException("a plan is pending: take it first");
    }
    GatherOrder order = orders[nextOrder];
    nextOrder ^= 1;
    pending = thread.submit(() -> compute(g, order));
  }

  /** On the planning thread: the rows of step {@code g} and their gather order, as the assembler computes them. */
  private Planned compute(long g, GatherOrder order) {
    int epoch = (int) (g / stepsPerEpoch);
    long step = g % stepsPerEpoch;
    if (epoch != permutationEpoch) {
      permutation = plan.order(epoch);
      permutationEpoch = epoch;
    }
    int units = plan.unitsInStep(step);
    long[] rows = new long[units];
    plan.units(permutation, step, rows, units);
    return new Planned(g, rows, order.compute(rows, units, chunkFirstRows, totalRows));
  }

  /** Stops the planning thread (a plan under way finishes; nobody takes it). */
  @Override
  public void close() {
    thread.shutdownNow();
  }
}
