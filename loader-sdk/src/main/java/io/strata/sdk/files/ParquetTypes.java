package io.strata.sdk.files;

import io.strata.sdk.FeatureInfo;
import io.strata.sdk.FeatureType;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.schema.GroupType;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.LogicalTypeAnnotation.DecimalLogicalTypeAnnotation;
import org.apache.parquet.schema.LogicalTypeAnnotation.IntLogicalTypeAnnotation;
import org.apache.parquet.schema.LogicalTypeAnnotation.TimestampLogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.parquet.schema.Type;

/**
 * Maps Parquet's top-level fields onto feature types, or says why a field is not served; and
 * tells the decoder how to read each served field ({@link Leaf}).
 *
 * <p>Served: booleans; integers of every width (unsigned ones widened to the next signed width,
 * a 64-bit unsigned one to {@code decimal(20,0)}); floats (a float16 widened to float32) and
 * doubles; strings (STRING, ENUM, JSON), binaries (plain, BSON, UUID, fixed-length); dates;
 * timestamps of every unit, with or without time zone (nanoseconds since the epoch, an instant's
 * in UTC), INT96 ones too; decimals up to 38 digits on any physical type; lists of those, in the
 * standard three-level form, the legacy two-level one and a bare repeated field. Not served,
 * each with its reason, as ORC's are: structs and maps (flatten them into top-level columns),
 * lists of lists or of structs, times of day, intervals, and what this build does not know.
 */
public final class ParquetTypes {
  private ParquetTypes() {}

  /** How a leaf's values become a feature's values. */
  enum Decode {
    BOOL, INT32, UINT32, INT64, UINT64, FLOAT, FLOAT16, DOUBLE, BYTES, DECIMAL_INT32, DECIMAL_INT64, DECIMAL_BYTES,
    MILLIS, MICROS, NANOS, INT96
  }

  /**
   * What the decoder needs of a served top-level field.
   *
   * @param descriptor the field's one leaf column
   * @param decode how a value becomes a feature value
   * @param list true for a list feature
   * @param listDef definition level from which the list (or the scalar's value) is not null
   * @param elementDef definition level from which a list has an element at this position
   * @param valueDef definition level of a non-null value (the leaf's maximum)
   */
  record Leaf(ColumnDescriptor descriptor, Decode decode, boolean list, int listDef, int elementDef, int valueDef) {}

  /** A field's feature type and leaf, or the reason it is not served. */
  private record Mapping(FeatureType type, Leaf leaf, String whyNot) {}

  /** The features of {@code schema}, in its field order; {@code encrypted}: field name to why its column chunks cannot be read. */
  public static List<FeatureInfo> features(MessageType schema, Map<String, String> encrypted) {
    List<FeatureInfo> out = new ArrayList<>();
    List<Type> fields = schema.getFields();
    for (int i = 0; i < fields.size(); i++) {
      Type f = fields.get(i);
      String text = describe(f);
      String locked = encrypted.get(f.getName());
      if (locked != null) {
        out.add(new FeatureInfo(f.getName(), text, i, null, locked));
        continue;
      }
      Mapping m = map(schema, f);
      out.add(new FeatureInfo(f.getName(), text, i, m.type(), m.whyNot()));
    }
    return out;
  }

  /** The leaf of served field {@code name} in {@code schema}; a field that is missing or no longer served is an IllegalArgumentException. */
  static Leaf leaf(MessageType schema, String name) {
    if (!schema.containsField(name)) {
      throw new IllegalArgumentException("has no field '" + name + "'");
    }
    Mapping m = map(schema, schema.getType(name));
    if (m.leaf() == null) {
      throw new IllegalArgumentException("field '" + name + "' is not served: " + m.whyNot());
    }
    return m.leaf();
  }

  /** The feature type field {@code name} of {@code schema} is served as, or null. */
  static FeatureType featureType(MessageType schema, String name) {
    return schema.containsField(name) ? map(schema, schema.getType(name)).type() : null;
  }

  /**
   * Why files of schemas {@code a} and {@code b} cannot be one dataset's, or null where they can:
   * the same top-level fields in the same order, each served as the same feature type (or not
   * served in either). How a writer stores a type may differ between files — a decimal as fixed
   * bytes or as INT64, a column required in one file and optional in another — since every file
   * is decoded by its own schema.
   */
  public static String incompatibility(MessageType a, MessageType b) {
    List<FeatureInfo> x = features(a, Map.of());
    List<FeatureInfo> y = features(b, Map.of());
    if (!x.stream().map(FeatureInfo::name).toList().equals(y.stream().map(FeatureInfo::name).toList())) {
      return "its columns are " + y.stream().map(FeatureInfo::name).toList() + ", not " + x.stream().map(FeatureInfo::name).toList();
    }
    for (int i = 0; i < x.size(); i++) {
      FeatureInfo p = x.get(i);
      FeatureInfo q = y.get(i);
      if (!java.util.Objects.equals(p.type(), q.type())) {
        return "column '" + p.name() + "' is " + served(q) + " (" + q.orcType() + "), not " + served(p) + " (" + p.orcType() + ")";
      }
    }
    return null;
  }

