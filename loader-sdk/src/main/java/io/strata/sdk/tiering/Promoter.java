package io.strata.sdk.tiering;

import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.sdk.format.Columns;
import io.strata.sdk.format.SegmentInfo;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.SequencedMap;

/**
 * Moves feature streams from the HDD tier to the SSD tier: decodes chunks of ORC with projection
 * and writes them as segments.
 */
public final class Promoter {
  private Promoter() {}

  /**
   * What a promotion did.
   *
   * @param chunks chunks written
   * @param rows rows written (per feature group)
   * @param bytesWritten segment bytes written
   * @param seconds wall time
   */
  public record Report(int chunks, long rows, long bytesWritten, double seconds) {}

  /** Where a promoted chunk's columns come from: the dataset's ORC files, or a store of derived features. */
  @FunctionalInterface
  public interface ChunkSource {
    SequencedMap<String, Column> read(int chunk, List<String> features, Arena arena) throws IOException;

    /** The raw features of {@code ds}, decoded from ORC with projection. */
    static ChunkSource orc(Dataset ds) {
      return ds::readChunk;
    }
  }

  /** Admits a chunk's bytes before its segment is written (a rate limit); may wait. */
  @FunctionalInterface
  public interface Gate {
    Gate OPEN = bytes -> {};

    void admit(long bytes) throws InterruptedException;
  }

  /**
   * The one promotion path: reads {@code features} of {@code chunk} from {@code source}, lets
   * {@code gate} admit their bytes, and writes them as one segment (atomically, read-only).
   */
  public static SegmentRef promoteChunk(Dataset ds, SegmentStore store, int chunk, List<String> features, ChunkSource source,
      Gate gate) throws IOException, InterruptedException {
    ChunkInfo c = ds.chunks().get(chunk);
    try (Arena arena = Arena.ofConfined()) {
      SequencedMap<String, Column> cols = source.read(chunk, features, arena);
      long bytes = 0;
      for (Column col : cols.values()) {
        bytes += Columns.dataBytes(col);
      }
      gate.admit(bytes);
      return store.write(new SegmentInfo(ds.name(), ds.version(), chunk, c.firstRow(), c.endRow(), features), cols);
    }
  }

  /**
   * Promotes {@code features} of {@code chunks} (all chunks when null) into one segment per chunk.
   * Chunks whose segment already holds all the features are skipped.
   */
  public static Report promote(
      Dataset ds, SegmentStore store, List<String> features, List<Integer> chunks, Progress progress)
      throws IOException {
    for (String f : features) {
      ds.feature(f);
    }
    List<Integer> todo = new ArrayList<>();
    if (chunks == null) {
      for (ChunkInfo c : ds.chunks()) {
        todo.add(c.index());
      }
    } else {
      todo.addAll(chunks);
    }
    long start = System.nanoTime();
    long rows = 0;
    long bytes = 0;
    int written = 0;
    int done = 0;
    for (int chunk : todo) {
      if (!covered(ds, store, features, chunk)) {
        SegmentRef ref;
        try {
          ref = promoteChunk(ds, store, chunk, features, ChunkSource.orc(ds), Gate.OPEN);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new InterruptedIOException("promotion of " + ds.name() + " interrupted at chunk " + chunk);
        }
        bytes += ref.bytes();
        rows += ds.chunks().get(chunk).rows();
        written++;
      }
      progress.update(++done, todo.size(), "chunks");
    }
    return new Report(written, rows, bytes, (System.nanoTime() - start) / 1e9);
  }

  private static boolean covered(Dataset ds, SegmentStore store, List<String> features, int chunk) {
    for (String f : features) {
      if (store.find(ds.name(), ds.version(), f, chunk).isEmpty()) {
        return false;
      }
    }
    return true;
  }
}
