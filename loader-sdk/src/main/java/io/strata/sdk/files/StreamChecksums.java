package io.strata.sdk.files;

import io.strata.sdk.CorruptFileException;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.Confinement;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.zip.CRC32C;
import org.apache.orc.OrcProto;
import org.apache.orc.Reader;
import org.apache.orc.RecordReader;
import org.apache.orc.StripeInformation;
import org.apache.orc.impl.RecordReaderImpl;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.io.InputFile;

/**
 * A CRC32C of every stream of every stripe of a dataset's ORC files (of every page, page index and
 * footer of its Parquet files: {@link #computeParquet}), recorded when the files are written or
 * imported ({@code streams.crc} in the dataset directory, named with its own CRC32C by
 * the manifest; docs/FORMAT.md §1.6) and checked on every read of those bytes: ORC compresses
 * streams and checks nothing of their bytes, so a damaged stream decodes to wrong values as often
 * as to an error. Readers read whole streams (orc-core asks for one range per stream, merged where
 * they touch), so checking the recorded streams a read covers checks every byte a reader decodes,
 * for a CRC32C (gigabytes a second) rather than a second decode.
 *
 * <p>Loaded per dataset; the checksums of one file ({@link File}) are registered with {@link
 * OrcReads} while a table has that file open. Immutable once loaded; shared by every thread.
 */
public final class StreamChecksums {
  /** The file's name in the dataset directory. */
  public static final String FILE_NAME = "streams.crc";
  private static final byte[] MAGIC = "STRATACK".getBytes(StandardCharsets.US_ASCII);
  private static final int VERSION = 1;
  /** Bytes of one stream's entry: offset, length, stripe, column, kind, CRC32C. */
  private static final int ENTRY = 8 + 8 + 4 + 4 + 4 + 4;

  private final List<File> files;

  private StreamChecksums(List<File> files) {
    this.files = files;
  }

  /** The checksums of file {@code index} (the manifest's order). */
  File file(int index) {
    return files.get(index);
  }

  /** The streams of one ORC file, sorted by offset, with their stripe, column, kind and CRC32C. */
  static final class File {
    private final long[] start;
    private final long[] length;
    private final int[] stripe;
    private final int[] column;
    private final int[] kind;
    private final int[] crc;
    /** Whether the file is Parquet: a stripe is a row group, a column a leaf column, a kind one of {@link #PARQUET_KINDS}. */
    private final boolean parquet;

    private File(long[] start, long[] length, int[] stripe, int[] column, int[] kind, int[] crc, boolean parquet) {
      this.parquet = parquet;
      this.start = start;
      this.length = length;
      this.stripe = stripe;
      this.column = column;
      this.kind = kind;
      this.crc = crc;
    }

    /**
     * The streams of {@code entries}, each {@code [offset, length, stripe, column, kind, crc]}, in
     * offset order, of an ORC file or ({@code parquet}) a Parquet one.
     */
    static File of(List<long[]> entries, boolean parquet) {
      int n = entries.size();
      long[] start = new long[n];
      long[] length = new long[n];
      int[] stripe = new int[n];
      int[] column = new int[n];
      int[] kind = new int[n];
      int[] crc = new int[n];
      for (int i = 0; i < n; i++) {
        long[] e = entries.get(i);
        start[i] = e[0];
        length[i] = e[1];
        stripe[i] = (int) e[2];
        column[i] = (int) e[3];
        kind[i] = (int) e[4];
        crc[i] = (int) e[5];
      }
      return new File(start, length, stripe, column, kind, crc, parquet);
    }

    int streams() {
      return start.length;
    }

    /** Stream {@code i}'s ORC column id. */
    int column(int i) {
      return column[i];
    }

    /** Stream {@code i}'s kind ({@code OrcProto.Stream.Kind}). */
    OrcProto.Stream.Kind kind(int i) {
      return OrcProto.Stream.Kind.forNumber(kind[i]);
    }

