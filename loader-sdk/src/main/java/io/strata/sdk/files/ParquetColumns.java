package io.strata.sdk.files;

import io.strata.sdk.format.ColumnBuilder;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.apache.parquet.column.ColumnReader;
import org.apache.parquet.io.api.Binary;

/**
 * Appends the values of one Parquet column chunk to an Arrow-layout column builder, from its
 * definition and repetition levels: a scalar feature's nulls, a list feature's null lists, empty
 * lists and null elements. Counts what the writer's statistics can be checked against.
 */
final class ParquetColumns {
  private ParquetColumns() {}

  /** The Julian day of 1970-01-01 (INT96 timestamps count days from the Julian epoch). */
  private static final long JULIAN_EPOCH_DAY = 2_440_588L;
  private static final long NANOS_PER_DAY = 86_400L * 1_000_000_000L;

  /** What one chunk held: its level entries whose value is null (Parquet's null count) and, for integer-valued leaves, the least and greatest value. */
  static final class Seen {
    long nulls;
    long min = Long.MAX_VALUE;
    long max = Long.MIN_VALUE;
    boolean any;

    void value(long v) {
      any = true;
      if (v < min) {
        min = v;
      }
      if (v > max) {
        max = v;
      }
    }
  }

  /**
   * Appends {@code rows} rows of {@code r}, a reader of {@code leaf}'s column chunk of {@code
   * total} level entries (its pages' count; -1 for a reader of some rows of it, which stops after
   * the last of them), to {@code b}.
   * Throws {@link OrcColumns.UnrepresentableValueException} for a value the feature type cannot
   * hold and {@link IllegalStateException} where the levels do not describe {@code rows} rows.
   */
  static Seen append(ColumnReader r, long total, ParquetTypes.Leaf leaf, int rows, ColumnBuilder b) {
    Seen seen = new Seen();
    Current current = new Current(r);
    long read = 0;
    if (!leaf.list()) {
      if (total >= 0 && total != rows) {
        throw new IllegalStateException("the column chunk holds " + total + " values for " + rows + " rows");
      }
      b.reserve(rows, 0);
      for (int row = 0; row < rows; row++) {
        if (r.getCurrentDefinitionLevel() < leaf.valueDef()) {
          b.appendNull();
          seen.nulls++;
        } else {
          value(current, leaf.decode(), b, seen);
        }
        r.consume();
      }
      return seen;
    }
    ColumnBuilder child = b.child();
    long limit = total >= 0 ? total : Long.MAX_VALUE;
    for (int row = 0; row < rows; row++) {
      if (read >= limit) {
        throw new IllegalStateException("the column chunk's levels end after " + row + " of " + rows + " rows");
      }
      if (r.getCurrentRepetitionLevel() != 0) {
        throw new IllegalStateException("row " + row + " does not start at repetition level 0");
      }
      int def = r.getCurrentDefinitionLevel();
      if (def < leaf.listDef()) {
        b.appendNull();
        seen.nulls++;
        r.consume();
        read++;
        continue;
      }
      if (def < leaf.elementDef()) {
        seen.nulls++;
        r.consume();
        read++;
        b.endList();
        continue;
      }
      do {
        if (r.getCurrentDefinitionLevel() < leaf.valueDef()) {
          child.appendNull();
          seen.nulls++;
        } else {
          value(current, leaf.decode(), child, seen);
        }
        r.consume();
        read++;
      } while (read < limit && r.getCurrentRepetitionLevel() > 0);
      b.endList();
    }
    if (total >= 0 && read != total) {
      throw new IllegalStateException("the column chunk holds " + total + " level entries, " + (total - read) + " past its " + rows + " rows");
    }
    return seen;
  }

  /** The encodings {@link #appendPages} decodes (every page decodes on its own; not the delta byte arrays old writers got wrong across pages). */
  @SuppressWarnings("deprecation") // PLAIN_DICTIONARY and BIT_PACKED: deprecated for writers, still in files old writers wrote
  static final java.util.Set<org.apache.parquet.column.Encoding> PAGE_BY_PAGE = java.util.EnumSet.of(
      org.apache.parquet.column.Encoding.PLAIN, org.apache.parquet.column.Encoding.PLAIN_DICTIONARY,
      org.apache.parquet.column.Encoding.RLE_DICTIONARY, org.apache.parquet.column.Encoding.RLE,
      org.apache.parquet.column.Encoding.BIT_PACKED, org.apache.parquet.column.Encoding.DELTA_BINARY_PACKED,
      org.apache.parquet.column.Encoding.BYTE_STREAM_SPLIT);

