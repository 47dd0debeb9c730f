package io.strata.sdk.files;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.zip.CRC32C;

/** Content checksums and versions of dataset files. */
public final class DatasetFiles {
  private DatasetFiles() {}

  /** CRC32C of a whole file, as 8 hex digits. */
  public static String crc32c(Path file) throws IOException {
    CRC32C crc = new CRC32C();
    byte[] buf = new byte[1 << 20];
    try (InputStream in = Files.newInputStream(file)) {
      int n;
      while ((n = in.read(buf)) > 0) {
        crc.update(buf, 0, n);
      }
    }
    return HexFormat.of().toHexDigits((int) crc.getValue());
  }

  /**
   * The content version of a dataset: a hash of each file's name, size and CRC32C, so that it
   * changes whenever any file's content changes and stays put when the files move.
   */
  public static String version(List<Manifest.OrcFileInfo> files) {
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      for (Manifest.OrcFileInfo f : files) {
        String name = Path.of(f.path()).getFileName().toString();
        sha.update((name + "\0" + f.bytes() + "\0" + f.crc32c() + "\n").getBytes(StandardCharsets.UTF_8));
      }
      return "v1-" + HexFormat.of().formatHex(sha.digest(), 0, 8);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * How a manifest names {@code file}: relative to the dataset directory (with {@code ..} for a
   * file beside it), so that a dataset moved or mounted elsewhere with its files still opens.
   */
  public static String manifestPath(Path datasetDir, Path file) {
    if (file.getFileSystem() != datasetDir.getFileSystem()) {
      return file.toUri().toString(); // a file of another file system (an S3 object for a local dataset): its URI
    }
    Path abs = file.toAbsolutePath().normalize();
    Path dir = datasetDir.toAbsolutePath().normalize();
    return dir.getRoot() != null && dir.getRoot().equals(abs.getRoot()) ? dir.relativize(abs).toString() : abs.toString();
  }

  /** The file a manifest's {@code path} names for the dataset in {@code datasetDir}: resolved against it, or the URI of a remote file. */
  public static Path resolve(Path datasetDir, String path) {
    int colon = path.indexOf("://");
    if (colon > 0 && Locations.remoteScheme(path.substring(0, colon))) {
      return Locations.dataset(path);
    }
    return datasetDir.resolve(path);
  }

  /**
   * The version a store gives {@code file} now (an S3 object's ETag; null where it keeps none).
   * What {@link Manifest.OrcFileInfo#version} records at import.
   */
  public static String storeVersion(Path file) throws IOException {
    return Locations.remote(file) ? (String) Files.readAttributes(file, java.nio.file.attribute.BasicFileAttributes.class).fileKey() : null;
  }

  /**
   * Refuses {@code file} if the store's version of it is no longer the one {@code info} recorded at
   * import: an object replaced since is not served ({@link java.nio.file.FileSystemException}
   * naming it, both versions, and what to do).
   */
  public static void checkVersion(Path file, Manifest.OrcFileInfo info) throws IOException {
    if (info.version() == null) {
      return;
    }
    String now = storeVersion(file);
    if (!info.version().equals(now)) {
      throw new java.nio.file.FileSystemException(file.toString(), null, "replaced since the dataset was imported (version "
          + info.version() + " then, " + now + " now); import the dataset again");
    }
  }
}
