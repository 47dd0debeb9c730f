package io.strata.sdk.files;

import io.strata.sdk.CorruptFileException;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import java.util.Map;
import java.util.List;
import java.util.ArrayList;
import io.strata.sdk.ChunkInfo;
import io.strata.sdk.internal.Confinement;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.Path;
import java.util.Arrays;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.io.InputFile;
import org.apache.parquet.io.SeekableInputStream;

/**
 * The Parquet entry points Strata uses: files opened through the dataset's {@link Confinement}
 * (every open, footer and row groups alike, is a confined open), page checksums verified where
 * the writer wrote them, no filtering of any kind (a job gets every row it asked for), and
 * failures said in Strata's words, naming the file.
 */
public final class ParquetIo {
  private static final byte[] MAGIC = {'P', 'A', 'R', '1'};
  private static final byte[] ENCRYPTED_MAGIC = {'P', 'A', 'R', 'E'};

  /**
   * Options for one reader: page checksums verified where present; no statistics, dictionary,
   * bloom or record filtering. One set a reader, never shared: the options carry the codec
   * factory, whose decompressors keep state (two threads decompressing through one corrupt each
   * other's pages) and which a reader's close releases. Over a Hadoop configuration without its
   * default resources: the builder's own default parses core-default.xml and core-site.xml for
   * every reader (1.5 % of a node's CPU in issue 58's fleet), and none of their keys are parquet's.
   */
  static ParquetReadOptions options() {
    return new ParquetReadOptions.Builder(new org.apache.parquet.conf.HadoopParquetConfiguration(false))
        .usePageChecksumVerification(true)
        .useStatsFilter(false)
        .useDictionaryFilter(false)
        .useRecordFilter(false)
        .useBloomFilter(false)
        .useColumnIndexFilter(false)
        .build();
  }

  /** The codecs parquet-java decompresses with what this build brings (not BROTLI, LZO: their codecs are separate libraries). */
  public static final java.util.Set<org.apache.parquet.hadoop.metadata.CompressionCodecName> DECOMPRESSES = java.util.EnumSet.of(
      org.apache.parquet.hadoop.metadata.CompressionCodecName.UNCOMPRESSED,
      org.apache.parquet.hadoop.metadata.CompressionCodecName.SNAPPY,
      org.apache.parquet.hadoop.metadata.CompressionCodecName.GZIP,
      org.apache.parquet.hadoop.metadata.CompressionCodecName.ZSTD,
      org.apache.parquet.hadoop.metadata.CompressionCodecName.LZ4,
      org.apache.parquet.hadoop.metadata.CompressionCodecName.LZ4_RAW);

  /** Why a chunk under Parquet's deprecated LZ4 codec did not decode (see ParquetTable's legacyLz4). */
  static final String LEGACY_LZ4 = "its pages are compressed with Parquet's deprecated LZ4 codec, and not in Hadoop's"
      + " framing of it, the only one parquet-java reads (older Arrow writers wrote raw LZ4 blocks under that name): not"
      + " served; write the file again with LZ4_RAW (or another codec)";

  private ParquetIo() {}

  /**
   * A Parquet file read through {@code confinement}: each stream is a confined open of its own,
   * checking what it reads against {@code sums} (the file's recorded checksums; null for none).
   */
  static InputFile inputFile(Path file, Confinement confinement, StreamChecksums.File sums) throws IOException {
    long length;
    try (FileChannel ch = confinement.openRead(file)) {
      length = ch.size();
    }
    return new InputFile() {
      @Override
      public long getLength() {
        return length;
      }

      @Override
      public SeekableInputStream newStream() throws IOException {
        return new ChannelStream(confinement.openRead(file), sums == null ? null : sums.new Running(file));
      }

      @Override
      public String toString() {
        return file.toString();
      }
    };
  }

  /**
   * Reads the footer of {@code file}: its schema, row groups and their statistics. An empty,
   * truncated, encrypted or non-Parquet file is a {@link CorruptFileException} saying which.
   */
  public static ParquetMetadata footer(Path file, Confinement confinement) throws IOException {
    return footer(file, open(file, confinement));
  }

  /** The input of an existing file whose shape is Parquet's (see {@link #checkShape}), read through {@code confinement}. */
  static InputFile open(Path file, Confinement confinement) throws IOException {
    return open(file, confinement, null);
  }

  /** As {@link #open(Path, Confinement)}, its reads checked against {@code sums} (null for none). */
  static InputFile open(Path file, Confinement confinement, StreamChecksums.File sums) throws IOException {
    OrcIo.regularFileSize(file, "Parquet");
    checkShape(file, confinement);
    return inputFile(file, confinement, sums);
  }

