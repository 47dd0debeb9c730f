package io.strata.sdk.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Column;
import io.strata.sdk.FeatureType;
import io.strata.sdk.Progress;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.format.ColumnBuilder;
import io.strata.sdk.format.Columns;
import io.strata.sdk.format.DeviceCopies;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.tiering.Promoter;
import io.strata.sdk.tiering.SegmentRef;
import io.strata.sdk.tiering.SegmentStore;
import io.strata.tools.DatasetGenerator;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Copies left to a device (a GPU that reads registered segment pages itself): the batches record
 * the copies from resident segments instead of making them, hold the segments mapped until they
 * are closed (an eviction meanwhile does not unmap them), and once the recorded copies are made
 * (here on the host, as a device's gather would) every batch equals the one a plain loader
 * assembles. A builder's first host write makes its recorded copies; a truncation forgets the
 * dropped rows' copies.
 */
class DeviceCopiesTest {
  @TempDir Path tmp;

  @Test
  void recordedCopiesMadeLaterGiveTheSameBatchesAndKeepTheirSegmentsMapped() throws IOException {
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("events", 12_000, 3).withFeatures(10).withChunking(3_000, 1)
        .withMeanSampleLength(40), Progress.NONE);
    try (Dataset ds = Dataset.open(dir);
        SegmentStore store = SegmentStore.open(tmp.resolve("ssd"), false, SegmentFile.Verify.FIRST_OPEN)) {
      List<String> features = ds.featureNames();
      Promoter.promote(ds, store, features, List.of(0, 1, 2, 3), Progress.NONE);
      BatchMemory plainMemory = BatchMemory.offHeap();
      List<MemorySegment> asked = new ArrayList<>();
      BatchMemory deviceMemory = new BatchMemory() {
        @Override
        public Slab allocate(long bytes) throws IOException {
          return plainMemory.allocate(bytes);
        }

        @Override
        public Predicate<MemorySegment> deviceReads() {
          return s -> {
            synchronized (asked) {
              asked.add(s);
            }
            return true;
          };
        }
      };
      int batches = 0;
      long recorded = 0;
      try (Loader plain = Loader.builder(ds).features(features).segments(store).sampleBatches(16).seed(7).build();
          // Two assembly threads: each records its features' copies, merged into the batch's.
          Loader device = Loader.builder(ds).features(features).segments(store).sampleBatches(16).seed(7)
              .assemblyThreads(2).batchMemory(deviceMemory).build()) {
        while (true) {
          try (Batch want = plain.next(); Batch got = device.next()) {
            if (want == null) {
              assertNull(got);
              break;
            }
            DeviceCopies copies = got.deviceCopies();
            assertNotNull(copies, "batch " + batches + " left its copies to the device");
            assertTrue(copies.count() > 0);
            recorded += copies.bytes();
            for (String f : features) {
              Column c = got.column(f);
              FeatureType t = c.type();
              if (t.isFixedWidth() && t.kind().width() > 0 && c.length() > 0) {
                assertTrue(copies.covers(c.values()), f + "'s values come wholly from the device's copies");
              } else if (t.kind() == FeatureType.Kind.BOOL && c.length() > 0) {
                assertFalse(copies.covers(c.values()), "bits are copied on the host");
              }
              if (!t.isFixedWidth() && c.length() > 0) {
                assertFalse(copies.covers(c.offsets()), f + "'s offsets are the host's");
              }
            }
            if (batches == 1) {
              // Evicted while the batch waits for its device copy: the batch keeps the mapping.
              for (SegmentRef r : store.segments()) {
                store.remove(r);
              }
              assertTrue(store.unlinkedMappedBytes() > 0, "the batch's segments stay mapped");
            }
            got.completeOnHost();
            assertNull(got.deviceCopies());
            for (String f : features) {
              assertEquals(-1, Columns.firstDifference(want.column(f), got.column(f)), f + " of batch " + batches);
            }
            batches++;
            if (batches == 2) {
              break;
            }
          }
        }
      }
      assertEquals(2, batches);
      assertTrue(recorded > 0);
      assertTrue(!asked.isEmpty(), "the device was asked which buffers it reads");
      store.trim();
      assertEquals(0, store.unlinkedMappedBytes(), "closing the batches let go of the evicted segments");
    }
  }

  /** What a GPU registers by: every mapped segment told once (those mapped before it replayed), each unmapping before it happens. */
  @Test
  void anObserverIsToldOfEveryMappingAndOfEachUnmappingBeforeIt() throws IOException {
    Path dir = tmp.resolve("small");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("small", 4_000, 3).withFeatures(3).withChunking(2_000, 1),
        Progress.NONE);
    List<String> seen = new ArrayList<>();
    SegmentFile.MappingObserver o = new SegmentFile.MappingObserver() {
      @Override
      public void mapped(Path file, MemorySegment mapping) {
        mapping.get(java.lang.foreign.ValueLayout.JAVA_BYTE, mapping.byteSize() - 1); // mapped when told
        seen.add("+" + mapping.address());
      }

      @Override
      public void unmapping(MemorySegment mapping) {
        mapping.get(java.lang.foreign.ValueLayout.JAVA_BYTE, mapping.byteSize() - 1); // still mapped when told
        seen.add("-" + mapping.address());
      }
    };
    try (Dataset ds = Dataset.open(dir)) {
      SegmentStore store = SegmentStore.open(tmp.resolve("ssd2"), false, SegmentFile.Verify.NEVER);
      Promoter.promote(ds, store, ds.featureNames(), List.of(0, 1), Progress.NONE);
      var first = store.lease(ds, ds.featureNames().get(0), 0);
      SegmentFile.observe(o);
      try {
        assertEquals(1, seen.stream().filter(e -> e.startsWith("+")).count(), "the segment mapped before is replayed");
        var second = store.lease(ds, ds.featureNames().get(0), 1);
        assertEquals(2, seen.size());
        first.close();
        second.close();
        store.close(); // unmaps both: each told before
        assertEquals(4, seen.size(), seen.toString());
        // each unmapping names a mapping told before
        assertEquals(java.util.Set.of(seen.get(0).substring(1), seen.get(1).substring(1)),
            java.util.Set.of(seen.get(2).substring(1), seen.get(3).substring(1)), seen.toString());
        assertTrue(seen.get(2).startsWith("-") && seen.get(3).startsWith("-"), seen.toString());
      } finally {
        SegmentFile.unobserve(o);
      }
    }
  }

  @Test
  void aHostWriteMakesTheRecordedCopiesAndATruncationForgetsTheDroppedOnes() {
    try (Arena arena = Arena.ofConfined()) {
      ColumnBuilder src = new ColumnBuilder(FeatureType.parse("int64"), arena, 100);
      for (int i = 0; i < 100; i++) {
        src.appendLong(1000 + i);
      }
      Column column = src.build();
      DeviceCopies copies = new DeviceCopies(s -> true);
      ColumnBuilder b = new ColumnBuilder(FeatureType.parse("int64"), arena, 100);
      b.deferTo(copies);
      b.appendRange(column, 0, 10);
      b.appendRange(column, 50, 5);
      assertEquals(2, copies.count());
      assertEquals(15 * 8, copies.bytes());
      b.truncate(12);
      assertEquals(2, copies.count(), "the second copy is cut to the two rows kept");
      assertEquals(12 * 8, copies.bytes());
      b.truncate(10);
      assertEquals(1, copies.count());
      b.appendLong(7); // a host write: the recorded copies are made now, and nothing more is recorded
      assertEquals(0, copies.count());
      b.appendRange(column, 90, 3);
      assertEquals(0, copies.count());
      Column built = b.build();
      long[] want = {1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 7, 1090, 1091, 1092};
      assertEquals(want.length, built.length());
      for (int i = 0; i < want.length; i++) {
        assertEquals(want[i], built.getLong(i), "row " + i);
      }
      copies.close();
    }
  }
}
