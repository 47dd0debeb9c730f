package io.strata.sdk.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Column;
import io.strata.sdk.Progress;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.internal.Chunks;
import io.strata.tools.DatasetGenerator;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shuffle within blocks of whole chunks (issue 58): every unit once an epoch, each block's
 * units from its own chunks only, the chunks in a shuffled order, and a loader reading it decodes
 * each chunk from the slow tier once an epoch.
 */
class ChunkBlockShuffleTest {
  @TempDir static Path tmp;
  static Dataset dataset;

  @BeforeAll
  static void generate() throws IOException {
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(dir,
        DatasetGenerator.Options.of("events", 60_000, 5).withFeatures(6).withChunking(5_000, 3).withMeanSampleLength(20),
        Progress.NONE);
    dataset = Dataset.open(dir);
  }

  @AfterAll
  static void close() throws IOException {
    dataset.close();
  }

  @Test
  void anOrderIsABijectionWhoseBlocksHoldTheirOwnChunksUnits() {
    Random r = new Random(5);
    for (int trial = 0; trial < 20; trial++) {
      int chunks = 1 + r.nextInt(30);
      long[] first = new long[chunks + 1];
      for (int c = 0; c < chunks; c++) {
        first[c + 1] = first[c] + (r.nextInt(4) == 0 ? 0 : r.nextInt(300)); // empty chunks too
      }
      int block = 1 + r.nextInt(5);
      ChunkBlockOrder o = new ChunkBlockOrder(first, block, r.nextLong());
      long units = first[chunks];
      BitSet seen = new BitSet();
      long p = 0;
      for (int g = 0; g * block < chunks; g++) {
        Set<Integer> mine = new HashSet<>();
        long size = 0;
        for (int k = g * block; k < Math.min(chunks, (g + 1) * block); k++) {
          int c = o.chunkAt(k);
          mine.add(c);
          size += first[c + 1] - first[c];
        }
        for (long i = 0; i < size; i++, p++) {
          long u = o.apply(p);
          assertTrue(u >= 0 && u < units, "in range");
          assertTrue(mine.contains(Chunks.of(first, u) == chunks ? -1 : chunkOf(first, u)), "block " + g + " holds unit " + u);
          assertTrue(!seen.get((int) u), "unit " + u + " once");
          seen.set((int) u);
        }
      }
      assertEquals(units, p);
      assertEquals(units, seen.cardinality(), "every unit once");
      long[] all = new long[(int) units];
      o.applyAll(0, 1, all, (int) units);
      for (int i = 0; i < units; i++) {
        assertEquals(o.apply(i), all[i]);
      }
      // Batches across block boundaries, strided (a rank's shard), one position.
      for (long stride : new long[] {1, 3, 7}) {
        for (long from = 0; from < units; from += 1 + r.nextInt(50)) {
          int count = (int) Math.min(1 + r.nextInt(120), (units - 1 - from) / stride + 1);
          long[] some = new long[count];
          o.applyAll(from, stride, some, count);
          for (int i = 0; i < count; i++) {
            assertEquals(o.apply(from + i * stride), some[i], "position " + (from + i * stride) + " stride " + stride);
          }
        }
      }
    }
  }

  /** The chunk whose range of units holds {@code u} (the last of equal starts is the non-empty one). */
  private static int chunkOf(long[] first, long u) {
    return Chunks.of(first, u);
  }

  @Test
  void eachEpochReadsEveryRowOnceAndEveryChunkOnceFromTheSlowTier() throws IOException {
    List<String> features = List.of("sample_id", "amount");
    int chunks = dataset.chunks().size();
    long[] decoded = new long[2];
    List<List<Integer>> chunkOrders = new ArrayList<>();
    for (int blocks : new int[] {0, 2}) {
      BitSet[] rowsSeen = {new BitSet(), new BitSet()};
      try (Loader l = Loader.builder(dataset).features(features).rowBatches(500, true).shuffleChunks(blocks).seed(3)
          .epochs(2).prefetch(2, 1).build()) {
        List<Integer> order = new ArrayList<>();
        for (Batch b : l) {
          try (b) {
            Column id = b.columns().get("amount");
            assertEquals(500, Math.min(500, id.length()));
            for (int k = 0; k < b.units(); k++) {
              long row = b.unitId(k);
              assertTrue(!rowsSeen[b.epoch()].get((int) row), "row " + row + " once in epoch " + b.epoch());
              rowsSeen[b.epoch()].set((int) row);
              int c = Chunks.of(dataset.table().chunkFirstRows(), row);
              if (blocks > 0 && b.epoch() == 0 && (order.isEmpty() || !order.contains(c))) {
                order.add(c);
              }
            }
            if (blocks > 0) {
              Set<Integer> cs = new HashSet<>();
              for (int k = 0; k < b.units(); k++) {
                cs.add(Chunks.of(dataset.table().chunkFirstRows(), b.unitId(k)));
              }
              assertTrue(cs.size() <= 2 * blocks, "a batch draws from its block's chunks (at a block's end, the next's): " + cs);
            }
          }
        }
        for (BitSet s : rowsSeen) {
          assertEquals(dataset.rows(), s.cardinality(), "every row once an epoch");
        }
        if (blocks > 0) {
          chunkOrders.add(order);
        }
        decoded[blocks == 0 ? 0 : 1] = l.tierStats().orcDecodedBytes();
      }
    }
    // Each chunk's rows of the two features decoded once an epoch: 8 + 8 bytes a row (and a
    // little for validity), two epochs. (A global shuffle decodes as much here only because this
    // dataset's decoded rows fit the reader's default budget; on a larger one its rows scatter
    // over every chunk and each row group is decoded again and again: bench fleet.)
    long once = 2 * dataset.rows() * 16;
    assertTrue(decoded[1] <= once * 1.2, "chunk blocks decode each chunk once an epoch: " + decoded[1] + " against " + once);
    assertNotEquals(List.of(), chunkOrders.get(0));
    assertEquals(chunks, chunkOrders.get(0).size(), "every chunk visited");
    assertNotEquals(ascending(chunks), chunkOrders.get(0), "the chunks in a shuffled order");
  }