  /**
   * As {@link #append} for a scalar leaf's whole column chunk, from its pages directly: each
   * page's definition levels and values decoded by parquet-java's page decoders, without the
   * column reader's per-value level bookkeeping. The pages' checksums are verified as the page
   * reader hands them over.
   */
  static Seen appendPages(org.apache.parquet.column.page.PageReader pages, ParquetTypes.Leaf leaf, int rows, ColumnBuilder b)
      throws java.io.IOException {
    Seen seen = new Seen();
    org.apache.parquet.column.ColumnDescriptor d = leaf.descriptor();
    org.apache.parquet.column.Dictionary dict = dictionary(pages, d);
    int maxDef = d.getMaxDefinitionLevel();
    b.reserve(rows, 0);
    int done = 0;
    ParquetPageValues bulk = bulk(leaf.decode()) ? new ParquetPageValues(leaf.decode()) : null;
    int[] rep = new int[0];
    int[] def = new int[0];
    Hybrid.Decoded fast = new Hybrid.Decoded();
    for (org.apache.parquet.column.page.DataPage page = pages.readPage(); page != null; page = pages.readPage()) {
      int n = page.getValueCount();
      if (done + n > rows) {
        throw new IllegalStateException("the column chunk's pages hold more than its " + rows + " rows");
      }
      if (bulk != null) {
        // Fixed-width numbers: the page's levels and values into arrays, appended in one call.
        bulk.page(page, d, dict, n, 0, maxDef, seen);
        bulk.append(b, 0, n);
        done += n;
        continue;
      }
      if (def.length < n) {
        rep = new int[n];
        def = new int[n];
      }
      org.apache.parquet.column.values.ValuesReader values = levels(page, d, dict, n, rep, def, fast);
      for (int i = 0; i < n; i++) {
        if (def[i] < maxDef) {
          b.appendNull();
          seen.nulls++;
        } else {
          value(values, leaf.decode(), b, seen);
        }
      }
      done += n;
    }
    if (done != rows) {
      throw new IllegalStateException("the column chunk's pages hold " + done + " values for " + rows + " rows");
    }
    return seen;
  }

  /** Whether values of this kind decode a page at a time into arrays ({@link ParquetPageValues}): the fixed-width numbers, scalars and list elements alike. */
  static boolean bulk(ParquetTypes.Decode decode) {
    return decode == ParquetTypes.Decode.INT32 || decode == ParquetTypes.Decode.INT64
        || decode == ParquetTypes.Decode.FLOAT || decode == ParquetTypes.Decode.DOUBLE;
  }

  /**
   * As {@link #append} for a list leaf's whole column chunk of {@link #bulk} values, from its pages
   * directly: each page's repetition and definition levels decoded into arrays, its values read
   * into a primitive array, and each list's elements appended in one call. The column reader's
   * per-value bookkeeping was most of a fleet job's CPU for an 8-float embedding (issue 58: 58 %
   * of the job's reader thread). A list may continue across pages (version 1 pages allow it).
   */
  static Seen appendListPages(org.apache.parquet.column.page.PageReader pages, ParquetTypes.Leaf leaf, int rows, ColumnBuilder b)
      throws java.io.IOException {
    if (!leaf.list() || !bulk(leaf.decode())) {
      throw new IllegalArgumentException("appendListPages takes a list of fixed-width numbers, not " + leaf.decode());
    }
    Seen seen = new Seen();
    org.apache.parquet.column.ColumnDescriptor d = leaf.descriptor();
    org.apache.parquet.column.Dictionary dict = dictionary(pages, d);
    ColumnBuilder child = b.child();
    b.reserve(rows, 0);
    child.reserve((int) Math.min(Integer.MAX_VALUE - 2, pages.getTotalValueCount()), 0); // no element list grows and copies
    ParquetPageValues elements = new ParquetPageValues(leaf.decode());
    int done = 0;
    boolean open = false;
    for (org.apache.parquet.column.page.DataPage page = pages.readPage(); page != null; page = pages.readPage()) {
      int n = page.getValueCount();
      // The page's elements (entries at or past the element level), each value read or marked null.
      elements.page(page, d, dict, n, leaf.elementDef(), leaf.valueDef(), null);
      int[] rep = elements.rep;
      int[] def = elements.def;
      // The rows: a list's elements appended in one call, then its end.
      int e = 0;
      int runFrom = 0;
      for (int i = 0; i < n; i++) {
        if (rep[i] == 0) {
          if (open) {
            elements.append(child, runFrom, e - runFrom);
            b.endList();
            done++;
            open = false;
          }
          if (done >= rows) {
            throw new IllegalStateException("the column chunk's levels hold more than its " + rows + " rows");
          }
          if (def[i] < leaf.listDef()) {
            b.appendNull();
            seen.nulls++;
            done++;
            continue;
          }
          if (def[i] < leaf.elementDef()) {
            seen.nulls++;
            b.endList();
            done++;
            continue;
          }
          open = true;
          runFrom = e;
        } else if (!open) {
          throw new IllegalStateException("row " + done + " does not start at repetition level 0");
        }
        if (def[i] < leaf.elementDef()) {
          throw new IllegalStateException("row " + done + " holds an empty list inside a list");
        }
        if (def[i] < leaf.valueDef()) {
          seen.nulls++;
        } else if (elements.integers) {
          seen.value(elements.longs[e]);
        }
        e++;
      }
      if (open) { // the list continues on the next page: its elements here go in now
        elements.append(child, runFrom, e - runFrom);
      }
    }
    if (open) {
      b.endList();
      done++;
    }
    if (done != rows) {
      throw new IllegalStateException("the column chunk's levels hold " + done + " rows, not " + rows);
    }
    return seen;
  }

