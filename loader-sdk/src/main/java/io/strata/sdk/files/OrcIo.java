package io.strata.sdk.files;

import io.strata.sdk.CorruptFileException;
import io.strata.sdk.internal.Confinement;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.BufferOverflowException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.zip.DataFormatException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.hive.ql.io.sarg.PredicateLeaf;
import org.apache.hadoop.hive.ql.io.sarg.SearchArgument;
import org.apache.hadoop.hive.ql.io.sarg.SearchArgumentFactory;
import org.apache.orc.MemoryManager;
import org.apache.orc.OrcFile;
import org.apache.orc.Reader;
import org.apache.orc.TypeDescription;
import org.apache.orc.impl.BufferChunk;
import org.apache.orc.impl.OrcTail;

/**
 * The ORC entry points Strata uses: a Hadoop {@code Configuration} without default resources and
 * a raw local file system (no {@code .crc} side files, no login machinery).
 */
public final class OrcIo {
  public static final Configuration CONF = new Configuration(false);
  public static final FileSystem FS = localFileSystem();

  private OrcIo() {}

  private static FileSystem localFileSystem() {
    RawLocalFileSystem fs = new CountingFileSystem();
    try {
      fs.initialize(URI.create("file:///"), CONF);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return fs;
  }

  public static Path hadoopPath(java.nio.file.Path p) {
    return new Path(p.toAbsolutePath().toUri());
  }

  /** Opens an ORC file's reader, translating failures into errors that name the file. */
  public static Reader open(java.nio.file.Path file) throws IOException {
    return open(file, FS, Confinement.NONE);
  }

  /**
   * The file system that ORC opens files through under {@code confinement}: the shared one when
   * it confines nothing, else one of its own whose every open is confined.
   */
  static FileSystem fileSystem(Confinement confinement) {
    if (!confinement.confined()) {
      return FS;
    }
    RawLocalFileSystem fs = new CountingFileSystem(confinement);
    try {
      fs.initialize(URI.create("file:///"), CONF);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return fs;
  }

  /** As {@link #open(java.nio.file.Path)}, through {@code fs} (from {@link #fileSystem}) and its {@code confinement}. */
  public static Reader open(java.nio.file.Path file, FileSystem fs, Confinement confinement) throws IOException {
    return open(file, fs, confinement, null);
  }

  /**
   * As {@link #open(java.nio.file.Path, FileSystem, Confinement)}, with the file's tail (postscript,
   * footer and metadata) taken from {@code sameFile}, a reader of the same file opened before,
   * instead of read again (null: read it).
   */
  static Reader open(java.nio.file.Path file, FileSystem fs, Confinement confinement, Reader sameFile) throws IOException {
    return open(file, fs, confinement, sameFile, null);
  }

  /** As above, with the file's tail from {@code carried} (a dataset's {@link FileTails}; null: read it or take {@code sameFile}'s). */
  static Reader open(java.nio.file.Path file, FileSystem fs, Confinement confinement, Reader sameFile, OrcTail carried)
      throws IOException {
    long size = regularFileSize(file, "ORC");
    if (size == 0) {
      // orc-core would open it as an ORC file of no rows (Hive writes such files).
      checkShape(file, confinement);
    }
    try {
      OrcFile.ReaderOptions options = OrcFile.readerOptions(CONF).filesystem(fs).useUTCTimestamp(true);
      if (sameFile != null) {
        // The tail as the first reader read it: the file's last bytes (placed by the length that
        // reader saw, not by the file's length now), and their parse.
        ByteBuffer tail = sameFile.getSerializedFileFooter().duplicate();
        long length = sameFile.getFileTail().getFileLength();
        options.orcTail(new OrcTail(sameFile.getFileTail(), new BufferChunk(tail, (length > 0 ? length : size) - tail.remaining()), -1));
      } else if (carried != null) {
        options.orcTail(carried);
      }
      return OrcFile.createReader(hadoopPath(file), options);
    } catch (AccessDeniedException e) {
      throw e; // refused by the confinement: said as it is
    } catch (IOException | RuntimeException e) {
      if (e.getCause() instanceof AccessDeniedException denied) {
        throw denied;
      }
      if (strataCause(e) != null) {
        throw strataCause(e);
      }
      // Only now look at the file's shape (two more reads, which a file that opens never pays):
      // the plain cases get their own message rather than orc-core's.
      checkShape(file, confinement);
      throw new CorruptFileException(file, "not a readable ORC file: " + describeChain(e), e);
    }
  }

  private static final byte[] MAGIC = {'O', 'R', 'C'};

  /**
   * Names the plain cases: an empty file (which orc-core would take for an ORC file of no rows),
   * and, once orc-core failed on a file (it reports them as a protobuf or type-id error), a file
   * without ORC's "ORC" header and a truncated one, whose last bytes are not the postscript's "ORC"
   * followed by the postscript's length.
   */
  static void checkShape(java.nio.file.Path file) throws IOException {
    checkShape(file, Confinement.NONE);
  }

  static void checkShape(java.nio.file.Path file, Confinement confinement) throws IOException {
    try (FileChannel ch = confinement.openRead(file)) {
      long size = ch.size();
      if (size == 0) {
        throw new CorruptFileException(file, "the file is empty (0 bytes): not an ORC file");
      }
      ByteBuffer head = ByteBuffer.allocate((int) Math.min(3, size));
      ch.read(head, 0);
      OrcReads.countRequest(file, 0, head.capacity());
      if (size < 3 || !Arrays.equals(head.array(), MAGIC)) {
        throw new CorruptFileException(file, "not an ORC file (it does not start with \"ORC\")");
      }
      ByteBuffer tail = ByteBuffer.allocate((int) Math.min(4, size));
      ch.read(tail, size - tail.capacity());
      OrcReads.countRequest(file, size - tail.capacity(), tail.capacity());
      byte[] t = tail.array();
      if (size < 4 || t[0] != 'O' || t[1] != 'R' || t[2] != 'C') {
        throw new CorruptFileException(file, "truncated: the file (" + size
            + " bytes) starts as ORC but does not end with its footer");
      }
    }
  }

  /**
   * Makes {@code RecordReader.seekToRow} safe on files with bloom filters. orc-core 2.3 plans the
   * row-index read of a seek with a null column mask when no search argument is set, and fails
   * with a NullPointerException as soon as a stripe holds a bloom filter stream. A search argument
   * that is true for every row group ({@code c IS NULL OR NOT c IS NULL} on one primitive column)
   * gives it the mask and skips nothing.
   */
  static void enableSeeking(Reader.Options options, TypeDescription schema) {
    List<String> names = schema.getFieldNames();
    for (int i = 0; i < names.size(); i++) {
      PredicateLeaf.Type type = leafType(schema.getChildren().get(i));
      if (type != null) {
        String column = names.get(i);
        SearchArgument always =
            SearchArgumentFactory.newBuilder()
                .startOr()
                .isNull(column, type)
                .startNot()
                .isNull(column, type)
                .end()
                .end()
                .build();
        options.searchArgument(always, new String[] {column});
        return;
      }
    }
  }

  private static PredicateLeaf.Type leafType(TypeDescription t) {
    return switch (t.getCategory()) {
      case BOOLEAN -> PredicateLeaf.Type.BOOLEAN;
      case BYTE, SHORT, INT, LONG -> PredicateLeaf.Type.LONG;
      case FLOAT, DOUBLE -> PredicateLeaf.Type.FLOAT;
      case STRING, VARCHAR, CHAR -> PredicateLeaf.Type.STRING;
      case DATE -> PredicateLeaf.Type.DATE;
      case TIMESTAMP -> PredicateLeaf.Type.TIMESTAMP;
      case DECIMAL -> PredicateLeaf.Type.DECIMAL;
      default -> null;
    };
  }

  /** Words of a library's own that a message to a user must not carry (class names, buffer dumps, JVM phrasing). */
  private static final Pattern LIBRARY_WORDS = Pattern.compile(
      "java\\.|javax\\.|org\\.apache|com\\.google|\\$|Exception|Error\\b|Cannot (read|invoke|load|store|assign)"
          + "|out of bounds for length|ByteBuffer|\\bnull\\b|protocol message|\\bthis\\.");

  /**
   * What went wrong when orc-core failed on a file's bytes, in words of Strata's own: the kind
   * of damage its failure shows (a length or offset out of range, a stream missing, data that
   * does not decompress, a file that ends early), never the library's class names or internal
   * messages; a message of Strata's own (a value out of range) is kept. The library's exception
   * stays the cause, for a stack trace under {@code STRATA_DEBUG}.
   */
  static String describeChain(Throwable e) {
    Set<Throwable> seen = new HashSet<>();
    String kept = null;
    for (Throwable t = e; t != null && seen.add(t); t = t.getCause()) {
      String kind = kindOf(t);
      if (kind != null) {
        return kind;
      }
      String m = t.getMessage();
      if (kept == null && m != null && !m.isBlank() && !LIBRARY_WORDS.matcher(m).find()) {
        kept = m.replaceAll(" in file:\\S+", "").strip();
      }
    }
    return kept != null ? kept : "its encoded data is malformed (damaged, or written by a faulty writer)";
  }

  /**
   * The size of {@code file}, a regular file (else "{@code format} file does not exist"). A file
   * system that cannot be asked (a name node down) is an error of its own, not a missing file.
   */
  static long regularFileSize(java.nio.file.Path file, String format) throws IOException {
    BasicFileAttributes a;
    try {
      a = Files.readAttributes(file, BasicFileAttributes.class);
    } catch (NoSuchFileException e) {
      a = null;
    }
    if (a == null || !a.isRegularFile()) {
      throw new NoSuchFileException(file.toString(), null, format + " file does not exist");
    }
    return a.size();
  }

  /**
   * A failure of the file system under a read of {@code what} in {@code file} (a name node or
   * DataNode that cannot be reached, access refused) found among {@code e}'s causes, as an I/O error
   * naming the file, what was read and the file system's reason; null when none of {@code e}'s
   * causes is the file system's. A reader's failure to reach its data is not damage in the data.
   */
  static FileSystemException readFailure(java.nio.file.Path file, String what, Throwable e) {
    Set<Throwable> seen = new HashSet<>();
    for (Throwable t = e; t != null && seen.add(t); t = t.getCause()) {
      if (t instanceof FileSystemException f) {
        String reason = "cannot read " + what + ": " + (f.getReason() != null ? f.getReason() : f.getMessage());
        FileSystemException r = f instanceof AccessDeniedException
            ? new AccessDeniedException(file.toString(), null, reason) : new FileSystemException(file.toString(), null, reason);
        r.initCause(e);
        return r;
      }
    }
    return null;
  }

  /** A {@link CorruptFileException} of Strata's own in {@code e}'s causes (orc-core wraps what its streams throw), or null. */
  static CorruptFileException strataCause(Throwable e) {
    Set<Throwable> seen = new HashSet<>();
    for (Throwable t = e; t != null && seen.add(t); t = t.getCause()) {
      if (t instanceof CorruptFileException c) {
        return c;
      }
    }
    return null;
  }

  /** The kind of damage a library failure shows, or null where its type says nothing. */
  private static String kindOf(Throwable t) {
    String m = String.valueOf(t.getMessage());
    if (t instanceof IndexOutOfBoundsException || t instanceof NegativeArraySizeException
        || t instanceof BufferUnderflowException || t instanceof BufferOverflowException) {
      return "its encoded data points outside itself (a length, offset or dictionary entry out of range)";
    }
    if (t instanceof NullPointerException) {
      return "a stream its encoding needs is missing";
    }
    if (t instanceof DataFormatException || m.contains("Decompress") || m.contains("decompress")
        || m.contains("buffer too small") || m.contains("Corrupt input") || m.contains("invalid stored block")
        || m.contains("incorrect header check") || m.contains("Malformed input") || m.contains("FAILED_TO_UNCOMPRESS")
        || m.contains("uncompress")) {
      return "its compressed data does not decompress";
    }
    if (m.contains("bitWidth must be") || m.contains("bit width") || m.contains("Invalid bit width")) {
      return "its encoded data is malformed (a bit-packed run of an impossible width)";
    }
    if (t instanceof EOFException || m.contains("Read past end") || m.contains("past EOF") || m.contains("Can't finish")) {
      return "it ends before its data does (truncated?)";
    }
    if (t.getClass().getName().endsWith("InvalidProtocolBufferException") || (m.contains("stripe") && m.contains("footer"))) {
      return "its metadata (ORC's footer or a stripe footer) is malformed";
    }
    return null;
  }

  /** A memory manager that never forces a stripe flush: stripes end only where the writer says. */
  public static final class ExplicitStripes implements MemoryManager {
    @Override
    public void addWriter(Path path, long requestedAllocation, Callback callback) {}

    @Override
    public void removeWriter(Path path) {}

    @Override
    @SuppressWarnings("deprecation")
    public void addedRow(int rows) {}

    @Override
    public long checkMemory(long previousAllocation, Callback writer) {
      return previousAllocation;
    }
  }
}
