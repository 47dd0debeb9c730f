package io.strata.sdk.derive;

import java.util.List;
import java.util.Map;

/** The functions of the derived-feature language and their parameters. */
final class Functions {
  private Functions() {}

  /** What a parameter takes. */
  enum Kind {
    /** A numeric feature or expression. */
    NUMERIC,
    /** Any hashable feature or expression (strings, binaries, integers, ...). */
    HASHABLE,
    /** A list feature of integers or strings. */
    TOKENS,
    /** A positive integer literal. */
    COUNT,
    /** A number literal. */
    NUMBER,
    /** A list of increasing number literals. */
    EDGES
  }

  /**
   * One parameter.
   *
   * @param name its name
   * @param kind what it takes
   * @param named whether the canonical form spells it {@code name=value}
   */
  record Param(String name, Kind kind, boolean named) {}

  record Signature(String name, List<Param> params, String doc) {}

  private static Param p(String name, Kind kind) {
    return new Param(name, kind, false);
  }

  private static final Map<String, Signature> SIGNATURES = Map.ofEntries(
      e(new Signature("log1p", List.of(p("x", Kind.NUMERIC)), "log(1 + x); null for x <= -1")),
      e(new Signature("clip", List.of(p("x", Kind.NUMERIC), p("lo", Kind.NUMBER), p("hi", Kind.NUMBER)), "x limited to [lo, hi]")),
      e(new Signature("zscore", List.of(p("x", Kind.NUMERIC)), "(x - mean) / standard deviation over the dataset")),
      e(new Signature("minmax", List.of(p("x", Kind.NUMERIC)), "(x - min) / (max - min) over the dataset")),
      e(new Signature("bucketize", List.of(p("x", Kind.NUMERIC), p("edges", Kind.EDGES)), "number of edges <= x")),
      e(new Signature("hash_bucket", List.of(p("s", Kind.HASHABLE), p("n", Kind.COUNT)), "stable hash of s modulo n")),
      e(new Signature("cross", List.of(p("a", Kind.HASHABLE), p("b", Kind.HASHABLE), p("n", Kind.COUNT)),
          "stable hash of the pair (a, b) modulo n")),
      e(new Signature("ngram_hash", List.of(p("tokens", Kind.TOKENS), p("n", Kind.COUNT), p("buckets", Kind.COUNT)),
          "hashes of the contiguous n-grams of a token list, modulo buckets")),
      e(new Signature("seq_mean", List.of(p("x", Kind.NUMERIC), new Param("last", Kind.COUNT, true)),
          "mean of the non-null x over the last rows of the same sample, up to this row")),
      e(new Signature("seq_count", List.of(p("x", Kind.NUMERIC)),
          "number of non-null x in the same sample, up to this row")));

  private static Map.Entry<String, Signature> e(Signature s) {
    return Map.entry(s.name(), s);
  }

  static Signature signature(String name) {
    return SIGNATURES.get(name);
  }

  static boolean exists(String name) {
    return SIGNATURES.containsKey(name);
  }

  static String known() {
    return String.join(", ", SIGNATURES.keySet().stream().sorted().toList());
  }
}
