package io.strata.tools;

import io.strata.sdk.files.FieldCover;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.StringReader;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * A column order in which the features jobs read together sit together, learned from what jobs
 * read (chunk reads per job and feature).
 *
 * <p>A job that projects the features {@code S} of a stripe issues about one read per maximal run
 * of {@code S}'s columns in the stripe's column order (adjacent column streams are contiguous in
 * the file), whatever the number of features or their bytes. The cost of an order is therefore
 * the sum over jobs of the stripes the job reads times the number of runs its features form; the
 * best possible is one run per job. A job's stripe reads are taken as its reads per feature (its
 * total over its feature count): weighting by bytes instead would favour jobs that read many or
 * wide features, which issue no more requests per stripe than the others. The method: features
 * read by exactly the same jobs (the same <em>signature</em>) are interchangeable and kept
 * together as one group, in their present order; features no job read form the last group. The
 * groups are chained greedily (start with the group read most; repeatedly attach, at either end of
 * the chain, the group with the most weight of jobs in common with that end), and the chain is
 * then improved by local search (moving a segment of one to three groups elsewhere, reversed or
 * not, and reversing a segment in place) until no move lowers the cost, then by seeded simulated
 * annealing (20,000 steps per group; segment reversals and single moves; temperature from 1 to
 * 0.01 runs per job) followed by the same local search, kept only if it is better. The cost of a
 * chain is the weight of its groups' jobs less the weight neighbours share (a maximum-weight
 * path through the groups), evaluated in time linear in the groups; the whole search is bounded
 * to 400 M group visits (well under a second), whatever the number of features and jobs. On a co-access
 * graph that admits one run per job this finds it often; in general it is a heuristic (the exact
 * problem, the consecutive-ones arrangement with the fewest breaks, is NP-hard). Deterministic:
 * the same input gives the same order.
 *
 * <p>One order cannot give every job one run when popular features are shared by jobs whose other
 * features differ. With a byte budget, {@link #plan(List, Map, Map, long)} then stores second
 * copies (docs/FORMAT.md §1.5): greedily, the copy of a feature, or of the features only one of a
 * job's runs gives it, placed at the end of another of that job's runs, that saves the most
 * weighted runs per byte, until none saves any or the budget is spent. A job's runs over a layout
 * with copies are those {@link FieldCover} picks, as the reader does. A candidate's saving is kept
 * from step to step until the runs of a job it touches change, and the copy search is bounded to
 * 200 M field visits of its own (some 10 s for 200 features and 256 jobs): relayout is a batch
 * operation, and the node's advice asks for no copies.
 */
public final class CoAccessOrder {
  private CoAccessOrder() {}

  /**
   * A proposed order and its cost before and after: runs per stripe read (a job's runs weighted by
   * its stripe reads), about the requests per stripe a job issues for its data; the lower bound is 1.
   */
  public record Plan(List<String> order, double runsBefore, double runsAfter, int jobs, int groups, List<String> layout,
      long replicaBytes) {
    /** The features stored twice: those named twice in {@link #layout}. */
    public List<String> replicated() {
      Set<String> seen = new HashSet<>();
      List<String> twice = new ArrayList<>();
      for (String f : layout) {
        if (!seen.add(f)) {
          twice.add(f);
        }
      }
      return twice;
    }
  }

  /**
   * The order for {@code columns} (the dataset's columns in their present order) given what each
   * job read: job to feature to chunk reads (features not among {@code columns} are ignored; any
   * measure proportional to the chunk reads of a feature serves). No feature is stored twice.
   */
  public static Plan plan(List<String> columns, Map<String, Map<String, Long>> reads) {
    return plan(columns, reads, Map.of(), 0);
  }

  /**
   * As {@link #plan(List, Map)}, then second copies of features placed where they save the most
   * runs per byte, while their bytes ({@code columnBytes}: each column's bytes in the dataset's
   * files; a column not named is never copied) fit in {@code replicaBudget} bytes. A job then reads
   * whichever copies give it the fewest runs ({@link FieldCover}); {@link Plan#layout} is the
   * stored order, second copies included.
   */
  public static Plan plan(List<String> columns, Map<String, Map<String, Long>> reads, Map<String, Long> columnBytes,
      long replicaBudget) {
    return plan(columns, reads, columnBytes, replicaBudget, true);
  }

  /**
   * As {@link #plan(List, Map, Map, long)}; {@code reuseSavings} false evaluates every copy
   * candidate afresh at every step (the reference the kept savings are tested against).
   */
  static Plan plan(List<String> columns, Map<String, Map<String, Long>> reads, Map<String, Long> columnBytes,
      long replicaBudget, boolean reuseSavings) {
    Map<String, Integer> index = new HashMap<>();
    for (int i = 0; i < columns.size(); i++) {
      index.put(columns.get(i), i);
    }
    // Jobs that read the same features count as one, weighted by their stripe reads together.
    Map<Set<Integer>, Double> bySet = new LinkedHashMap<>();
    for (String job : new TreeSet<>(reads.keySet())) {
      Set<Integer> s = new TreeSet<>();
      double w = 0;
      for (Map.Entry<String, Long> e : reads.get(job).entrySet()) {
        Integer c = index.get(e.getKey());
        if (c != null && e.getValue() > 0) {
          s.add(c);
          w += e.getValue();
        }
      }
      if (!s.isEmpty()) {
        bySet.merge(s, w / s.size(), Double::sum);
      }
    }
    List<Set<Integer>> sets = new ArrayList<>(bySet.keySet());
    int jobs = sets.size();
    double[] weight = new double[jobs];
    for (int j = 0; j < jobs; j++) {
      weight[j] = bySet.get(sets.get(j));
    }
    // Signatures: the jobs that read each column.
    Map<String, List<Integer>> bySignature = new LinkedHashMap<>();
    List<boolean[]> signatures = new ArrayList<>();
    for (int c = 0; c < columns.size(); c++) {
      StringBuilder key = new StringBuilder();
      for (int j = 0; j < jobs; j++) {
        key.append(sets.get(j).contains(c) ? '1' : '0');
      }
      bySignature.computeIfAbsent(key.toString(), k -> new ArrayList<>()).add(c);
    }
    List<List<Integer>> groups = new ArrayList<>();
    List<Integer> unread = null;
    for (Map.Entry<String, List<Integer>> e : bySignature.entrySet()) {
      if (e.getKey().indexOf('1') < 0) {
        unread = e.getValue();
        continue;
      }
      groups.add(e.getValue());
      boolean[] sig = new boolean[jobs];
      for (int j = 0; j < sig.length; j++) {
        sig[j] = e.getKey().charAt(j) == '1';
      }
      signatures.add(sig);
    }
    int g = groups.size();
    double[][] affinity = new double[g][g];
    double[] groupWeight = new double[g];
    for (int a = 0; a < g; a++) {
      for (int j = 0; j < jobs; j++) {
        if (signatures.get(a)[j]) {
          groupWeight[a] += weight[j];
        }
      }
      for (int b = 0; b < g; b++) {
        for (int j = 0; j < jobs; j++) {
          if (a != b && signatures.get(a)[j] && signatures.get(b)[j]) {
            affinity[a][b] += weight[j];
          }
        }
      }
    }
    // Greedy chain.
    List<Integer> chain = new ArrayList<>();
    boolean[] used = new boolean[g];
    if (g > 0) {
      int first = 0;
      for (int a = 1; a < g; a++) {
        if (groupWeight[a] > groupWeight[first]) {
          first = a;
        }
      }
      chain.add(first);
      used[first] = true;
      for (int n = 1; n < g; n++) {
        int best = -1;
        boolean atEnd = true;
        double bestScore = -1;
        for (int a = 0; a < g; a++) {
          if (used[a]) {
            continue;
          }
          double tail = affinity[chain.getLast()][a];
          double head = affinity[chain.getFirst()][a];
          double score = Math.max(tail, head) * 1e6 + groupWeight[a];
          if (score > bestScore) {
            bestScore = score;
            best = a;
            atEnd = tail >= head;
          }
        }
        used[best] = true;
        if (atEnd) {
          chain.add(best);
        } else {
          chain.addFirst(best);
        }
      }
    }
    // The cost of a chain is the total weight of its groups' jobs less the weight shared by each
    // pair of neighbours (a job's run goes on across a neighbour it also reads): O(groups) to
    // evaluate, whatever the number of jobs.
    double base = 0;
    for (double w : groupWeight) {
      base += w;
    }
    Work work = new Work();
    chain = improve(chain, base, affinity, work);
    double jobsWeight = 0;
    for (double w : weight) {
      jobsWeight += w;
    }
    chain = anneal(chain, base, affinity, jobsWeight, work);
    List<String> order = new ArrayList<>();
    for (int a : chain) {
      for (int c : groups.get(a)) {
        order.add(columns.get(c));
      }
    }
    if (unread != null) {
      for (int c : unread) {
        order.add(columns.get(c));
      }
    }
    List<String> layout = order;
    long replicaBytes = 0;
    if (replicaBudget > 0 && !sets.isEmpty()) {
      int[] fields = new int[order.size()];
      for (int i = 0; i < fields.length; i++) {
        fields[i] = index.get(order.get(i));
      }
      long[] bytes = new long[columns.size()];
      for (int c = 0; c < bytes.length; c++) {
        bytes[c] = columnBytes.getOrDefault(columns.get(c), 0L);
      }
      // Its own budget: a copy's evaluation walks the fields of every job it touches.
      CopyPlacement.Replicas r = CopyPlacement.replicate(fields, sets, weight, bytes, replicaBudget, new Work(Work.LIMIT / 2),
          reuseSavings);
      layout = new ArrayList<>();
      for (int f : r.fields()) {
        layout.add(columns.get(f));
      }
      replicaBytes = r.bytes();
    }
    return new Plan(order, runs(columns, columns, reads), runs(layout, columns, reads), reads.size(), g, List.copyOf(layout),
        replicaBytes);
  }

  /**
   * Local search while a move lowers the cost: a segment of one to three groups moved elsewhere
   * (reversed or not), or a segment reversed in place.
   */
  private static List<Integer> improve(List<Integer> chain, double base, double[][] affinity, Work work) {
    double cost = cost(chain, base, affinity);
    for (int pass = 0; pass < 200 && work.left(); pass++) {
      double before = cost;
      for (int len = 1; len <= 3; len++) {
        for (int i = 0; i + len <= chain.size() && work.left(); i++) {
          List<Integer> segment = new ArrayList<>(chain.subList(i, i + len));
          List<Integer> rest = new ArrayList<>(chain);
          rest.subList(i, i + len).clear();
          List<Integer> best = null;
          for (int at = 0; at <= rest.size(); at++) {
            for (int rev = 0; rev < (len > 1 ? 2 : 1); rev++) {
              List<Integer> cand = new ArrayList<>(rest);
              List<Integer> seg = new ArrayList<>(segment);
              if (rev == 1) {
                Collections.reverse(seg);
              }
              cand.addAll(at, seg);
              double c = cost(cand, base, affinity);
              work.spend(cand.size());
              if (c < cost - 1e-9) {
                cost = c;
                best = cand;
              }
            }
          }
          if (best != null) {
            chain = best;
          }
        }
      }
      for (int i = 0; i < chain.size() && work.left(); i++) {
        for (int j = i + 2; j <= chain.size(); j++) {
          List<Integer> cand = new ArrayList<>(chain);
          Collections.reverse(cand.subList(i, j));
          double c = cost(cand, base, affinity);
          work.spend(cand.size());
          if (c < cost - 1e-9) {
            cost = c;
            chain = cand;
          }
        }
      }
      if (cost >= before - 1e-9) {
        break;
      }
    }
    return chain;
  }

  /** Annealing steps per group of the chain (bounded: the node recomputes its advice every 30 s). */
  private static final int ANNEAL_STEPS_PER_GROUP = 20_000;

  /**
   * Simulated annealing from {@code chain} (moves: reverse a segment, move one group), then local
   * search on the best order it visited; the result is never worse than {@code chain}. Local
   * search alone stops in the first local minimum, which on tangled co-access graphs is often a
   * run or more per job above what an order allows. Seeded: deterministic.
   */
  private static List<Integer> anneal(List<Integer> chain, double base, double[][] affinity, double jobsWeight, Work work) {
    int g = chain.size();
    if (g < 4) {
      return chain;
    }
    // Costs in runs per job, so that the temperature means the same whatever the weights.
    double total = jobsWeight;
    if (total <= 0) {
      return chain;
    }
    Random rnd = new Random(g * 31L + 7);
    List<Integer> cur = new ArrayList<>(chain);
    double cc = cost(cur, base, affinity) / total;
    List<Integer> best = new ArrayList<>(cur);
    double bc = cc;
    int steps = (int) Math.min((long) ANNEAL_STEPS_PER_GROUP * g, Work.LIMIT / 4 / g);
    double t0 = 1.0;
    double t1 = 0.01;
    for (int step = 0; step < steps; step++) {
      double t = t0 * Math.pow(t1 / t0, (double) step / steps);
      int i = rnd.nextInt(g);
      int j = rnd.nextInt(g);
      if (i == j) {
        continue;
      }
      List<Integer> cand = new ArrayList<>(cur);
      if (rnd.nextBoolean()) {
        Collections.reverse(cand.subList(Math.min(i, j), Math.max(i, j) + 1));
      } else {
        cand.add(j, cand.remove(i));
      }
      double c = cost(cand, base, affinity) / total;
      work.spend(g);
      if (c <= cc || rnd.nextDouble() < Math.exp((cc - c) / t)) {
        cur = cand;
        cc = c;
        if (cc < bc - 1e-12) {
          bc = cc;
          best = new ArrayList<>(cur);
        }
      }
    }
    best = improve(best, base, affinity, work);
    return cost(best, base, affinity) < cost(chain, base, affinity) - 1e-9 ? best : chain;
  }

  /**
   * The search's budget, in group visits of chain evaluations (about a nanosecond each): with
   * thousands of features an exhaustive local search would take minutes, and the node recomputes
   * its layout advice while serving. Deterministic: counted, not timed.
   */
  static final class Work {
    static final long LIMIT = 400_000_000L;
    private final long limit;
    private long spent;

    Work() {
      this(LIMIT);
    }

    Work(long limit) {
      this.limit = limit;
    }

    void spend(long visits) {
      spent += visits;
    }

    boolean left() {
      return spent < limit;
    }
  }

  /**
   * Runs per job of {@code chain} (groups in order), weighted by the jobs' stripe reads: the
   * weight of every group's jobs ({@code base}) less what neighbours share.
   */
  private static double cost(List<Integer> chain, double base, double[][] affinity) {
    double shared = 0;
    for (int k = 1; k < chain.size(); k++) {
      shared += affinity[chain.get(k - 1)][chain.get(k)];
    }
    return base - shared;
  }

  /**
   * The mean number of runs the jobs' features form in {@code order}, weighted by the jobs' stripe
   * reads (reads per feature, as {@link #plan}): about the data read requests per stripe a job
   * issues (1 is the least possible); 0 without reads. A feature named twice in {@code order} is
   * read from the copies that give the job the fewest runs ({@link FieldCover}).
   */
  public static double runs(List<String> order, List<String> columns, Map<String, Map<String, Long>> reads) {
    Map<String, Integer> known = new HashMap<>();
    for (String c : columns) {
      known.putIfAbsent(c, known.size());
    }
    int[] fields = new int[order.size()];
    for (int i = 0; i < fields.length; i++) {
      fields[i] = known.getOrDefault(order.get(i), -1);
    }
    double total = 0;
    double weights = 0;
    for (Map<String, Long> r : reads.values()) {
      double w = 0;
      int features = 0;
      boolean[] wanted = new boolean[known.size()];
      for (Map.Entry<String, Long> e : r.entrySet()) {
        Integer c = known.get(e.getKey());
        if (c != null && e.getValue() > 0) {
          w += e.getValue();
          features++;
          wanted[c] = true;
        }
      }
      if (w == 0) {
        continue;
      }
      w /= features;
      total += w * FieldCover.count(fields, wanted);
      weights += w;
    }
    return weights == 0 ? 0 : total / weights;
  }

  /**
   * Chunk reads per job and feature of {@code dataset} in a trace in the CSV of docs/FORMAT.md §5
   * (read records, one per job, feature and chunk read; plan, step and end records are skipped, and
   * so are reads of no bytes); {@code what} names the source in errors.
   */
  public static Map<String, Map<String, Long>> readsFromTrace(String csv, String dataset, String what) throws IOException {
    Map<String, Map<String, Long>> out = new TreeMap<>();
    try (BufferedReader in = new BufferedReader(new StringReader(csv))) {
      String header = in.readLine();
      if (header == null || !header.strip().replace(" ", "").toLowerCase(Locale.ROOT)
          .startsWith("time,job,dataset,feature,chunk,bytes")) {
        throw new IOException(what + ": not a trace (expected the header 'time,job,dataset,feature,chunk,bytes')");
      }
      String line;
      int n = 1;
      while ((line = in.readLine()) != null) {
        n++;
        if (line.isBlank()) {
          continue;
        }
        String[] p = line.split(",", -1);
        if (p.length < 6) {
          throw new IOException(what + " line " + n + ": expected at least 6 fields, got " + p.length);
        }
        if (p[3].startsWith("@") || !p[2].equals(dataset)) {
          continue;
        }
        long bytes;
        try {
          bytes = Long.parseLong(p[5].strip());
        } catch (NumberFormatException e) {
          throw new IOException(what + " line " + n + ": bytes '" + p[5] + "' is not a number");
        }
        if (bytes > 0) {
          out.computeIfAbsent(p[1], j -> new TreeMap<>()).merge(p[3], 1L, Long::sum);
        }
      }
    }
    return out;
  }
}