    /** Stream {@code i}: its offset, length and stripe. */
    long[] stream(int i) {
      return new long[] {start[i], length[i], stripe[i]};
    }

    /**
     * Checks every recorded stream that lies wholly in {@code data}, the bytes of {@code file}
     * from {@code position} on; a {@link CorruptFileException} naming the stripe, column and
     * stream whose bytes differ from what was recorded.
     */
    void check(Path file, long position, ByteBuffer data) throws CorruptFileException {
      long end = position + data.remaining();
      int i = Arrays.binarySearch(start, position);
      if (i < 0) {
        i = -i - 1;
      }
      CRC32C c = new CRC32C();
      for (; i < start.length && start[i] + length[i] <= end; i++) {
        if (length[i] == 0) {
          continue;
        }
        ByteBuffer slice = data.duplicate();
        int from = data.position() + (int) (start[i] - position);
        slice.limit(from + (int) length[i]).position(from);
        c.reset();
        c.update(slice);
        compare(file, i, (int) c.getValue());
      }
    }

    private void compare(Path file, int i, int got) throws CorruptFileException {
      if (got != crc[i]) {
        throw new CorruptFileException(file, where(i) + " is damaged: its bytes [" + start[i] + ", " + (start[i] + length[i])
            + ") have CRC32C " + hex(got) + ", recorded " + hex(crc[i]) + " when the file was "
            + (parquet ? "imported" : "written"));
      }
    }

    private String where(int i) {
      if (!parquet) {
        return "stripe " + stripe[i] + " column " + column[i] + " " + kindName(kind[i]) + " stream";
      }
      String what = kind[i] >= 0 && kind[i] < PARQUET_KINDS.length ? PARQUET_KINDS[kind[i]] : "kind " + kind[i];
      return kind[i] == FOOTER ? "the " + what : "row group " + stripe[i] + " column chunk " + column[i] + " " + what;
    }

    /**
     * Checks the bytes a stream reads, in the order it reads them: a recorded range read from its
     * first byte to its last, in one read or several in a row (parquet-java reads a run of column
     * chunks into buffers of at most 8 MiB each), is checked when its last byte arrives. Ranges
     * read only in part, or from a place inside them, are not checked (no reader of a file whose
     * footer and page indexes are themselves checked reads so). Belongs to one stream.
     */
    final class Running {
      private final Path path;
      private final CRC32C c = new CRC32C();
      private int entry = -1;
      private long next;

      Running(Path path) {
        this.path = path;
      }

      /** {@code data}'s remaining bytes were just read from {@code position} on. */
      void read(long position, ByteBuffer data) throws CorruptFileException {
        long end = position + data.remaining();
        long at = position;
        while (at < end) {
          if (entry < 0 || at != next) {
            int i = Arrays.binarySearch(start, at);
            if (i < 0) {
              i = -i - 1;
            }
            while (i < start.length && length[i] == 0) {
              i++;
            }
            if (i >= start.length || start[i] >= end) {
              entry = -1;
              return;
            }
            entry = i;
            at = start[i];
            next = at;
            c.reset();
          }
          long entryEnd = start[entry] + length[entry];
          int take = (int) (Math.min(end, entryEnd) - at);
          int from = data.position() + (int) (at - position);
          c.update(data.duplicate().limit(from + take).position(from));
          at += take;
          next = at;
          if (next == entryEnd) {
            int done = entry;
            entry = -1;
            compare(path, done, (int) c.getValue());
          }
        }
      }
    }

    /** Checks every recorded stream of the whole file (a verify pass): the first damaged one's error, or none. */
    void checkAll(Path file, FileChannel ch) throws IOException {
      for (int i = 0; i < start.length; i++) {
        ByteBuffer b = ByteBuffer.allocate(Math.toIntExact(length[i]));
        while (b.hasRemaining()) {
          if (ch.read(b, start[i] + b.position()) < 0) {
            throw new CorruptFileException(file, "truncated: stripe " + stripe[i] + " ends past the end of the file");
          }
        }
        b.flip();
        check(file, start[i], b);
      }
    }
  }

