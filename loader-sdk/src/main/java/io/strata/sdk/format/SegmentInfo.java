package io.strata.sdk.format;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;

/**
 * The provenance of a segment: which dataset version, chunk and global row range its columns
 * were taken from. It is stored in the Arrow schema's custom metadata (see docs/FORMAT.md).
 *
 * @param dataset dataset name
 * @param datasetVersion the dataset's version string when the segment was written
 * @param chunk chunk index in the dataset's stripe map
 * @param rowStart first global row (inclusive)
 * @param rowEnd last global row (exclusive)
 * @param columns the feature columns held, in file order
 */
public record SegmentInfo(
    String dataset, String datasetVersion, int chunk, long rowStart, long rowEnd, List<String> columns) {
  public SegmentInfo {
    Objects.requireNonNull(dataset, "dataset");
    Objects.requireNonNull(datasetVersion, "datasetVersion");
    columns = List.copyOf(columns);
    if (chunk < 0) {
      throw new IllegalArgumentException("chunk must not be negative: " + chunk);
    }
    if (rowStart < 0 || rowEnd < rowStart) {
      throw new IllegalArgumentException("bad row range [" + rowStart + ", " + rowEnd + ")");
    }
  }

  /** Rows held. */
  public long rows() {
    return rowEnd - rowStart;
  }

  /**
   * The file name of this segment's {@code sequence}-th write in a store's dataset-version
   * directory: {@code c<chunk>-<hash of its columns>-<sequence>.arrow}.
   */
  public String fileName(long sequence) {
    return String.format("c%06d-%s-%013x.arrow", chunk, columnsHash(), sequence);
  }

  private String columnsHash() {
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      for (String c : columns) {
        sha.update(c.getBytes(StandardCharsets.UTF_8));
        sha.update((byte) 0);
      }
      return HexFormat.of().formatHex(sha.digest(), 0, 6);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
