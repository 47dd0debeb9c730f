package io.strata.tools;

import io.strata.sdk.files.DatasetFiles;
import io.strata.sdk.files.Manifest;
import io.strata.sdk.files.OrcIo;
import io.strata.sdk.files.StreamChecksums;
import io.strata.sdk.files.StripeFooters;
import io.strata.sdk.ChunkInfo;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.Progress;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongConsumer;
import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.orc.OrcFile;
import org.apache.orc.Reader;
import org.apache.orc.RecordReader;
import org.apache.orc.StripeInformation;
import org.apache.orc.TypeDescription;
import org.apache.orc.Writer;

/**
 * The writing half of a {@link Relayout}: the dataset's ORC files rewritten with their columns in
 * the new order into a temporary directory, each new stripe one old stripe or several consecutive
 * ones of a file merged ({@link #groups}), then every value of every row compared with the old
 * files and each new chunk checked to be its old ones, row for row, before the relayout makes
 * them current. Not thread-safe; called by {@link Relayout} alone.
 */
final class RelayoutWriter {
  private static final int BATCH = 4096;

  private RelayoutWriter() {}

  /** The stream checksums of the files written in {@code tmp}, kept there; {@code prefix} is tmp's place in the dataset. */
  static Manifest.StreamChecksumsInfo streamChecksums(Path tmp, Written w, String prefix) throws IOException {
    List<Path> files = new ArrayList<>();
    for (Manifest.OrcFileInfo i : w.infos()) {
      files.add(tmp.resolve(i.path()));
    }
    return StreamChecksums.write(tmp.resolve(StreamChecksums.FILE_NAME), prefix + StreamChecksums.FILE_NAME, files);
  }

  /** The new files in a temporary directory, checked, with their stripe map, checksums and version. */
  record Written(List<Manifest.OrcFileInfo> infos, List<ChunkInfo> chunks, List<FeatureInfo> features, String version,
      long bytes, List<Manifest.ReplicaInfo> replicas) {}

  /** The fields of {@code order}: a feature's first place under its name, its second as a replica. */
  static List<Manifest.ReplicaInfo> replicas(List<String> order) {
    Set<String> seen = new HashSet<>(order);
    Set<String> placed = new HashSet<>();
    List<Manifest.ReplicaInfo> out = new ArrayList<>();
    int n = 0;
    for (int i = 0; i < order.size(); i++) {
      if (!placed.add(order.get(i))) {
        String field;
        do {
          field = "strata_copy_" + ++n;
        } while (seen.contains(field));
        out.add(new Manifest.ReplicaInfo(field, order.get(i), i));
      }
    }
    return out;
  }

  /** A new stripe (chunk): old chunks {@code [first, first + count)}, consecutive stripes of one file. */
  record Group(int file, int first, int count) {}

  /**
   * The new stripes: consecutive old stripes of one file merged while their bytes together stay
   * within {@code stripeBytes} (an old stripe larger than that stays alone); every old stripe
   * alone for {@code stripeBytes <= 0}.
   */
  static List<Group> groups(Manifest old, long stripeBytes) {
    List<Group> out = new ArrayList<>();
    int first = 0;
    long bytes = 0;
    List<ChunkInfo> cs = old.chunks();
    for (int c = 0; c < cs.size(); c++) {
      ChunkInfo ci = cs.get(c);
      if (c > first && (stripeBytes <= 0 || ci.file() != cs.get(first).file() || bytes + ci.length() > stripeBytes)) {
        out.add(new Group(cs.get(first).file(), first, c - first));
        first = c;
        bytes = 0;
      }
      bytes += ci.length();
    }
    if (first < cs.size()) {
      out.add(new Group(cs.get(first).file(), first, cs.size() - first));
    }
    return out;
  }

