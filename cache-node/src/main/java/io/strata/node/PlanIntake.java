package io.strata.node;

import io.strata.node.policy.CachePolicy;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.loader.PlanProgram;
import java.util.List;

/**
 * Jobs' plans as they come in: checked against their dataset, expanded (a loader's program, with
 * the loader's own code) into the chunks of every step, turned into the policy's key sequence, and
 * installed in the {@link TierState}.
 *
 * <p>A program is expanded lazily: the node holds a window of a job's next steps, at most {@link
 * #WINDOW_READS} reads, and expands the next window when the job's reports reach the middle of the
 * one it holds ({@link #advance}). So a plan of any length costs the node the same memory, and a
 * program is bounded (its epochs, its steps) before anything is expanded.
 *
 * <p>Threads and locks: expanding and building the key sequence may take a while on large
 * datasets and run on the request's thread outside every lock, holding the dataset by a lease (a
 * feature's keys are its base plus the chunk, so the sequence needs no lookup per entry); only the
 * installation takes the tier state's monitor. The windows of jobs are in a concurrent map; one
 * report at a time extends a job's window (a flag claimed by compare-and-set).
 */
final class PlanIntake {
  /** Reads of one job's plan the node holds at once (4 MiB of keys); the rest is expanded as the job advances. */
  static final long WINDOW_READS = 1_000_000;
  /** The most epochs a plan may declare (either form). */
  static final int MAX_EPOCHS = 10_000;

  /** A job whose program reaches beyond the window the node holds. */
  private static final class Window {
    final String dataset;
    final List<String> features;
    final PlanProgram program;
    final boolean substitutable;
    /** The global steps the node holds, [from, end). */
    final long from;
    final long end;
    final java.util.concurrent.atomic.AtomicBoolean extending = new java.util.concurrent.atomic.AtomicBoolean();

    Window(String dataset, List<String> features, PlanProgram program, boolean substitutable, long from, long end) {
      this.dataset = dataset;
      this.features = features;
      this.program = program;
      this.substitutable = substitutable;
      this.from = from;
      this.end = end;
    }
  }

  private final java.util.Map<String, Window> windows = new java.util.concurrent.ConcurrentHashMap<>();
  private final DatasetRegistry datasets;
  private final TierState state;
  private final RequestChecks checks;
  private final long maxReads;

  PlanIntake(DatasetRegistry datasets, TierState state, RequestChecks checks, long maxReads) {
    this.datasets = datasets;
    this.state = state;
    this.checks = checks;
    this.maxReads = maxReads;
  }

  /**
   * A job's plan: {@code epochs} epochs over {@code features} of {@code dataset}, visiting chunks
   * in {@code chunkOrder} (null: dataset order) and, within a chunk, every feature.
   */
  TierViews.PlanAnswer plan(String job, String datasetName, List<String> features, int epochs, List<Integer> chunkOrder,
      boolean substitutable) {
    Jobs.checkName(job);
    Dataset ds = datasets.dataset(datasetName);
    if (features.isEmpty()) {
      throw NodeException.badRequest("'features' must name at least one feature");
    }
    if (epochs < 1 || epochs > MAX_EPOCHS) {
      throw NodeException.badRequest("'epochs' must be in 1.." + MAX_EPOCHS + ", got " + epochs);
    }
    List<Integer> order = chunkOrder == null ? RequestChecks.allChunks(ds) : chunkOrder;
    checks.check(ds, features, order);
    long length = (long) epochs * order.size() * features.size();
    if (length > maxReads) {
      throw NodeException.badRequest("the plan has " + length + " reads; at most " + maxReads + " are accepted");
    }
    int[][] stepChunks = new int[epochs * order.size()][];
    for (int k = 0; k < stepChunks.length; k++) {
      stepChunks[k] = new int[] {order.get(k % order.size())};
    }
    windows.remove(job);
    install(job, ds, features, stepChunks, 0, Math.max(1, order.size()), substitutable);
    return new TierViews.PlanAnswer(job, ds.name(), ds.version(), null, null, null, length, state.plannedJobs());
  }

