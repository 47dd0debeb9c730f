package io.strata.tools;

import io.strata.sdk.files.HddTable;
import io.strata.sdk.files.Manifest;
import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.FeatureType;
import io.strata.sdk.Progress;
import io.strata.sdk.internal.AtomicFiles;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.math.BigInteger;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.LocalOutputFile;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;
import org.apache.parquet.schema.Type;
import org.apache.parquet.schema.Types;

/**
 * Writes a dataset's served features as a Parquet dataset holding the same rows and values (for
 * {@code dataset generate --format parquet} and tests that need Parquet without pyarrow): one
 * file of one row group per source chunk, so chunks and rows line up; snappy, dictionary encoding
 * where parquet-java takes it, page checksums; the sample index copied. Every feature type maps
 * to the Parquet type {@link ParquetTypes} serves back as the same feature type.
 */
@SuppressWarnings("exports") // its signatures name the SDK's dataset files, exported to Strata's modules alone
public final class ParquetExport {
  private ParquetExport() {}

  /**
   * Writes the served features of the dataset in {@code srcDir} (its manifest {@code src}, read through
   * {@code table}) as Parquet into {@code out} (created; it must hold no manifest) and imports them there.
   */
  public static Manifest export(Path srcDir, Manifest src, HddTable table, Path out, String name, Progress progress)
      throws IOException {
    if (Files.exists(out.resolve(Manifest.FILE_NAME))) {
      throw new FileAlreadyExistsException(out.resolve(Manifest.FILE_NAME).toString(), null, "a dataset already exists there");
    }
    boolean created = !Files.exists(out);
    Files.createDirectories(out);
    boolean ok = false;
    try {
      List<FeatureInfo> served = src.features().stream().filter(FeatureInfo::supported).toList();
      List<String> names = served.stream().map(FeatureInfo::name).toList();
      MessageType schema = schema(served);
      SimpleGroupFactory groups = new SimpleGroupFactory(schema);
      List<Path> files = new ArrayList<>();
      for (ChunkInfo c : src.chunks()) {
        Path file = out.resolve(String.format("part-%05d.parquet", c.index()));
        files.add(file);
        try (Arena arena = Arena.ofConfined();
            ParquetWriter<Group> w = ExampleParquetWriter.builder(new LocalOutputFile(file)).withType(schema)
                .withCompressionCodec(CompressionCodecName.SNAPPY).withRowGroupSize(Long.MAX_VALUE)
                .withPageWriteChecksumEnabled(true)
                .withWriteMode(org.apache.parquet.hadoop.ParquetFileWriter.Mode.OVERWRITE).build()) {
          Map<String, Column> cols = table.readChunk(c.index(), names, arena);
          for (int r = 0; r < c.rows(); r++) {
            Group g = groups.newGroup();
            for (FeatureInfo f : served) {
              Column col = cols.get(f.name());
              if (!col.isNull(r)) {
                if (f.type().kind() == FeatureType.Kind.LIST) {
                  Group list = g.addGroup(f.name());
                  for (int k = col.start(r); k < col.end(r); k++) {
                    Group e = list.addGroup("list");
                    if (!col.child().isNull(k)) {
                      put(e, "element", col.child(), k);
                    }
                  }
                } else {
                  put(g, f.name(), col, r);
                }
              }
            }
            w.write(g);
          }
        }
        progress.update(c.index() + 1L, src.chunks().size(), "chunks");
      }
      Manifest.SampleIndexInfo samples = src.sampleIndex();
      if (samples != null) {
        Files.copy(srcDir.resolve(samples.path()), out.resolve(samples.path()));
      }
      Manifest m = DatasetImporter.importFiles(new DatasetImporter.Options(name, files, out, null, false, true), Progress.NONE);
      Manifest withIndex = new Manifest(m.name(), m.version(), m.rows(), m.features(), m.files(), m.chunks(), samples)
          .withFileFormat(Manifest.FileFormat.PARQUET)
          .withStreamChecksums(m.streamChecksums());
      withIndex.write(out);
      ok = true;
      return withIndex;
    } finally {
      if (!ok && created) {
        try {
          AtomicFiles.deleteTree(out);
        } catch (IOException ignored) {
          // Best effort: the failure being reported matters more.
        }
      }
    }
  }

  private static MessageType schema(List<FeatureInfo> features) {
    List<Type> fields = new ArrayList<>();
    for (FeatureInfo f : features) {
      FeatureType t = f.type();
      if (t.kind() == FeatureType.Kind.LIST) {
        // The standard three-level form: optional group (LIST) { repeated group list { optional T element } }.
        Type element = scalar(Types.optional(primitive(t.element())), t.element()).named("element");
        fields.add(Types.optionalGroup().as(LogicalTypeAnnotation.listType())
            .addField(Types.repeatedGroup().addField(element).named("list")).named(f.name()));
      } else {
        fields.add(scalar(Types.optional(primitive(t)), t).named(f.name()));
      }
    }
    return new MessageType("strata", fields);
  }

  private static PrimitiveTypeName primitive(FeatureType t) {
    return switch (t.kind()) {
      case BOOL -> PrimitiveTypeName.BOOLEAN;
      case INT8, INT16, INT32, DATE -> PrimitiveTypeName.INT32;
      case INT64, TIMESTAMP -> PrimitiveTypeName.INT64;
      case FLOAT32 -> PrimitiveTypeName.FLOAT;
      case FLOAT64 -> PrimitiveTypeName.DOUBLE;
      case STRING, BINARY -> PrimitiveTypeName.BINARY;
      case DECIMAL -> PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY;
      case LIST -> throw new IllegalArgumentException("a list is not a primitive");
    };
  }

  private static <T extends Types.PrimitiveBuilder<?>> T scalar(T b, FeatureType t) {
    switch (t.kind()) {
      case INT8 -> b.as(LogicalTypeAnnotation.intType(8, true));
      case INT16 -> b.as(LogicalTypeAnnotation.intType(16, true));
      case DATE -> b.as(LogicalTypeAnnotation.dateType());
      case TIMESTAMP -> b.as(LogicalTypeAnnotation.timestampType(false, LogicalTypeAnnotation.TimeUnit.NANOS));
      case STRING -> b.as(LogicalTypeAnnotation.stringType());
      case DECIMAL -> b.length(16).as(LogicalTypeAnnotation.decimalType(t.scale(), t.precision()));
      default -> {
        // the physical type says it all
      }
    }
    return b;
  }

  private static void put(Group g, String field, Column c, int row) {
    switch (c.type().kind()) {
      case BOOL -> g.append(field, c.getBoolean(row));
      case INT8, INT16, INT32, DATE -> g.append(field, (int) c.getLong(row));
      case INT64, TIMESTAMP -> g.append(field, c.getLong(row));
      case FLOAT32 -> g.append(field, c.getFloat(row));
      case FLOAT64 -> g.append(field, c.getDouble(row));
      case STRING, BINARY -> g.append(field, Binary.fromConstantByteArray(c.getBytes(row)));
      case DECIMAL -> g.append(field, Binary.fromConstantByteArray(sixteen(c.getUnscaled(row))));
      case LIST -> throw new IllegalArgumentException("a list is not a scalar");
    }
  }

  /** A 128-bit unscaled value as 16 big-endian bytes, sign-extended. */
  private static byte[] sixteen(BigInteger v) {
    byte[] b = v.toByteArray();
    byte[] out = new byte[16];
    Arrays.fill(out, 0, 16 - b.length, v.signum() < 0 ? (byte) -1 : 0);
    System.arraycopy(b, 0, out, 16 - b.length, b.length);
    return out;
  }
}