  private static String served(FeatureInfo f) {
    return f.type() != null ? f.type().toString() : "not served";
  }

  /** A field as the manifest's type text shows it: repetition, physical type and annotation. */
  public static String describe(Type f) {
    // The field's name follows its physical type (or "group"): taken out, the rest is its type.
    return f.toString().replaceAll("\\s+", " ").replaceFirst(" " + java.util.regex.Pattern.quote(f.getName()) + "(?= |$)", "")
        .strip();
  }

  private static Mapping map(MessageType schema, Type f) {
    String name = f.getName();
    if (f.isPrimitive()) {
      if (f.isRepetition(Type.Repetition.REPEATED)) {
        // A bare repeated field: a required list of required elements (the Parquet spec's rule).
        return list(schema, f.asPrimitiveType(), new String[] {name}, 0);
      }
      PrimitiveType p = f.asPrimitiveType();
      Scalar s = scalar(p);
      if (s.type == null) {
        return new Mapping(null, null, s.whyNot);
      }
      String[] path = {name};
      int max = schema.getMaxDefinitionLevel(path);
      return new Mapping(s.type, new Leaf(schema.getColumnDescription(path), s.decode, false, max, max, max), null);
    }
    GroupType g = f.asGroupType();
    LogicalTypeAnnotation a = g.getLogicalTypeAnnotation();
    if (a instanceof LogicalTypeAnnotation.MapLogicalTypeAnnotation || a instanceof LogicalTypeAnnotation.MapKeyValueTypeAnnotation) {
      return new Mapping(null, null, "map columns are not served: flatten each key into a top-level feature column");
    }
    if (!(a instanceof LogicalTypeAnnotation.ListLogicalTypeAnnotation)) {
      if (g.isRepetition(Type.Repetition.REPEATED)) {
        return new Mapping(null, null, "repeated groups are not served: list elements must be scalars");
      }
      return new Mapping(null, null, a == null
          ? "struct columns are not served: flatten each field into a top-level feature column"
          : "groups annotated " + a + " are not served");
    }
    if (g.getFieldCount() != 1 || !g.getType(0).isRepetition(Type.Repetition.REPEATED)) {
      return new Mapping(null, null, "a LIST group must hold exactly one repeated field; this one does not");
    }
    Type repeated = g.getType(0);
    int listDef = schema.getMaxDefinitionLevel(name);
    if (repeated.isPrimitive()) {
      // Two-level form: the repeated field is the element.
      return list(schema, repeated.asPrimitiveType(), new String[] {name, repeated.getName()}, listDef);
    }
    GroupType rg = repeated.asGroupType();
    if (rg.getFieldCount() != 1 || rg.getName().equals("array") || rg.getName().equals(name + "_tuple")) {
      return new Mapping(null, null, "lists of structs are not served: list elements must be scalars");
    }
    Type element = rg.getType(0);
    if (!element.isPrimitive()) {
      return new Mapping(null, null, "lists of " + (element.getLogicalTypeAnnotation() instanceof LogicalTypeAnnotation.ListLogicalTypeAnnotation
          ? "lists" : "groups") + " are not served: list elements must be scalars");
    }
    return list(schema, element.asPrimitiveType(), new String[] {name, rg.getName(), element.getName()}, listDef);
  }

  private static Mapping list(MessageType schema, PrimitiveType element, String[] path, int listDef) {
    Scalar s = scalar(element);
    if (s.type == null) {
      return new Mapping(null, null, "lists of that element are not served: " + s.whyNot);
    }
    // An element exists from the repeated field's level on: the field itself in the bare and the
    // two-level forms, the middle group in the three-level one.
    int elementDef = schema.getMaxDefinitionLevel(path.length == 3 ? Arrays.copyOf(path, 2) : path);
    int valueDef = schema.getMaxDefinitionLevel(path);
    return new Mapping(FeatureType.list(s.type),
        new Leaf(schema.getColumnDescription(path), s.decode, true, listDef, elementDef, valueDef), null);
  }

  private record Scalar(FeatureType type, Decode decode, String whyNot) {
    static Scalar of(FeatureType type, Decode decode) {
      return new Scalar(type, decode, null);
    }

    static Scalar no(String why) {
      return new Scalar(null, null, why);
    }
  }

