package io.strata.node;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.internal.Json;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** The live tier dashboard served at {@code /ui}: a static page polling {@code /ui/data}. */
final class Dashboard {
  private final TierManager tiers;
  private final String html;

  Dashboard(TierManager tiers) {
    this.tiers = tiers;
    try (InputStream in = Dashboard.class.getResourceAsStream("dashboard.html")) {
      if (in == null) {
        throw new IllegalStateException("dashboard.html is missing from the cache-node jar");
      }
      this.html = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  String html() {
    return html;
  }

  /** Status plus the last ten minutes of samples. */
  Object data() {
    ObjectNode o = Json.MAPPER.valueToTree(tiers.status());
    ArrayNode h = o.putArray("history");
    List<double[]> samples = tiers.history(600);
    for (double[] s : samples) {
      h.addArray().add(s[0]).add(s[1]).add(s[2]).add(s[3]).add(s[4]).add(s[5]).add(s[6]);
    }
    return o;
  }
}
