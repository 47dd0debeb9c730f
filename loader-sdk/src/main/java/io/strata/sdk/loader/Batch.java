package io.strata.sdk.loader;

import io.strata.sdk.Column;
import io.strata.sdk.format.ArrowCExport;
import io.strata.sdk.format.Columns;
import io.strata.sdk.format.DeviceCopies;
import io.strata.sdk.format.SegmentInfo;
import io.strata.sdk.format.SegmentWriter;
import java.io.IOException;
import java.lang.ref.Cleaner;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One batch: column-major, one off-heap {@link Column} per feature in the Arrow layout (values,
 * offsets for variable-length features, validity where there are nulls), never an object per row.
 *
 * <p>The rows are the concatenation of the batch's units: samples (all rows of each), row blocks,
 * or windows ({@link #windowLength()} input rows followed by {@link #lookahead()} label rows).
 * {@link #unitStart(int)} gives where unit {@code k} starts. The memory belongs to the batch:
 * close it when done; a column used after that raises {@link IllegalStateException} (a buffer
 * taken from a column before stays readable, with this batch's data, until the loader frees the
 * memory a few batches later; it never shows another batch's data).
 * {@link #writeArrowFile} writes the batch as an Arrow IPC file that any Arrow reader opens.
 */
public final class Batch implements AutoCloseable {
  /** Where a batch came from. */
  public enum Source {
    /** Assembled from the tiers (segments or ORC). */
    ASSEMBLED,
    /** Mapped from the persistent batch cache. */
    CACHE
  }

  private final int epoch;
  private final long step;
  private final int planHash;
  private final long stepsPerEpoch;
  private final int rows;
  private final SequencedMap<String, Column> columns;
  /** Shared by batches of one size where the units are single rows: never written. */
  private final int[] unitOffsets;
  private final long[] unitIds;
  private final int windowLength;
  private final int lookahead;
  private final Source source;
  private final AutoCloseable owner;
  private volatile boolean closed;
  /** The copies left to the consumer's device ({@link BatchMemory#deviceReads()}), or null. */
  private DeviceCopies deviceCopies;
  private final Unclosed unclosed = new Unclosed();

  private static final Cleaner CLEANER = Cleaner.create(r -> {
    Thread t = new Thread(r, "strata-batch-cleaner");
    t.setDaemon(true);
    return t;
  });
  private static final AtomicLong UNCLOSED = new AtomicLong();
  /** The SDK logs through System.Logger (java.util.logging unless the application installs another backend). */
  private static final System.Logger LOG = System.getLogger("io.strata.sdk.loader");

  /**
   * Says, once per process, that a batch became garbage without {@link #close()}: its memory is
   * not given back until the loader closes, so a job that forgets {@code try (batch)} holds twice
   * the memory it needs. The memory is not reclaimed here: columns taken from the batch may still
   * be in use.
   */
  private static final class Unclosed implements Runnable {
    volatile boolean closed;
    volatile String what;

    @Override
    public void run() {
      if (!closed && UNCLOSED.getAndIncrement() == 0) {
        LOG.log(System.Logger.Level.WARNING, "strata: " + what + " was never closed; its memory stays taken until the"
            + " loader closes: use try (Batch b = ...) or close each batch");
      }
    }
  }

  /** Batches that became garbage without being closed, in this process. */
  static long unclosedBatches() {
    return UNCLOSED.get();
  }

  Batch(int epoch, long step, int planHash, long stepsPerEpoch, int rows, SequencedMap<String, Column> columns,
      int[] unitOffsets, long[] unitIds, int windowLength, int lookahead, Source source, AutoCloseable owner) {
    this.epoch = epoch;
    this.step = step;
    this.planHash = planHash;
    this.stepsPerEpoch = stepsPerEpoch;
    this.rows = rows;
    // Each column guarded by the batch: its accessors raise once the batch is closed, although its
    // memory may be freed only a few batches later (a scope shared by several batches, SlabPool).
    SequencedMap<String, Column> guarded = new LinkedHashMap<>();
    columns.forEach((name, c) -> guarded.put(name, c.guardedBy(this::checkOpen)));
    this.columns = Collections.unmodifiableSequencedMap(guarded);
    this.unitOffsets = unitOffsets;
    this.unitIds = unitIds;
    this.windowLength = windowLength;
    this.lookahead = lookahead;
    this.source = source;
    this.owner = owner;
    unclosed.what = "batch " + epoch + "/" + step;
    CLEANER.register(this, unclosed);
  }

  public int epoch() {
    return epoch;
  }

  public long step() {
    return step;
  }

  /** Rows in the batch (all units together). */
  public int rows() {
    return rows;
  }

  public List<String> featureNames() {
    return List.copyOf(columns.keySet());
  }

  public SequencedMap<String, Column> columns() {
    checkOpen();
    return columns;
  }

  public Column column(String feature) {
    checkOpen();
    Column c = columns.get(feature);
    if (c == null) {
      throw new IllegalArgumentException("batch has no feature '" + feature + "' (it has " + columns.keySet() + ")");
    }
    return c;
  }

  /** Number of units (samples, row blocks, windows). */
  public int units() {
    return unitIds.length;
  }

  /** Row of the batch where unit {@code k} starts; {@code unitStart(units())} is {@link #rows()}. */
  public int unitStart(int k) {
    return unitOffsets[k];
  }

  /** Sample id, first dataset row, or window number of unit {@code k}. */
  public long unitId(int k) {
    return unitIds[k];
  }

  /** Input rows per window (0 unless the loader reads windows). */
  public int windowLength() {
    return windowLength;
  }

  /** Label rows after each window (0 unless the loader reads windows). */
  public int lookahead() {
    return lookahead;
  }

  public Source source() {
    return source;
  }

  /** The checkpoint that resumes right after this batch. */
  public Checkpoint checkpoint() {
    if (after != null) {
      return after;
    }
    return step + 1 < stepsPerEpoch ? new Checkpoint(epoch, step + 1, planHash) : new Checkpoint(epoch + 1, 0, planHash);
  }

  /** With substitutable reads, the loader's position after it delivered this batch (set as it delivers it). */
  private Checkpoint after;

  void checkpointAfter(Checkpoint c) {
    this.after = c;
  }

  /** Bytes of column data (values, offsets, validity). */
  public long dataBytes() {
    long b = 0;
    for (Column c : columns().values()) {
      b += Columns.dataBytes(c);
    }
    return b;
  }

  int planHash() {
    return planHash;
  }

  int[] unitOffsets() {
    return unitOffsets;
  }

  long[] unitIds() {
    return unitIds;
  }

  /** Writes the batch as an Arrow IPC file (Strata segment format, batch metadata included). */
  public long writeArrowFile(Path file, String dataset, String datasetVersion) throws IOException {
    completeOnHost(); // the file holds what the host holds
    return SegmentWriter.write(
        file,
        new SegmentInfo(dataset, datasetVersion, 0, 0, rows, List.copyOf(columns().keySet())),
        columns,
        BatchCodec.metadata(this));
  }

  /**
   * This batch through the Arrow C Device Data Interface, on the CPU device: an {@code
   * ArrowDeviceArray} holding a struct array (one child per feature) and its {@code ArrowSchema},
   * over the batch's own buffers (no copy), for a consumer in this process (pyarrow's {@code
   * RecordBatch._import_from_c_device}, a framework). The consumer calls both release callbacks
   * when done, and must be done before the batch is closed: the buffers are the batch's.
   */
  public ArrowCDevice exportArrowDevice() {
    completeOnHost(); // a host consumer reads every buffer
    List<ArrowCExport.Field> fields = new ArrayList<>();
    columns().forEach((name, c) -> fields.add(ArrowCExport.hostField(name, c)));
    var e = ArrowCExport.export(rows, fields, ArrowCExport.DEVICE_CPU, -1, 0);
    return new ArrowCDevice(e.deviceArray(), e.schema());
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("batch " + epoch + "/" + step + " is already closed");
    }
  }

  public boolean isClosed() {
    return closed;
  }

  void deviceCopies(DeviceCopies copies) {
    this.deviceCopies = copies;
  }

  /**
   * The copies of this batch left to the consumer's device, or null when the host assembled all
   * of it. When not null, the buffers {@link DeviceCopies#covers covered} hold nothing on the host
   * until the device's gather (or {@link #completeOnHost()}) fills them.
   */
  @SuppressWarnings("exports")
  public DeviceCopies deviceCopies() {
    checkOpen();
    return deviceCopies;
  }

  /** Makes on the host the copies left to the device, if any: the batch is then whole in host memory. */
  public void completeOnHost() {
    checkOpen();
    if (deviceCopies != null) {
      deviceCopies.completeOnHost();
      deviceCopies.close();
      deviceCopies = null;
    }
  }

  /** Releases the batch's memory (or mapping), and the segments held for the device's copies. Idempotent. */
  @Override
  public void close() {
    if (!closed) {
      closed = true;
      unclosed.closed = true;
      if (deviceCopies != null) {
        deviceCopies.close();
      }
      try {
        owner.close();
      } catch (Exception e) {
        throw new IllegalStateException("closing batch " + epoch + "/" + step + ": " + e.getMessage(), e);
      }
    }
  }

  @Override
  public String toString() {
    return "Batch[epoch " + epoch + ", step " + step + ", " + rows + " rows, " + unitIds.length + " units, " + source
        + ", units " + Arrays.toString(Arrays.copyOf(unitIds, Math.min(4, unitIds.length))) + "...]";
  }

  static Map<String, String> metadataOf(Batch b) {
    return BatchCodec.metadata(b);
  }
}
