package io.strata.sdk.files;

import io.strata.sdk.format.ColumnBuilder;

/**
 * One data page of a column of fixed-width numbers ({@link ParquetColumns#bulk}) decoded into arrays: its
 * levels, and a value for each entry at or past an element level (0 for a null one), so that a
 * run of them is appended to a builder in one call. Reused page after page; one thread's.
 */
final class ParquetPageValues {
  private final ParquetTypes.Decode decode;
  final boolean integers;
  int[] rep = new int[0];
  int[] def = new int[0];
  long[] longs = new long[0];
  private int[] floats = new int[0];
  private double[] doubles = new double[0];
  private boolean[] isNull = new boolean[0];
  private boolean anyNull;
  /** The page's levels and values decoded in bulk where {@link Hybrid} takes them. */
  private final Hybrid.Decoded fast = new Hybrid.Decoded();

  ParquetPageValues(ParquetTypes.Decode decode) {
    this.decode = decode;
    this.integers = decode == ParquetTypes.Decode.INT32 || decode == ParquetTypes.Decode.INT64;
  }

  /**
   * Decodes {@code page}'s {@code n} entries: each at or past {@code elementDef} an element, null
   * below {@code valueDef}; where {@code seen} is given, its nulls and integer bounds are counted.
   * Returns the elements.
   */
  int page(org.apache.parquet.column.page.DataPage page, org.apache.parquet.column.ColumnDescriptor d,
      org.apache.parquet.column.Dictionary dict, int n, int elementDef, int valueDef, ParquetColumns.Seen seen) throws java.io.IOException {
    if (rep.length < n) {
      rep = new int[n];
      def = new int[n];
      isNull = new boolean[n];
      switch (decode) {
        case INT32, INT64 -> longs = new long[n];
        case FLOAT -> floats = new int[n];
        default -> doubles = new double[n];
      }
    }
    org.apache.parquet.column.values.ValuesReader values = ParquetColumns.levels(page, d, dict, n, rep, def, fast);
    int m = 0;
    boolean nulls = false;
    switch (decode) {
      case INT32, INT64 -> {
        boolean ints = decode == ParquetTypes.Decode.INT32;
        for (int i = 0; i < n; i++) {
          if (def[i] >= elementDef) {
            boolean valid = def[i] >= valueDef;
            long v = valid ? (ints ? values.readInteger() : values.readLong()) : 0L;
            if (seen != null) {
              if (valid) {
                seen.value(v);
              } else {
                seen.nulls++;
              }
            }
            longs[m] = v;
            isNull[m++] = !valid;
            nulls |= !valid;
          }
        }
      }
      case FLOAT -> {
        for (int i = 0; i < n; i++) {
          if (def[i] >= elementDef) {
            boolean valid = def[i] >= valueDef;
            // By their bits: a conversion through double would quiet a signalling NaN.
            floats[m] = valid ? Float.floatToRawIntBits(values.readFloat()) : 0;
            if (seen != null && !valid) {
              seen.nulls++;
            }
            isNull[m++] = !valid;
            nulls |= !valid;
          }
        }
      }
      default -> { // DOUBLE
        for (int i = 0; i < n; i++) {
          if (def[i] >= elementDef) {
            boolean valid = def[i] >= valueDef;
            doubles[m] = valid ? values.readDouble() : 0.0;
            if (seen != null && !valid) {
              seen.nulls++;
            }
            isNull[m++] = !valid;
            nulls |= !valid;
          }
        }
      }
    }
    anyNull = nulls;
    return m;
  }

  /** Appends elements {@code [from, from + count)} of the last page decoded to {@code b}. */
  void append(ColumnBuilder b, int from, int count) {
    if (count == 0) {
      return;
    }
    boolean[] mask = anyNull ? isNull : null;
    switch (decode) {
      case INT32, INT64 -> b.appendLongs(longs, mask, from, count);
      case FLOAT -> b.appendFloatBits(floats, mask, from, count);
      default -> b.appendDoubles(doubles, mask, from, count);
    }
  }
}
