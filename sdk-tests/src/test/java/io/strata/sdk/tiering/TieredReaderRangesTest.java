package io.strata.sdk.tiering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.tier.Tier;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.format.ColumnBuilder;
import io.strata.sdk.format.Columns;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.tier.TierStats;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A batch of row ranges assembled feature by feature from the SSD tier holds what the ORC files
 * hold, in the ranges' order; one crossing a chunk, one not resident and one whose segment is
 * damaged after it was mapped take the range by range path and still read right.
 */
class TieredReaderRangesTest {
  @TempDir Path tmp;

  private static final List<String> FEATURES = List.of("amount", "merchant_category", "is_online", "embedding");

  @Test
  void rangesReadFeatureByFeatureEqualOrcAndSurviveADamagedSegment() throws IOException {
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("events", 9_000, 5).withFeatures(10).withChunking(3_000, 1),
        Progress.NONE);
    // Out of order, across chunks, one of a single row: as a shuffled batch of samples is.
    long[] starts = {6_100, 17, 3_000, 2_990, 8_999, 450};
    int[] lengths = {300, 41, 77, 9, 1, 120};
    try (Dataset ds = Dataset.open(dir);
        SegmentStore store = SegmentStore.open(tmp.resolve("ssd"), false, SegmentFile.Verify.FIRST_OPEN);
        Arena arena = Arena.ofShared()) {
      List<Column> orc = read(new TieredReader(ds, null, FEATURES, new TierStats()), starts, lengths, arena);
      Promoter.promote(ds, store, FEATURES, List.of(0, 1, 2), Progress.NONE);
      // Every range within one chunk, every chunk resident: assembled feature by feature.
      long[] inChunks = {6_100, 17, 3_000, 8_999, 450};
      int[] inLengths = {300, 41, 77, 1, 120};
      List<Column> orcInChunks = read(new TieredReader(ds, null, FEATURES, new TierStats()), inChunks, inLengths, arena);
      TierStats stats = new TierStats();
      try (TieredReader reader = new TieredReader(ds, store, FEATURES, stats)) {
        same(orcInChunks, read(reader, inChunks, inLengths, arena));
        assertTrue(stats.bytes(Tier.SSD) > 0, "read from the SSD tier");
        assertEquals(0, stats.bytes(Tier.HDD), "nothing from ORC");
        // A range crossing chunks 0 and 1: one piece from each chunk, still from the SSD tier alone.
        same(orc, read(reader, starts, lengths, arena));
        assertEquals(0, stats.bytes(Tier.HDD), "nothing from ORC");
        // An empty range adds nothing; one beyond the dataset is refused by name.
        same(orcInChunks, read(reader, new long[] {6_100, 17, 9_000, 3_000, 8_999, 450}, new int[] {300, 41, 0, 77, 1, 120},
            arena));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> read(reader, new long[] {17, 8_990}, new int[] {5, 20}, arena));
        assertTrue(e.getMessage().contains("8990"), e.getMessage());

        // The string offsets of chunk 2 damaged while the reader has the segment mapped.
        SegmentRef victim = store.segments().stream()
            .filter(r -> r.info().chunk() == 2 && r.holds("merchant_category")).findFirst().orElseThrow();
        long at;
        long length;
        try (SegmentFile f = SegmentFile.open(victim.path(), SegmentFile.Verify.NEVER)) {
          Column c = f.column("merchant_category");
          at = f.fileOffset(c.offsets());
          length = c.offsets().byteSize();
        }
        try (FileChannel ch = FileChannel.open(victim.path(), StandardOpenOption.WRITE)) {
          byte[] junk = new byte[(int) length];
          Arrays.fill(junk, (byte) 0xff);
          ch.write(ByteBuffer.wrap(junk), at);
        }
        long hdd = stats.bytes(Tier.HDD);
        same(orcInChunks, read(reader, inChunks, inLengths, arena));
        assertEquals(1, reader.damagedChunks(), "the damaged segment is found and read from ORC");
        assertTrue(stats.bytes(Tier.HDD) > hdd, "chunk 2 came from ORC");
      }
    }
  }

  /** The ranges {@code starts[k]}, {@code lengths[k]} appended by {@code reader}, as built columns (TieredReaderColdTest too). */
  static List<Column> read(TieredReader reader, long[] starts, int[] lengths, Arena arena) throws IOException {
    int[] offsets = new int[starts.length + 1];
    for (int k = 0; k < starts.length; k++) {
      offsets[k + 1] = offsets[k] + lengths[k];
    }
    List<ColumnBuilder> builders = reader.builders(arena, offsets[starts.length]);
    reader.appendRanges(starts, offsets, starts.length, builders);
    List<Column> out = new ArrayList<>();
    for (ColumnBuilder b : builders) {
      out.add(b.build());
    }
    return out;
  }

  private static void same(List<Column> expected, List<Column> got) {
    for (int i = 0; i < FEATURES.size(); i++) {
      assertEquals(expected.get(i).length(), got.get(i).length(), FEATURES.get(i));
      assertEquals(-1, Columns.firstDifference(expected.get(i), got.get(i)), FEATURES.get(i));
    }
  }
}