  /** As {@link #footer(Path, Confinement)}, through {@code in} (from {@link #inputFile}), the file's shape checked already. */
  public static ParquetMetadata footer(Path file, InputFile in) throws IOException {
    try (ParquetFileReader r = ParquetFileReader.open(in, options())) {
      return r.getFooter();
    } catch (AccessDeniedException e) {
      throw e;
    } catch (IOException | RuntimeException e) {
      if (e.getCause() instanceof AccessDeniedException denied) {
        throw denied;
      }
      throw new CorruptFileException(file, "not a readable Parquet file: " + describe(e), e);
    }
  }

  /** Opens a reader of {@code file} over its known footer, with a stream of its own (one reader a read: readers are not thread-safe). */
  static ParquetFileReader reader(InputFile in, ParquetMetadata footer) throws IOException {
    SeekableInputStream s = in.newStream();
    boolean ok = false;
    try {
      ParquetFileReader r = new ParquetFileReader(in, footer, options(), s);
      ok = true;
      return r;
    } finally {
      if (!ok) {
        s.close();
      }
    }
  }

  /** Names the plain cases before the library sees the file: empty, too short, not Parquet, truncated, encrypted footer. */
  static void checkShape(Path file, Confinement confinement) throws IOException {
    try (FileChannel ch = confinement.openRead(file)) {
      long size = ch.size();
      if (size == 0) {
        throw new CorruptFileException(file, "the file is empty (0 bytes): not a Parquet file");
      }
      ByteBuffer head = ByteBuffer.allocate((int) Math.min(4, size));
      ch.read(head, 0);
      if (size < 4 || !Arrays.equals(head.array(), MAGIC)) {
        if (size >= 4 && Arrays.equals(head.array(), ENCRYPTED_MAGIC)) {
          throw encrypted(file);
        }
        throw new CorruptFileException(file, "not a Parquet file (it does not start with \"PAR1\")");
      }
      ByteBuffer tail = ByteBuffer.allocate((int) Math.min(8, size));
      ch.read(tail, size - tail.capacity());
      byte[] t = Arrays.copyOfRange(tail.array(), tail.capacity() - 4, tail.capacity());
      if (Arrays.equals(t, ENCRYPTED_MAGIC)) {
        throw encrypted(file);
      }
      if (size < 12 || !Arrays.equals(t, MAGIC)) {
        throw new CorruptFileException(file, "truncated: the file (" + size
            + " bytes) starts as Parquet but does not end with its footer");
      }
      int footerLength = tail.order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt(0);
      if (footerLength < 0 || footerLength > size - 12) {
        throw new CorruptFileException(file, "truncated or damaged: its footer length (" + footerLength
            + " bytes) does not fit in the file (" + size + " bytes)");
      }
    }
  }

  private static CorruptFileException encrypted(Path file) {
    return new CorruptFileException(file, "is encrypted with Parquet modular encryption (encrypted footer): not served;"
        + " Strata reads no keys, and without them nothing of the file can be read");
  }

