package io.strata.sdk.files;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.ChunkInfo;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.FeatureType;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.Confinement;
import io.strata.sdk.internal.Json;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The manifest of a dataset ({@code manifest.json} in the dataset directory): its name, content
 * version, columns, ORC files and stripe map, and optional sample index. See docs/FORMAT.md.
 */
public final class Manifest {
  public static final String FILE_NAME = "manifest.json";
  public static final String FORMAT = "strata-dataset";
  public static final int FORMAT_VERSION = 1;
  /**
   * The format version of a manifest whose files store some features twice ({@link #replicas}):
   * a build that reads only version 1 would take the ORC fields for the features in order and read
   * the wrong columns, so it must refuse such a dataset.
   */
  public static final int FORMAT_VERSION_REPLICAS = 2;
  /**
   * The format version of a manifest whose files are Parquet ({@link #fileFormat}): a build that
   * knows only ORC datasets must refuse it by its version, not fail inside an ORC reader.
   */
  public static final int FORMAT_VERSION_PARQUET = 3;

  /** The format of a dataset's files on the HDD tier. */
  public enum FileFormat {
    ORC("orc"),
    PARQUET("parquet");

    private final String text;

    FileFormat(String text) {
      this.text = text;
    }

    /** The manifest's and the CLI's name of the format. */
    public String text() {
      return text;
    }

