package io.strata.sdk.loader;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.files.SampleIndex;
import io.strata.sdk.internal.Json;
import io.strata.sdk.node.NodePlan;
import java.util.Arrays;
import java.util.Objects;

/**
 * A loader's plan as a program: the few parameters from which its order is computed (batching
 * mode and sizes, seed, shuffle, shard, epochs, the permutation algorithm) and the global step
 * it starts from. This is what a job sends a cache node; the node {@link #expand expands} it, with
 * the same code the loader runs, into the chunks each step will read. It stays a few hundred
 * bytes on the wire whatever the dataset's size.
 *
 * @param mode how batches are cut (samples, rows or windows)
 * @param unitsPerBatch samples, row blocks or windows per batch
 * @param blockRows rows per block ({@code rows} mode; 0 otherwise)
 * @param windowLength window rows ({@code windows} mode; 0 otherwise)
 * @param lookahead label rows after a window ({@code windows} mode)
 * @param stride rows between window starts ({@code windows} mode)
 * @param seed shuffle seed
 * @param shuffle whether epochs are permuted
 * @param rank this job's shard
 * @param world number of shards
 * @param dropLast whether a short last batch is dropped
 * @param epochs epochs the job runs
 * @param startStep the global step ({@code epoch * stepsPerEpoch + step}) the job starts from
 * @param shuffleChunks chunks per shuffle block (0: the whole epoch shuffled at once; {@link
 *     LoaderBuilder#shuffleChunks})
 */