  /** What a Parquet entry's kind names. */
  static final String[] PARQUET_KINDS = {"(all its pages)", "dictionary page", "data page", "offset index", "column index", "footer"};
  static final int CHUNK = 0;
  static final int DICTIONARY = 1;
  static final int PAGE = 2;
  static final int OFFSET_INDEX = 3;
  static final int COLUMN_INDEX = 4;
  static final int FOOTER = 5;

  private static String kindName(int kind) {
    OrcProto.Stream.Kind k = OrcProto.Stream.Kind.forNumber(kind);
    return k == null ? "kind " + kind : k.name();
  }

  private static String hex(int v) {
    return HexFormat.of().toHexDigits(v);
  }

  /** Computes the checksums of ORC file {@code orc}, open as {@code reader}: reads every stream once. */
  static File compute(Path orc, Reader reader) throws IOException {
    List<long[]> entries = new ArrayList<>(); // start, length, stripe, column, kind, crc
    List<StripeInformation> stripes = reader.getStripes();
    try (RecordReader rr = reader.rows(); FileChannel ch = FileChannel.open(orc)) {
      if (!(rr instanceof RecordReaderImpl impl)) {
        throw new IOException("orc-core gave no stripe footers for " + orc);
      }
      CRC32C c = new CRC32C();
      for (int s = 0; s < stripes.size(); s++) {
        StripeInformation si = stripes.get(s);
        OrcProto.StripeFooter footer = impl.readStripeFooter(si);
        long at = si.getOffset();
        ByteBuffer body = ByteBuffer.allocate(Math.toIntExact(si.getIndexLength() + si.getDataLength()));
        while (body.hasRemaining()) {
          if (ch.read(body, at + body.position()) < 0) {
            throw new CorruptFileException(orc, "stripe " + s + " runs past the end of the file");
          }
        }
        for (OrcProto.Stream st : footer.getStreamsList()) {
          long len = st.getLength();
          long rel = at - si.getOffset();
          if (rel + len > body.capacity()) {
            throw new CorruptFileException(orc, "stripe " + s + "'s streams run past its index and data");
          }
          c.reset();
          c.update(body.duplicate().limit((int) (rel + len)).position((int) rel));
          entries.add(new long[] {at, len, s, st.getColumn(), st.getKind().getNumber(), (int) c.getValue()});
          at += len;
        }
      }
    }
    entries.sort(Comparator.comparingLong(e -> e[0]));
    return File.of(entries, false);
  }

