package io.strata.sdk.files;

import io.strata.sdk.CorruptFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.orc.TypeDescription;

/**
 * What a projection reads from one ORC file of a dataset: {@code include} (ORC column ids, for
 * orc-core) and, per requested feature, the top-level field it is decoded from. Which field holds
 * which feature comes from the manifest (its replicas included); a file whose schema does not
 * match it is refused, naming the file. Immutable.
 */
record OrcProjection(boolean[] include, int[] fieldOf) {
  /**
   * Which feature each top-level field of {@code schema} holds (-1: none this manifest names), its
   * replicas included; a file whose schema does not match the manifest is refused.
   */
  private static int[] fieldFeatures(Manifest manifest, Map<String, Integer> columnIndex, Path file, TypeDescription schema)
      throws CorruptFileException {
    List<String> names = schema.getFieldNames();
    int[] out = new int[names.size()];
    for (int i = 0; i < out.length; i++) {
      Integer f = columnIndex.get(names.get(i));
      out[i] = f == null ? -1 : f;
    }
    for (Manifest.ReplicaInfo r : manifest.replicas()) {
      if (r.position() >= names.size() || !names.get(r.position()).equals(r.field())) {
        throw new CorruptFileException(file, "has no field '" + r.field() + "' at position " + r.position()
            + " although the manifest lists it as a replica of '" + r.feature() + "'");
      }
      out[r.position()] = columnIndex.get(r.feature());
    }
    return out;
  }

  /**
   * The projection of {@code columns} (feature indices of {@code manifest}) on {@code file}, whose
   * schema is {@code schema}: with replicas, the copies that give the fewest runs of adjacent fields.
   */
  static OrcProjection of(Manifest manifest, Map<String, Integer> columnIndex, Path file, TypeDescription schema,
      List<Integer> columns) throws CorruptFileException {
    int[] fieldFeature = fieldFeatures(manifest, columnIndex, file, schema);
    boolean[] wanted = new boolean[manifest.features().size()];
    for (int c : columns) {
      wanted[c] = true;
    }
    // With replicas, the copies that give the fewest runs of adjacent fields (read requests).
    boolean[] take = manifest.replicas().isEmpty() ? null : FieldCover.choose(fieldFeature, wanted);
    boolean[] include = new boolean[schema.getMaximumId() + 1];
    include[0] = true;
    int[] fieldOf = new int[columns.size()];
    for (int i = 0; i < columns.size(); i++) {
      fieldOf[i] = -1;
      for (int f = 0; f < fieldFeature.length && fieldOf[i] < 0; f++) {
        if (fieldFeature[f] == columns.get(i) && (take == null || take[f])) {
          fieldOf[i] = f;
        }
      }
      if (fieldOf[i] < 0) {
        throw new CorruptFileException(file, "has no column '" + manifest.features().get(columns.get(i)).name()
            + "' although the manifest lists it");
      }
    }
    for (int f = 0; f < fieldFeature.length; f++) {
      if (take != null ? take[f] : fieldFeature[f] >= 0 && wanted[fieldFeature[f]]) {
        TypeDescription t = schema.getChildren().get(f);
        for (int id = t.getId(); id <= t.getMaximumId(); id++) {
          include[id] = true;
        }
      }
    }
    return new OrcProjection(include, fieldOf);
  }
}
