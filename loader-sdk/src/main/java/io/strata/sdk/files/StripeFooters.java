package io.strata.sdk.files;

import io.strata.sdk.CorruptFileException;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.Confinement;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
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
import org.apache.orc.Reader;
import org.apache.orc.StripeInformation;

/**
 * The stripe footers of one ORC file, kept beside it ({@code part-00000.orc.footers},
 * docs/FORMAT.md §1.4) so that a reader gets all of them with one request when it opens the file,
 * instead of one request per stripe it reads: on an HDD each of those is a seek, and with a few
 * columns read per stripe they are a good part of the requests (DWRF keeps a similar stripe cache
 * in the file's tail).
 *
 * <p>A sidecar is written by whoever writes the ORC file (the generator, the relayout, the importer
 * for files inside the dataset directory), after the file and before the manifest that names it,
 * and is tied to the file by the file's CRC32C as the manifest records it, its length and every
 * stripe's place and footer length. A reader uses it only if all of those match and its own
 * checksum holds, and only if it is a regular file (not a link) in the ORC file's own directory;
 * otherwise (absent, stale, damaged, elsewhere) orc-core reads each footer from the file, as
 * without it. Immutable once loaded: shared by the streams of all threads.
 */
public final class StripeFooters {
  /** What a sidecar's name adds to its ORC file's. */
  public static final String SUFFIX = ".footers";
  private static final byte[] MAGIC = "STRATASF".getBytes(StandardCharsets.US_ASCII);
  private static final int VERSION = 1;
  /** Bytes of one stripe's entry besides its footer: offset, index and data lengths, footer length. */
  private static final int ENTRY = 8 + 8 + 8 + 4;

  private final Map<Long, byte[]> byPosition;

  private StripeFooters(Map<Long, byte[]> byPosition) {
    this.byPosition = byPosition;
  }

  /** The footer that starts at {@code position} if it is {@code length} bytes long, else null. */
  byte[] at(long position, int length) {
    byte[] b = byPosition.get(position);
    return b != null && b.length == length ? b : null;
  }

  int stripes() {
    return byPosition.size();
  }

  /** The sidecar of ORC file {@code orc}. */
  public static Path sidecar(Path orc) {
    return orc.resolveSibling(orc.getFileName().toString() + SUFFIX);
  }

  /**
   * Writes the sidecar of {@code orc} (opened as {@code reader}; {@code crc32c} as its manifest
   * entry records it), atomically: it appears whole or not at all.
   */
  public static void write(Path orc, Reader reader, String crc32c) throws IOException {
    List<StripeInformation> stripes = reader.getStripes();
    byte[] crc = crc32c.getBytes(StandardCharsets.US_ASCII);
    long size = headerBytes(crc.length) + 4L;
    for (StripeInformation s : stripes) {
      size += ENTRY + s.getFooterLength();
    }
    if (size > Integer.MAX_VALUE - 16) {
      throw new IOException("the stripe footers of " + orc + " are too large for a sidecar (" + size + " bytes)");
    }
    ByteBuffer b = ByteBuffer.allocate((int) size).order(ByteOrder.LITTLE_ENDIAN);
    b.put(MAGIC).putInt(VERSION).putShort((short) crc.length).put(crc).putLong(Files.size(orc)).putInt(stripes.size());
    try (FileChannel ch = FileChannel.open(orc)) {
      for (StripeInformation s : stripes) {
        long at = s.getOffset() + s.getIndexLength() + s.getDataLength();
        int length = Math.toIntExact(s.getFooterLength());
        b.putLong(s.getOffset()).putLong(s.getIndexLength()).putLong(s.getDataLength()).putInt(length);
        ByteBuffer footer = b.slice(b.position(), length);
        while (footer.hasRemaining()) {
          if (ch.read(footer, at + footer.position()) < 0) {
            throw new CorruptFileException(orc, "stripe footer at " + at + " runs past the end of the file");
          }
        }
        b.position(b.position() + length);
      }
    }
    CRC32C sum = new CRC32C();
    sum.update(b.array(), 0, b.position());
    b.putInt((int) sum.getValue());
    AtomicFiles.write(sidecar(orc), b.array());
  }

  private static int headerBytes(int crcLength) {
    return MAGIC.length + 4 + 2 + crcLength + 8 + 4;
  }

  /**
   * The footers of {@code orc} from its sidecar, or null where there is none or it does not match
   * the file as the manifest ({@code crc32c}, {@code fileBytes}) and orc-core ({@code stripes}) know
   * it. Reading it is one request, counted as such ({@link OrcReads}).
   */
  public static StripeFooters load(Path orc, String crc32c, long fileBytes, List<StripeInformation> stripes) {
    return load(orc, crc32c, fileBytes, stripes, Confinement.NONE);
  }

  /** As above, the sidecar's open confined by {@code confinement} (a refused one is no sidecar). */
  public static StripeFooters load(Path orc, String crc32c, long fileBytes, List<StripeInformation> stripes,
      Confinement confinement) {
    Path p = sidecar(orc);
    byte[] crc = crc32c.getBytes(StandardCharsets.US_ASCII);
    long expected = headerBytes(crc.length) + 4L;
    for (StripeInformation s : stripes) {
      expected += ENTRY + s.getFooterLength();
    }
    byte[] all;
    try {
      // Confined like the ORC file: a regular file in the ORC file's own directory, not a link.
      if (!Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)
          || !p.toRealPath().getParent().equals(orc.toRealPath().getParent()) || Files.size(p) != expected) {
        return null;
      }
      all = confinement.readAllBytes(p);
    } catch (NoSuchFileException e) {
      return null;
    } catch (IOException e) {
      return null;
    }
    OrcReads.countRequest(p, 0, all.length);
    return parse(all, crc32c, fileBytes, stripes);
  }

  /**
   * The footers in {@code all}, a sidecar's bytes (carried by the dataset's {@link FileTails}, or
   * read from the sidecar), or null where they do not match the file as the manifest and orc-core
   * know it.
   */
  static StripeFooters parse(byte[] all, String crc32c, long fileBytes, List<StripeInformation> stripes) {
    byte[] crc = crc32c.getBytes(StandardCharsets.US_ASCII);
    long expected = headerBytes(crc.length) + 4L;
    for (StripeInformation s : stripes) {
      expected += ENTRY + s.getFooterLength();
    }
    if (all.length != expected) {
      return null;
    }
    ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
    CRC32C sum = new CRC32C();
    sum.update(all, 0, all.length - 4);
    if (b.getInt(all.length - 4) != (int) sum.getValue()) {
      return null;
    }
    byte[] magic = new byte[MAGIC.length];
    b.get(magic);
    if (!Arrays.equals(magic, MAGIC) || b.getInt() != VERSION || b.getShort() != crc.length) {
      return null;
    }
    byte[] fileCrc = new byte[crc.length];
    b.get(fileCrc);
    if (!Arrays.equals(fileCrc, crc) || b.getLong() != fileBytes || b.getInt() != stripes.size()) {
      return null;
    }
    Map<Long, byte[]> byPosition = new HashMap<>();
    for (StripeInformation s : stripes) {
      if (b.getLong() != s.getOffset() || b.getLong() != s.getIndexLength() || b.getLong() != s.getDataLength()
          || b.getInt() != s.getFooterLength()) {
        return null;
      }
      byte[] footer = new byte[(int) s.getFooterLength()];
      b.get(footer);
      byPosition.put(s.getOffset() + s.getIndexLength() + s.getDataLength(), footer);
    }
    return new StripeFooters(byPosition);
  }
}