  /**
   * Decodes a data page's {@code n} repetition and definition levels into {@code rep} and {@code
   * def}; returns its values reader, positioned at its first value.
   */
  static org.apache.parquet.column.values.ValuesReader levels(org.apache.parquet.column.page.DataPage page,
      org.apache.parquet.column.ColumnDescriptor d, org.apache.parquet.column.Dictionary dict, int n, int[] rep, int[] def,
      Hybrid.Decoded fast) throws java.io.IOException {
    if (page instanceof org.apache.parquet.column.page.DataPageV1 v1) {
      Hybrid.Decoded decoded = Hybrid.v1(v1, d, dict, n, rep, def, fast);
      if (decoded != null) {
        return decoded;
      }
      org.apache.parquet.bytes.ByteBufferInputStream in = v1.getBytes().toInputStream();
      org.apache.parquet.column.values.ValuesReader rl =
          v1.getRlEncoding().getValuesReader(d, org.apache.parquet.column.ValuesType.REPETITION_LEVEL);
      rl.initFromPage(n, in);
      org.apache.parquet.column.values.ValuesReader dl =
          v1.getDlEncoding().getValuesReader(d, org.apache.parquet.column.ValuesType.DEFINITION_LEVEL);
      dl.initFromPage(n, in);
      for (int i = 0; i < n; i++) {
        rep[i] = rl.readInteger();
      }
      for (int i = 0; i < n; i++) {
        def[i] = dl.readInteger();
      }
      org.apache.parquet.column.values.ValuesReader values = reader(v1.getValueEncoding(), d, dict);
      values.initFromPage(n, in);
      return values;
    }
    if (page instanceof org.apache.parquet.column.page.DataPageV2 v2) {
      Hybrid.levelsV2(Hybrid.whole(v2.getRepetitionLevels()), d.getMaxRepetitionLevel(), n, rep);
      Hybrid.levelsV2(Hybrid.whole(v2.getDefinitionLevels()), d.getMaxDefinitionLevel(), n, def);
      java.nio.ByteBuffer data = Hybrid.whole(v2.getData());
      Hybrid.Decoded decoded = Hybrid.values(v2.getDataEncoding(), data, data.position(), data.limit(), d, dict,
          Hybrid.present(def, n, d.getMaxDefinitionLevel()), fast);
      if (decoded != null) {
        return decoded;
      }
      org.apache.parquet.column.values.ValuesReader values = reader(v2.getDataEncoding(), d, dict);
      // The page's data was read once above (a decompressing stream cannot be read again).
      values.initFromPage(n, org.apache.parquet.bytes.ByteBufferInputStream.wrap(data));
      return values;
    }
    throw new IllegalStateException("a data page of an unknown kind: " + page);
  }

  /** The column chunk's dictionary, or null where its pages have none. */
  private static org.apache.parquet.column.Dictionary dictionary(org.apache.parquet.column.page.PageReader pages,
      org.apache.parquet.column.ColumnDescriptor d) throws java.io.IOException {
    org.apache.parquet.column.page.DictionaryPage dp = pages.readDictionaryPage();
    return dp == null ? null : dp.getEncoding().initDictionary(d, dp);
  }

  private static org.apache.parquet.column.values.ValuesReader reader(org.apache.parquet.column.Encoding e,
      org.apache.parquet.column.ColumnDescriptor d, org.apache.parquet.column.Dictionary dict) {
    if (e.usesDictionary()) {
      if (dict == null) {
        throw new IllegalStateException("a dictionary-encoded page without a dictionary page");
      }
      return e.getDictionaryBasedValuesReader(d, org.apache.parquet.column.ValuesType.VALUES, dict);
    }
    return e.getValuesReader(d, org.apache.parquet.column.ValuesType.VALUES);
  }