  /**
   * Computes the checksums of Parquet file {@code file}: its footer, every column chunk (page by
   * page where the writer wrote an offset index: a read of some rows reads some pages, and each
   * is checked on its own; the dictionary pages before the first data page as one range), and
   * its offset and column indexes, which say where the pages are. Row groups of no rows hold no
   * pages that are read; encrypted column chunks are left out (never read).
   */
  static File computeParquet(Path file) throws IOException {
    List<long[]> entries = new ArrayList<>();
    InputFile in = ParquetIo.open(file, Confinement.NONE);
    ParquetMetadata footer = ParquetIo.footer(file, in);
    try (ParquetFileReader reader = ParquetIo.reader(in, footer); FileChannel ch = FileChannel.open(file)) {
      long size = ch.size();
      ByteBuffer tail = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
      read(file, ch, tail, size - 8);
      long footerLength = Integer.toUnsignedLong(tail.getInt(0));
      entries.add(entry(file, ch, size - 8 - footerLength, footerLength, 0, 0, FOOTER));
      List<BlockMetaData> groups = footer.getBlocks();
      for (int g = 0; g < groups.size(); g++) {
        List<ColumnChunkMetaData> columns = groups.get(g).getColumns();
        for (int col = 0; col < columns.size(); col++) {
          ColumnChunkMetaData m = columns.get(col);
          if (m.isEncrypted()) {
            continue;
          }
          if (m.getColumnIndexReference() != null) {
            entries.add(entry(file, ch, m.getColumnIndexReference().getOffset(), m.getColumnIndexReference().getLength(),
                g, col, COLUMN_INDEX));
          }
          if (groups.get(g).getRowCount() == 0) {
            continue;
          }
          long start = m.getStartingPos();
          long end = start + m.getTotalSize();
          List<long[]> pages = new ArrayList<>();
          if (m.getOffsetIndexReference() != null) {
            entries.add(entry(file, ch, m.getOffsetIndexReference().getOffset(), m.getOffsetIndexReference().getLength(),
                g, col, OFFSET_INDEX));
            org.apache.parquet.internal.column.columnindex.OffsetIndex index = reader.readOffsetIndex(m);
            long at = start;
            if (index != null && index.getPageCount() > 0 && index.getOffset(0) >= start) {
              if (index.getOffset(0) > start) {
                pages.add(new long[] {start, index.getOffset(0) - start, DICTIONARY});
              }
              at = index.getOffset(0);
              for (int p = 0; p < index.getPageCount() && at == index.getOffset(p); p++) {
                pages.add(new long[] {at, index.getCompressedPageSize(p), PAGE});
                at += index.getCompressedPageSize(p);
              }
            }
            if (at != end) {
              pages.clear(); // the pages do not tile the chunk: checked as a whole
            }
          }
          if (pages.isEmpty()) {
            pages.add(new long[] {start, end - start, CHUNK});
          }
          for (long[] p : pages) {
            entries.add(entry(file, ch, p[0], p[1], g, col, (int) p[2]));
          }
        }
      }
    }
    entries.sort(Comparator.comparingLong(e -> e[0]));
    for (int i = 1; i < entries.size(); i++) {
      if (entries.get(i - 1)[0] + entries.get(i - 1)[1] > entries.get(i)[0]) {
        throw new CorruptFileException(file, "its column chunks, page indexes or footer overlap (the footer is damaged)");
      }
    }
    return File.of(entries, true);
  }

  private static long[] entry(Path file, FileChannel ch, long offset, long length, int group, int column, int kind)
      throws IOException {
    if (offset < 0 || length < 0 || length > Integer.MAX_VALUE - 16 || offset + length > ch.size()) {
      throw new CorruptFileException(file, "its footer places " + PARQUET_KINDS[kind] + " bytes [" + offset + ", "
          + (offset + length) + ") outside the file (" + ch.size() + " bytes)");
    }
    ByteBuffer b = ByteBuffer.allocate((int) length);
    read(file, ch, b, offset);
    CRC32C c = new CRC32C();
    c.update(b.flip());
    return new long[] {offset, length, group, column, kind, (int) c.getValue()};
  }

  private static void read(Path file, FileChannel ch, ByteBuffer b, long at) throws IOException {
    while (b.hasRemaining()) {
      if (ch.read(b, at + b.position()) < 0) {
        throw new CorruptFileException(file, "truncated: it ends at " + ch.size() + " bytes, before its data does");
      }
    }
  }

  /** As {@link #write}, for a dataset whose files are Parquet. */
  public static Manifest.StreamChecksumsInfo writeParquet(Path target, String manifestPath, List<Path> files) throws IOException {
    List<File> computed = new ArrayList<>();
    for (Path f : files) {
      computed.add(computeParquet(f));
    }
    return writeAll(target, manifestPath, computed);
  }

