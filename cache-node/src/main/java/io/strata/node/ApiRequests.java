package io.strata.node;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.node.policy.Policies;
import io.strata.sdk.tier.Tier;
import io.strata.sdk.internal.Json;
import io.strata.sdk.loader.PlanProgram;
import io.vertx.ext.web.RoutingContext;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The node API's request bodies, parsed and checked in one place: each typed request (a record)
 * from its JSON, and the field readers they share, which refuse a missing or mistyped field with
 * a {@link NodeException} of kind bad request naming it (400 to the client). Stateless.
 */
final class ApiRequests {
  private ApiRequests() {}

  /** A {@code POST /v1/reads} body: a job's reads of one dataset, its step (-1: none), and what it still maps of evicted segments (-1: not said). */
  record ReadsReport(String job, String dataset, List<TierState.Read> reads, long step, long unlinkedMappedBytes) {}

  /** Parses and checks a {@code POST /v1/reads} body (400 naming the field otherwise). */
  static ReadsReport readsReport(JsonNode b) {
    JsonNode reads = b.get("reads");
    if (reads == null || !reads.isArray()) {
      throw NodeException.badRequest("'reads' must be an array of {feature, chunk, bytes, tier}");
    }
    if (reads.size() > 1_000_000) {
      throw NodeException.badRequest("at most 1,000,000 reads per report");
    }
    List<TierState.Read> list = new ArrayList<>();
    for (JsonNode x : reads) {
      String name = text(x, "tier", true);
      Tier tier = switch (name) {
        case "ssd" -> Tier.SSD;
        case "hdd" -> Tier.HDD;
        default -> throw NodeException.badRequest("'tier' must be \"ssd\" or \"hdd\" (a job reads from its host's tiers), got '"
            + name + "'");
      };
      list.add(new TierState.Read(text(x, "feature", true), integer(x, "chunk"), longValue(x, "bytes"), tier));
    }
    long step = -1;
    if (b.has("step")) {
      JsonNode st = b.get("step");
      if (!st.isIntegralNumber() || !st.canConvertToLong() || st.asLong() < 0) {
        throw NodeException.badRequest("'step' must be a non-negative integer, got " + st);
      }
      step = st.asLong();
    }
    long unlinked = -1;
    if (b.has("unlinkedMappedBytes")) {
      JsonNode u = b.get("unlinkedMappedBytes");
      if (!u.isIntegralNumber() || !u.canConvertToLong() || u.asLong() < 0) {
        throw NodeException.badRequest("'unlinkedMappedBytes' must be a non-negative integer, got " + NodeApi.clip(u.toString()));
      }
      unlinked = u.asLong();
    }
    return new ReadsReport(text(b, "job", true), text(b, "dataset", true), list, step, unlinked);
  }

  /**
   * A {@code POST /v1/plans} body: a job's plan as a {@code program} (with {@code ranks} for a
   * distributed job: null otherwise), or as {@code epochs} of a {@code chunkOrder} (program null).
   */
  record PlanRequest(String job, String dataset, List<String> features, PlanProgram program, List<String> ranks, int epochs,
      List<Integer> chunkOrder, boolean substitutable) {}

  /** Parses and checks a {@code POST /v1/plans} body (400 naming the field otherwise). */
  static PlanRequest planRequest(JsonNode b) {
    JsonNode sub = b.get("substitutable");
    if (sub != null && !sub.isBoolean()) {
      throw NodeException.badRequest("'substitutable' must be true or false");
    }
    boolean substitutable = sub != null && sub.asBoolean();
    String job = text(b, "job", true);
    String dataset = text(b, "dataset", true);
    List<String> features = strings(b, "features", true);
    if (b.has("program")) {
      if (b.has("chunkOrder") || b.has("epochs")) {
        throw NodeException.badRequest("a plan is either a 'program' or 'epochs' with a 'chunkOrder', not both");
      }
      PlanProgram program;
      try {
        program = PlanProgram.fromJson(b.get("program"));
      } catch (IllegalArgumentException e) {
        throw NodeException.badRequest(e.getMessage());
      }
      return new PlanRequest(job, dataset, features, program, b.has("ranks") ? strings(b, "ranks", true) : null, 0, null,
          substitutable);
    }
    return new PlanRequest(job, dataset, features, null, null, b.has("epochs") ? integer(b, "epochs") : 1, ints(b, "chunkOrder"),
        substitutable);
  }

  /** The fields a {@code PUT /v1/policy} body may have: the settings but the HDD roots (given at start), and quotas. */
  private static final List<String> POLICY_FIELDS = Stream.concat(
      Setting.keys().stream().filter(k -> !k.equals(Setting.HDD_ROOTS.key())), Stream.of("quotas")).toList();

