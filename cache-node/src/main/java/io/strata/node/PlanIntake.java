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
 * <p>Threads and locks: none of its own. Expanding and building the key sequence may take a while
 * on large datasets and run on the request's thread outside every lock, holding the dataset by a
 * lease (a feature's keys are its base plus the chunk, so the sequence needs no lookup per entry);
 * only the installation takes the tier state's monitor.
 */
final class PlanIntake {
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
    if (epochs < 1 || epochs > 10_000) {
      throw NodeException.badRequest("'epochs' must be in 1..10000, got " + epochs);
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
      // Expanding may take a while on large datasets: outside every lock, so that reads go on.
      int[][] stepChunks;
      long perEpoch;
      try {
        perEpoch = program.stepsPerEpoch(ds);
        stepChunks = program.expand(ds, maxReads / features.size());
      } catch (IllegalArgumentException e) {
        throw NodeException.badRequest("plan of job '" + job + "': " + e.getMessage());
      }
      int total = install(job, ds, features, stepChunks, program.startStep(), Math.max(1, perEpoch), substitutable);
      return new TierViews.PlanAnswer(job, ds.name(), ds.version(), stepChunks.length, perEpoch, program.startStep(), total,
          state.plannedJobs());
    }
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
