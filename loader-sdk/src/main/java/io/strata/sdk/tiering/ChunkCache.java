package io.strata.sdk.tiering;

import io.strata.sdk.Column;
import io.strata.sdk.format.Columns;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/** Whole derived chunks kept by one reader, least recently used out, within a byte budget. Not thread-safe. */
final class ChunkCache implements AutoCloseable {
  private record Entry(Arena arena, Column column, long bytes) {}

  private final long budget;
  private final LinkedHashMap<String, Entry> entries = new LinkedHashMap<>(16, 0.75f, true);
  private long bytes;

  ChunkCache(long budget) {
    this.budget = budget;
  }

  Column get(DerivedChunkSource source, int chunk) throws IOException {
    String key = source.storageName() + "\0" + chunk;
    Entry e = entries.get(key);
    if (e != null) {
      return e.column();
    }
    Arena arena = Arena.ofConfined();
    Column c;
    try {
      c = source.chunk(chunk, arena);
    } catch (IOException | RuntimeException ex) {
      arena.close();
      throw ex;
    }
    long n = Columns.dataBytes(c);
    entries.put(key, new Entry(arena, c, n));
    bytes += n;
    Iterator<Map.Entry<String, Entry>> it = entries.entrySet().iterator();
    while (bytes > budget && it.hasNext()) {
      Map.Entry<String, Entry> old = it.next();
      if (old.getKey().equals(key)) {
        continue;
      }
      bytes -= old.getValue().bytes();
      old.getValue().arena().close();
      it.remove();
    }
    return c;
  }

  @Override
  public void close() {
    entries.values().forEach(e -> e.arena().close());
    entries.clear();
    bytes = 0;
  }
}
