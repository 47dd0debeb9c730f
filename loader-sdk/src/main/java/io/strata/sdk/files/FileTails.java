package io.strata.sdk.files;

import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.Confinement;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;
import org.apache.orc.OrcProto;
import org.apache.orc.Reader;
import org.apache.orc.impl.BufferChunk;
import org.apache.orc.impl.OrcTail;

/**
 * The metadata a reader of a dataset version's ORC files reads before any data: each file's tail
 * (postscript, footer and metadata) and its stripe-footer sidecar ({@link StripeFooters}), all in
 * one file beside the version's files ({@code tails.bin}, docs/FORMAT.md §1.4), so that a job
 * opening the dataset reads them with one request instead of two trips to the end of every file
 * (on a disk that seeks, 4 + 4 of about 5 ms each for a dataset of four files).
 *
 * <p>Best effort, as the sidecars are: written after the files (by {@code dataset generate},
 * {@code import} and {@code relayout}); a reader uses a file's entry only if the entry names the
 * file as the manifest does (path, CRC32C and size) and the whole file's own checksum holds, and
 * reads the file's tail itself otherwise. Immutable once loaded: shared by the threads of a table.
 */
public final class FileTails {
  /** The file's name, in the directory of the version's files. */
  public static final String FILE_NAME = "tails.bin";
  private static final byte[] MAGIC = "STRATATL".getBytes(StandardCharsets.US_ASCII);
  private static final int VERSION = 1;
  /** The largest tails file read: metadata, never data (a dataset's footers are kilobytes to a few megabytes). */
  private static final long MAX_BYTES = 256L << 20;

  /** One file's metadata: its tail as orc-core parsed it, the tail's bytes and its stripe-footer sidecar (null: none). */
  record Entry(String path, String crc32c, long bytes, byte[] fileTail, byte[] footer, byte[] sidecar) {
    /** The tail as orc-core takes it instead of reading it ({@code OrcFile.ReaderOptions.orcTail}). */
    OrcTail orcTail() throws IOException {
      OrcProto.FileTail t = OrcProto.FileTail.parseFrom(fileTail);
      long length = t.getFileLength() > 0 ? t.getFileLength() : bytes;
      return new OrcTail(t, new BufferChunk(ByteBuffer.wrap(footer), length - footer.length), -1);
    }
  }

  private final Map<String, Entry> byPath;

  private FileTails(Map<String, Entry> byPath) {
    this.byPath = byPath;
  }

  /** The entry of file {@code info} if it names that file as the manifest does, else null. */
  Entry of(Manifest.OrcFileInfo info) {
    Entry e = byPath.get(info.path());
    return e != null && e.crc32c().equals(info.crc32c()) && e.bytes() == info.bytes() ? e : null;
  }

  /**
   * Where the tails of {@code m}'s files live: the directory of its first file where that lies in
   * the dataset directory {@code dir} (a relayout's layout directory, or {@code dir} itself), else
   * {@code dir} (files imported from elsewhere).
   */
  public static Path location(Path dir, Manifest m) {
    Path root = dir.toAbsolutePath().normalize();
    if (!m.files().isEmpty()) {
      Path parent = DatasetFiles.resolve(root, m.files().getFirst().path()).normalize().getParent();
      if (parent != null && parent.startsWith(root)) {
        return parent.resolve(FILE_NAME);
      }
    }
    return root.resolve(FILE_NAME);
  }