  private static Scalar scalar(PrimitiveType p) {
    LogicalTypeAnnotation a = p.getLogicalTypeAnnotation();
    PrimitiveType.PrimitiveTypeName physical = p.getPrimitiveTypeName();
    if (a instanceof DecimalLogicalTypeAnnotation d) {
      if (d.getPrecision() > FeatureType.MAX_DECIMAL_PRECISION) {
        return Scalar.no("decimals of precision " + d.getPrecision() + " are not served: the limit is 38");
      }
      FeatureType t = FeatureType.decimal(d.getPrecision(), d.getScale());
      return switch (physical) {
        case INT32 -> Scalar.of(t, Decode.DECIMAL_INT32);
        case INT64 -> Scalar.of(t, Decode.DECIMAL_INT64);
        case BINARY, FIXED_LEN_BYTE_ARRAY -> Scalar.of(t, Decode.DECIMAL_BYTES);
        default -> Scalar.no("a decimal stored as " + physical + " is not valid Parquet");
      };
    }
    return switch (physical) {
      case BOOLEAN -> Scalar.of(FeatureType.BOOL, Decode.BOOL);
      case INT32 -> int32(a);
      case INT64 -> int64(a);
      case INT96 -> Scalar.of(FeatureType.TIMESTAMP, Decode.INT96);
      case FLOAT -> Scalar.of(FeatureType.FLOAT32, Decode.FLOAT);
      case DOUBLE -> Scalar.of(FeatureType.FLOAT64, Decode.DOUBLE);
      case BINARY -> {
        if (a == null || a instanceof LogicalTypeAnnotation.BsonLogicalTypeAnnotation) {
          yield Scalar.of(FeatureType.BINARY, Decode.BYTES);
        }
        if (a instanceof LogicalTypeAnnotation.StringLogicalTypeAnnotation || a instanceof LogicalTypeAnnotation.EnumLogicalTypeAnnotation
            || a instanceof LogicalTypeAnnotation.JsonLogicalTypeAnnotation) {
          yield Scalar.of(FeatureType.STRING, Decode.BYTES);
        }
        yield Scalar.no("binary columns annotated " + a + " are not served");
      }
      case FIXED_LEN_BYTE_ARRAY -> {
        if (a == null || a instanceof LogicalTypeAnnotation.UUIDLogicalTypeAnnotation) {
          yield Scalar.of(FeatureType.BINARY, Decode.BYTES);
        }
        if (a instanceof LogicalTypeAnnotation.Float16LogicalTypeAnnotation && p.getTypeLength() == 2) {
          yield Scalar.of(FeatureType.FLOAT32, Decode.FLOAT16);
        }
        if (a instanceof LogicalTypeAnnotation.IntervalLogicalTypeAnnotation) {
          yield Scalar.no("interval columns are not served");
        }
        yield Scalar.no("fixed-length binary columns annotated " + a + " are not served");
      }
    };
  }

  private static Scalar int32(LogicalTypeAnnotation a) {
    if (a == null) {
      return Scalar.of(FeatureType.INT32, Decode.INT32);
    }
    if (a instanceof IntLogicalTypeAnnotation i) {
      return switch (i.getBitWidth()) {
        case 8 -> Scalar.of(i.isSigned() ? FeatureType.INT8 : FeatureType.INT16, Decode.INT32);
        case 16 -> Scalar.of(i.isSigned() ? FeatureType.INT16 : FeatureType.INT32, Decode.INT32);
        case 32 -> i.isSigned() ? Scalar.of(FeatureType.INT32, Decode.INT32) : Scalar.of(FeatureType.INT64, Decode.UINT32);
        default -> Scalar.no("a " + i.getBitWidth() + "-bit integer stored as INT32 is not valid Parquet");
      };
    }
    if (a instanceof LogicalTypeAnnotation.DateLogicalTypeAnnotation) {
      return Scalar.of(FeatureType.DATE, Decode.INT32);
    }
    if (a instanceof LogicalTypeAnnotation.TimeLogicalTypeAnnotation) {
      return Scalar.no("time-of-day columns are not served: store them as integers");
    }
    return Scalar.no("INT32 columns annotated " + a + " are not served");
  }

  private static Scalar int64(LogicalTypeAnnotation a) {
    if (a == null) {
      return Scalar.of(FeatureType.INT64, Decode.INT64);
    }
    if (a instanceof IntLogicalTypeAnnotation i) {
      if (i.getBitWidth() != 64) {
        return Scalar.no("a " + i.getBitWidth() + "-bit integer stored as INT64 is not valid Parquet");
      }
      // No 64-bit signed type holds every unsigned value; a 20-digit decimal holds them all, exactly.
      return i.isSigned() ? Scalar.of(FeatureType.INT64, Decode.INT64) : Scalar.of(FeatureType.decimal(20, 0), Decode.UINT64);
    }
    if (a instanceof TimestampLogicalTypeAnnotation t) {
      return Scalar.of(FeatureType.TIMESTAMP, switch (t.getUnit()) {
        case MILLIS -> Decode.MILLIS;
        case MICROS -> Decode.MICROS;
        case NANOS -> Decode.NANOS;
      });
    }
    if (a instanceof LogicalTypeAnnotation.TimeLogicalTypeAnnotation) {
      return Scalar.no("time-of-day columns are not served: store them as integers");
    }
    return Scalar.no("INT64 columns annotated " + a + " are not served");
  }
}
