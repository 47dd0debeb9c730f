package io.strata.sdk.derive;

/** A derived-feature spec that does not parse or does not type-check; the message points at the position. */
public final class SpecException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  private final int position;

  SpecException(String spec, int position, String problem) {
    super(format(spec, position, problem));
    this.position = position;
  }

  /** Zero-based character position of the problem in the spec. */
  public int position() {
    return position;
  }

  private static String format(String spec, int position, String problem) {
    String caret = " ".repeat(Math.max(0, Math.min(position, spec.length()))) + "^";
    return "bad derived feature at position " + (position + 1) + ": " + problem + "\n  " + spec + "\n  " + caret;
  }
}