  /** One value, from a page's values reader or a column reader's current value ({@link Current}), appended as its feature type holds it. */
  private static void value(org.apache.parquet.column.values.ValuesReader r, ParquetTypes.Decode decode, ColumnBuilder b, Seen seen) {
    switch (decode) {
      case BOOL -> b.appendBoolean(r.readBoolean());
      case INT32 -> {
        long v = r.readInteger();
        seen.value(v);
        b.appendLong(v);
      }
      case UINT32 -> b.appendLong(Integer.toUnsignedLong(r.readInteger()));
      case INT64 -> {
        long v = r.readLong();
        seen.value(v);
        b.appendLong(v);
      }
      case UINT64 -> b.appendDecimal(r.readLong(), 0L);
      // Floats by their bits: a conversion through double would quiet a signalling NaN.
      case FLOAT -> b.appendFloatBits(Float.floatToRawIntBits(r.readFloat()));
      case DOUBLE -> b.appendDouble(r.readDouble());
      case FLOAT16 -> {
        ByteBuffer h = r.readBytes().toByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        b.appendFloatBits(ColumnBuilder.halfToFloatBits(h.getShort(h.position())));
      }
      case BYTES -> {
        ByteBuffer v = r.readBytes().toByteBuffer();
        b.appendBytes(MemorySegment.ofBuffer(v), 0, v.remaining());
      }
      case DECIMAL_INT32 -> {
        long v = r.readInteger();
        seen.value(v);
        b.appendDecimal(v, v < 0 ? -1L : 0L);
      }
      case DECIMAL_INT64 -> {
        long v = r.readLong();
        seen.value(v);
        b.appendDecimal(v, v < 0 ? -1L : 0L);
      }
      case DECIMAL_BYTES -> decimal(r.readBytes(), b);
      case MILLIS -> b.appendLong(scale(r.readLong(), 1_000_000L, "milliseconds"));
      case MICROS -> b.appendLong(scale(r.readLong(), 1_000L, "microseconds"));
      case NANOS -> b.appendLong(r.readLong());
      case INT96 -> b.appendLong(int96(r.readBytes()));
    }
  }

  /** A column reader's current value, read as a page's values are: one conversion of values serves both paths. */
  private static final class Current extends org.apache.parquet.column.values.ValuesReader {
    private final ColumnReader r;

    Current(ColumnReader r) {
      this.r = r;
    }

    @Override
    public boolean readBoolean() {
      return r.getBoolean();
    }

    @Override
    public int readInteger() {
      return r.getInteger();
    }

    @Override
    public long readLong() {
      return r.getLong();
    }

    @Override
    public float readFloat() {
      return r.getFloat();
    }

    @Override
    public double readDouble() {
      return r.getDouble();
    }

    @Override
    public Binary readBytes() {
      return r.getBinary();
    }

    @Override
    public void skip() {
      r.skip();
    }
  }

  private static long scale(long v, long factor, String unit) {
    try {
      return Math.multiplyExact(v, factor);
    } catch (ArithmeticException e) {
      throw new OrcColumns.UnrepresentableValueException(
          "timestamp " + v + " " + unit + " lies outside the nanosecond range (years 1677..2262)");
    }
  }

  /** An INT96 timestamp (Impala's and old Spark's): nanoseconds of the day, then the Julian day, little-endian. */
  static long int96(Binary v) {
    ByteBuffer b = v.toByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
    if (b.remaining() != 12) {
      throw new IllegalStateException("an INT96 value of " + b.remaining() + " bytes");
    }
    long nanosOfDay = b.getLong(b.position());
    long julianDay = Integer.toUnsignedLong(b.getInt(b.position() + 8));
    try {
      return Math.addExact(Math.multiplyExact(julianDay - JULIAN_EPOCH_DAY, NANOS_PER_DAY), nanosOfDay);
    } catch (ArithmeticException e) {
      throw new OrcColumns.UnrepresentableValueException(
          "INT96 timestamp of Julian day " + julianDay + " lies outside the nanosecond range (years 1677..2262)");
    }
  }

  /** A big-endian two's-complement unscaled decimal, as the 128-bit value Arrow keeps. */
  private static void decimal(Binary v, ColumnBuilder b) {
    ByteBuffer bytes = v.toByteBuffer();
    int n = bytes.remaining();
    int at = bytes.position();
    if (n == 0) {
      b.appendDecimal(0L, 0L);
      return;
    }
    long fill = bytes.get(at) < 0 ? -1L : 0L;
    int skip = Math.max(0, n - 16);
    for (int i = 0; i < skip; i++) {
      if (bytes.get(at + i) != (byte) fill) {
        throw new OrcColumns.UnrepresentableValueException("a decimal of " + n + " bytes does not fit in 128 bits");
      }
    }
    long high = fill;
    long low = fill;
    for (int i = skip; i < n; i++) {
      high = (high << 8) | (low >>> 56);
      low = (low << 8) | (bytes.get(at + i) & 0xffL);
    }
    b.appendDecimal(low, high);
  }
}