  /**
   * A job's plan as its loader's program: the node expands it with the loader's own code into
   * the chunks of every step from the program's start step on; each step reads every one of
   * {@code features} of its chunks.
   */
  TierViews.PlanAnswer plan(String job, String datasetName, List<String> features, PlanProgram program, boolean substitutable) {
    Jobs.checkName(job);
    try (DatasetRegistry.Lease lease = datasets.lease(datasetName)) {
      Dataset ds = lease.dataset();
      if (features.isEmpty()) {
        throw NodeException.badRequest("'features' must name at least one feature");
      }
      checks.check(ds, features, List.of());
      // Bounded before anything is expanded: the epochs, and the steps (every step reads at least one chunk).
      if (program.epochs() > MAX_EPOCHS) {
        throw NodeException.badRequest("plan of job '" + job + "': 'program.epochs' must be in 1.." + MAX_EPOCHS + ", got "
            + program.epochs());
      }
      long perEpoch;
      long steps;
      try {
        perEpoch = program.stepsPerEpoch(ds);
        steps = program.steps(ds);
      } catch (IllegalArgumentException e) {
        throw NodeException.badRequest("plan of job '" + job + "': " + e.getMessage());
      }
      if (steps > Integer.MAX_VALUE - 8) {
        throw NodeException.badRequest("plan of job '" + job + "': it has " + steps + " steps; at most " + (Integer.MAX_VALUE - 8)
            + " are accepted");
      }
      // Expanding may take a while on large datasets: outside every lock, so that reads go on.
      int total = installWindow(job, ds, features, program, substitutable, perEpoch);
      return new TierViews.PlanAnswer(job, ds.name(), ds.version(), (int) steps, perEpoch, program.startStep(), total,
          state.plannedJobs());
    }
  }

  /** Expands and installs the window of {@code program} from its start step; returns the reads it holds. */
  private int installWindow(String job, Dataset ds, List<String> features, PlanProgram program, boolean substitutable,
      long perEpoch) {
    int[][] stepChunks = program.expandWindow(ds, Math.max(1, WINDOW_READS / features.size()));
    long from = program.startStep();
    long end = from + stepChunks.length;
    if (end < from + program.steps(ds)) {
      windows.put(job, new Window(ds.name(), List.copyOf(features), program, substitutable, from, end));
    } else {
      windows.remove(job);
    }
    return install(job, ds, features, stepChunks, from, Math.max(1, perEpoch), substitutable);
  }

  /**
   * A job reported reaching global step {@code step}: once that is past the middle of the window
   * the node holds of its program, the next window is expanded from there and installed (the
   * policy sees it as the job's plan from that step, as for a resumed job). Nothing for a job
   * whose whole plan the node holds.
   */
  void advance(String job, long step) {
    Window w = windows.get(job);
    if (w == null || step < w.from + (w.end - w.from) / 2 || !w.extending.compareAndSet(false, true)) {
      return;
    }
    try (DatasetRegistry.Lease lease = datasets.lease(w.dataset)) {
      if (windows.get(job) != w) {
        return; // the job declared a new plan meanwhile
      }
      Dataset ds = lease.dataset();
      PlanProgram next = w.program.from(Math.min(step, w.end));
      int[][] stepChunks = next.expandWindow(ds, Math.max(1, WINDOW_READS / w.features.size()));
      long end = next.startStep() + stepChunks.length;
      if (!windows.replace(job, w, new Window(w.dataset, w.features, w.program, w.substitutable, next.startStep(), end))) {
        return;
      }
      if (end >= next.startStep() + next.steps(ds)) {
        windows.remove(job);
      }
      install(job, ds, w.features, stepChunks, next.startStep(), Math.max(1, next.stepsPerEpoch(ds)), w.substitutable);
    } catch (RuntimeException e) {
      // The dataset went or changed: the window is forgotten (the policy keeps the steps it holds);
      // the job's next plan, declared when a report finds it without one, starts a new one.
      windows.remove(job, w);
    } finally {
      w.extending.set(false);
    }
  }

  /** A job ended: its window goes with its plan. */
  void ended(String job) {
    windows.remove(job);
  }

  /**
   * Installs a job's plan given as the chunks of each step (every feature of each chunk is read in
   * the step), from global step {@code firstStep}; returns the reads it holds.
   */
  private int install(String job, Dataset ds, List<String> features, int[][] stepChunks, long firstStep, long perEpoch,
      boolean substitutable) {
    int[] bases = new int[features.size()];
    for (int f = 0; f < bases.length; f++) {
      bases[f] = state.key(ds, features.get(f), 0);
    }
    int total = 0;
    for (int[] c : stepChunks) {
      total += c.length * features.size();
    }
    int[] seq = new int[total];
    int[] ends = new int[stepChunks.length];
    int i = 0;
    for (int s = 0; s < stepChunks.length; s++) {
      for (int c : stepChunks[s]) {
        for (int base : bases) {
          seq[i++] = base + c;
        }
      }
      ends[s] = i;
    }
    state.installPlan(job, ds, features, new CachePolicy.JobPlan(seq, ends, firstStep, perEpoch, substitutable), stepChunks);
    return total;
  }
}
