package io.strata.store;

import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.derive.Derivation;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The content checksums of a {@link FeatureStore}'s source columns ({@link #of}): computed once per
 * dataset version, kept in the store ({@code c:} keys; the writer writes them) and in memory.
 *
 * <p>Threads: any; threads asking for the same column at once wait for one pass ({@link SingleFlight}),
 * and the cache is a concurrent map.
 */
final class SourceChecksums {
  private final StoreRocks rocks;
  private final boolean writer;
  private final Map<String, Long> cache = new ConcurrentHashMap<>();
  /** Source checksums being computed now, so that threads asking for one at once wait for one pass. */
  private final SingleFlight<Long> inFlight = new SingleFlight<>();

  SourceChecksums(StoreRocks rocks, boolean writer) {
    this.rocks = rocks;
    this.writer = writer;
  }

  /**
   * The content checksum of a source column, computed once per dataset version and cached; threads
   * asking for the same column at once wait for one computation (jobs asking for one derived
   * feature together read its sources once, not once each).
   */
  long of(Dataset ds, String column, Derivation.SourceReader reader) throws IOException {
    String key = "c:" + ds.name() + "\0" + ds.version() + "\0" + column;
    Long cached = cache.get(key);
    if (cached != null) {
      return cached;
    }
    return inFlight.run(key, () -> {
      rocks.catchUp();
      byte[] stored = rocks.get(rocks.meta(), key);
      long sum;
      if (stored != null) {
        sum = Long.parseUnsignedLong(new String(stored, StandardCharsets.UTF_8), 16);
      } else {
        sum = Derivation.columnChecksum(ds, column, reader);
        if (writer) {
          rocks.put(rocks.meta(), key, StoreRocks.bytes(Long.toHexString(sum)));
        }
      }
      cache.put(key, sum);
      return sum;
    });
  }
}
