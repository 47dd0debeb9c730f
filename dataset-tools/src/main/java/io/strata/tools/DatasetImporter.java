package io.strata.tools;

import io.strata.sdk.internal.SafePaths;
import io.strata.sdk.files.DatasetFiles;
import io.strata.sdk.files.HddTable;
import io.strata.sdk.files.Manifest;
import io.strata.sdk.files.OrcIo;
import io.strata.sdk.files.OrcTypes;
import io.strata.sdk.files.ParquetIo;
import io.strata.sdk.files.ParquetTypes;
import io.strata.sdk.files.SampleIndex;
import io.strata.sdk.files.StreamChecksums;
import io.strata.sdk.files.FileTails;
import io.strata.sdk.files.StripeFooters;
import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.FeatureType;
import io.strata.sdk.Progress;
import io.strata.sdk.internal.AtomicFiles;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.orc.Reader;
import org.apache.orc.StripeInformation;
import org.apache.orc.TypeDescription;
import org.apache.parquet.schema.MessageType;

/**
 * Registers ORC or Parquet files written elsewhere as a dataset: checks that they share one schema, records
 * the columns (supported or not, with the reason), the stripe map and a content version, builds
 * the optional sample index and, by default, decodes every stripe once so that a damaged file is
 * rejected at import rather than in the middle of a training job. The files stay where they are.
 */
@SuppressWarnings("exports") // its signatures name the SDK's dataset files, exported to Strata's modules alone
public final class DatasetImporter {
  private DatasetImporter() {}

  /**
   * What to import.
   *
   * @param name dataset name
   * @param inputs ORC or Parquet files, or directories whose {@code *.orc} or {@code *.parquet} files are taken in name order
   * @param datasetDir where the manifest goes (created if missing)
   * @param sampleColumn integer column identifying samples, for the sample index; null for none
   * @param verify decode every stripe of every served column during import
   * @param replace replace an existing manifest in {@code datasetDir}
   */
  public record Options(
      String name, List<Path> inputs, Path datasetDir, String sampleColumn, boolean verify, boolean replace) {
    public Options {
      Manifest.checkName(name);
      inputs = List.copyOf(inputs);
      Objects.requireNonNull(datasetDir, "datasetDir");
      if (inputs.isEmpty()) {
        throw new IllegalArgumentException("no input ORC or Parquet files given");
      }
    }
  }

  /** Imports and returns the manifest written. */
  public static Manifest importFiles(Options o, Progress progress) throws IOException {
    List<Path> files = expand(o.inputs());
    Manifest.FileFormat format = formatOf(files);
    if (Files.exists(o.datasetDir().resolve(Manifest.FILE_NAME)) && !o.replace()) {
      throw new FileAlreadyExistsException(
          o.datasetDir().resolve(Manifest.FILE_NAME).toString(), null, "a dataset already exists there (use --replace)");
    }
    // A failed import leaves nothing behind: the directory it created goes with it.
    SafePaths.trusted(o.datasetDir()); // no link another user planted on the way to what is written
    boolean created = !Files.exists(o.datasetDir());
    Files.createDirectories(o.datasetDir());
    boolean ok = false;
    try {
      Manifest m = format == Manifest.FileFormat.PARQUET ? importParquet(o, files, progress) : importInto(o, files, progress);
      ok = true;
      if (format == Manifest.FileFormat.ORC) {
        writeSidecars(o.datasetDir(), m);
      }
      return m;
    } finally {
      if (!ok && created) {
        deleteTree(o.datasetDir());
      }
    }
  }

  /**
   * The stripe-footer sidecars ({@link StripeFooters}) of the imported files that live inside the
   * dataset directory (Strata writes nothing beside files elsewhere). Best effort, after the
   * import: a file without one reads as before, one footer request per stripe.
   */
  private static void writeSidecars(Path dir, Manifest m) {
    Path root = dir.toAbsolutePath().normalize();
    for (Manifest.OrcFileInfo info : m.files()) {
      Path f = DatasetFiles.resolve(root, info.path()).normalize();
      if (!f.startsWith(root)) {
        continue;
      }
      try (Reader reader = OrcIo.open(f)) {
        StripeFooters.write(f, reader, info.crc32c());
      } catch (IOException ignored) {
        // The dataset is imported; the sidecar only spares requests.
      }
    }
    try {
      FileTails.write(dir, m); // every file's tail and sidecar in one file: one request for a job opening the dataset
    } catch (IOException ignored) {
      // As the sidecars: it only spares requests.
    }
  }