  /**
   * Writes the files of {@code dir} in {@code order} into {@code tmp} ({@code part-NNNNN.orc}),
   * each new stripe the old ones of a {@linkplain #groups group} ({@code stripeBytes}), compares
   * every value with the old files, and checks each new chunk is its group's old ones, row for row.
   */
  static Written writeVerified(Path dir, Manifest old, List<String> order, long stripeBytes, Path tmp, Progress progress)
      throws IOException {
    List<Group> groups = groups(old, stripeBytes);
    long total = old.rows() * 2;
    long[] done = {0};
    List<Path> written = new ArrayList<>();
    List<Manifest.ReplicaInfo> replicas = replicas(order);
    List<String> fieldNames = new ArrayList<>(order);
    Map<String, String> copyOf = new HashMap<>();
    for (Manifest.ReplicaInfo r : replicas) {
      fieldNames.set(r.position(), r.field());
      copyOf.put(r.field(), r.feature());
    }
    TypeDescription schema = null;
    for (int f = 0; f < old.files().size(); f++) {
      Path src = dir.resolve(old.files().get(f).path());
      Path dst = tmp.resolve(String.format("part-%05d.orc", f));
      // Which of the file's stripes end a new stripe.
      List<Boolean> ends = new ArrayList<>();
      for (Group g : groups) {
        if (g.file() == f) {
          for (int i = 0; i < g.count(); i++) {
            ends.add(i == g.count() - 1);
          }
        }
      }
      schema = rewriteFile(src, dst, order, fieldNames, ends, r -> progress.update(done[0] += r, total, "rows"));
      written.add(dst);
    }
    Relayout.beforeCheck.accept(tmp);
    List<String> features = old.features().stream().map(FeatureInfo::name).toList();
    for (int f = 0; f < old.files().size(); f++) {
      verify(dir.resolve(old.files().get(f).path()), written.get(f), features, copyOf,
          r -> progress.update(done[0] += r, total, "rows"));
    }
    List<Manifest.OrcFileInfo> infos = new ArrayList<>();
    List<ChunkInfo> chunks = new ArrayList<>();
    long row = 0;
    long bytes = 0;
    for (int f = 0; f < written.size(); f++) {
      Path p = written.get(f);
      long rows;
      String crc = DatasetFiles.crc32c(p);
      try (Reader reader = OrcIo.open(p)) {
        rows = DatasetImporter.addStripes(reader, f, row, chunks);
        StripeFooters.write(p, reader, crc);
      }
      long size = Files.size(p);
      row += rows;
      bytes += size;
      infos.add(new Manifest.OrcFileInfo(p.getFileName().toString(), size, rows, crc));
    }
    if (chunks.size() != groups.size()) {
      throw new IOException("relayout of " + dir + " wrote " + chunks.size() + " chunks, not the " + groups.size() + " planned");
    }
    for (int c = 0; c < chunks.size(); c++) {
      Group g = groups.get(c);
      ChunkInfo first = old.chunks().get(g.first());
      long rows = old.chunks().get(g.first() + g.count() - 1).endRow() - first.firstRow();
      if (chunks.get(c).rows() != rows || chunks.get(c).firstRow() != first.firstRow() || chunks.get(c).file() != g.file()) {
        throw new IOException("relayout of " + dir + " wrote chunk " + c + " with rows other than old chunks " + g.first() + ".."
            + (g.first() + g.count() - 1) + "'s");
      }
    }
    String version = DatasetFiles.version(infos);
    if (version.equals(old.version())) {
      throw new IllegalArgumentException("dataset " + old.name() + " is already in this order and these stripes");
    }
    List<FeatureInfo> newFeatures = new ArrayList<>();
    for (FeatureInfo fi : DatasetImporter.features(schema)) {
      if (!copyOf.containsKey(fi.name())) {
        newFeatures.add(fi);
      }
    }
    return new Written(infos, chunks, newFeatures, version, bytes, replicas);
  }

  /**
   * Rewrites one ORC file with its columns in {@code order} (field {@code i} holding feature {@code
   * order[i]} under the name {@code fieldNames[i]}), a new stripe ending after each old stripe
   * {@code s} with {@code ends[s]} (and after the last); returns the new schema.
   */
  static TypeDescription rewriteFile(Path src, Path dst, List<String> order, List<String> fieldNames, List<Boolean> ends,
      LongConsumer rows) throws IOException {
    try (Reader reader = OrcIo.open(src)) {
      TypeDescription schema = reader.getSchema();
      List<String> fields = schema.getFieldNames();
      TypeDescription out = TypeDescription.createStruct();
      int[] from = new int[order.size()];
      for (int i = 0; i < order.size(); i++) {
        from[i] = fields.indexOf(order.get(i));
        if (from[i] < 0) {
          throw new IOException(src + " has no column '" + order.get(i) + "' although the manifest lists it");
        }
        out.addField(fieldNames.get(i), schema.getChildren().get(from[i]).clone());
      }
      OrcFile.WriterOptions options = OrcFile.writerOptions(OrcIo.CONF)
          .fileSystem(OrcIo.FS)
          .setSchema(out)
          .compress(reader.getCompressionKind())
          .stripeSize(1L << 40)
          .blockPadding(false)
          .memory(new OrcIo.ExplicitStripes())
          .useUTCTimestamp(true)
          .rowIndexStride(reader.getRowIndexStride() > 0 ? reader.getRowIndexStride() : 10_000);
      List<StripeInformation> stripes = reader.getStripes();
      if (stripes.size() != ends.size()) {
        throw new IOException(src + " has " + stripes.size() + " stripes although the manifest lists " + ends.size());
      }
      try (Writer w = OrcFile.createWriter(OrcIo.hadoopPath(dst), options)) {
        VectorizedRowBatch in = schema.createRowBatch(BATCH);
        VectorizedRowBatch outBatch = out.createRowBatch(BATCH);
        for (int s = 0; s < stripes.size(); s++) {
          StripeInformation st = stripes.get(s);
          // One reader per old stripe: a new stripe ends where the last old one of its group did.
          try (RecordReader rr = reader.rows(reader.options().range(st.getOffset(), st.getLength()))) {
            while (rr.nextBatch(in)) {
              for (int i = 0; i < from.length; i++) {
                outBatch.cols[i] = in.cols[from[i]];
              }
              outBatch.size = in.size;
              outBatch.selectedInUse = false;
              w.addRowBatch(outBatch);
              rows.accept(in.size);
            }
          }
          if (ends.get(s) || s == stripes.size() - 1) {
            w.writeIntermediateFooter();
          }
        }
      }
      return out;
    }
  }

