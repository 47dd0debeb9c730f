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
    Path abs = file.toAbsolutePath().normalize();
    Path dir = datasetDir.toAbsolutePath().normalize();
    return dir.getRoot() != null && dir.getRoot().equals(abs.getRoot()) ? dir.relativize(abs).toString() : abs.toString();
  }
}