  private static List<Integer> ascending(int n) {
    List<Integer> l = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      l.add(i);
    }
    return l;
  }

  @Test
  void eachBlockReadsTheNextBlocksResidentChunksAheadOnce() throws IOException {
    // Every chunk of "amount" on the SSD tier, "sample_id" on the slow tier only.
    try (io.strata.sdk.tiering.SegmentStore store = io.strata.sdk.tiering.SegmentStore.open(tmp.resolve("ssd"), false,
        io.strata.sdk.format.SegmentFile.Verify.NEVER)) {
      io.strata.sdk.tiering.Promoter.promote(dataset, store, List.of("amount"), null, Progress.NONE);
      int chunks = dataset.chunks().size();
      for (int blocks : new int[] {0, 2}) {
        long rows = 0;
        long ahead;
        long released;
        try (Loader l = Loader.builder(dataset).features(List.of("sample_id", "amount")).segments(store)
            .rowBatches(500, true).shuffleChunks(blocks).seed(4).epochs(2).prefetch(2, 1).build()) {
          for (Batch b : l) {
            try (b) {
              Column amount = b.columns().get("amount");
              Column ids = b.columns().get("sample_id");
              assertEquals(b.units(), amount.length());
              assertEquals(b.units(), ids.length());
              rows += b.units();
            }
          }
          ahead = l.tierStats().chunkColumnsReadAhead();
          released = l.tierStats().chunkColumnsReleased();
        }
        assertEquals(2 * dataset.rows(), rows);
        // Every block but an epoch's first is read ahead while the one before it is read: its
        // resident column (amount's), once; the slow tier's (sample_id's) is not fetched ahead.
        long expected = blocks == 0 ? 0 : 2L * (chunks - Math.min(chunks, blocks));
        assertEquals(expected, ahead, "chunk columns read ahead, blocks of " + blocks);
        // Every block but an epoch's last has its resident pages released once a step is past it.
        int last = blocks == 0 ? 0 : chunks % blocks == 0 ? blocks : chunks % blocks;
        assertEquals(blocks == 0 ? 0 : 2L * (chunks - last), released, "chunk columns released, blocks of " + blocks);
      }
    }
  }

  @Test
  void blockOfAPositionAndTheChunksOfABlock() {
    long[] first = {0, 10, 10, 25, 40, 41};
    ChunkBlockOrder o = new ChunkBlockOrder(first, 2, 9);
    Set<Integer> all = new HashSet<>();
    for (int g = 0; g < 3; g++) {
      int[] cs = o.chunksOfBlock(g);
      assertEquals(g < 2 ? 2 : 1, cs.length);
      for (int k = 0; k < cs.length; k++) {
        assertEquals(o.chunkAt(2 * g + k), cs[k]);
        all.add(cs[k]);
      }
    }
    assertEquals(5, all.size(), "every chunk in one block");
    assertEquals(0, o.chunksOfBlock(3).length, "past the last block");
    for (long p = 0; p < 41; p++) {
      int g = o.blockOf(p);
      int c = Chunks.of(first, o.apply(p));
      boolean in = false;
      for (int x : o.chunksOfBlock(g)) {
        in |= x == c;
      }
      assertTrue(in, "position " + p + " lies in a chunk of its block " + g);
    }
  }

  @Test
  void sampleBatchesShuffleByChunkBlocksAndWindowsAreRefused() throws IOException {
    try (Loader l = Loader.builder(dataset).features(List.of("amount")).sampleBatches(64).shuffleChunks(3).seed(1).build()) {
      Set<Long> ids = new HashSet<>();
      long n = 0;
      for (Batch b : l) {
        try (b) {
          for (int k = 0; k < b.units(); k++) {
            ids.add(b.unitId(k));
            n++;
          }
        }
      }
      assertEquals(dataset.sampleIndex().orElseThrow().size(), ids.size(), "every sample once");
      assertEquals(n, ids.size());
    }
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Loader.builder(dataset).features(List.of("amount")).windows(4, 1, 1, 8).shuffleChunks(2).build());
    assertTrue(e.getMessage().contains("windows cannot be shuffled by chunk blocks"), e.getMessage());
  }
}