  /**
   * Writes the tails of the ORC files of {@code m} (the dataset in {@code dir}), atomically; the
   * files lying outside {@code dir} are left out. Returns the file written, or null where the
   * dataset is not ORC or none of its files is inside {@code dir}.
   */
  public static Path write(Path dir, Manifest m) throws IOException {
    if (m.fileFormat() != Manifest.FileFormat.ORC) {
      return null;
    }
    Path root = dir.toAbsolutePath().normalize();
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    int count = 0;
    ByteArrayOutputStream entries = new ByteArrayOutputStream();
    DataOutputStream e = new DataOutputStream(entries);
    for (Manifest.OrcFileInfo info : m.files()) {
      Path f = DatasetFiles.resolve(root, info.path()).normalize();
      if (!f.startsWith(root) || !Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
        continue;
      }
      byte[] tail;
      byte[] footer;
      try (Reader reader = OrcIo.open(f)) {
        tail = reader.getFileTail().toByteArray();
        ByteBuffer b = reader.getSerializedFileFooter().duplicate();
        footer = new byte[b.remaining()];
        b.get(footer);
      }
      Path side = StripeFooters.sidecar(f);
      byte[] sidecar = Files.isRegularFile(side, LinkOption.NOFOLLOW_LINKS) ? Files.readAllBytes(side) : new byte[0];
      byte[] path = info.path().getBytes(StandardCharsets.UTF_8);
      byte[] crc = info.crc32c().getBytes(StandardCharsets.US_ASCII);
      e.writeInt(path.length);
      e.write(path);
      e.writeInt(crc.length);
      e.write(crc);
      e.writeLong(info.bytes());
      for (byte[] part : List.of(tail, footer, sidecar)) {
        e.writeInt(part.length);
        e.write(part);
      }
      count++;
    }
    if (count == 0) {
      return null;
    }
    out.write(MAGIC);
    out.writeInt(VERSION);
    out.writeInt(count);
    out.write(entries.toByteArray());
    CRC32C sum = new CRC32C();
    sum.update(bytes.toByteArray());
    out.writeInt((int) sum.getValue());
    Path target = location(dir, m);
    AtomicFiles.write(target, bytes.toByteArray());
    return target;
  }

  /**
   * The tails of the dataset {@code m} in {@code dir}, read through {@code confinement} (one
   * request, counted as such: {@link OrcReads}); null where there is no tails file, or it is not
   * whole, not a regular file of the version's directory, or of another build's format.
   */
  static FileTails load(Path dir, Manifest m, Confinement confinement) {
    if (m.fileFormat() != Manifest.FileFormat.ORC) {
      return null;
    }
    Path p;
    byte[] all;
    try {
      p = location(dir, m);
      if (!Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS) || Files.size(p) > MAX_BYTES) {
        return null;
      }
      all = confinement.readAllBytes(p);
    } catch (NoSuchFileException e) {
      return null;
    } catch (IOException | RuntimeException e) {
      return null; // refused by the confinement, or a file system that cannot say: the files' own tails then
    }
    OrcReads.countRequest(p, 0, all.length);
    try {
      if (all.length < MAGIC.length + 12) {
        return null;
      }
      ByteBuffer b = ByteBuffer.wrap(all);
      CRC32C sum = new CRC32C();
      sum.update(all, 0, all.length - 4);
      if (b.getInt(all.length - 4) != (int) sum.getValue()) {
        return null;
      }
      byte[] magic = new byte[MAGIC.length];
      b.get(magic);
      if (!Arrays.equals(magic, MAGIC) || b.getInt() != VERSION) {
        return null;
      }
      int count = b.getInt();
      Map<String, Entry> byPath = new HashMap<>();
      for (int i = 0; i < count; i++) {
        String path = new String(part(b), StandardCharsets.UTF_8);
        String crc = new String(part(b), StandardCharsets.US_ASCII);
        long size = b.getLong();
        byte[] tail = part(b);
        byte[] footer = part(b);
        byte[] sidecar = part(b);
        byPath.put(path, new Entry(path, crc, size, tail, footer, sidecar.length == 0 ? null : sidecar));
      }
      return b.remaining() == 4 ? new FileTails(Map.copyOf(byPath)) : null;
    } catch (RuntimeException e) {
      return null; // a length out of range: not whole (its checksum held, so another build's)
    }
  }

  private static byte[] part(ByteBuffer b) {
    int n = b.getInt();
    if (n < 0 || n > b.remaining()) {
      throw new IllegalArgumentException("a part of " + n + " bytes");
    }
    byte[] out = new byte[n];
    b.get(out);
    return out;
  }
}
