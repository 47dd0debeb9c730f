package io.strata.sdk.derive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.FeatureType;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SpecTest {
  static final Map<String, FeatureType> TYPES = Map.of(
      "price", FeatureType.FLOAT64, "qty", FeatureType.INT16, "cat", FeatureType.STRING,
      "tokens", FeatureType.list(FeatureType.INT32), "emb", FeatureType.list(FeatureType.FLOAT32),
      "when", FeatureType.TIMESTAMP);

  @Test
  void equivalentSpellingsHaveOneCanonicalForm() {
    String[][] same = {
      {"log1p(price)", "LOG1P( price )", "Log1p(\tprice)"},
      {"clip(price,0,100)", "clip(price, 0.0, 1e2)", "clip(x=price, lo=0, hi=100)", "clip(price, hi=100, lo=0)"},
      {"seq_mean(price,last=5)", "seq_mean(price, 5)", "seq_mean(price, last = 5.0)"},
      {"bucketize(price,[0,10.5,100])", "bucketize(price, [0.0, 10.50, 1E2])"},
      {"zscore(log1p(price))", "ZSCORE(log1p(price))"},
      {"cross(qty,hash_bucket(cat,100),5000)", "cross(qty, hash_bucket(cat, 100), 5000)"},
    };
    for (String[] group : same) {
      for (String s : group) {
        assertEquals(group[0], Spec.parse(s).canonical(), s);
      }
    }
    assertEquals(List.of("price"), Spec.parse("zscore(log1p(price))").sources());
    assertEquals(List.of("qty", "cat"), Spec.parse("cross(qty, hash_bucket(cat, 100), 5000)").sources());
    assertTrue(Spec.looksDerived("log1p(price)"));
    assertFalse(Spec.looksDerived("price"));
    assertFalse(Spec.looksDerived("weird(name)"), "not a known function: a column name");
    // A name the parser would not read bare stays quoted: the canonical text parses back to the same spec.
    assertEquals("hash_bucket(`my col`,10)", Spec.parse("hash_bucket(`my col`, 10)").canonical());
    assertEquals("zscore(`log1p(v)`)", Spec.parse("ZSCORE( `log1p(v)` )").canonical());
    assertEquals("zscore(log1p(v))", Spec.parse("zscore(log1p(v))").canonical());
    assertEquals(Spec.parse("zscore(`log1p(v)`)"), Spec.parse(Spec.parse("zscore(`log1p(v)`)").canonical()));
  }

  @Test
  void typesAreChecked() {
    assertEquals(FeatureType.FLOAT64, Spec.parse("zscore(log1p(price))").typeCheck(TYPES::get));
    assertEquals(FeatureType.INT32, Spec.parse("bucketize(qty, [1, 5])").typeCheck(TYPES::get));
    assertEquals(FeatureType.INT64, Spec.parse("hash_bucket(when, 10)").typeCheck(TYPES::get));
    assertEquals(FeatureType.list(FeatureType.INT64), Spec.parse("ngram_hash(tokens, 2, 100)").typeCheck(TYPES::get));
    assertEquals(FeatureType.INT64, Spec.parse("seq_count(price)").typeCheck(TYPES::get));
  }

  private static void bad(String spec, int position, String message) {
    SpecException e = assertThrows(SpecException.class, () -> {
      Spec s = Spec.parse(spec);
      s.typeCheck(TYPES::get);
    }, spec);
    assertEquals(position, e.position(), spec + " -> " + e.getMessage());
    assertTrue(e.getMessage().contains(message), spec + " -> " + e.getMessage());
    assertTrue(e.getMessage().contains("^"), "points at the position: " + e.getMessage());
  }

  @Test
  void badSpecsPointAtThePositionAndSayWhatWasExpected() {
    bad("", 0, "expected an expression");
    bad("price", 0, "not a plain feature name");
    bad("log1p(price", 11, "expected ',' or ')' closing log1p(, reached the end");
    bad("log1p(price))", 12, "unexpected ')'");
    bad("log2(price)", 0, "unknown function 'log2'");
    bad("log1p()", 6, "needs its 'x' argument");
    bad("log1p(price, 3)", 13, "takes 1 argument");
    bad("clip(price, 0)", 13, "needs its 'hi' argument");
    bad("clip(price, lo, 5)", 12, "lo of clip must be a number");
    bad("hash_bucket(cat, -3)", 17, "must be a positive whole number");
    bad("hash_bucket(cat, 2.5)", 17, "must be a positive whole number");
    bad("bucketize(price, [5, 1])", 21, "bucket edges must increase");
    bad("bucketize(price, 5)", 17, "must be a non-empty list");
    bad("seq_mean(price, window=3)", 16, "has no parameter 'window'");
    bad("seq_mean(last=3, price)", 17, "positional argument cannot follow a named one");
    bad("clip(price, lo=1, lo=2, hi=3)", 18, "given twice");
    bad("log1p(cat)", 6, "x of log1p must be numeric, got string");
    bad("log1p(nope)", 6, "no served feature 'nope'");
    bad("ngram_hash(emb, 2, 10)", 11, "must be a list of integers or strings");
    bad("hash_bucket(tokens, 10)", 12, "must be a scalar");
    bad("log1p(5)", 6, "must be a feature or an expression, not a literal");
    bad("log1p(pri#ce)", 9, "expected ',' or ')'");
    bad("log1p(`price)", 6, "unterminated quoted feature name");
  }
}
