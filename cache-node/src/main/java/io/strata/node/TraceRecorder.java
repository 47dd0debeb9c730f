package io.strata.node;

import io.strata.node.sim.Trace;
import io.strata.sdk.tier.Tier;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What the node received from jobs, kept as a replayable trace (the CSV of {@link Trace}): every
 * reported read (one row per feature chunk and report, with the tier that served it), and every
 * plan (as expanded), step report and plan end. A chunk's size in every row is the last the node
 * knew when the trace is taken: its segment's bytes once it was written, the node's estimate
 * before, so a replay budgets in the same bytes as the node.
 *
 * <p>Bounded: at most {@code capacity} rows (a plan counts one row per 64 chunk entries); when
 * full, the oldest rows go and are counted as dropped. Thread-safe through its own monitor:
 * {@link TierState} records under its monitor (the order is always the tier state's, then this
 * one's), the API reads and clears it directly.
 */
final class TraceRecorder {
  private sealed interface Row permits ReadRow, PlanRow, StepRow, EndRow {
    double time();
  }

  private record ReadRow(double time, String job, String dataset, String feature, int chunk, int key, Tier tier) implements Row {}

  private record PlanRow(double time, String job, String dataset, String payload, long firstStep, int weight) implements Row {}

  private record StepRow(double time, String job, String dataset, long step) implements Row {}

  private record EndRow(double time, String job, String dataset) implements Row {}

  private final int capacity;
  private final ArrayDeque<Row> rows = new ArrayDeque<>();
  /** Each key's size (by the tier manager's key id), 0 until it is first read. */
  private long[] sizes = new long[256];
  private long weight;
  private long dropped;
  private double last = 0;

  TraceRecorder(int capacity) {
    this.capacity = capacity;
  }

  private void add(Row r, int w) {
    rows.addLast(r);
    weight += w;
    while (weight > capacity && !rows.isEmpty()) {
      Row old = rows.removeFirst();
      weight -= old instanceof PlanRow p ? p.weight() : 1;
      dropped++;
    }
  }

  /** Times never go back (the trace format requires order). */
  private double time(double t) {
    last = Math.max(last, t);
    return last;
  }

  /** Records a read of key {@code key}, a chunk of {@code bytes} bytes (unless its size is already known). */
  synchronized void read(double t, String job, String dataset, String feature, int chunk, int key, long bytes, Tier tier) {
    if (sizeOf(key) == 0) {
      sizes[key] = Math.max(1, bytes);
    }
    add(new ReadRow(time(t), job, dataset, feature, chunk, key, tier), 1);
  }

  /** Key {@code key}'s size is now known to be {@code bytes}. */
  synchronized void size(int key, long bytes) {
    sizeOf(key);
    sizes[key] = Math.max(1, bytes);
  }

  private long sizeOf(int key) {
    if (key >= sizes.length) {
      sizes = Arrays.copyOf(sizes, Math.max(sizes.length * 2, key + 1));
    }
    return sizes[key];
  }

  synchronized void plan(double t, String job, String dataset, List<String> features, long firstStep, long stepsPerEpoch, boolean substitutable,
      int[][] stepChunks) {
    for (String f : features) {
      if (f.contains("|") || f.contains(";") || f.contains(",") || f.startsWith("@")) {
        return; // not representable in the trace format; the job's reads are still recorded
      }
    }
    long entries = 0;
    for (int[] s : stepChunks) {
      entries += s.length;
    }
    int w = (int) Math.min(capacity, 1 + entries / 64);
    add(new PlanRow(time(t), job, dataset, Trace.planPayload(stepsPerEpoch, substitutable, features, stepChunks), firstStep, w), w);
  }

  synchronized void step(double t, String job, String dataset, long step) {
    add(new StepRow(time(t), job, dataset, step), 1);
  }

  synchronized void end(double t, String job, String dataset) {
    add(new EndRow(time(t), job, dataset), 1);
  }

  synchronized long dropped() {
    return dropped;
  }

  /** Forgets every row; returns how many there were. */
  synchronized int clear() {
    int n = rows.size();
    rows.clear();
    weight = 0;
    dropped = 0;
    return n;
  }

  /** The trace as CSV, header first. */
  synchronized String csv() {
    StringBuilder sb = new StringBuilder(rows.size() * 48 + 64);
    // A trace gives a chunk one size: a dataset registered again under a new version keeps the first.
    Map<String, Long> byName = new HashMap<>();
    sb.append(Trace.HEADER).append('\n');
    for (Row r : rows) {
      sb.append(String.format(Locale.ROOT, "%.3f,", r.time()));
      switch (r) {
        case ReadRow x -> sb.append(x.job()).append(',').append(x.dataset()).append(',').append(x.feature()).append(',')
            .append(x.chunk()).append(',')
            .append(byName.computeIfAbsent(x.dataset() + "\0" + x.feature() + "\0" + x.chunk(), n -> sizes[x.key()]))
            .append(',').append(x.tier().apiName());
        case PlanRow p -> sb.append(p.job()).append(',').append(p.dataset()).append(",@plan,").append(p.firstStep()).append(',')
            .append(p.payload());
        case StepRow s -> sb.append(s.job()).append(',').append(s.dataset()).append(",@step,").append(s.step()).append(",0");
        case EndRow e -> sb.append(e.job()).append(',').append(e.dataset()).append(",@end,0,0");
      }
      sb.append('\n');
    }
    return sb.toString();
  }
}
