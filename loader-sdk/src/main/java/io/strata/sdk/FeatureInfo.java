package io.strata.sdk;

import io.strata.sdk.FeatureType;
import java.util.Objects;

/**
 * A top-level column of a dataset: a feature Strata serves (with its {@link #type()}), or a column
 * of a type it does not serve, with the {@link #unsupportedReason()}.
 *
 * @param name column name
 * @param orcType the ORC type as ORC writes it, for example {@code struct<a:int>}
 * @param orcColumn the ORC column id (pre-order; 0 is the root struct)
 * @param type the served type, or null when unsupported
 * @param unsupportedReason why the column is not served, or null when supported
 */
public record FeatureInfo(
    String name, String orcType, int orcColumn, FeatureType type, String unsupportedReason) {
  public FeatureInfo {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(orcType, "orcType");
    if ((type == null) == (unsupportedReason == null)) {
      throw new IllegalArgumentException("exactly one of type and unsupportedReason must be set for " + name);
    }
  }

  public boolean supported() {
    return type != null;
  }

  /** The refusal of a request for this unserved column of {@code dataset}: says once that it is not served, and why. */
  public String notServed(String dataset) {
    String r = unsupportedReason.startsWith("not served: ") ? unsupportedReason.substring("not served: ".length()) : unsupportedReason;
    return "column '" + name + "' of dataset " + dataset + (r.contains("not served") ? ": " + r : " is not served: " + r);
  }
}