  /**
   * Computes the checksums of the dataset's files ({@code files}, the manifest's order, with their
   * absolute paths) and writes them to {@code target} atomically; returns what the manifest
   * records of them, {@code manifestPath} being {@code target}'s path from the dataset directory.
   */
  public static Manifest.StreamChecksumsInfo write(Path target, String manifestPath, List<Path> files) throws IOException {
    List<File> computed = new ArrayList<>();
    for (Path f : files) {
      try (Reader reader = OrcIo.open(f)) {
        computed.add(compute(f, reader));
      }
    }
    return writeAll(target, manifestPath, computed);
  }

  private static Manifest.StreamChecksumsInfo writeAll(Path target, String manifestPath, List<File> computed) throws IOException {
    long size = MAGIC.length + 4 + 4 + 4L;
    for (File f : computed) {
      size += 4 + (long) ENTRY * f.streams();
    }
    if (size > Integer.MAX_VALUE - 16) {
      throw new IOException("the stream checksums " + target + " are too large (" + size + " bytes)");
    }
    ByteBuffer b = ByteBuffer.allocate((int) size).order(ByteOrder.LITTLE_ENDIAN);
    b.put(MAGIC).putInt(VERSION).putInt(computed.size());
    for (File f : computed) {
      b.putInt(f.streams());
      for (int i = 0; i < f.streams(); i++) {
        b.putLong(f.start[i]).putLong(f.length[i]).putInt(f.stripe[i]).putInt(f.column[i]).putInt(f.kind[i]).putInt(f.crc[i]);
      }
    }
    CRC32C sum = new CRC32C();
    sum.update(b.array(), 0, b.position());
    b.putInt((int) sum.getValue());
    byte[] bytes = Arrays.copyOf(b.array(), b.position());
    AtomicFiles.write(target, bytes);
    CRC32C whole = new CRC32C();
    whole.update(bytes);
    return new Manifest.StreamChecksumsInfo(manifestPath, hex((int) whole.getValue()));
  }

  /**
   * The checksums {@code m} records for the dataset in {@code dir}, read through {@code
   * confinement}; null when the manifest records none. A file that is missing, damaged or not
   * the one recorded is a {@link CorruptFileException}: reads would otherwise go unchecked.
   */
  static StreamChecksums load(Path dir, Manifest m, Confinement confinement) throws IOException {
    Manifest.StreamChecksumsInfo info = m.streamChecksums();
    if (info == null) {
      return null;
    }
    Path p = dir.resolve(info.path());
    byte[] all;
    try {
      all = confinement.readAllBytes(p);
    } catch (NoSuchFileException e) {
      throw new CorruptFileException(p, "the dataset's stream checksums are missing (the manifest records them)");
    }
    CRC32C whole = new CRC32C();
    whole.update(all);
    if (!hex((int) whole.getValue()).equals(info.crc32c())) {
      throw new CorruptFileException(p, "the dataset's stream checksums are damaged or not the manifest's (CRC32C "
          + hex((int) whole.getValue()) + ", the manifest records " + info.crc32c() + ")");
    }
    ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
    byte[] magic = new byte[MAGIC.length];
    b.get(magic);
    if (!Arrays.equals(magic, MAGIC) || b.getInt() != VERSION) {
      throw new CorruptFileException(p, "not Strata stream checksums of a version this build reads (1)");
    }
    int count = b.getInt();
    if (count != m.files().size()) {
      throw new CorruptFileException(p, "holds the checksums of " + count + " files, the manifest names " + m.files().size());
    }
    List<File> files = new ArrayList<>(count);
    for (int f = 0; f < count; f++) {
      int n = b.getInt();
      if (n < 0 || (long) n * ENTRY > b.remaining() - 4) {
        throw new CorruptFileException(p, "file " + f + "'s entry is truncated");
      }
      List<long[]> entries = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        entries.add(new long[] {b.getLong(), b.getLong(), b.getInt(), b.getInt(), b.getInt(), b.getInt()});
      }
      files.add(File.of(entries, m.fileFormat() == Manifest.FileFormat.PARQUET));
    }
    return new StreamChecksums(List.copyOf(files));
  }
}
