package io.strata.store;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.internal.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What the store knows of one derived feature.
 *
 * @param fingerprint identity (spec, dataset version, source checksums)
 * @param spec canonical spec
 * @param dataset dataset name
 * @param datasetDir dataset directory when computed
 * @param version dataset version
 * @param type output feature type
 * @param chunks chunks of the dataset
 * @param done chunks written (all of them when complete)
 * @param complete whether every chunk is written and the feature may be served
 * @param bytes bytes stored (encoded chunks, before compression)
 * @param computeSeconds CPU-bound time spent computing it
 * @param createdMillis when computing started
 * @param lastUsedMillis when it was last served
 * @param statistics dataset-wide statistics used (zscore, minmax)
 */
public record FeatureMeta(
    String fingerprint,
    String spec,
    String dataset,
    String datasetDir,
    String version,
    String type,
    int chunks,
    int done,
    boolean complete,
    long bytes,
    double computeSeconds,
    long createdMillis,
    long lastUsedMillis,
    Map<String, double[]> statistics) {

  FeatureMeta withProgress(int doneChunks, long addedBytes, double addedSeconds) {
    return new FeatureMeta(fingerprint, spec, dataset, datasetDir, version, type, chunks, doneChunks,
        doneChunks == chunks, bytes + addedBytes, computeSeconds + addedSeconds, createdMillis, System.currentTimeMillis(),
        statistics);
  }

  FeatureMeta used() {
    return new FeatureMeta(fingerprint, spec, dataset, datasetDir, version, type, chunks, done, complete, bytes,
        computeSeconds, createdMillis, System.currentTimeMillis(), statistics);
  }

  /** As JSON (the form the store keeps and the node answers with). */
  public ObjectNode toJson() {
    ObjectNode o = Json.object();
    o.put("fingerprint", fingerprint).put("spec", spec).put("dataset", dataset).put("datasetDir", datasetDir)
        .put("version", version).put("type", type).put("chunks", chunks).put("done", done).put("complete", complete)
        .put("bytes", bytes).put("computeSeconds", computeSeconds).put("createdMillis", createdMillis)
        .put("lastUsedMillis", lastUsedMillis);
    o.set("statistics", statisticsJson(statistics));
    return o;
  }

  /** Statistics as JSON: each canonical sub-expression to its numbers (the form the store and the staging keep). */
  static ObjectNode statisticsJson(Map<String, double[]> statistics) {
    ObjectNode s = Json.object();
    statistics.forEach((k, v) -> {
      var a = s.putArray(k);
      for (double d : v) {
        a.add(d);
      }
    });
    return s;
  }

  /** Statistics read back from {@link #statisticsJson}'s form. */
  static Map<String, double[]> statistics(JsonNode s) {
    Map<String, double[]> stats = new LinkedHashMap<>();
    s.properties().forEach(e -> {
      double[] v = new double[e.getValue().size()];
      for (int i = 0; i < v.length; i++) {
        v[i] = e.getValue().get(i).asDouble();
      }
      stats.put(e.getKey(), v);
    });
    return stats;
  }

  /** The feature described by {@link #toJson}'s form (a peer's answer, a stored value). */
  public static FeatureMeta fromJson(JsonNode o) {
    Map<String, double[]> stats = statistics(o.path("statistics"));
    return new FeatureMeta(o.path("fingerprint").asText(), o.path("spec").asText(), o.path("dataset").asText(),
        o.path("datasetDir").asText(), o.path("version").asText(), o.path("type").asText(), o.path("chunks").asInt(),
        o.path("done").asInt(), o.path("complete").asBoolean(), o.path("bytes").asLong(), o.path("computeSeconds").asDouble(),
        o.path("createdMillis").asLong(), o.path("lastUsedMillis").asLong(), stats);
  }
}
