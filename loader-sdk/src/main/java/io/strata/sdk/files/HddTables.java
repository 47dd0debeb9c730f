package io.strata.sdk.files;

import io.strata.sdk.ChunkInfo;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.internal.Confinement;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/** What both {@link HddTable}s check the same way: requested columns, chunk and row ranges, a file's bytes against the manifest. */
final class HddTables {
  private HddTables() {}

  /** Each column's index in the manifest, by name. */
  static Map<String, Integer> columnIndex(Manifest manifest) {
    Map<String, Integer> index = new java.util.HashMap<>();
    for (int i = 0; i < manifest.features().size(); i++) {
      index.put(manifest.features().get(i).name(), i);
    }
    return index;
  }

  /** The manifest indexes of {@code features}; an unknown or unserved name is an IllegalArgumentException naming the dataset. */
  static List<Integer> resolve(Manifest manifest, Map<String, Integer> columnIndex, List<String> features) {
    List<Integer> idx = new ArrayList<>(features.size());
    for (String f : features) {
      Integer i = columnIndex.get(f);
      if (i == null) {
        throw new IllegalArgumentException("dataset " + manifest.name() + " has no column '" + f + "'");
      }
      FeatureInfo info = manifest.features().get(i);
      if (!info.supported()) {
        throw new IllegalArgumentException(info.notServed(manifest.name()));
      }
      idx.add(i);
    }
    return idx;
  }

  static ChunkInfo chunk(Manifest manifest, int chunk) {
    if (chunk < 0 || chunk >= manifest.chunks().size()) {
      throw new IllegalArgumentException(
          "chunk " + chunk + " is outside dataset " + manifest.name() + " (" + manifest.chunks().size() + " chunks)");
    }
    return manifest.chunks().get(chunk);
  }

  static void checkRows(Manifest manifest, long firstRow, int count) {
    if (firstRow < 0 || count < 0 || firstRow + count > manifest.rows()) {
      throw new IllegalArgumentException(
          "rows [" + firstRow + ", " + (firstRow + count) + ") are outside dataset " + manifest.name()
              + " (" + manifest.rows() + " rows)");
    }
  }

  /** A file's bytes as read: their CRC32C (8 hex digits) and count. */
  record Read(String crc32c, long bytes) {}

  /**
   * Reads every byte of {@code path} (opened through {@code confinement}), its size checked
   * against the manifest's {@code info} first; {@code before} runs on the open channel before the
   * whole-file read (ORC's stream checksums say where first).
   */
  static Read readWhole(Path path, Manifest.OrcFileInfo info, Confinement confinement, ChannelCheck before) throws IOException {
    try (FileChannel ch = confinement.openRead(path)) {
      if (ch.size() != info.bytes()) {
        throw new CorruptFileException(path, "is " + ch.size() + " bytes, the manifest records " + info.bytes());
      }
      before.check(ch);
      CRC32C crc = new CRC32C();
      ByteBuffer b = ByteBuffer.allocateDirect(1 << 20);
      long at = 0;
      int n;
      while ((n = ch.read(b.clear(), at)) > 0) {
        crc.update(b.flip());
        at += n;
      }
      return new Read(HexFormat.of().toHexDigits((int) crc.getValue()), at);
    }
  }

  /** A check of an open file. */
  interface ChannelCheck {
    void check(FileChannel ch) throws IOException;
  }
}
