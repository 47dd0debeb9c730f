package io.strata.node;

import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.derive.Spec;
import io.strata.store.FeatureStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Checks of what a request names against its dataset: features (a derived one by its canonical
 * spec, and materialized in the feature store) and chunks. A failed check is a {@link
 * NodeException} naming the problem. Stateless apart from the feature store it looks in; thread-safe.
 */
final class RequestChecks {
  private final FeatureStore features;

  RequestChecks(FeatureStore features) {
    this.features = features;
  }

  /**
   * Checks that {@code feature} names a feature of {@code ds} (a derived one by its canonical spec,
   * and materialized) and {@code chunk} one of its chunks.
   */
  void check(Dataset ds, String feature, int chunk) {
    if (Spec.isDerived(ds, feature)) {
      String canonical;
      try {
        canonical = Spec.parse(feature).canonical();
      } catch (IllegalArgumentException e) {
        throw NodeException.badRequest(e.getMessage());
      }
      if (!canonical.equals(feature)) {
        throw NodeException.badRequest("derived features are named by their canonical spec: '" + canonical + "', not '" + feature + "'");
      }
      try {
        if (features.lookup(ds.name(), ds.version(), canonical).isEmpty()) {
          throw NodeException.notFound("derived feature " + canonical + " of " + ds.name() + " is not materialized (POST /v1/features first)");
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    } else {
      try {
        ds.feature(feature);
      } catch (IllegalArgumentException e) {
        throw NodeException.badRequest(e.getMessage());
      }
    }
    if (chunk < 0 || chunk >= ds.chunks().size()) {
      throw NodeException.badRequest("chunk " + chunk + " is outside dataset " + ds.name() + " (0.." + (ds.chunks().size() - 1) + ")");
    }
  }

  /** Checks every feature against chunk 0 and every chunk against the first feature. */
  void check(Dataset ds, List<String> fs, List<Integer> chunks) {
    for (String f : fs) {
      check(ds, f, 0);
    }
    for (int c : chunks) {
      check(ds, fs.getFirst(), c);
    }
  }

  static List<Integer> allChunks(Dataset ds) {
    List<Integer> cs = new ArrayList<>();
    for (int c = 0; c < ds.chunks().size(); c++) {
      cs.add(c);
    }
    return cs;
  }

}
