package io.strata.sdk.derive;

import io.strata.sdk.FeatureType;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * A derived feature: an expression of the small transformation language over a dataset's
 * features, parsed and type-checked, never evaluated as code.
 *
 * <pre>
 * expr   := call | feature | number | '[' number (',' number)* ']'
 * call   := function '(' [arg (',' arg)*] ')'
 * arg    := [name '='] expr
 * feature:= identifier | '`' any text without backquotes '`'
 * </pre>
 *
 * Functions: {@code log1p(x)}, {@code clip(x, lo, hi)}, {@code zscore(x)}, {@code minmax(x)},
 * {@code bucketize(x, [edges])}, {@code hash_bucket(s, n)}, {@code cross(a, b, n)}, {@code
 * ngram_hash(tokens, n, buckets)}, {@code seq_mean(x, last=k)}, {@code seq_count(x)}; they
 * compose. {@link #canonical()} is the normalized text (lower-case function names, no spaces,
 * named parameters spelled out, plain numbers), so equivalent spellings get the same fingerprint.
 */
public final class Spec {
  private final String text;
  private final Expr root;

  private Spec(String text, Expr root) {
    this.text = text;
    this.root = root;
  }

  /**
   * Whether {@code feature}, asked of dataset {@code ds}, is a derived spec: shaped like a call of
   * a known function and not the name of a stored column. A stored column always wins: files
   * whose columns are named like expressions (SQL engines name unaliased expressions so, {@code
   * log1p(v)}) are served as stored, and a derivation of such a column quotes it ({@code
   * zscore(`log1p(v)`)}); {@link Derivation#of} refuses a derivation named like a stored column.
   */
  public static boolean isDerived(io.strata.sdk.dataset.Dataset ds, String feature) {
    return looksDerived(feature) && !ds.hasColumn(feature);
  }

  /**
   * Whether {@code featureOrSpec} is shaped like a derived spec (a call of a known function). Only
   * the dataset can say whether it is one ({@link #isDerived(io.strata.sdk.dataset.Dataset, String)}).
   */
  public static boolean looksDerived(String featureOrSpec) {
    int paren = featureOrSpec.indexOf('(');
    return paren > 0 && !featureOrSpec.startsWith("`") && Functions.exists(featureOrSpec.substring(0, paren).strip().toLowerCase(Locale.ROOT));
  }

  /** Parses {@code text}; a {@link SpecException} points at the problem. */
  public static Spec parse(String text) {
    if (text == null || text.isBlank()) {
      throw new SpecException(text == null ? "" : text, 0, "expected an expression, got nothing");
    }
    if (text.length() > 4096) {
      throw new SpecException(text.substring(0, 64), 0, "a spec is at most 4096 characters");
    }
    Parser p = new Parser(text);
    Expr e = p.expr(0);
    p.skipSpaces();
    if (p.pos < text.length()) {
      throw new SpecException(text, p.pos, "unexpected '" + text.charAt(p.pos) + "' after the expression");
    }
    if (!(e instanceof Expr.Call)) {
      throw new SpecException(text, 0, "a derived feature is a function call such as log1p(price), not a plain " + describe(e));
    }
    return new Spec(text, e);
  }

  private static String describe(Expr e) {
    return switch (e) {
      case Expr.Feature f -> "feature name";
      case Expr.Number n -> "number";
      case Expr.NumberList l -> "list";
      case Expr.Call c -> "call";
    };
  }

  /** The text as written. */
  public String text() {
    return text;
  }

  /** The canonical text. */
  public String canonical() {
    return root.canonical();
  }

  Expr root() {
    return root;
  }

  /** The dataset features the spec reads, in order of first use. */
  public List<String> sources() {
    Set<String> out = new LinkedHashSet<>();
    collect(root, out);
    return List.copyOf(out);
  }

  private static void collect(Expr e, Set<String> out) {
    switch (e) {
      case Expr.Feature f -> out.add(f.name());
      case Expr.Call c -> c.args().forEach(a -> collect(a, out));
      default -> {}
    }
  }

  /** Whether computing the spec needs dataset-wide statistics (a first pass). */
  public boolean needsStatistics() {
    return uses(root, Set.of("zscore", "minmax"));
  }

  /** Whether the spec uses per-sample sequence aggregates (needs a sample index). */
  public boolean usesSequences() {
    return uses(root, Set.of("seq_mean", "seq_count"));
  }

  private static boolean uses(Expr e, Set<String> functions) {
    if (e instanceof Expr.Call c) {
      return functions.contains(c.function()) || c.args().stream().anyMatch(a -> uses(a, functions));
    }
    return false;
  }

  /**
   * Checks the spec against the types of the dataset's features ({@code types} maps a name to
   * its type, null when unknown or unsupported) and returns the output type.
   */
  public FeatureType typeCheck(Function<String, FeatureType> types) {
    return check(root, types);
  }