  /**
   * Compares two files value for value, by column name: every row of every field of the new file
   * (a replica against the old file's column it copies) and every one of {@code features} present,
   * whatever its type (through ORC's own rendering of each value, nulls included).
   */
  static void verify(Path oldFile, Path newFile, List<String> features, Map<String, String> copyOf,
      LongConsumer rows) throws IOException {
    try (Reader a = OrcIo.open(oldFile); Reader b = OrcIo.open(newFile);
         RecordReader ra = a.rows(a.options()); RecordReader rb = b.rows(b.options())) {
      if (a.getNumberOfRows() != b.getNumberOfRows()) {
        throw new IOException("relayout check failed: " + newFile + " has " + b.getNumberOfRows() + " rows, " + oldFile
            + " " + a.getNumberOfRows());
      }
      List<String> oldNames = a.getSchema().getFieldNames();
      List<String> newNames = b.getSchema().getFieldNames();
      for (String f : features) {
        if (!newNames.contains(f)) {
          throw new IOException("relayout check failed: column '" + f + "' is missing in " + newFile);
        }
      }
      // Every new field against the old column it holds: from[i] for new field i.
      int[] from = new int[newNames.size()];
      for (int i = 0; i < newNames.size(); i++) {
        String feature = copyOf.getOrDefault(newNames.get(i), newNames.get(i));
        from[i] = oldNames.indexOf(feature);
        if (from[i] < 0 || !a.getSchema().getChildren().get(from[i]).equals(b.getSchema().getChildren().get(i))) {
          throw new IOException("relayout check failed: column '" + newNames.get(i) + "' of " + newFile
              + " is not in the old file or changed type");
        }
      }
      VectorizedRowBatch x = a.getSchema().createRowBatch(BATCH);
      VectorizedRowBatch y = b.getSchema().createRowBatch(BATCH);
      StringBuilder sx = new StringBuilder();
      StringBuilder sy = new StringBuilder();
      long row = 0;
      int yRow = 0;
      while (ra.nextBatch(x)) {
        // Batches of the two readers may be cut differently: walk both row by row.
        int i = 0;
        while (i < x.size) {
          if (y.size == 0 || yRow >= y.size) {
            if (!rb.nextBatch(y)) {
              throw new IOException("relayout check failed: " + newFile + " ends at row " + row);
            }
            yRow = 0;
          }
          for (int c = 0; c < from.length; c++) {
            sx.setLength(0);
            sy.setLength(0);
            stringify(x.cols[from[c]], i, sx);
            stringify(y.cols[c], yRow, sy);
            if (!sx.toString().contentEquals(sy)) {
              throw new IOException("relayout check failed: column '" + newNames.get(c) + "' row " + row + " of " + oldFile
                  + " differs in the rewrite (" + clip(sx) + " vs " + clip(sy) + ")");
            }
          }
          i++;
          yRow++;
          row++;
        }
        rows.accept(x.size);
      }
      if (yRow < y.size || rb.nextBatch(y)) {
        throw new IOException("relayout check failed: " + newFile + " has rows beyond " + oldFile + "'s " + row);
      }
    }
  }

  static void stringify(ColumnVector v, int row, StringBuilder out) {
    int r = v.isRepeating ? 0 : row;
    if (!v.noNulls && v.isNull[r]) {
      out.append("null");
    } else {
      v.stringifyValue(out, r);
    }
  }

  static String clip(CharSequence s) {
    return s.length() > 60 ? s.subSequence(0, 60) + "..." : s.toString();
  }
}