  private static void deleteTree(Path dir) {
    try {
      AtomicFiles.deleteTree(dir);
    } catch (IOException ignored) {
      // Best effort: the failure being reported matters more.
    }
  }

  private static Manifest importInto(Options o, List<Path> files, Progress progress) throws IOException {
    TypeDescription schema = null;
    Path schemaFile = null;
    List<Manifest.OrcFileInfo> fileInfos = new ArrayList<>();
    List<ChunkInfo> chunks = new ArrayList<>();
    long row = 0;
    long totalBytes = 0;
    for (Path f : files) {
      totalBytes += Files.size(f);
    }
    long doneBytes = 0;
    // Column id to the name of the key that encrypts it, in any file (ORC column encryption).
    Map<Integer, String> encrypted = new TreeMap<>();
    for (int fi = 0; fi < files.size(); fi++) {
      Path f = files.get(fi);
      String version = DatasetFiles.storeVersion(f); // before reading: a file replaced meanwhile is refused later, never mixed
      try (Reader reader = OrcIo.open(f)) {
        TypeDescription s = reader.getSchema();
        if (s.getCategory() != TypeDescription.Category.STRUCT) {
          throw new CorruptFileException(f, "top-level ORC type is " + s + ", expected a struct of feature columns");
        }
        if (schema == null) {
          schema = s;
          schemaFile = f;
        } else if (!schema.equals(s)) {
          throw new IllegalArgumentException(
              "schema mismatch: " + f + " has " + s + " but " + schemaFile + " has " + schema);
        }
        for (org.apache.orc.EncryptionVariant v : reader.getEncryptionVariants()) {
          for (int id = v.getRoot().getId(); id <= v.getRoot().getMaximumId(); id++) {
            encrypted.putIfAbsent(id, v.getKeyDescription().getKeyName());
          }
        }
        long fileRows = addStripes(reader, fi, row, chunks);
        row += fileRows;
        if (fileRows != reader.getNumberOfRows()) {
          throw new CorruptFileException(
              f, "stripes hold " + fileRows + " rows but the footer says " + reader.getNumberOfRows());
        }
        fileInfos.add(
            new Manifest.OrcFileInfo(
                DatasetFiles.manifestPath(o.datasetDir(), f), Files.size(f), fileRows, DatasetFiles.crc32c(f), version));
      }
      doneBytes += Files.size(f);
      progress.update(doneBytes, totalBytes, "bytes");
    }
    List<FeatureInfo> features = features(schema, encrypted);
    Manifest draft =
        new Manifest(o.name(), DatasetFiles.version(fileInfos), row, features, fileInfos, chunks, null);
    Manifest.SampleIndexInfo sampleInfo = null;
    if (o.verify() || o.sampleColumn() != null) {
      sampleInfo = scan(o, draft, progress);
    }
    Manifest manifest =
        new Manifest(draft.name(), draft.version(), draft.rows(), features, fileInfos, chunks, sampleInfo)
            .withStreamChecksums(StreamChecksums.write(o.datasetDir().resolve(StreamChecksums.FILE_NAME),
                StreamChecksums.FILE_NAME, files));
    manifest.write(o.datasetDir());
    return manifest;
  }

  /**
   * The format of {@code files}, all of which must share it: by name ({@code .orc}, {@code
   * .parquet}), else by the first bytes ("ORC", "PAR1").
   */
  static Manifest.FileFormat formatOf(List<Path> files) throws IOException {
    Manifest.FileFormat format = null;
    Path first = null;
    for (Path f : files) {
      Manifest.FileFormat ff = sniff(f);
      if (format == null) {
        format = ff;
        first = f;
      } else if (ff != format) {
        throw new IllegalArgumentException("format mismatch: " + f + " is " + ff.text() + " but " + first + " is "
            + format.text() + " (a dataset's files share one format)");
      }
    }
    return format;
  }

  private static Manifest.FileFormat sniff(Path f) throws IOException {
    String name = f.getFileName().toString();
    if (name.endsWith(".parquet")) {
      return Manifest.FileFormat.PARQUET;
    }
    if (name.endsWith(".orc") || !Files.isRegularFile(f)) {
      return Manifest.FileFormat.ORC;
    }
    byte[] head = new byte[4];
    int n;
    try (java.io.InputStream in = Files.newInputStream(f)) {
      n = in.readNBytes(head, 0, 4);
    }
    return n == 4 && (head[0] == 'P' && head[1] == 'A' && head[2] == 'R' && (head[3] == '1' || head[3] == 'E'))
        ? Manifest.FileFormat.PARQUET
        : Manifest.FileFormat.ORC;
  }

