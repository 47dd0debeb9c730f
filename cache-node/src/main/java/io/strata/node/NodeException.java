package io.strata.node;

/**
 * A request the node refuses: the kind of refusal and a message naming the problem. The tiers
 * know nothing of HTTP; {@code NodeApi} alone maps a kind to its status (400, 403, 404, 409, 429).
 */
public final class NodeException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Why a request is refused. */
  public enum Kind {
    /** The request itself is wrong: a missing or malformed field, a value out of range. */
    INVALID,
    /** The request reaches for something it may not (outside the HDD roots, a foreign origin). */
    FORBIDDEN,
    /** What the request names does not exist (a dataset, a job, a derivation). */
    NOT_FOUND,
    /** The node's state does not allow it now (a budget, a pin, a name in use, a dataset that cannot be opened). */
    CONFLICT,
    /** The node is busy with as much of this work as it takes; ask again later. */
    BUSY,
    /** Something the request needs is out of reach now (an HDD root on a name node that does not answer). */
    UNAVAILABLE
  }

  private final Kind kind;

  public NodeException(Kind kind, String message) {
    super(message);
    this.kind = kind;
  }

  public Kind kind() {
    return kind;
  }

  static NodeException badRequest(String m) {
    return new NodeException(Kind.INVALID, m);
  }

  static NodeException notFound(String m) {
    return new NodeException(Kind.NOT_FOUND, m);
  }

  static NodeException forbidden(String m) {
    return new NodeException(Kind.FORBIDDEN, m);
  }

  static NodeException conflict(String m) {
    return new NodeException(Kind.CONFLICT, m);
  }

  static NodeException unavailable(String m) {
    return new NodeException(Kind.UNAVAILABLE, m);
  }

  static NodeException busy(String m) {
    return new NodeException(Kind.BUSY, m);
  }
}
