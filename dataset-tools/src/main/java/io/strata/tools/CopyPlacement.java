package io.strata.tools;

import io.strata.sdk.files.FieldCover;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Where a relayout stores second copies of features ({@link CoAccessOrder#plan(List, Map, Map,
 * long)} with a byte budget; docs/FORMAT.md §1.5): the greedy search that, step by step, inserts
 * the copy that saves the jobs the most weighted runs per byte. A job's runs over a layout with
 * copies are those {@link FieldCover} picks, as the reader does. Not thread-safe: one search per
 * call, on the caller's thread.
 */
final class CopyPlacement {
  private CopyPlacement() {}

  /** A layout's fields (column indices, copies included) and the bytes its copies take. */
  record Replicas(int[] fields, long bytes) {}

  /** The most copies of one feature a layout stores. */
  static final int MAX_COPIES = 2;

  /**
   * Greedy placement of second copies: each step inserts the copy that lowers the jobs' weighted
   * runs the most per byte, until none lowers them or the budget is spent. Candidates: one feature
   * (read by some job, not yet stored twice, whose bytes fit in what is left) next to a field
   * holding a feature read with it; and, for each job, a copy of one of its runs (every feature in
   * it stored once so far) at either end of another of its runs, which merges the two for that
   * job (a run of several features needs all of them copied at once to go away). Only the jobs that
   * read a copied feature or whose run the insertion cuts are re-evaluated.
   *
   * <p>A candidate's saving depends only on the runs of the jobs it touches, so it is kept from
   * step to step, keyed by its block and the fields it goes between (by identity, not position),
   * and computed again for a job only when a copy changed that job's runs (it reads a copied
   * feature, or the copy cut one of its runs): the same choices as evaluating every candidate at
   * every step, at the cost of the candidates near the last copy and of the jobs it changed.
   */
  static Replicas replicate(int[] fields, List<Set<Integer>> sets, double[] weight, long[] bytes, long budget,
      CoAccessOrder.Work work, boolean reuse) {
    int features = bytes.length;
    int jobs = sets.size();
    // Per job, what it reads and its features numbered from 1 (FieldCover's bit per feature); per
    // feature, the jobs that read it as a bit set.
    boolean[][] wanted = new boolean[jobs][features];
    int[][] local = new int[jobs][features];
    long[][] readers = new long[features][(jobs + 63) >>> 6];
    for (int j = 0; j < jobs; j++) {
      int n = 0;
      for (int c : sets.get(j)) {
        wanted[j][c] = true;
        local[j][c] = ++n;
        readers[c][j >>> 6] |= 1L << (j & 63);
      }
    }
    // Features read together with each feature by some job.
    boolean[][] together = new boolean[features][features];
    for (Set<Integer> s : sets) {
      for (int a : s) {
        for (int b : s) {
          together[a][b] = true;
        }
      }
    }
    double[] runs = new double[jobs];
    for (int j = 0; j < jobs; j++) {
      runs[j] = FieldCover.count(fields, wanted[j]);
    }
    int[] copies = new int[features];
    for (int f : fields) {
      copies[f]++;
    }
    long left = budget;
    long used = 0;
    // A field's identity across steps (its position moves as copies go in before it).
    int[] ids = new int[fields.length];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = i;
    }
    int nextId = ids.length;
    // A job's version changes with its runs; a saving computed for it at an older version is stale.
    int[] version = new int[jobs];
    Map<String, Saving> known = new HashMap<>();
    while (work.left()) {
      // Each job's fields, by position: its runs in a candidate layout come from these and the block.
      int[][] positions = new int[jobs][];
      for (int j = 0; j < jobs; j++) {
        int n = 0;
        int[] p = new int[fields.length];
        for (int i = 0; i < fields.length; i++) {
          if (wanted[j][fields[i]]) {
            p[n++] = i;
          }
        }
        positions[j] = Arrays.copyOf(p, n);
      }
      work.spend((long) jobs * fields.length);
      List<int[]> blocks = new ArrayList<>();
      List<Integer> places = new ArrayList<>();
      for (int f = 0; f < features; f++) {
        if (copies[f] >= MAX_COPIES || bytes[f] <= 0 || bytes[f] > left) {
          continue;
        }
        for (int at = 0; at <= fields.length; at++) {
          boolean nearLeft = at > 0 && together[f][fields[at - 1]] && fields[at - 1] != f;
          boolean nearRight = at < fields.length && together[f][fields[at]] && fields[at] != f;
          if (nearLeft || nearRight) {
            blocks.add(new int[] {f});
            places.add(at);
          }
        }
      }
      for (int j = 0; j < jobs; j++) {
        List<int[]> jr = new ArrayList<>();
        int start = -1;
        for (int i = 0; i <= fields.length; i++) {
          boolean in = i < fields.length && wanted[j][fields[i]];
          if (in && start < 0) {
            start = i;
          } else if (!in && start >= 0) {
            jr.add(new int[] {start, i});
            start = -1;
          }
        }
        for (int[] r : jr) {
          // The features only this run gives the job: copied next to another run, this one is not needed.
          List<Integer> own = new ArrayList<>();
          for (int i = r[0]; i < r[1]; i++) {
            int f = fields[i];
            boolean elsewhere = false;
            for (int[] o : jr) {
              for (int x = o[0]; x < o[1] && o != r && !elsewhere; x++) {
                elsewhere = fields[x] == f;
              }
            }
            if (!elsewhere && !own.contains(f)) {
              own.add(f);
            }
          }
          if (own.size() < 2) {
            continue; // none, or one feature: a candidate above
          }
          int[] block = own.stream().mapToInt(Integer::intValue).toArray();
          long b = 0;
          boolean once = true;
          for (int f : block) {
            b += bytes[f];
            once &= copies[f] < MAX_COPIES && bytes[f] > 0;
          }
          if (!once || b > left) {
            continue;
          }
          for (int[] other : jr) {
            if (other != r) {
              // Anywhere in or at the ends of the other run: inside it the job's run stays whole,
              // and other jobs are cut where fewest read across.
              for (int at = other[0]; at <= other[1]; at++) {
                blocks.add(block);
                places.add(at);
              }
            }
          }
        }
      }
      double bestScore = 0;
      int best = -1;
      Map<String, Saving> seen = new HashMap<>();
      for (int k = 0; k < blocks.size() && work.left(); k++) {
        int[] block = blocks.get(k);
        int at = places.get(k);
        String key = key(block, ids, at);
        Saving saving = reuse ? known.get(key) : null;
        if (saving == null) {
          saving = Saving.of(fields, block, at, readers);
          work.spend((long) readers[0].length * (block.length + 2) + saving.jobs.length);
        }
        seen.put(key, saving);
        double delta = 0;
        for (int t = 0; t < saving.jobs.length; t++) {
          int j = saving.jobs[t];
          if (saving.versions[t] != version[j]) {
            boolean readsBlock = false;
            for (int f : block) {
              readsBlock |= local[j][f] > 0;
            }
            if (!readsBlock && positions[j].length == sets.get(j).size()) {
              // Cut, every feature of the job stored once: one run more.
              saving.deltas[t] = weight[j];
              work.spend(1);
            } else {
              saving.deltas[t] = weight[j] * (runsWith(positions[j], fields, local[j], sets.get(j).size(), block, at)
                  - runs[j]);
              work.spend(positions[j].length + block.length);
            }
            saving.versions[t] = version[j];
          }
          delta += saving.deltas[t];
        }
        long b = 0;
        for (int f : block) {
          b += bytes[f];
        }
        double score = -delta / b;
        if (delta < -1e-9 && score > bestScore) {
          bestScore = score;
          best = k;
        }
      }
      known = seen;
      if (best < 0) {
        break;
      }
      // The jobs whose runs the copy changes (in number or in the choice of copies): those that
      // read one of its features, and those whose run it cuts. Every other job's fields keep
      // their runs, and the savings computed over them stand.
      int at = places.get(best);
      int[] block = blocks.get(best);
      boolean[] changed = new boolean[jobs];
      for (int j = 0; j < jobs; j++) {
        changed[j] = at > 0 && at < fields.length && wanted[j][fields[at - 1]] && wanted[j][fields[at]];
        for (int f : block) {
          changed[j] |= wanted[j][f];
        }
      }
      fields = insert(fields, at, block);
      int[] blockIds = new int[block.length];
      for (int i = 0; i < block.length; i++) {
        blockIds[i] = nextId++;
      }
      ids = insert(ids, at, blockIds);
      for (int f : block) {
        copies[f]++;
        left -= bytes[f];
        used += bytes[f];
      }
      for (int j = 0; j < jobs; j++) {
        if (changed[j]) {
          runs[j] = FieldCover.count(fields, wanted[j]);
          version[j]++;
        }
      }
    }
    return new Replicas(fields, used);
  }

  /**
   * What inserting a candidate saves, job by job: the jobs it touches (those whose run it cuts, and
   * those reading one of its features next to one of their runs; a copy standing alone could still
   * replace runs of a job, but the runs are recounted in full after each step, so skipping that
   * case costs choice, not truth), each job's change in weighted runs and the job's version it was
   * computed at (-1: not yet).
   */
  private static final class Saving {
    final int[] jobs;
    final int[] versions;
    final double[] deltas;

    private Saving(int[] jobs) {
      this.jobs = jobs;
      this.versions = new int[jobs.length];
      this.deltas = new double[jobs.length];
      Arrays.fill(versions, -1);
    }

    /** {@code readers[f]}: the jobs reading feature {@code f}, as a bit set. */
    static Saving of(int[] fields, int[] block, int at, long[][] readers) {
      int words = readers.length == 0 ? 0 : readers[0].length;
      int[] touched = new int[words * 64];
      int n = 0;
      for (int w = 0; w < words; w++) {
        long left = at > 0 ? readers[fields[at - 1]][w] : 0;
        long right = at < fields.length ? readers[fields[at]][w] : 0;
        long reads = 0;
        for (int f : block) {
          reads |= readers[f][w];
        }
        for (long t = (left & right) | (reads & (left | right)); t != 0; t &= t - 1) {
          touched[n++] = (w << 6) + Long.numberOfTrailingZeros(t);
        }
      }
      return new Saving(Arrays.copyOf(touched, n));
    }
  }

  /**
   * The runs {@link FieldCover} reads for a job whose fields are at {@code positions} once {@code
   * block} is inserted at {@code at}: walks the job's fields and the block, not the whole layout.
   * {@code local[f]} numbers the job's features from 1 (0 for a feature it does not read), {@code k}
   * of them.
   */
  private static int runsWith(int[] positions, int[] fields, int[] local, int k, int[] block, int at) {
    int n = positions.length + block.length;
    int[] pos = new int[n];
    int[] feature = new int[n];
    int m = 0;
    int i = 0;
    for (; i < positions.length && positions[i] < at; i++, m++) {
      pos[m] = positions[i];
      feature[m] = fields[positions[i]];
    }
    for (int b = 0; b < block.length; b++) {
      if (local[block[b]] > 0) {
        pos[m] = at + b;
        feature[m++] = block[b];
      }
    }
    for (; i < positions.length; i++, m++) {
      pos[m] = positions[i] + block.length;
      feature[m] = fields[positions[i]];
    }
    int words = (k + 63) >>> 6;
    long[] holds = new long[m * words];
    int[] lengths = new int[m];
    int runs = 0;
    for (int x = 0; x < m; x++) {
      if (x > 0 && pos[x] != pos[x - 1] + 1) {
        runs++;
      }
      int f = local[feature[x]] - 1;
      holds[runs * words + (f >>> 6)] |= 1L << (f & 63);
      lengths[runs]++;
    }
    return m == 0 ? 0 : FieldCover.count(holds, words, lengths, runs + 1, k);
  }

  /** A candidate by its block and the identities of the fields it goes between. */
  private static String key(int[] block, int[] ids, int at) {
    StringBuilder b = new StringBuilder();
    for (int f : block) {
      b.append(f).append(',');
    }
    b.append('|').append(at > 0 ? ids[at - 1] : -1).append('|').append(at < ids.length ? ids[at] : -1);
    return b.toString();
  }

  private static int[] insert(int[] fields, int at, int[] block) {
    int[] out = new int[fields.length + block.length];
    System.arraycopy(fields, 0, out, 0, at);
    System.arraycopy(block, 0, out, at, block.length);
    System.arraycopy(fields, at, out, at + block.length, fields.length - at);
    return out;
  }
}
