package io.strata.store;

import io.strata.sdk.Progress;
import io.strata.sdk.internal.Json;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.CompressionType;
import org.rocksdb.EnvOptions;
import org.rocksdb.IngestExternalFileOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.SstFileWriter;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * A {@link FeatureStore}'s RocksDB: the layout of its keys (FORMAT.md: {@code f:}, {@code n:},
 * {@code c:} in {@code meta}, {@code <fingerprint>:<chunk>} in {@code data}), its reads and synced
 * writes, and the guard of its native handles ({@link RocksHandles}).
 *
 * <p>Threads and locks: every call that touches a native handle holds the read side of {@code
 * handles} for that one call ({@link #guarded}); {@link #close()} takes the write side, waits for
 * the calls in flight and closes every handle in dependency order, after which calls fail with
 * {@link IllegalStateException} naming the store. Any thread may call.
 */
final class StoreRocks {
  private final Path dir;
  private final boolean writer;
  private final RocksHandles rocks;
  private final RocksDB db;
  private final ColumnFamilyHandle meta;
  private final ColumnFamilyHandle data;
  private final WriteOptions syncWrites;
  private volatile long lastCatchUp;
  private volatile boolean closed;
  /**
   * Every native call holds the read side; {@link #close()} takes the write side, so it waits for
   * calls in flight and later calls fail with a message instead of touching freed handles.
   */
  private final ReentrantReadWriteLock handles = new ReentrantReadWriteLock();

  StoreRocks(Path dir, boolean writer, RocksHandles rocks) {
    this.dir = dir;
    this.writer = writer;
    this.rocks = rocks;
    this.db = rocks.db();
    this.meta = rocks.meta();
    this.data = rocks.data();
    this.syncWrites = rocks.syncWrites();
  }

  ColumnFamilyHandle meta() {
    return meta;
  }

  ColumnFamilyHandle data() {
    return data;
  }

  /** One use of the native handles. */
  interface NativeCall<T> {
    T call() throws RocksDBException, IOException;
  }

  /** Runs {@code call} while the handles stay open; a RocksDB failure becomes an IOException saying {@code what} failed. */
  <T> T guarded(String what, NativeCall<T> call) throws IOException {
    var read = handles.readLock();
    read.lock();
    try {
      if (closed) {
        throw new IllegalStateException("feature store " + dir + " is already closed");
      }
      return call.call();
    } catch (RocksDBException e) {
      throw new IOException("feature store " + dir + ": " + what + " failed: " + e.getMessage(), e);
    } finally {
      read.unlock();
    }
  }

  /** A reader sees the writer's latest writes (at most every 100 ms). */
  void catchUp() throws IOException {
    if (writer) {
      return;
    }
    long now = System.currentTimeMillis();
    if (now - lastCatchUp < 100) {
      return;
    }
    lastCatchUp = now;
    guarded("catching up with the writer", () -> {
      db.tryCatchUpWithPrimary();
      return null;
    });
  }

  static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static String dataKey(String fingerprint, int chunk) {
    return fingerprint + ":" + String.format("%08d", chunk);
  }

  byte[] get(ColumnFamilyHandle cf, String key) throws IOException {
    return guarded("read of " + key, () -> db.get(cf, bytes(key)));
  }

  void put(ColumnFamilyHandle cf, String key, byte[] value) throws IOException {
    guarded("write", () -> {
      db.put(cf, bytes(key), value);
      return null;
    });
  }

  /** Writes feature {@code m}'s state. */
  void putMeta(FeatureMeta m) throws IOException {
    put(meta, "f:" + m.fingerprint(), bytes(Json.compact(m.toJson())));
  }

  /** Every feature's state, complete or not. */
  List<FeatureMeta> list() throws IOException {
    catchUp();
    return guarded("listing features", () -> {
      List<FeatureMeta> out = new ArrayList<>();
      try (RocksIterator it = db.newIterator(meta)) {
        for (it.seek(bytes("f:")); it.isValid(); it.next()) {
          String k = new String(it.key(), StandardCharsets.UTF_8);
          if (!k.startsWith("f:")) {
            break;
          }
          out.add(FeatureMeta.fromJson(Json.parse(it.value())));
        }
      }
      return out;
    });
  }

  /** One chunk (none when {@code value} is null) and the progress it makes, in one synced write. */
  void writeChunk(FeatureMeta next, byte[] value) throws IOException {
    String fp = next.fingerprint();
    guarded("writing chunk " + (next.done() - 1) + " of " + fp, () -> {
      try (WriteBatch batch = new WriteBatch()) {
        if (value != null) {
          batch.put(data, bytes(dataKey(fp, next.done() - 1)), value);
        }
        batch.put(meta, bytes("f:" + fp), bytes(Json.compact(next.toJson())));
        if (next.complete()) {
          batch.put(meta, bytes("n:" + next.dataset() + "\0" + next.version() + "\0" + next.spec()), bytes(fp));
        }
        db.write(syncWrites, batch);
      }
      return null;
    });
  }

  /** Deletes feature {@code m}: its chunks, its state and its name, in one synced write. */
  void delete(FeatureMeta m) throws IOException {
    guarded("deleting " + m.fingerprint(), () -> {
      try (WriteBatch batch = new WriteBatch()) {
        batch.deleteRange(data, bytes(m.fingerprint() + ":"), bytes(m.fingerprint() + ";"));
        batch.delete(meta, bytes("f:" + m.fingerprint()));
        batch.delete(meta, bytes("n:" + m.dataset() + "\0" + m.version() + "\0" + m.spec()));
        db.write(syncWrites, batch);
      }
      return null;
    });
  }

  /**
   * Writes feature {@code fp}'s {@code chunks} chunks from {@code source} into the SST file {@code
   * sst} and has RocksDB take it in whole (the file moved into the database); returns the chunks'
   * bytes. {@code from} says where they came from, for the message of a failure.
   */
  long ingestSst(Path sst, String fp, String from, int chunks, FeatureStore.ChunkSource source, Progress progress)
      throws IOException {
    return guarded("ingesting feature " + fp + " " + from, () -> {
      long total = 0;
      try (EnvOptions env = new EnvOptions();
          Options options = new Options().setCompressionType(CompressionType.NO_COMPRESSION);
          SstFileWriter sstWriter = new SstFileWriter(env, options)) {
        sstWriter.open(sst.toString());
        ByteBuffer buffer = null;
        for (int c = 0; c < chunks; c++) {
          ByteBuffer value = source.chunk(c, buffer);
          buffer = value;
          total += value.remaining();
          byte[] k = bytes(dataKey(fp, c));
          sstWriter.put(ByteBuffer.allocateDirect(k.length).put(k).flip(), value);
          progress.update(c + 1, chunks, "chunks");
        }
        sstWriter.finish();
      }
      try (IngestExternalFileOptions ingest = new IngestExternalFileOptions().setMoveFiles(true)) {
        db.ingestExternalFile(data, List.of(sst.toString()), ingest);
      }
      return total;
    });
  }

  /** Closes every native handle in dependency order, once the calls in flight have returned. Idempotent. */
  void close() {
    var write = handles.writeLock();
    write.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      rocks.close();
    } finally {
      write.unlock();
    }
  }
}