  /** The fields of a {@code PUT /v1/policy} body; unknown fields and out-of-range values are refused (400). */
  static KeptChanges.PolicyChange policyChange(JsonNode body) {
    for (var it = body.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!POLICY_FIELDS.contains(f)) {
        throw NodeException.badRequest("unknown policy field '" + f + "' (known: " + POLICY_FIELDS + ")");
      }
    }
    String policy = null;
    if (body.has("policy")) {
      JsonNode p = body.get("policy");
      if (!p.isTextual() || !Policies.known(p.asText())) {
        throw NodeException.badRequest("'policy' must be one of " + Policies.names() + ", got " + p);
      }
      policy = p.asText();
    }
    String budgetKey = Setting.SSD_BUDGET_BYTES.key();
    String flashKey = Setting.FLASH_WRITE_BUDGET_BYTES_PER_HOUR.key();
    Long budget = body.has(budgetKey) ? nonNegativeLong(body.get(budgetKey), budgetKey) : null;
    Long flash = body.has(flashKey) ? nonNegativeLong(body.get(flashKey), flashKey) : null;
    Double discount = null;
    if (body.has("popularityDiscount")) {
      JsonNode d = body.get("popularityDiscount");
      if (!d.isNumber() || !(d.asDouble() >= 1 && d.asDouble() <= 1000)) {
        throw NodeException.badRequest("'popularityDiscount' must be a number from 1 to 1000, got " + d);
      }
      discount = d.asDouble();
    }
    Map<String, Long> quotas = new LinkedHashMap<>();
    if (body.has("quotas")) {
      JsonNode q = body.get("quotas");
      if (!q.isObject()) {
        throw NodeException.badRequest("'quotas' must be an object of dataset name to bytes (null removes a quota)");
      }
      for (var it = q.properties().iterator(); it.hasNext(); ) {
        var e = it.next();
        quotas.put(e.getKey(), e.getValue().isNull() ? null : nonNegativeLong(e.getValue(), "quotas." + e.getKey()));
      }
    }
    return new KeptChanges.PolicyChange(policy, budget, flash, discount, quotas);
  }

  static long nonNegativeLong(JsonNode v, String name) {
    if (v == null || !v.isIntegralNumber() || !v.canConvertToLong() || v.asLong() < 0) {
      throw NodeException.badRequest("'" + name + "' must be an integer number of bytes from 0 to " + Long.MAX_VALUE + ", got "
          + (v == null ? "nothing" : v.toString().length() > 40 ? v.toString().substring(0, 40) + "..." : v.toString()));
    }
    return v.asLong();
  }

  static JsonNode body(RoutingContext ctx) {
    String s = ctx.body() == null ? null : ctx.body().asString();
    if (s == null || s.isBlank()) {
      throw NodeException.badRequest("a JSON object body is required");
    }
    JsonNode n;
    try {
      n = Json.parse(s);
    } catch (IOException e) {
      throw NodeException.badRequest(e.getMessage());
    }
    if (!n.isObject()) {
      throw NodeException.badRequest("the body must be a JSON object");
    }
    return n;
  }

  static String text(JsonNode b, String field, boolean required) {
    JsonNode v = b.get(field);
    if (v == null || v.isNull()) {
      if (required) {
        throw NodeException.badRequest("'" + field + "' is required");
      }
      return null;
    }
    if (!v.isTextual()) {
      throw NodeException.badRequest("'" + field + "' must be a string");
    }
    return v.asText();
  }

  static int integer(JsonNode b, String field) {
    JsonNode v = b.get(field);
    if (v == null || !v.isIntegralNumber() || !v.canConvertToInt()) {
      throw NodeException.badRequest("'" + field + "' must be an integer");
    }
    return v.asInt();
  }

  static long longValue(JsonNode b, String field) {
    JsonNode v = b.get(field);
    if (v == null || !v.isIntegralNumber() || !v.canConvertToLong()) {
      throw NodeException.badRequest("'" + field + "' must be an integer");
    }
    return v.asLong();
  }

  static List<String> strings(JsonNode b, String field, boolean required) {
    JsonNode v = b.get(field);
    if (v == null || v.isNull()) {
      if (required) {
        throw NodeException.badRequest("'" + field + "' is required: an array of strings");
      }
      return null;
    }
    if (!v.isArray()) {
      throw NodeException.badRequest("'" + field + "' must be an array of strings");
    }
    List<String> out = new ArrayList<>();
    for (JsonNode x : v) {
      if (!x.isTextual()) {
        throw NodeException.badRequest("'" + field + "' must be an array of strings");
      }
      out.add(x.asText());
    }
    return out;
  }

  static List<Integer> ints(JsonNode b, String field) {
    JsonNode v = b.get(field);
    if (v == null || v.isNull()) {
      return null;
    }
    if (!v.isArray()) {
      throw NodeException.badRequest("'" + field + "' must be an array of integers");
    }
    List<Integer> out = new ArrayList<>();
    for (JsonNode x : v) {
      if (!x.isIntegralNumber() || !x.canConvertToInt()) {
        throw NodeException.badRequest("'" + field + "' must be an array of integers");
      }
      out.add(x.asInt());
    }
    return out;
  }
}
