package io.strata.ops.common;

import java.io.UncheckedIOException;
import java.nio.file.FileSystemException;
import java.nio.file.InvalidPathException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Locale;

/**
 * What every part of the {@code strata} command shares and depends on nothing of it: exit codes
 * and the one-line form of an error. Stateless.
 */
public final class Messages {
  /** Exit code of a failed command. */
  public static final int FAILURE = 1;

  /** Exit code of wrong usage. */
  public static final int USAGE = 2;

  private Messages() {}

  /** A path as messages name it: absolute, without {@code .} or {@code ..} steps (as given when it is not a path, or a URI). */
  private static String clean(String file) {
    if (file.matches("^[a-zA-Z][a-zA-Z0-9+.-]*://.*")) {
      return file; // a file of another file system (hdfs://...), named as its URI
    }
    try {
      return Path.of(file).toAbsolutePath().normalize().toString();
    } catch (InvalidPathException e) {
      return file;
    }
  }

  /** One line naming the problem, without a stack trace. */
  public static String describe(Throwable ex) {
    if (ex instanceof UncheckedIOException u && u.getCause() != null) {
      return describe(u.getCause()); // its own message is the cause's class and message
    }
    if (ex instanceof NoSuchFileException n) {
      return (n.getReason() == null ? "no such file" : n.getReason()) + ": " + clean(n.getFile());
    }
    if (ex instanceof FileSystemException f && f.getFile() != null && !(ex instanceof NoSuchFileException)) {
      // The JDK's own form, "FILE: reason", with the file's path clean.
      return clean(f.getFile()) + (f.getOtherFile() == null ? "" : " -> " + clean(f.getOtherFile()))
          + ": " + (f.getReason() == null ? ex.getClass().getSimpleName().replace("Exception", "").replaceAll("([a-z])([A-Z])", "$1 $2").toLowerCase(Locale.ROOT) : f.getReason());
    }
    String m = ex.getMessage();
    if (m == null || m.isBlank()) {
      m = ex.getClass().getSimpleName();
    }
    // One line: multi-line messages (a spec error's caret display) keep their first line.
    return m.lines().findFirst().orElse(m);
  }
}
