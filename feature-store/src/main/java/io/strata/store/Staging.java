package io.strata.store;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.Column;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.Json;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import java.util.zip.CRC32C;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Derived features staged as files by a batch job (the Spark promotion job), for feature stores to
 * ingest. A staged feature is a directory named by its fingerprint under the staging root:
 *
 * <pre>
 *   &lt;staging&gt;/&lt;fingerprint&gt;/statistics.json      the dataset-wide statistics every chunk used
 *   &lt;staging&gt;/&lt;fingerprint&gt;/chunk-00000042.scol  one chunk: a 24-byte header, then the encoded column
 *   &lt;staging&gt;/&lt;fingerprint&gt;/feature.json         written when every chunk is there: complete
 *   &lt;staging&gt;/names/&lt;SHA-256 of dataset, version, spec&gt;  its fingerprint, written last ({@link #byName})
 * </pre>
 *
 * <p>A chunk file is the column exactly as a feature store keeps it ({@code ColumnCodec}), behind
 * a header: magic {@code "SSTG"}, format version, CRC32C of the payload, the chunk's number and the
 * payload's length (little-endian). Every file lands by an atomic rename ({@link AtomicFiles}), so
 * a task killed mid-write leaves no chunk, and one run twice writes the same bytes again. A chunk
 * whose header or checksum does not hold is not a chunk ({@link #chunk} answers empty; ingestion
 * refuses it by name). {@code feature.json} lists every chunk's length and checksum: a store
 * ingests only what it lists, each chunk checked against it.
 *
 * <p>Threads: stateless; tasks on many executors write distinct files of one feature at once.
 */
public final class Staging {
  private static final int MAGIC = 0x47545353; // "SSTG" little-endian
  private static final int VERSION = 1;
  static final int HEADER = 24;
  private static final Pattern FINGERPRINT = Pattern.compile("[0-9a-f]{8,128}");

  private Staging() {}

  /** One staged chunk: its number, its payload's length and CRC32C, and the CPU seconds it took. */
  public record Chunk(int chunk, long bytes, int crc32c, double cpuSeconds) {}

  /**
   * A complete staged feature, as {@code feature.json} holds it.
   *
   * @param chunkList every chunk, in order
   */
  public record Feature(String fingerprint, String spec, String dataset, String datasetDir, String version, String type,
      Map<String, double[]> statistics, List<Chunk> chunkList) {
    public int chunks() {
      return chunkList.size();
    }

    /** CPU seconds of every chunk together. */
    public double cpuSeconds() {
      return chunkList.stream().mapToDouble(Chunk::cpuSeconds).sum();
    }

    /** Payload bytes of every chunk together. */
    public long bytes() {
      return chunkList.stream().mapToLong(Chunk::bytes).sum();
    }
  }

  /** The directory of feature {@code fingerprint} under {@code staging} (a fingerprint is hex: nothing else is a name here). */
  public static Path dir(Path staging, String fingerprint) {
    if (!FINGERPRINT.matcher(fingerprint).matches()) {
      throw new IllegalArgumentException("not a feature fingerprint: \"" + fingerprint + "\"");
    }
    return staging.resolve(fingerprint);
  }

  static Path chunkFile(Path staging, String fingerprint, int chunk) {
    return dir(staging, fingerprint).resolve(String.format("chunk-%08d.scol", chunk));
  }

  /** The encoded form of {@code column}, exactly as a feature store keeps it. */
  public static byte[] encode(Column column) {
    return ColumnCodec.encode(column);
  }

  /**
   * Stages chunk {@code chunk} of feature {@code fingerprint}, already encoded ({@link #encode}),
   * atomically; the same column gives the same file.
   */
  public static Chunk writeChunk(Path staging, String fingerprint, int chunk, byte[] payload, double cpuSeconds)
      throws IOException {
    CRC32C crc = new CRC32C();
    crc.update(payload);
    int sum = (int) crc.getValue();
    ByteBuffer header = ByteBuffer.allocate(HEADER).order(ByteOrder.LITTLE_ENDIAN);
    header.putInt(MAGIC).putInt(VERSION).putInt(sum).putInt(chunk).putLong(payload.length).flip();
    AtomicFiles.write(chunkFile(staging, fingerprint, chunk), HEADER + payload.length, ch -> {
      AtomicFiles.writeFully(ch, header);
      AtomicFiles.writeFully(ch, ByteBuffer.wrap(payload));
    });
    return new Chunk(chunk, payload.length, sum, cpuSeconds);
  }

  /**
   * The staged chunk, if its file is there and whole (header, length and checksum hold); the CPU
   * seconds of a chunk found are not known here (0).
   */
  public static Optional<Chunk> chunk(Path staging, String fingerprint, int chunk) throws IOException {
    try {
      ByteBuffer b = read(chunkFile(staging, fingerprint, chunk), chunk, null, null);
      return Optional.of(new Chunk(chunk, b.remaining(), b.getInt(8), 0));
    } catch (NoSuchFileException | DamagedChunkException e) {
      return Optional.empty();
    }
  }

  private static final class DamagedChunkException extends IOException {
    private static final long serialVersionUID = 1L;

    DamagedChunkException(String message) {
      super(message);
    }
  }

  /**
   * Reads a chunk file into {@code buffer} (a direct buffer, replaced by a larger one when too
   * small; null: a new one), its header and checksum checked, and against {@code expected} when
   * given. The buffer returned holds the file; its position and limit frame the payload.
   */
  private static ByteBuffer read(Path file, int chunk, Chunk expected, ByteBuffer buffer) throws IOException {
    ByteBuffer b = buffer;
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      long size = ch.size();
      if (size < HEADER || size > Integer.MAX_VALUE - 64) {
        throw new DamagedChunkException("staged chunk " + file + " is damaged: " + size + " bytes, "
            + (size < HEADER ? "shorter than its header" : "more than a chunk can hold"));
      }
      if (b == null || b.capacity() < size) {
        b = ByteBuffer.allocateDirect((int) size);
      }
      b.clear().limit((int) size);
      while (b.hasRemaining()) {
        if (ch.read(b) < 0) {
          throw new DamagedChunkException("staged chunk " + file + " is damaged: it ended while being read");
        }
      }
      b.flip();
    }
    b.order(ByteOrder.LITTLE_ENDIAN);
    int magic = b.getInt(0);
    int version = b.getInt(4);
    int sum = b.getInt(8);
    int number = b.getInt(12);
    long length = b.getLong(16);
    if (magic != MAGIC || version != VERSION) {
      throw new DamagedChunkException("staged chunk " + file + " is not a staged chunk of format " + VERSION);
    }
    if (number != chunk || length != b.limit() - HEADER) {
      throw new DamagedChunkException("staged chunk " + file + " is damaged: its header says chunk " + number + " of "
          + length + " bytes, the file holds " + (b.limit() - HEADER));
    }
    CRC32C crc = new CRC32C();
    b.position(HEADER);
    crc.update(b);
    b.position(HEADER);
    if ((int) crc.getValue() != sum) {
      throw new DamagedChunkException("staged chunk " + file + " is damaged: checksum mismatch (CRC32C "
          + Integer.toHexString((int) crc.getValue()) + ", header " + Integer.toHexString(sum) + ")");
    }
    if (expected != null && (expected.crc32c() != sum || expected.bytes() != length)) {
      throw new DamagedChunkException("staged chunk " + file + " is not the one its feature.json lists (CRC32C "
          + Integer.toHexString(sum) + " of " + length + " bytes, listed " + Integer.toHexString(expected.crc32c()) + " of "
          + expected.bytes() + ")");
    }
    return b;
  }

  /**
   * Chunk {@code chunk} of a complete staged feature read into {@code buffer} (see {@link #read}),
   * its checksum checked against its header and {@code feature.json}. The payload carries the
   * store's own CRC32C too, checked every time the store serves the chunk: nothing damaged is
   * served either way.
   */
  static ByteBuffer readVerified(Path staging, Feature f, int chunk, ByteBuffer buffer) throws IOException {
    return read(chunkFile(staging, f.fingerprint(), chunk), chunk, f.chunkList().get(chunk), buffer);
  }

  /** Stages the statistics every chunk of the feature is computed with (so a rerun uses the same ones). */
  public static void writeStatistics(Path staging, String fingerprint, Map<String, double[]> statistics) throws IOException {
    AtomicFiles.write(dir(staging, fingerprint).resolve("statistics.json"),
        Json.compact(FeatureMeta.statisticsJson(statistics)).getBytes(java.nio.charset.StandardCharsets.UTF_8));
  }

  /** The statistics staged for the feature, if any. */
  public static Optional<Map<String, double[]>> statistics(Path staging, String fingerprint) throws IOException {
    Path f = dir(staging, fingerprint).resolve("statistics.json");
    if (!Files.isRegularFile(f)) {
      return Optional.empty();
    }
    return Optional.of(FeatureMeta.statistics(Json.parse(Files.readAllBytes(f))));
  }

  /** Marks the feature complete: {@code feature.json}, listing every chunk, written last and atomically. */
  public static void complete(Path staging, Feature f) throws IOException {
    for (int i = 0; i < f.chunks(); i++) {
      if (f.chunkList().get(i).chunk() != i) {
        throw new IllegalArgumentException("feature " + f.fingerprint() + ": chunk " + i + " is missing from the list");
      }
    }
    ObjectNode o = Json.object();
    o.put("format", VERSION).put("fingerprint", f.fingerprint()).put("spec", f.spec()).put("dataset", f.dataset())
        .put("datasetDir", f.datasetDir()).put("version", f.version()).put("type", f.type());
    o.set("statistics", FeatureMeta.statisticsJson(f.statistics()));
    ArrayNode chunks = o.putArray("chunks");
    for (Chunk c : f.chunkList()) {
      chunks.addObject().put("bytes", c.bytes()).put("crc32c", Integer.toHexString(c.crc32c())).put("cpuSeconds", c.cpuSeconds());
    }
    AtomicFiles.write(dir(staging, f.fingerprint()).resolve("feature.json"),
        Json.compact(o).getBytes(java.nio.charset.StandardCharsets.UTF_8));
    AtomicFiles.write(nameFile(staging, f.dataset(), f.version(), f.spec()),
        f.fingerprint().getBytes(java.nio.charset.StandardCharsets.UTF_8));
  }

  /** The name index entry of (dataset, version, canonical spec): {@code names/<SHA-256 of the three>}. */
  private static Path nameFile(Path staging, String dataset, String version, String spec) {
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      byte[] d = sha.digest((dataset + "\0" + version + "\0" + spec).getBytes(java.nio.charset.StandardCharsets.UTF_8));
      return staging.resolve("names").resolve(HexFormat.of().formatHex(d));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * The complete staged feature of {@code spec} (canonical) on this version of the dataset, found by
   * name: a dataset's version names its content, so a node finds what the job staged without
   * reading the source columns again for their checksums. Empty when none is staged.
   */
  public static Optional<Feature> byName(Path staging, String dataset, String version, String spec) throws IOException {
    Path f = nameFile(staging, dataset, version, spec);
    if (!Files.isRegularFile(f)) {
      return Optional.empty();
    }
    String fp = Files.readString(f, java.nio.charset.StandardCharsets.UTF_8).trim();
    Optional<Feature> feature = feature(staging, fp);
    // The entry must name a feature of exactly this dataset, version and spec (never trusted alone).
    return feature.filter(x -> x.dataset().equals(dataset) && x.version().equals(version) && x.spec().equals(spec));
  }

  /** The complete staged feature {@code fingerprint}, if its {@code feature.json} is there. */
  public static Optional<Feature> feature(Path staging, String fingerprint) throws IOException {
    Path file = dir(staging, fingerprint).resolve("feature.json");
    if (!Files.isRegularFile(file)) {
      return Optional.empty();
    }
    JsonNode o = Json.parse(Files.readAllBytes(file));
    if (o.path("format").asInt() != VERSION || !fingerprint.equals(o.path("fingerprint").asText())) {
      throw new IOException("staged feature " + file + " is not a feature.json of format " + VERSION + " for " + fingerprint);
    }
    List<Chunk> chunks = new ArrayList<>();
    for (JsonNode c : o.path("chunks")) {
      chunks.add(new Chunk(chunks.size(), c.path("bytes").asLong(), Integer.parseUnsignedInt(c.path("crc32c").asText(), 16),
          c.path("cpuSeconds").asDouble()));
    }
    return Optional.of(new Feature(fingerprint, o.path("spec").asText(), o.path("dataset").asText(),
        o.path("datasetDir").asText(), o.path("version").asText(), o.path("type").asText(),
        FeatureMeta.statistics(o.path("statistics")), chunks));
  }
}
