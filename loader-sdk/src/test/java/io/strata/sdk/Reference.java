package io.strata.sdk;

import io.strata.sdk.files.Manifest;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.ql.exec.vector.BytesColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DecimalColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DoubleColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ListColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.TimestampColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.orc.OrcFile;
import org.apache.orc.Reader;
import org.apache.orc.RecordReader;
import org.apache.orc.TypeDescription;

/**
 * An independent reference: reads a whole (small) dataset row by row with orc-core's plain API,
 * one Java object per value, without any of Strata's reading code.
 */
public final class Reference {
  private final Map<String, List<Object>> columns = new HashMap<>();
  private final long rows;

  public Reference(Path datasetDir) throws IOException {
    Manifest m = Manifest.read(datasetDir);
    Configuration conf = new Configuration(false);
    long total = 0;
    for (Manifest.OrcFileInfo f : m.files()) {
      Path p = datasetDir.resolve(f.path());
      try (Reader r = OrcFile.createReader(new org.apache.hadoop.fs.Path(p.toUri()), OrcFile.readerOptions(conf).useUTCTimestamp(true));
          RecordReader rr = r.rows()) {
        TypeDescription schema = r.getSchema();
        VectorizedRowBatch b = schema.createRowBatch();
        while (rr.nextBatch(b)) {
          for (int c = 0; c < schema.getFieldNames().size(); c++) {
            List<Object> out = columns.computeIfAbsent(schema.getFieldNames().get(c), k -> new ArrayList<>());
            for (int i = 0; i < b.size; i++) {
              out.add(value(schema.getChildren().get(c), b.cols[c], i));
            }
          }
          total += b.size;
        }
      }
    }
    this.rows = total;
  }

  public long rows() {
    return rows;
  }

  /** The value of {@code feature} at global row {@code row}. */
  public Object get(String feature, long row) {
    return columns.get(feature).get((int) row);
  }

  public List<Object> column(String feature) {
    return columns.get(feature);
  }

  private static Object value(TypeDescription t, ColumnVector v, int i) {
    int r = v.isRepeating ? 0 : i;
    if (!v.noNulls && v.isNull[r]) {
      return null;
    }
    return switch (t.getCategory()) {
      case BOOLEAN -> ((LongColumnVector) v).vector[r] != 0;
      case BYTE -> (byte) ((LongColumnVector) v).vector[r];
      case SHORT -> (short) ((LongColumnVector) v).vector[r];
      case INT -> (int) ((LongColumnVector) v).vector[r];
      case LONG -> ((LongColumnVector) v).vector[r];
      case FLOAT -> (float) ((DoubleColumnVector) v).vector[r];
      case DOUBLE -> ((DoubleColumnVector) v).vector[r];
      case STRING, VARCHAR, CHAR -> {
        BytesColumnVector s = (BytesColumnVector) v;
        yield new String(s.vector[r], s.start[r], s.length[r], StandardCharsets.UTF_8);
      }
      case BINARY -> {
        BytesColumnVector s = (BytesColumnVector) v;
        yield Arrays.copyOfRange(s.vector[r], s.start[r], s.start[r] + s.length[r]);
      }
      case DATE -> LocalDate.ofEpochDay(((LongColumnVector) v).vector[r]);
      case TIMESTAMP -> {
        TimestampColumnVector ts = (TimestampColumnVector) v;
        yield LocalDateTime.ofEpochSecond(Math.floorDiv(ts.time[r], 1000), ts.nanos[r], ZoneOffset.UTC);
      }
      case DECIMAL -> {
        BigDecimal d = ((DecimalColumnVector) v).vector[r].getHiveDecimal().bigDecimalValue();
        yield d.setScale(t.getScale());
      }
      case LIST -> {
        ListColumnVector l = (ListColumnVector) v;
        List<Object> items = new ArrayList<>();
        for (long k = l.offsets[r]; k < l.offsets[r] + l.lengths[r]; k++) {
          items.add(value(t.getChildren().getFirst(), l.child, (int) k));
        }
        yield items;
      }
      default -> throw new IllegalStateException("unsupported in the reference: " + t);
    };
  }
}