public record PlanProgram(BatchMode mode, int unitsPerBatch, int blockRows, int windowLength, int lookahead, int stride,
    long seed, boolean shuffle, int rank, int world, boolean dropLast, int epochs, long startStep, int shuffleChunks)
    implements NodePlan {
  /** The permutation and batching code this program is expanded with; a node refuses others. */
  public static final String ALGORITHM = "strata-feistel4-v3";

  /** A program whose epochs are shuffled whole (no chunk blocks). */
  public PlanProgram(BatchMode mode, int unitsPerBatch, int blockRows, int windowLength, int lookahead, int stride,
      long seed, boolean shuffle, int rank, int world, boolean dropLast, int epochs, long startStep) {
    this(mode, unitsPerBatch, blockRows, windowLength, lookahead, stride, seed, shuffle, rank, world, dropLast, epochs,
        startStep, 0);
  }

  public PlanProgram {
    Objects.requireNonNull(mode, "mode");
    if (epochs < 1) {
      throw new IllegalArgumentException("plan epochs must be at least 1, got " + epochs);
    }
    if (shuffleChunks < 0 || (shuffleChunks > 0 && mode == BatchMode.WINDOWS)) {
      throw new IllegalArgumentException("plan chunks per shuffle block must be 0, or positive for samples and rows; got "
          + shuffleChunks);
    }
    if (startStep < 0) {
      throw new IllegalArgumentException("plan start step must not be negative, got " + startStep);
    }
    if (unitsPerBatch < 1 || unitsPerBatch > MAX_INT_PARAMETER || blockRows < 0 || blockRows > MAX_INT_PARAMETER
        || windowLength < 0 || windowLength > MAX_INT_PARAMETER || lookahead < 0 || lookahead > MAX_INT_PARAMETER
        || stride < 0 || stride > MAX_INT_PARAMETER || rank < 0 || world < 1 || rank >= world) {
      throw new IllegalArgumentException("plan parameters out of range: units per batch, block rows, window length, lookahead "
          + "and stride must be in 0.." + MAX_INT_PARAMETER + " (units per batch at least 1) and rank in [0, world)");
    }
  }

  /** The largest batch size, block, window, lookahead or stride a plan may have. */
  public static final int MAX_INT_PARAMETER = 1 << 28;


  static PlanProgram of(Plan p, int epochs, long startStep) {
    return switch (p) {
      case Plan.Samples s -> new PlanProgram(BatchMode.SAMPLES, p.unitsPerBatch, 0, 0, 0, 0, p.seed, p.shuffle, p.rank, p.world,
          p.dropLast, epochs, startStep, p.blockChunks());
      case Plan.Rows r -> new PlanProgram(BatchMode.ROWS, p.unitsPerBatch, r.blockRows(), 0, 0, 0, p.seed, p.shuffle, p.rank, p.world,
          p.dropLast, epochs, startStep, p.blockChunks());
      case Plan.Windows w -> new PlanProgram(BatchMode.WINDOWS, p.unitsPerBatch, 0, w.length(), w.lookahead(), w.stride(), p.seed,
          p.shuffle, p.rank, p.world, p.dropLast, epochs, startStep);
      default -> throw new IllegalStateException(p.getClass().getName());
    };
  }

  /** The same program for rank {@code r} of its world (a distributed job's shard). */
  public PlanProgram forRank(int r) {
    return new PlanProgram(mode, unitsPerBatch, blockRows, windowLength, lookahead, stride, seed, shuffle, r, world, dropLast,
        epochs, startStep, shuffleChunks);
  }

  /** The same program from another step (a resumed job). */
  @Override
  public PlanProgram from(long step) {
    return new PlanProgram(mode, unitsPerBatch, blockRows, windowLength, lookahead, stride, seed, shuffle, rank, world, dropLast,
        epochs, step, shuffleChunks);
  }

  /** The loader's plan over {@code ds}; checks the parameters as the loader does. */
  Plan plan(Dataset ds) {
    Plan p = basePlan(ds);
    if (shuffleChunks > 0) {
      p.shuffleChunkBlocks(shuffleChunks, ds.table().chunkFirstRows());
    }
    return p;
  }

  private Plan basePlan(Dataset ds) {
    return switch (mode) {
      case SAMPLES -> new Plan.Samples(samples(ds), unitsPerBatch, seed, shuffle, rank, world, dropLast);
      case ROWS -> new Plan.Rows(ds.rows(), blockRows, unitsPerBatch, seed, shuffle, rank, world, dropLast);
      case WINDOWS -> new Plan.Windows(samples(ds), windowLength, lookahead, stride, unitsPerBatch, seed, shuffle, rank, world,
          dropLast);
    };
  }

  private SampleIndex samples(Dataset ds) {
    return ds.sampleIndex().orElseThrow(() -> new IllegalArgumentException(
        "a " + mode.apiName() + " plan needs a sample index, and dataset " + ds.name() + " has none"));
  }

  /** Batches per epoch over {@code ds}. */
  public long stepsPerEpoch(Dataset ds) {
    return plan(ds).stepsPerEpoch();
  }

  /**
   * The chunks of {@code ds} each step reads, from {@link #startStep} to the end of the last
   * epoch: entry {@code i} lists, in the order the batch first touches them, the chunks of global
   * step {@code startStep + i}. A loader with this plan reads, in that batch, every planned feature
   * of exactly these chunks. Refuses (IllegalArgumentException) an expansion of more than {@code
   * maxChunkReads} chunk entries, before expanding anything where the steps alone say so.
   */
  public int[][] expand(Dataset ds, long maxChunkReads) {
    long steps = steps(ds);
    if (steps > maxChunkReads) { // every step reads at least one chunk
      throw new IllegalArgumentException("the plan has " + steps + " steps, so it reads more than " + maxChunkReads
          + " chunks in all; too many to expand");
    }
    int[][] out = expandWindow(ds, maxChunkReads == Long.MAX_VALUE ? maxChunkReads : maxChunkReads + 1);
    if (out.length < steps) {
      throw new IllegalArgumentException("the plan reads more than " + maxChunkReads + " chunks in all; too many to expand");
    }
    return out;
  }

  /** The steps this program runs from its start step to the end of its last epoch. */
  public long steps(Dataset ds) {
    long perEpoch = plan(ds).stepsPerEpoch();
    long total = perEpoch * epochs;
    if (perEpoch > 0 && total / perEpoch != epochs) {
      throw new IllegalArgumentException("the plan has more steps than a long holds");
    }
    return total - Math.min(startStep, total);
  }

  /**
   * The first steps of {@link #expand}, as many as read at most {@code maxChunkReads} chunk entries
   * together (at least one step, at most {@code Integer.MAX_VALUE - 8}): what a node holds of a
   * long plan at once, expanding the rest as the job advances ({@link #from}). Memory is
   * proportional to the steps returned, whatever the plan's length.
   */
  public int[][] expandWindow(Dataset ds, long maxChunkReads) {
    Plan p = plan(ds);
    long perEpoch = p.stepsPerEpoch();
    long first = startStep;
    long total = first + steps(ds);
    int[] mark = new int[ds.chunks().size()];
    int[] buf = new int[16];
    java.util.ArrayList<int[]> out = new java.util.ArrayList<>();
    long entries = 0;
    EpochOrder order = null;
    int orderEpoch = -1;
    for (long g = first; g < total && out.size() < Integer.MAX_VALUE - 8; g++) {
      int epoch = (int) (g / perEpoch);
      long step = g % perEpoch;
      if (epoch != orderEpoch) {
        order = p.order(epoch);
        orderEpoch = epoch;
      }
      int stamp = out.size() + 1;
      int n = 0;
      int units = p.unitsInStep(step);
      // Single rows shuffled by chunk blocks: a step reaches only the chunks of the blocks its
      // positions lie in, and once it has touched them all its other units add none. The same
      // list, found in a few units instead of the batch's thousands (a node expanding four such
      // jobs' plans spent minutes of CPU otherwise, issue 58).
      int reachable = units > 0 && order instanceof ChunkBlockOrder cb && p.singleRowUnits()
          ? cb.reachableChunks(p.position(step, 0), p.position(step, units - 1)) : -1;
      for (int k = 0; k < units && n != reachable; k++) {
        long u = p.unit(order, step, k);
        long start = p.unitStart(u);
        int rows = p.unitRows(u);
        if (rows == 0) {
          continue;
        }
        int c0 = ds.chunkOf(start);
        int c1 = ds.chunkOf(start + rows - 1);
        for (int c = c0; c <= c1; c++) {
          if (mark[c] != stamp) {
            mark[c] = stamp;
            if (n == buf.length) {
              buf = Arrays.copyOf(buf, n * 2);
            }
            buf[n++] = c;
          }
        }
      }
      if (!out.isEmpty() && entries + n > maxChunkReads) {
        break;
      }
      entries += n;
      out.add(Arrays.copyOf(buf, n));
    }
    return out.toArray(int[][]::new);
  }

  /** The wire form (what {@code POST /v1/plans} takes as {@code program}). */
  @Override
  public ObjectNode toJson() {
    ObjectNode o = Json.object().put("algorithm", ALGORITHM).put("mode", mode.apiName()).put("unitsPerBatch", unitsPerBatch);
    if (mode == BatchMode.ROWS) {
      o.put("blockRows", blockRows);
    }
    if (mode == BatchMode.WINDOWS) {
      o.put("windowLength", windowLength).put("lookahead", lookahead).put("stride", stride);
    }
    o.put("seed", Long.toString(seed)).put("shuffle", shuffle).put("rank", rank).put("world", world).put("dropLast", dropLast)
        .put("epochs", epochs).put("startStep", startStep);
    if (shuffleChunks > 0) {
      o.put("shuffleChunks", shuffleChunks);
    }
    return o;
  }

  /** Reads the wire form; a missing or malformed field is an IllegalArgumentException naming it. */
  public static PlanProgram fromJson(JsonNode o) {
    if (o == null || !o.isObject()) {
      throw new IllegalArgumentException("'program' must be an object");
    }
    String algorithm = o.path("algorithm").asText("");
    if (!algorithm.equals(ALGORITHM)) {
      throw new IllegalArgumentException("plan algorithm '" + algorithm + "' is not this node's (" + ALGORITHM
          + "): upgrade the node or the loader so that they match");
    }
    BatchMode mode;
    try {
      mode = BatchMode.parse(o.path("mode").asText(""));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("plan mode " + e.getMessage());
    }
    boolean rows = mode == BatchMode.ROWS;
    boolean windows = mode == BatchMode.WINDOWS;
    long seed;
    try {
      seed = Long.parseLong(o.path("seed").asText(""));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("'program.seed' must be a 64-bit integer (as a string), got " + o.path("seed"));
    }
    return new PlanProgram(mode, intField(o, "unitsPerBatch", 1), rows ? intField(o, "blockRows", 1) : 0,
        windows ? intField(o, "windowLength", 1) : 0, windows ? intField(o, "lookahead", 0) : 0,
        windows ? intField(o, "stride", 1) : 0, seed, bool(o, "shuffle"), intField(o, "rank", 0), intField(o, "world", 1),
        bool(o, "dropLast"), intField(o, "epochs", 1), longField(o, "startStep"),
        o.has("shuffleChunks") ? intField(o, "shuffleChunks", 0) : 0);
  }

  private static int intField(JsonNode o, String name, int min) {
    JsonNode v = o.get(name);
    if (v == null || !v.canConvertToInt() || !v.isIntegralNumber() || v.asInt() < min) {
      throw new IllegalArgumentException("'program." + name + "' must be an integer of at least " + min + ", got " + v);
    }
    return v.asInt();
  }

  private static long longField(JsonNode o, String name) {
    JsonNode v = o.get(name);
    if (v == null || !v.isIntegralNumber() || !v.canConvertToLong() || v.asLong() < 0) {
      throw new IllegalArgumentException("'program." + name + "' must be a non-negative integer, got " + v);
    }
    return v.asLong();
  }

  private static boolean bool(JsonNode o, String name) {
    JsonNode v = o.get(name);
    if (v == null || !v.isBoolean()) {
      throw new IllegalArgumentException("'program." + name + "' must be true or false, got " + v);
    }
    return v.asBoolean();
  }
}