  /**
   * As {@link #importInto}, for Parquet files: a row group of rows is a chunk; the stream checksums
   * record every page's CRC32C (no stripe-footer sidecars: Parquet has no stripe footers).
   */
  private static Manifest importParquet(Options o, List<Path> files, Progress progress) throws IOException {
    MessageType schema = null;
    Path schemaFile = null;
    List<Manifest.OrcFileInfo> fileInfos = new ArrayList<>();
    List<ChunkInfo> chunks = new ArrayList<>();
    // Field name to why its column chunks cannot be read (Parquet modular encryption, plaintext footer).
    Map<String, String> encrypted = new TreeMap<>();
    long row = 0;
    long totalBytes = 0;
    for (Path f : files) {
      totalBytes += Files.size(f);
    }
    long doneBytes = 0;
    for (int fi = 0; fi < files.size(); fi++) {
      Path f = files.get(fi);
      String version = DatasetFiles.storeVersion(f); // before reading: a file replaced meanwhile is refused later, never mixed
      ParquetIo.FileChunks scanned = ParquetIo.chunks(f, fi, chunks.size(), row, encrypted);
      MessageType s = scanned.schema();
      if (schema == null) {
        schema = s;
        schemaFile = f;
      } else {
        // Writers store a feature type differently (pyarrow a decimal as fixed bytes, polars as INT64): what must agree is the types served.
        String differs = ParquetTypes.incompatibility(schema, s);
        if (differs != null) {
          throw new IllegalArgumentException("schema mismatch: in " + f + " " + differs + " as in " + schemaFile
              + " (a dataset's files serve the same columns with the same feature types)");
        }
      }
      chunks.addAll(scanned.chunks());
      long fileRows = scanned.rows();
      row += fileRows;
      fileInfos.add(new Manifest.OrcFileInfo(
          DatasetFiles.manifestPath(o.datasetDir(), f), Files.size(f), fileRows, DatasetFiles.crc32c(f), version));
      doneBytes += Files.size(f);
      progress.update(doneBytes, totalBytes, "bytes");
    }
    List<FeatureInfo> features = ParquetTypes.features(schema, encrypted);
    Manifest draft = new Manifest(o.name(), DatasetFiles.version(fileInfos), row, features, fileInfos, chunks, null)
        .withFileFormat(Manifest.FileFormat.PARQUET);
    Manifest.SampleIndexInfo sampleInfo = null;
    if (o.verify() || o.sampleColumn() != null) {
      sampleInfo = scan(o, draft, progress);
    }
    // Parquet's page checksums are optional, and most writers write none (pyarrow's, DuckDB's and polars'
    // defaults): a CRC32C of every page, page index and footer is recorded here, checked on every read.
    Manifest manifest = new Manifest(draft.name(), draft.version(), draft.rows(), features, fileInfos, chunks, sampleInfo)
        .withFileFormat(Manifest.FileFormat.PARQUET)
        .withStreamChecksums(StreamChecksums.writeParquet(o.datasetDir().resolve(StreamChecksums.FILE_NAME),
            StreamChecksums.FILE_NAME, files));
    manifest.write(o.datasetDir());
    return manifest;
  }

  /** Appends file {@code file}'s stripes to the stripe map, from global row {@code firstRow}; returns its rows. */
  static long addStripes(Reader reader, int file, long firstRow, List<ChunkInfo> chunks) {
    long rows = 0;
    List<StripeInformation> stripes = reader.getStripes();
    for (int s = 0; s < stripes.size(); s++) {
      StripeInformation st = stripes.get(s);
      chunks.add(new ChunkInfo(chunks.size(), file, s, st.getOffset(), st.getLength(), firstRow + rows, st.getNumberOfRows()));
      rows += st.getNumberOfRows();
    }
    return rows;
  }

  static List<FeatureInfo> features(TypeDescription schema) {
    return features(schema, Map.of());
  }

  /**
   * The features of {@code schema}; a column that ORC column encryption protects ({@code
   * encrypted}: column id to key name) is not served: without the key a reader gets the writer's
   * masked values (nulls, redactions, hashes) in its place, which a job must never take for data.
   */
  static List<FeatureInfo> features(TypeDescription schema, Map<Integer, String> encrypted) {
    List<FeatureInfo> features = new ArrayList<>();
    List<String> names = schema.getFieldNames();
    for (int i = 0; i < names.size(); i++) {
      TypeDescription t = schema.getChildren().get(i);
      String key = null;
      for (int id = t.getId(); id <= t.getMaximumId() && key == null; id++) {
        key = encrypted.get(id);
      }
      if (key != null) {
        features.add(new FeatureInfo(names.get(i), t.toString(), t.getId(), null,
            "not served: encrypted with ORC column encryption (key '" + key + "'); without the key its values read as the"
                + " writer's masked ones"));
        continue;
      }
      FeatureType ft = OrcTypes.featureType(t);
      features.add(
          new FeatureInfo(names.get(i), t.toString(), t.getId(), ft, ft == null ? OrcTypes.whyUnsupported(t) : null));
    }
    return features;
  }

