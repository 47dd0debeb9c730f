package io.strata.sdk.derive;

import java.math.BigDecimal;
import java.util.List;
import java.util.stream.Collectors;

/** The syntax tree of a derived-feature spec. */
sealed interface Expr {
  /** The canonical text: lower-case functions, named parameters spelled out, plain numbers. */
  String canonical();

  /** A source feature (a column of the dataset). */
  record Feature(String name, int position) implements Expr {
    /** The name as the parser reads it back: bare where it is a plain identifier, else in backquotes. */
    @Override
    public String canonical() {
      return plain(name) ? name : "`" + name + "`";
    }

    /** Whether the parser reads {@code name} bare as one identifier: a letter or '_', then letters, digits, '_' and '.'. */
    static boolean plain(String name) {
      if (name.isEmpty() || !(Character.isLetter(name.charAt(0)) || name.charAt(0) == '_')) {
        return false;
      }
      for (int i = 1; i < name.length(); i++) {
        char c = name.charAt(i);
        if (!(Character.isLetterOrDigit(c) || c == '_' || c == '.')) {
          return false;
        }
      }
      return true;
    }
  }

  /** A number literal. */
  @SuppressWarnings("JavaLangClash") // the spec language's own name; always written Expr.Number outside
  record Number(BigDecimal value, int position) implements Expr {
    @Override
    public String canonical() {
      BigDecimal v = value.stripTrailingZeros();
      return v.signum() == 0 ? "0" : v.toPlainString();
    }

    double asDouble() {
      return value.doubleValue();
    }
  }

  /** A list of number literals, for example bucket edges. */
  record NumberList(List<Number> values, int position) implements Expr {
    @Override
    public String canonical() {
      return values.stream().map(Number::canonical).collect(Collectors.joining(",", "[", "]"));
    }
  }

  /** A function call with its arguments in canonical order (named parameters resolved). */
  record Call(String function, List<Expr> args, int position) implements Expr {
    @Override
    public String canonical() {
      Functions.Signature sig = Functions.signature(function);
      StringBuilder sb = new StringBuilder(function).append('(');
      for (int i = 0; i < args.size(); i++) {
        if (i > 0) {
          sb.append(',');
        }
        String name = sig.params().get(i).name();
        if (sig.params().get(i).named()) {
          sb.append(name).append('=');
        }
        sb.append(args.get(i).canonical());
      }
      return sb.append(')').toString();
    }
  }
}
