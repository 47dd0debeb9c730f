package io.strata.node;

/** A request the node refuses, with the HTTP status that says why (4xx) and a message naming the problem. */
public final class NodeException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int status;

  public NodeException(int status, String message) {
    super(message);
    this.status = status;
  }

  public int status() {
    return status;
  }

  static NodeException badRequest(String m) {
    return new NodeException(400, m);
  }

  static NodeException notFound(String m) {
    return new NodeException(404, m);
  }

  static NodeException forbidden(String m) {
    return new NodeException(403, m);
  }

  static NodeException conflict(String m) {
    return new NodeException(409, m);
  }
}