  private FeatureType check(Expr e, Function<String, FeatureType> types) {
    return switch (e) {
      case Expr.Feature f -> {
        FeatureType t = types.apply(f.name());
        if (t == null) {
          throw new SpecException(text, f.position(), "no served feature '" + f.name() + "' in the dataset");
        }
        yield t;
      }
      case Expr.Number n -> throw new SpecException(text, n.position(), "a number cannot stand for a feature here");
      case Expr.NumberList l -> throw new SpecException(text, l.position(), "a list cannot stand for a feature here");
      case Expr.Call c -> {
        Functions.Signature sig = Functions.signature(c.function());
        for (int i = 0; i < c.args().size(); i++) {
          Functions.Param param = sig.params().get(i);
          Expr a = c.args().get(i);
          switch (param.kind()) {
            case NUMERIC -> {
              FeatureType t = check(a, types);
              if (!numeric(t)) {
                throw new SpecException(text, position(a), param.name() + " of " + c.function() + " must be numeric, got " + t);
              }
            }
            case HASHABLE -> {
              FeatureType t = check(a, types);
              if (t.kind() == FeatureType.Kind.LIST) {
                throw new SpecException(text, position(a), param.name() + " of " + c.function() + " must be a scalar, got " + t);
              }
            }
            case TOKENS -> {
              FeatureType t = check(a, types);
              if (t.kind() != FeatureType.Kind.LIST || !(numericInteger(t.element()) || t.element().isVariableWidth())) {
                throw new SpecException(text, position(a),
                    param.name() + " of " + c.function() + " must be a list of integers or strings, got " + t);
              }
            }
            default -> {
              // Literals were checked while parsing.
            }
          }
        }
        yield switch (c.function()) {
          case "bucketize" -> FeatureType.INT32;
          case "hash_bucket", "cross", "seq_count" -> FeatureType.INT64;
          case "ngram_hash" -> FeatureType.list(FeatureType.INT64);
          default -> FeatureType.FLOAT64;
        };
      }
    };
  }

  static boolean numeric(FeatureType t) {
    return switch (t.kind()) {
      case BOOL, INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, DECIMAL -> true;
      default -> false;
    };
  }

  static boolean numericInteger(FeatureType t) {
    return switch (t.kind()) {
      case INT8, INT16, INT32, INT64 -> true;
      default -> false;
    };
  }

  static int position(Expr e) {
    return switch (e) {
      case Expr.Feature f -> f.position();
      case Expr.Number n -> n.position();
      case Expr.NumberList l -> l.position();
      case Expr.Call c -> c.position();
    };
  }

  @Override
  public String toString() {
    return canonical();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Spec s && s.canonical().equals(canonical());
  }

  @Override
  public int hashCode() {
    return canonical().hashCode();
  }

  /** A recursive-descent parser with positions. */
  private static final class Parser {
    final String s;
    int pos;

    Parser(String s) {
      this.s = s;
    }

    void skipSpaces() {
      while (pos < s.length() && Character.isWhitespace(s.charAt(pos))) {
        pos++;
      }
    }

    boolean peek(char c) {
      skipSpaces();
      return pos < s.length() && s.charAt(pos) == c;
    }

    void expect(char c, String what) {
      skipSpaces();
      if (pos >= s.length()) {
        throw new SpecException(s, pos, "expected " + what + ", reached the end");
      }
      if (s.charAt(pos) != c) {
        throw new SpecException(s, pos, "expected " + what + ", found '" + s.charAt(pos) + "'");
      }
      pos++;
    }

    Expr expr(int depth) {
      if (depth > 32) {
        throw new SpecException(s, pos, "expressions nest at most 32 deep");
      }
      skipSpaces();
      if (pos >= s.length()) {
        throw new SpecException(s, pos, "expected a feature, a number or a function call, reached the end");
      }
      char c = s.charAt(pos);
      if (c == '[') {
        return list();
      }
      if (c == '-' || c == '+' || c == '.' || Character.isDigit(c)) {
        return number();
      }
      if (c == '`') {
        int start = pos++;
        int end = s.indexOf('`', pos);
        if (end < 0) {
          throw new SpecException(s, start, "unterminated quoted feature name");
        }
        String name = s.substring(pos, end);
        pos = end + 1;
        return new Expr.Feature(name, start);
      }
      if (Character.isLetter(c) || c == '_') {
        int start = pos;
        String id = identifier();
        if (peek('(')) {
          return call(id, start, depth);
        }
        return new Expr.Feature(id, start);
      }
      throw new SpecException(s, pos, "expected a feature, a number or a function call, found '" + c + "'");
    }

    String identifier() {
      int start = pos;
      while (pos < s.length() && (Character.isLetterOrDigit(s.charAt(pos)) || s.charAt(pos) == '_' || s.charAt(pos) == '.')) {
        pos++;
      }
      return s.substring(start, pos);
    }

