package io.strata.sdk;

import java.util.Objects;

/**
 * The type of a feature column as Strata serves it.
 *
 * <p>Scalars map one to one onto Arrow types: {@code bool} (bit-packed), {@code int8..int64}
 * (signed), {@code float32/float64}, {@code string} (UTF-8), {@code binary}, {@code date} (days
 * since the epoch, 32-bit), {@code timestamp} (nanoseconds since the epoch, wall clock, no time
 * zone), {@code decimal(p,s)} (128-bit two's complement, unscaled). {@code list<T>} holds a
 * variable-length sequence of a scalar {@code T}. The text form ({@link #toString()}) is what
 * manifests and the CLI use and {@link #parse(String)} reads back.
 */
public final class FeatureType {
  /** The kinds of feature types. */
  public enum Kind {
    BOOL("bool", 0),
    INT8("int8", 1),
    INT16("int16", 2),
    INT32("int32", 4),
    INT64("int64", 8),
    FLOAT32("float32", 4),
    FLOAT64("float64", 8),
    STRING("string", -1),
    BINARY("binary", -1),
    DATE("date", 4),
    TIMESTAMP("timestamp", 8),
    DECIMAL("decimal", 16),
    LIST("list", -1);

    private final String text;
    private final int width;

    Kind(String text, int width) {
      this.text = text;
      this.width = width;
    }

    /** Bytes per value for fixed-width kinds, 0 for bit-packed bool, -1 otherwise. */
    public int width() {
      return width;
    }
  }

  public static final FeatureType BOOL = new FeatureType(Kind.BOOL, 0, 0, null);
  public static final FeatureType INT8 = new FeatureType(Kind.INT8, 0, 0, null);
  public static final FeatureType INT16 = new FeatureType(Kind.INT16, 0, 0, null);
  public static final FeatureType INT32 = new FeatureType(Kind.INT32, 0, 0, null);
  public static final FeatureType INT64 = new FeatureType(Kind.INT64, 0, 0, null);
  public static final FeatureType FLOAT32 = new FeatureType(Kind.FLOAT32, 0, 0, null);
  public static final FeatureType FLOAT64 = new FeatureType(Kind.FLOAT64, 0, 0, null);
  public static final FeatureType STRING = new FeatureType(Kind.STRING, 0, 0, null);
  public static final FeatureType BINARY = new FeatureType(Kind.BINARY, 0, 0, null);
  public static final FeatureType DATE = new FeatureType(Kind.DATE, 0, 0, null);
  public static final FeatureType TIMESTAMP = new FeatureType(Kind.TIMESTAMP, 0, 0, null);

  /** The largest decimal precision a 128-bit decimal holds. */
  public static final int MAX_DECIMAL_PRECISION = 38;

  private final Kind kind;
  private final int precision;
  private final int scale;
  private final FeatureType element;

  private FeatureType(Kind kind, int precision, int scale, FeatureType element) {
    this.kind = kind;
    this.precision = precision;
    this.scale = scale;
    this.element = element;
  }

  /** A decimal of {@code precision} digits, {@code scale} of them after the point. */
  public static FeatureType decimal(int precision, int scale) {
    if (precision < 1 || precision > MAX_DECIMAL_PRECISION) {
      throw new IllegalArgumentException(
          "decimal precision must be in 1.." + MAX_DECIMAL_PRECISION + ", got " + precision);
    }
    if (scale < 0 || scale > precision) {
      throw new IllegalArgumentException(
          "decimal scale must be in 0..precision (" + precision + "), got " + scale);
    }
    return new FeatureType(Kind.DECIMAL, precision, scale, null);
  }

  /** A list of {@code element}, which must be a scalar type. */
  public static FeatureType list(FeatureType element) {
    Objects.requireNonNull(element, "element");
    if (element.kind == Kind.LIST) {
      throw new IllegalArgumentException("a list element must be a scalar type, not " + element);
    }
    return new FeatureType(Kind.LIST, 0, 0, element);
  }

  public Kind kind() {
    return kind;
  }

  /** Decimal precision; 0 for other kinds. */
  public int precision() {
    return precision;
  }

  /** Decimal scale; 0 for other kinds. */
  public int scale() {
    return scale;
  }

  /** The element type of a list; null for scalars. */
  public FeatureType element() {
    return element;
  }

  /** True for kinds whose values live in an offsets buffer plus a data buffer. */
  public boolean isVariableWidth() {
    return kind == Kind.STRING || kind == Kind.BINARY;
  }

  /** True for kinds whose values are fixed-width (including bit-packed bool). */
  public boolean isFixedWidth() {
    return kind.width >= 0;
  }

  /** Reads the text form, for example {@code int64}, {@code decimal(18,2)}, {@code list<float32>}. */
  public static FeatureType parse(String text) {
    Objects.requireNonNull(text, "type");
    String t = text.strip();
    if (t.startsWith("list<") && t.endsWith(">")) {
      return list(parse(t.substring(5, t.length() - 1)));
    }
    if (t.startsWith("decimal(") && t.endsWith(")")) {
      String[] parts = t.substring(8, t.length() - 1).split(",");
      if (parts.length != 2) {
        throw new IllegalArgumentException("decimal type needs (precision,scale): '" + text + "'");
      }
      try {
        return decimal(Integer.parseInt(parts[0].strip()), Integer.parseInt(parts[1].strip()));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("decimal type needs integer precision and scale: '" + text + "'");
      }
    }
    for (Kind k : Kind.values()) {
      if (k != Kind.DECIMAL && k != Kind.LIST && k.text.equals(t)) {
        return switch (k) {
          case BOOL -> BOOL;
          case INT8 -> INT8;
          case INT16 -> INT16;
          case INT32 -> INT32;
          case INT64 -> INT64;
          case FLOAT32 -> FLOAT32;
          case FLOAT64 -> FLOAT64;
          case STRING -> STRING;
          case BINARY -> BINARY;
          case DATE -> DATE;
          case TIMESTAMP -> TIMESTAMP;
          default -> throw new IllegalStateException(k.name());
        };
      }
    }
    throw new IllegalArgumentException(
        "unknown feature type '"
            + text
            + "' (expected bool, int8, int16, int32, int64, float32, float64, string, binary,"
            + " date, timestamp, decimal(p,s) or list<scalar>)");
  }

  @Override
  public String toString() {
    return switch (kind) {
      case DECIMAL -> "decimal(" + precision + "," + scale + ")";
      case LIST -> "list<" + element + ">";
      default -> kind.text;
    };
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof FeatureType f
        && f.kind == kind
        && f.precision == precision
        && f.scale == scale
        && Objects.equals(f.element, element);
  }

  @Override
  public int hashCode() {
    return Objects.hash(kind, precision, scale, element);
  }
}
