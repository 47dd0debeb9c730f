package io.strata.sdk;

/**
 * A chunk of a dataset: one ORC stripe, the unit of promotion to the SSD tier.
 *
 * @param index position in the dataset's stripe map
 * @param file index of the ORC file in the manifest
 * @param stripe stripe index within that file
 * @param offset byte offset of the stripe in the file
 * @param length byte length of the stripe (index, data and footer)
 * @param firstRow first global row of the chunk
 * @param rows rows in the chunk
 */
public record ChunkInfo(int index, int file, int stripe, long offset, long length, long firstRow, long rows) {
  /** One past the last global row. */
  public long endRow() {
    return firstRow + rows;
  }
}