  private static List<Path> expand(List<Path> inputs) throws IOException {
    List<Path> files = new ArrayList<>();
    for (Path in : inputs) {
      if (Files.isDirectory(in)) {
        try (Stream<Path> s = Files.list(in)) {
          List<Path> all = s.sorted().toList();
          List<Path> orc = all.stream().filter(p -> p.getFileName().toString().endsWith(".orc")).toList();
          List<Path> parquet = all.stream().filter(p -> p.getFileName().toString().endsWith(".parquet")).toList();
          if (!orc.isEmpty() && !parquet.isEmpty()) {
            throw new IllegalArgumentException("directory " + in + " holds both .orc and .parquet files: a dataset's files"
                + " share one format (import them as two datasets)");
          }
          if (orc.isEmpty() && parquet.isEmpty()) {
            throw new NoSuchFileException(in.toString(), null, "directory holds no .orc or .parquet files");
          }
          files.addAll(orc.isEmpty() ? parquet : orc);
        }
      } else if (Files.isRegularFile(in)) {
        files.add(in);
      } else {
        throw new NoSuchFileException(in.toString(), null, "no such ORC or Parquet file or directory");
      }
    }
    return files;
  }

  /** Decodes every stripe (verification) and builds the sample index when asked. */
  private static Manifest.SampleIndexInfo scan(Options o, Manifest m, Progress progress) throws IOException {
    List<String> columns = new ArrayList<>();
    if (o.verify()) {
      m.features().stream().filter(FeatureInfo::supported).forEach(f -> columns.add(f.name()));
    }
    String sampleColumn = o.sampleColumn();
    if (sampleColumn != null) {
      FeatureInfo info =
          m.features().stream().filter(f -> f.name().equals(sampleColumn)).findFirst()
              .orElseThrow(() -> new IllegalArgumentException("no column '" + sampleColumn + "' for the sample index"));
      if (!info.supported()
          || !List.of(FeatureType.Kind.INT8, FeatureType.Kind.INT16, FeatureType.Kind.INT32, FeatureType.Kind.INT64)
              .contains(info.type().kind())) {
        throw new IllegalArgumentException("sample column '" + sampleColumn + "' must be an integer column, not " + info.orcType());
      }
      if (!columns.contains(sampleColumn)) {
        columns.add(sampleColumn);
      }
    }
    long[] ids = new long[1024];
    long[] starts = new long[1024];
    long[] ends = new long[1024];
    int samples = 0;
    try (HddTable table = HddTable.open(o.datasetDir(), m, io.strata.sdk.internal.Confinement.NONE)) {
      for (ChunkInfo c : m.chunks()) {
        try (Arena arena = Arena.ofConfined()) {
          Column ids0 = table.readChunk(c.index(), columns, arena).get(sampleColumn);
          if (sampleColumn != null) {
            for (int r = 0; r < ids0.length(); r++) {
              long row = c.firstRow() + r;
              if (ids0.isNull(r)) {
                throw new IllegalArgumentException("sample column '" + sampleColumn + "' is null at row " + row);
              }
              long id = ids0.getLong(r);
              if (samples > 0 && id == ids[samples - 1]) {
                ends[samples - 1] = row + 1;
                continue;
              }
              if (samples > 0 && id < ids[samples - 1]) {
                throw new IllegalArgumentException(
                    "rows are not grouped and sorted by '" + sampleColumn + "': row " + row + " has " + id
                        + " after " + ids[samples - 1]);
              }
              if (samples == ids.length) {
                ids = Arrays.copyOf(ids, samples * 2);
                starts = Arrays.copyOf(starts, samples * 2);
                ends = Arrays.copyOf(ends, samples * 2);
              }
              ids[samples] = id;
              starts[samples] = row;
              ends[samples] = row + 1;
              samples++;
            }
          }
        }
        progress.update(c.endRow(), m.rows(), "rows");
      }
    }
    if (sampleColumn == null) {
      return null;
    }
    String path = "samples.idx";
    SampleIndex.write(o.datasetDir().resolve(path), ids, starts, ends, samples);
    return new Manifest.SampleIndexInfo(sampleColumn, path, samples);
  }
}