    Expr.Number number() {
      skipSpaces();
      int start = pos;
      while (pos < s.length() && "+-.0123456789eE".indexOf(s.charAt(pos)) >= 0) {
        if ((s.charAt(pos) == '+' || s.charAt(pos) == '-') && pos > start && "eE".indexOf(s.charAt(pos - 1)) < 0) {
          break;
        }
        pos++;
      }
      try {
        return new Expr.Number(new BigDecimal(s.substring(start, pos)), start);
      } catch (NumberFormatException e) {
        throw new SpecException(s, start, "expected a number, found '" + s.substring(start, pos) + "'");
      }
    }

    Expr.NumberList list() {
      int start = pos;
      expect('[', "'['");
      List<Expr.Number> values = new ArrayList<>();
      if (!peek(']')) {
        do {
          skipSpaces();
          values.add(number());
        } while (tryConsume(','));
      }
      expect(']', "',' or ']' in the list");
      return new Expr.NumberList(values, start);
    }

    boolean tryConsume(char c) {
      if (peek(c)) {
        pos++;
        return true;
      }
      return false;
    }

    Expr call(String name, int start, int depth) {
      String fn = name.toLowerCase(Locale.ROOT);
      Functions.Signature sig = Functions.signature(fn);
      if (sig == null) {
        throw new SpecException(s, start, "unknown function '" + name + "' (known: " + Functions.known() + ")");
      }
      expect('(', "'('");
      Expr[] slots = new Expr[sig.params().size()];
      int positional = 0;
      boolean namedSeen = false;
      if (!peek(')')) {
        do {
          skipSpaces();
          int argStart = pos;
          String paramName = null;
          if (pos < s.length() && Character.isLetter(s.charAt(pos))) {
            int save = pos;
            String id = identifier();
            if (peek('=')) {
              pos++;
              paramName = id;
            } else {
              pos = save;
            }
          }
          Expr arg = expr(depth + 1);
          int slot;
          if (paramName != null) {
            namedSeen = true;
            slot = -1;
            for (int i = 0; i < sig.params().size(); i++) {
              if (sig.params().get(i).name().equals(paramName)) {
                slot = i;
              }
            }
            if (slot < 0) {
              throw new SpecException(s, argStart, fn + " has no parameter '" + paramName + "' (it takes "
                  + sig.params().stream().map(Functions.Param::name).toList() + ")");
            }
          } else {
            if (namedSeen) {
              throw new SpecException(s, argStart, "a positional argument cannot follow a named one");
            }
            slot = positional++;
            if (slot >= slots.length) {
              throw new SpecException(s, argStart, fn + " takes " + slots.length + " argument" + (slots.length == 1 ? "" : "s")
                  + " (" + sig.params().stream().map(Functions.Param::name).toList() + ")");
            }
          }
          if (slots[slot] != null) {
            throw new SpecException(s, argStart, "parameter '" + sig.params().get(slot).name() + "' of " + fn + " is given twice");
          }
          checkLiteral(sig.params().get(slot), arg, fn);
          slots[slot] = arg;
        } while (tryConsume(','));
      }
      expect(')', "',' or ')' closing " + fn + "(");
      for (int i = 0; i < slots.length; i++) {
        if (slots[i] == null) {
          throw new SpecException(s, pos - 1, fn + " needs its '" + sig.params().get(i).name() + "' argument");
        }
      }
      return new Expr.Call(fn, List.of(slots), start);
    }

    void checkLiteral(Functions.Param param, Expr arg, String fn) {
      int at = position(arg);
      switch (param.kind()) {
        case NUMBER -> {
          if (!(arg instanceof Expr.Number)) {
            throw new SpecException(s, at, param.name() + " of " + fn + " must be a number");
          }
        }
        case COUNT -> {
          if (!(arg instanceof Expr.Number n) || n.value().signum() <= 0 || n.value().stripTrailingZeros().scale() > 0
              || n.value().compareTo(BigDecimal.valueOf(1L << 40)) > 0) {
            throw new SpecException(s, at, param.name() + " of " + fn + " must be a positive whole number");
          }
        }
        case EDGES -> {
          if (!(arg instanceof Expr.NumberList l) || l.values().isEmpty()) {
            throw new SpecException(s, at, param.name() + " of " + fn + " must be a non-empty list of numbers like [0, 10, 100]");
          }
          for (int i = 1; i < l.values().size(); i++) {
            if (l.values().get(i).value().compareTo(l.values().get(i - 1).value()) <= 0) {
              throw new SpecException(s, l.values().get(i).position(), "bucket edges must increase");
            }
          }
        }
        default -> {
          if (arg instanceof Expr.Number || arg instanceof Expr.NumberList) {
            throw new SpecException(s, at, param.name() + " of " + fn + " must be a feature or an expression, not a literal");
          }
        }
      }
    }
  }

  /** A map view for type checks: the dataset's served features. */
  public static Function<String, FeatureType> typesOf(Map<String, FeatureType> types) {
    return types::get;
  }
}
