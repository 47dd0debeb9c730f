package io.strata.node;

import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.tiering.Promoter;
import io.strata.sdk.tiering.SegmentRef;
import io.strata.sdk.tier.SegmentSource;
import io.strata.sdk.tiering.SegmentStore;
import java.nio.file.Path;
import java.util.List;

/** The segment-source contract for a local segment store (a job's own SSD directory). */
class LocalSegmentSourceTest extends SegmentSourceContract {
  @Override
  Fixture fixture(Path home, Dataset ds) throws Exception {
    Path dir = home.resolve("ssd");
    return new Fixture() {
      SegmentStore store = SegmentStore.open(dir, false, SegmentFile.Verify.FIRST_OPEN);

      @Override
      public SegmentSource source() {
        return store;
      }

      @Override
      public void promote(List<String> features, List<Integer> chunks) throws Exception {
        Promoter.promote(ds, store, features, chunks, Progress.NONE);
      }

      @Override
      public void evict(int chunk) throws Exception {
        for (SegmentRef ref : store.segments()) {
          if (ref.info().chunk() == chunk) {
            store.remove(ref);
          }
        }
      }

      @Override
      public Path file(String feature, int chunk) {
        return store.find(ds.name(), ds.version(), feature, chunk).orElseThrow().path();
      }

      @Override
      public boolean resident(String feature, int chunk) {
        return store.find(ds.name(), ds.version(), feature, chunk).isPresent();
      }

      @Override
      public long unlinkedMappedBytes() {
        return store.unlinkedMappedBytes();
      }

      @Override
      public void restart() throws Exception {
        store.close();
        store = SegmentStore.open(dir, true, SegmentFile.Verify.FIRST_OPEN);
      }

      @Override
      public void close() {
        store.close();
      }
    };
  }
}
