package io.strata.sdk.files;

import io.strata.sdk.FeatureType;
import org.apache.orc.TypeDescription;

/** Maps ORC types onto feature types, or explains why a type is not served. */
public final class OrcTypes {
  private OrcTypes() {}

  /** The feature type of an ORC type, or null if unsupported (see {@link #whyUnsupported}). */
  public static FeatureType featureType(TypeDescription t) {
    return switch (t.getCategory()) {
      case BOOLEAN -> FeatureType.BOOL;
      case BYTE -> FeatureType.INT8;
      case SHORT -> FeatureType.INT16;
      case INT -> FeatureType.INT32;
      case LONG -> FeatureType.INT64;
      case FLOAT -> FeatureType.FLOAT32;
      case DOUBLE -> FeatureType.FLOAT64;
      case STRING, VARCHAR, CHAR -> FeatureType.STRING;
      case BINARY -> FeatureType.BINARY;
      case DATE -> FeatureType.DATE;
      case TIMESTAMP, TIMESTAMP_INSTANT -> FeatureType.TIMESTAMP;
      case DECIMAL ->
          t.getPrecision() <= FeatureType.MAX_DECIMAL_PRECISION
              ? FeatureType.decimal(t.getPrecision(), t.getScale())
              : null;
      case LIST -> {
        FeatureType element = featureType(t.getChildren().getFirst());
        yield element == null || element.kind() == FeatureType.Kind.LIST ? null : FeatureType.list(element);
      }
      default -> null;
    };
  }

  /** Why an ORC type is not served. */
  public static String whyUnsupported(TypeDescription t) {
    return switch (t.getCategory()) {
      case STRUCT -> "struct columns are not served: flatten each field into a top-level feature column";
      case MAP -> "map columns are not served: flatten each key into a top-level feature column";
      case UNION -> "union columns are not served";
      case LIST -> "lists of " + t.getChildren().getFirst().getCategory().getName() + " are not served: list elements must be scalars";
      case DECIMAL -> "decimals of precision " + t.getPrecision() + " are not served: the limit is 38";
      default -> "type " + t + " is not served";
    };
  }

  /** The ORC type for a feature type (used by the dataset generator). */
  public static TypeDescription orcType(FeatureType t) {
    return switch (t.kind()) {
      case BOOL -> TypeDescription.createBoolean();
      case INT8 -> TypeDescription.createByte();
      case INT16 -> TypeDescription.createShort();
      case INT32 -> TypeDescription.createInt();
      case INT64 -> TypeDescription.createLong();
      case FLOAT32 -> TypeDescription.createFloat();
      case FLOAT64 -> TypeDescription.createDouble();
      case STRING -> TypeDescription.createString();
      case BINARY -> TypeDescription.createBinary();
      case DATE -> TypeDescription.createDate();
      case TIMESTAMP -> TypeDescription.createTimestamp();
      case DECIMAL -> TypeDescription.createDecimal().withPrecision(t.precision()).withScale(t.scale());
      case LIST -> TypeDescription.createList(orcType(t.element()));
    };
  }
}