    /** The format named {@code text} ({@code orc} or {@code parquet}). */
    public static FileFormat of(String text) {
      for (FileFormat f : values()) {
        if (f.text.equals(text)) {
          return f;
        }
      }
      throw new IllegalArgumentException("unknown file format '" + text + "' (expected orc or parquet)");
    }
  }
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,127}");

  /**
   * An ORC file of the dataset.
   *
   * @param path as written in the manifest: relative to the dataset directory, absolute, or the
   *     URI of a file of a remote file system ({@code s3://bucket/key}, {@code hdfs://nn/path})
   * @param bytes file size
   * @param rows rows in the file
   * @param crc32c CRC32C of the whole file, as 8 hex digits
   * @param version the version the store gave the file when it was imported (an S3 object's ETag,
   *     and its version id after a space in a versioned bucket), so that a file replaced since is
   *     refused; null where the store keeps none
   */
  public record OrcFileInfo(String path, long bytes, long rows, String crc32c, String version) {
    public OrcFileInfo(String path, long bytes, long rows, String crc32c) {
      this(path, bytes, rows, crc32c, null);
    }
  }

  /**
   * The optional sample index.
   *
   * @param column the integer column that identifies a sample
   * @param path index file, relative to the dataset directory
   * @param samples number of samples
   */
  public record SampleIndexInfo(String column, String path, long samples) {}

  /**
   * A second copy of a feature in the dataset's ORC files (docs/FORMAT.md §1.5).
   *
   * @param field the ORC field that holds the copy (not a feature's name)
   * @param feature the feature it copies
   * @param position the field's index among the ORC schema's top-level fields
   */
  public record ReplicaInfo(String field, String feature, int position) {}

  /**
   * The dataset's stream checksums ({@link StreamChecksums}, docs/FORMAT.md §1.6): the file, in
   * the dataset directory, and its own CRC32C.
   */
  public record StreamChecksumsInfo(String path, String crc32c) {}

  private final String name;
  private final String version;
  private final long rows;
  private final List<FeatureInfo> features;
  private final List<OrcFileInfo> files;
  private final List<ChunkInfo> chunks;
  private final SampleIndexInfo sampleIndex;
  private final List<ReplicaInfo> replicas;
  private final StreamChecksumsInfo streamChecksums;
  private final FileFormat fileFormat;

  public Manifest(
      String name,
      String version,
      long rows,
      List<FeatureInfo> features,
      List<OrcFileInfo> files,
      List<ChunkInfo> chunks,
      SampleIndexInfo sampleIndex) {
    this(name, version, rows, features, files, chunks, sampleIndex, List.of());
  }

  public Manifest(
      String name,
      String version,
      long rows,
      List<FeatureInfo> features,
      List<OrcFileInfo> files,
      List<ChunkInfo> chunks,
      SampleIndexInfo sampleIndex,
      List<ReplicaInfo> replicas) {
    this(name, version, rows, features, files, chunks, sampleIndex, replicas, null, FileFormat.ORC);
  }

  private Manifest(
      String name,
      String version,
      long rows,
      List<FeatureInfo> features,
      List<OrcFileInfo> files,
      List<ChunkInfo> chunks,
      SampleIndexInfo sampleIndex,
      List<ReplicaInfo> replicas,
      StreamChecksumsInfo streamChecksums,
      FileFormat fileFormat) {
    this.streamChecksums = streamChecksums;
    this.fileFormat = Objects.requireNonNull(fileFormat, "fileFormat");
    this.name = checkName(name);
    this.version = Objects.requireNonNull(version, "version");
    this.rows = rows;
    this.features = List.copyOf(features);
    this.files = List.copyOf(files);
    this.chunks = List.copyOf(chunks);
    this.sampleIndex = sampleIndex;
    this.replicas = replicas.stream().sorted(Comparator.comparingInt(ReplicaInfo::position)).toList();
    validate();
  }

  /** This manifest naming {@code info} as its stream checksums (null: none recorded). */
  public Manifest withStreamChecksums(StreamChecksumsInfo info) {
    return new Manifest(name, version, rows, features, files, chunks, sampleIndex, replicas, info, fileFormat);
  }

  /** This manifest with its files in {@code format}. */
  public Manifest withFileFormat(FileFormat format) {
    return new Manifest(name, version, rows, features, files, chunks, sampleIndex, replicas, streamChecksums, format);
  }

  /** The format of the dataset's files: ORC unless the manifest says Parquet. */
  public FileFormat fileFormat() {
    return fileFormat;
  }

  /** The stream checksums recorded for the dataset's files, or null (a dataset written before they were). */
  public StreamChecksumsInfo streamChecksums() {
    return streamChecksums;
  }

  /** Checks a dataset name: letters, digits, '_', '.', '-', at most 128 characters. */
  public static String checkName(String name) {
    if (name == null || !NAME.matcher(name).matches()) {
      throw new IllegalArgumentException(
          "bad dataset name '" + name + "': use 1 to 128 letters, digits, '_', '.' or '-', starting with a letter or digit");
    }
    return name;
  }

  private void validate() {
    if (fileFormat != FileFormat.ORC && !replicas.isEmpty()) {
      throw new IllegalArgumentException("replicas are ORC's alone, and the files are " + fileFormat.text());
    }
    Set<String> names = new HashSet<>();
    for (FeatureInfo f : features) {
      if (!names.add(f.name())) {
        throw new IllegalArgumentException("column '" + f.name() + "' appears twice");
      }
    }
    Set<String> copied = new HashSet<>();
    Set<Integer> positions = new HashSet<>();
    Set<String> fields = new HashSet<>();
    for (ReplicaInfo r : replicas) {
      if (!names.contains(r.feature())) {
        throw new IllegalArgumentException("replica '" + r.field() + "' copies '" + r.feature() + "', which is not a column");
      }
      if (names.contains(r.field()) || !fields.add(r.field())) {
        throw new IllegalArgumentException("replica field '" + r.field() + "' is a column's name or appears twice");
      }
      if (!copied.add(r.feature())) {
        throw new IllegalArgumentException("column '" + r.feature() + "' has more than one replica");
      }
      if (r.position() < 0 || r.position() >= features.size() + replicas.size() || !positions.add(r.position())) {
        throw new IllegalArgumentException("replica '" + r.field() + "' has a bad position " + r.position());
      }
    }
    long row = 0;
    for (int i = 0; i < chunks.size(); i++) {
      ChunkInfo c = chunks.get(i);
      if (c.index() != i || c.firstRow() != row || c.rows() < 0 || c.file() < 0 || c.file() >= files.size()) {
        throw new IllegalArgumentException("stripe map entry " + i + " is inconsistent: " + c);
      }
      row += c.rows();
    }
    if (row != rows) {
      throw new IllegalArgumentException("stripe map covers " + row + " rows but the dataset has " + rows);
    }
  }

  public String name() {
    return name;
  }

  /** Content version: changes whenever any file's content changes. */
  public String version() {
    return version;
  }

  public long rows() {
    return rows;
  }

  /** The bytes of the dataset's data files (ORC or Parquet), as their entries record them. */
  public long fileBytes() {
    return files.stream().mapToLong(OrcFileInfo::bytes).sum();
  }

  public List<FeatureInfo> features() {
    return features;
  }

  public List<OrcFileInfo> files() {
    return files;
  }

  public List<ChunkInfo> chunks() {
    return chunks;
  }

  /** The features stored twice, by position in the ORC schema; empty for most datasets. */
  public List<ReplicaInfo> replicas() {
    return replicas;
  }

  /**
   * The features in the order of the ORC schema's top-level fields, a replicated feature named at
   * both of its places: what a reader's requests per stripe depend on.
   */
  public List<String> layout() {
    List<String> out = new ArrayList<>();
    for (FeatureInfo f : features) {
      out.add(f.name());
    }
    for (ReplicaInfo r : replicas) {
      out.add(r.position(), r.feature());
    }
    return out;
  }

  /** The sample index, or null. */
  public SampleIndexInfo sampleIndex() {
    return sampleIndex;
  }

  /** Writes {@code manifest.json} into {@code dir} atomically. */
  public void write(Path dir) throws IOException {
    ObjectNode root = Json.object();
    root.put("format", FORMAT);
    root.put("formatVersion",
        fileFormat == FileFormat.PARQUET ? FORMAT_VERSION_PARQUET : replicas.isEmpty() ? FORMAT_VERSION : FORMAT_VERSION_REPLICAS);
    if (fileFormat != FileFormat.ORC) {
      root.put("fileFormat", fileFormat.text());
    }
    root.put("name", name);
    root.put("version", version);
    root.put("rows", rows);
    ArrayNode fs = root.putArray("features");
    for (FeatureInfo f : features) {
      ObjectNode n = fs.addObject();
      n.put("name", f.name());
      n.put("orcType", f.orcType());
      n.put("orcColumn", f.orcColumn());
      if (f.supported()) {
        n.put("type", f.type().toString());
      } else {
        n.put("unsupported", f.unsupportedReason());
      }
    }
    ArrayNode fl = root.putArray("files");
    for (OrcFileInfo f : files) {
      ObjectNode n = fl.addObject();
      n.put("path", f.path());
      n.put("bytes", f.bytes());
      n.put("rows", f.rows());
      n.put("crc32c", f.crc32c());
      if (f.version() != null) {
        n.put("version", f.version());
      }
    }
    ArrayNode cs = root.putArray("chunks");
    for (ChunkInfo c : chunks) {
      ArrayNode n = cs.addArray();
      n.add(c.file()).add(c.stripe()).add(c.offset()).add(c.length()).add(c.firstRow()).add(c.rows());
    }
    if (sampleIndex != null) {
      ObjectNode s = root.putObject("sampleIndex");
      s.put("column", sampleIndex.column());
      s.put("path", sampleIndex.path());
      s.put("samples", sampleIndex.samples());
    }
    if (streamChecksums != null) {
      root.putObject("streamChecksums").put("path", streamChecksums.path()).put("crc32c", streamChecksums.crc32c());
    }
    if (!replicas.isEmpty()) {
      ArrayNode rs = root.putArray("replicas");
      for (ReplicaInfo r : replicas) {
        rs.addObject().put("field", r.field()).put("feature", r.feature()).put("position", r.position());
      }
    }
    AtomicFiles.write(dir.resolve(FILE_NAME), Json.pretty(root).getBytes(StandardCharsets.UTF_8));
  }

  /** Reads {@code manifest.json} from a dataset directory. */
  public static Manifest read(Path dir) throws IOException {
    return read(dir, Confinement.NONE);
  }

  /** Reads {@code manifest.json} from a dataset directory, the open confined by {@code confinement}. */
  public static Manifest read(Path dir, Confinement confinement) throws IOException {
    Path file = dir.resolve(FILE_NAME);
    boolean regular;
    try {
      regular = Files.readAttributes(file, BasicFileAttributes.class).isRegularFile();
    } catch (NoSuchFileException e) {
      if (e.getReason() != null) {
        throw e; // more than a missing file: a missing bucket, named by its store
      }
      regular = false;
    } // another failure (a name node that does not answer) is said as it is
    if (!regular) {
      throw new NoSuchFileException(
          file.toString(), null, "no dataset manifest: create one with 'strata dataset generate' or 'strata dataset import'");
    }
    return parse(file, confinement.readAllBytes(file));
  }

  /** Parses manifest bytes read from {@code file} (named in errors). */
  public static Manifest parse(Path file, byte[] bytes) throws IOException {
    JsonNode root;
    try {
      root = Json.parse(bytes);
    } catch (IOException e) {
      throw new CorruptFileException(file, "manifest is not valid JSON: " + e.getMessage(), e);
    }
    try {
      if (!FORMAT.equals(text(root, "format"))) {
        throw new CorruptFileException(file, "not a Strata dataset manifest (format is not '" + FORMAT + "')");
      }
      int formatVersion = (int) number(root, "formatVersion");
      if (formatVersion != FORMAT_VERSION && formatVersion != FORMAT_VERSION_REPLICAS && formatVersion != FORMAT_VERSION_PARQUET) {
        throw new CorruptFileException(file, "manifest format version " + formatVersion + " is not supported (this build reads "
            + FORMAT_VERSION + ", " + FORMAT_VERSION_REPLICAS + " and " + FORMAT_VERSION_PARQUET + ")");
      }
      FileFormat fileFormat = root.has("fileFormat") ? FileFormat.of(text(root, "fileFormat")) : FileFormat.ORC;
      if ((fileFormat == FileFormat.PARQUET) != (formatVersion == FORMAT_VERSION_PARQUET)) {
        throw new IllegalArgumentException("format version " + formatVersion + " does not match the file format '"
            + fileFormat.text() + "'");
      }
      List<FeatureInfo> features = new ArrayList<>();
      for (JsonNode n : array(root, "features")) {
        String type = n.hasNonNull("type") ? n.get("type").asText() : null;
        features.add(
            new FeatureInfo(
                text(n, "name"),
                text(n, "orcType"),
                (int) number(n, "orcColumn"),
                type == null ? null : FeatureType.parse(type),
                type == null ? text(n, "unsupported") : null));
      }
      List<OrcFileInfo> files = new ArrayList<>();
      for (JsonNode n : array(root, "files")) {
        files.add(new OrcFileInfo(text(n, "path"), number(n, "bytes"), number(n, "rows"), text(n, "crc32c"),
            n.hasNonNull("version") ? text(n, "version") : null));
      }
      List<ChunkInfo> chunks = new ArrayList<>();
      for (JsonNode n : array(root, "chunks")) {
        if (!n.isArray() || n.size() != 6) {
          throw new IllegalArgumentException("a chunk entry must be [file, stripe, offset, length, firstRow, rows]");
        }
        chunks.add(
            new ChunkInfo(
                chunks.size(), n.get(0).asInt(), n.get(1).asInt(), n.get(2).asLong(), n.get(3).asLong(), n.get(4).asLong(), n.get(5).asLong()));
      }
      SampleIndexInfo sample = null;
      if (root.hasNonNull("sampleIndex")) {
        JsonNode s = root.get("sampleIndex");
        sample = new SampleIndexInfo(text(s, "column"), text(s, "path"), number(s, "samples"));
      }
      List<ReplicaInfo> replicas = new ArrayList<>();
      if (root.has("replicas")) {
        for (JsonNode n : array(root, "replicas")) {
          replicas.add(new ReplicaInfo(text(n, "field"), text(n, "feature"), (int) number(n, "position")));
        }
      }
      if (fileFormat == FileFormat.ORC && replicas.isEmpty() != (formatVersion == FORMAT_VERSION)) {
        throw new IllegalArgumentException("format version " + formatVersion + " does not match its replicas ("
            + replicas.size() + ")");
      }
      StreamChecksumsInfo sums = null;
      if (root.hasNonNull("streamChecksums")) {
        JsonNode c = root.get("streamChecksums");
        sums = new StreamChecksumsInfo(text(c, "path"), text(c, "crc32c"));
      }
      return new Manifest(
          text(root, "name"), text(root, "version"), number(root, "rows"), features, files, chunks, sample, replicas, sums,
          fileFormat);
    } catch (IllegalArgumentException e) {
      throw new CorruptFileException(file, "invalid manifest: " + e.getMessage(), e);
    }
  }

  private static String text(JsonNode n, String field) {
    JsonNode v = n.get(field);
    if (v == null || !v.isTextual()) {
      throw new IllegalArgumentException("field '" + field + "' must be a string");
    }
    return v.asText();
  }

  private static long number(JsonNode n, String field) {
    JsonNode v = n.get(field);
    if (v == null || !v.isIntegralNumber()) {
      throw new IllegalArgumentException("field '" + field + "' must be an integer");
    }
    return v.asLong();
  }

  private static JsonNode array(JsonNode n, String field) {
    JsonNode v = n.get(field);
    if (v == null || !v.isArray()) {
      throw new IllegalArgumentException("field '" + field + "' must be an array");
    }
    return v;
  }
}