  /** What went wrong in the library, in Strata's words (ORC's and Parquet's failures share most kinds). */
  static String describe(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      String m = String.valueOf(t.getMessage());
      String cls = t.getClass().getName();
      if (cls.endsWith("ParquetCryptoRuntimeException") || m.contains("encrypted")) {
        return "a part of it is encrypted with Parquet modular encryption, and Strata reads no keys";
      }
      if (cls.endsWith("ParquetDecodingException") && m.contains("CRC checksum")) {
        return "a page does not match its checksum (the file is damaged)";
      }
      if (m.contains("CRC checksum")) {
        return "a page does not match its checksum (the file is damaged)";
      }
      if (cls.contains("thrift") || cls.endsWith("TProtocolException") || m.contains("Required field")) {
        return "its metadata (the Parquet footer or a page header) is malformed";
      }
      if (t instanceof EOFException) {
        return "it ends before its data does (truncated?)";
      }
      if (cls.endsWith("BadConfigurationException") || m.contains("Class org.meteogroup") || m.contains("codec")
          || m.contains("Codec")) {
        java.util.regex.Matcher codec = java.util.regex.Pattern.compile("(\\w+)Codec").matcher(m);
        return "it is compressed with a codec this build cannot decompress"
            + (codec.find() ? " (" + codec.group(1).toUpperCase(java.util.Locale.ROOT) + ")" : "");
      }
    }
    return OrcIo.describeChain(e);
  }

  /** A positioned stream over a confined file channel, checking what it reads where the file's checksums are recorded. */
  private static final class ChannelStream extends SeekableInputStream {
    private final FileChannel ch;
    private final StreamChecksums.File.Running sums;
    private long pos;

    ChannelStream(FileChannel ch, StreamChecksums.File.Running sums) {
      this.ch = ch;
      this.sums = sums;
    }

    /** The {@code n} bytes before {@code buf}'s position were just read from {@code at}. */
    private void check(long at, ByteBuffer buf, int n) throws IOException {
      if (sums != null && n > 0) {
        ByteBuffer d = buf.duplicate();
        d.limit(d.position()).position(d.position() - n);
        sums.read(at, d);
      }
    }

    @Override
    public long getPos() {
      return pos;
    }

    @Override
    public void seek(long newPos) {
      pos = newPos;
    }

    @Override
    public int read() throws IOException {
      ByteBuffer one = ByteBuffer.allocate(1);
      return read(one) <= 0 ? -1 : one.get(0) & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      return read(ByteBuffer.wrap(b, off, len));
    }

    @Override
    public int read(ByteBuffer buf) throws IOException {
      if (!buf.hasRemaining()) {
        return 0;
      }
      int n = ch.read(buf, pos);
      if (n > 0) {
        check(pos, buf, n);
        pos += n;
      }
      return n;
    }

    @Override
    public void readFully(byte[] bytes) throws IOException {
      readFully(ByteBuffer.wrap(bytes));
    }

    @Override
    public void readFully(byte[] bytes, int start, int len) throws IOException {
      readFully(ByteBuffer.wrap(bytes, start, len));
    }

    @Override
    public void readFully(ByteBuffer buf) throws IOException {
      while (buf.hasRemaining()) {
        int n = ch.read(buf, pos);
        if (n < 0) {
          throw new EOFException("reached the end of the file at " + pos + " with " + buf.remaining() + " bytes still to read");
        }
        check(pos, buf, n);
        pos += n;
      }
    }

    @Override
    public void close() throws IOException {
      ch.close();
    }
  }

  /** One Parquet file as an import sees it: its schema, its row groups as chunks, its rows. */
  public record FileChunks(MessageType schema, List<ChunkInfo> chunks, long rows) {}

  /**
   * Reads {@code f}'s footer (file {@code fi} of a dataset, its first chunk numbered {@code
   * firstChunk} and its first row {@code firstRow}): each row group of at least one row a chunk
   * (its {@code stripe} the row group's index in the file), spanning the bytes of its readable
   * column chunks. Columns under Parquet modular encryption are named in {@code
   * encrypted} (field to why not served); a codec this build cannot decompress, or a file whose
   * every column is encrypted, is refused naming the file.
   */
  public static FileChunks chunks(Path f, int fi, int firstChunk, long firstRow, Map<String, String> encrypted) throws IOException {
    ParquetMetadata footer = footer(f, Confinement.NONE);
    List<ChunkInfo> out = new ArrayList<>();
    long fileRows = 0;
    List<BlockMetaData> groups = footer.getBlocks();
    for (int g = 0; g < groups.size(); g++) {
      BlockMetaData b = groups.get(g);
      if (b.getRowCount() == 0) {
        // pyarrow writes one for an empty table or an empty write between batches; parquet-java's reader
        // refuses to read one ("Illegal row group of 0 rows"). It holds nothing to serve: not a chunk.
        continue;
      }
      // The row group's bytes, from its readable column chunks (an encrypted one's offsets are encrypted too).
      long start = Long.MAX_VALUE;
      long end = 0;
      for (ColumnChunkMetaData c : b.getColumns()) {
        if (!c.isEncrypted() && !DECOMPRESSES.contains(c.getCodec())) {
          throw new CorruptFileException(f, "column '" + c.getPath().toDotString() + "' is compressed with " + c.getCodec()
              + ", which this build cannot decompress (it reads " + DECOMPRESSES + ")");
        }
        if (c.isEncrypted()) {
          encrypted.putIfAbsent(c.getPath().toArray()[0], "not served: encrypted with Parquet modular encryption; Strata"
              + " reads no keys, and without them its pages cannot be read");
          continue;
        }
        start = Math.min(start, c.getStartingPos());
        end = Math.max(end, c.getStartingPos() + c.getTotalSize());
      }
      if (start == Long.MAX_VALUE) {
        if (!b.getColumns().isEmpty()) {
          throw new CorruptFileException(f, "every column is encrypted with Parquet modular encryption: not served;"
              + " Strata reads no keys, and without them nothing of the file can be read");
        }
        start = 4;
        end = 4;
      }
      out.add(new ChunkInfo(firstChunk + out.size(), fi, g, start, end - start, firstRow + fileRows, b.getRowCount()));
      fileRows += b.getRowCount();
    }
    return new FileChunks(footer.getFileMetaData().getSchema(), out, fileRows);
  }
}
