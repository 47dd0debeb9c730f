package io.strata.sdk;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A file that Strata cannot trust: truncated, damaged, of an unsupported version, or not of the
 * expected kind. The message names the file and the problem.
 */
public class CorruptFileException extends IOException {
  private static final long serialVersionUID = 1L;

  private final transient Path file;

  public CorruptFileException(Path file, String problem) {
    super(clean(file) + ": " + problem);
    this.file = file;
  }

  public CorruptFileException(Path file, String problem, Throwable cause) {
    super(clean(file) + ": " + problem, cause);
    this.file = file;
  }

  /** The file as a message names it: absolute and without {@code .} or {@code ..} steps. */
  private static Path clean(Path file) {
    return file == null ? null : file.toAbsolutePath().normalize();
  }

  /** The file at fault. */
  public Path file() {
    return file;
  }
}
