package io.strata.store;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.CompressionType;
import org.rocksdb.DBOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteOptions;

/**
 * A feature store's RocksDB instance and every native handle that goes with it (options, the
 * column families {@code meta} and {@code data}, synchronous write options), opened together
 * (the writer's primary instance, or a secondary beside it) and closed together in dependency
 * order. A failed open closes what it had opened and says why, naming the store (another
 * writer's lock by name).
 *
 * <p>Threads and locks: none of its own; {@link FeatureStore} closes it under the write side of
 * its handles lock, once no call is using the handles.
 */
record RocksHandles(DBOptions dbOptions, ColumnFamilyOptions cfOptions, RocksDB db, ColumnFamilyHandle defaultCf,
    ColumnFamilyHandle meta, ColumnFamilyHandle data, WriteOptions syncWrites) {
  private static final byte[] META = "meta".getBytes(StandardCharsets.UTF_8);
  private static final byte[] DATA = "data".getBytes(StandardCharsets.UTF_8);

  static {
    // RocksDB unpacks its JNI library with File.createTempFile, which uses the temporary directory
    // the JVM started with; a Strata process sets a directory of its own at start (the strata
    // command's ProcessTemp, swept when the process is gone), so name the one in force now. Then
    // RocksDB.loadLibrary finds the library loaded.
    try {
      org.rocksdb.NativeLibraryLoader.getInstance().loadLibrary(System.getProperty("java.io.tmpdir"));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot unpack RocksDB's native library into "
          + System.getProperty("java.io.tmpdir") + ": " + e.getMessage(), e);
    }
    RocksDB.loadLibrary();
  }

  /** Opens (the writer: creating if needed) the RocksDB instance of the store in {@code dir}. */
  static RocksHandles open(Path dir, boolean writer) throws IOException {
    DBOptions dbo = new DBOptions().setCreateIfMissing(writer).setCreateMissingColumnFamilies(writer).setMaxOpenFiles(-1);
    ColumnFamilyOptions cfo = new ColumnFamilyOptions().setCompressionType(CompressionType.ZSTD_COMPRESSION)
        .setBottommostCompressionType(CompressionType.ZSTD_COMPRESSION);
    List<ColumnFamilyDescriptor> cfs = List.of(
        new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, cfo),
        new ColumnFamilyDescriptor(META, cfo),
        new ColumnFamilyDescriptor(DATA, cfo));
    List<ColumnFamilyHandle> handles = new ArrayList<>();
    WriteOptions wo = new WriteOptions().setSync(true);
    RocksDB db = null;
    try {
      String path = dir.resolve("rocksdb").toString();
      if (writer) {
        db = RocksDB.open(dbo, path, cfs, handles);
      } else {
        Path secondary = dir.resolve("secondary").resolve(Long.toString(ProcessHandle.current().pid()));
        Files.createDirectories(secondary);
        db = RocksDB.openAsSecondary(dbo, path, secondary.toString(), cfs, handles);
      }
      return new RocksHandles(dbo, cfo, db, handles.get(0), handles.get(1), handles.get(2), wo);
    } catch (RocksDBException e) {
      handles.forEach(ColumnFamilyHandle::close);
      if (db != null) {
        db.close();
      }
      wo.close();
      cfo.close();
      dbo.close();
      String m = String.valueOf(e.getMessage());
      if (writer && (m.contains("lock") || m.contains("LOCK"))) {
        throw new IOException("feature store " + dir + " is already open for writing by another process;"
            + " open it for reading, or stop that writer (" + m + ")", e);
      }
      throw new IOException("cannot open feature store " + dir + ": " + m, e);
    }
  }

  /** Closes every handle, in dependency order. */
  void close() {
    defaultCf.close();
    meta.close();
    data.close();
    db.close();
    syncWrites.close();
    cfOptions.close();
    dbOptions.close();
  }
}
