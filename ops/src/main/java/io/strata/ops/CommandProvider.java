package io.strata.ops;

import java.util.List;

/**
 * Subcommands of {@code strata} that live outside this package (the benchmarks, the soak), found
 * by {@link java.util.ServiceLoader} (module-info's {@code provides}, and
 * {@code META-INF/services} for the class path), so that the command line does not depend on the
 * packages that use it. Implementations have a public no-argument constructor.
 */
public interface CommandProvider {
  /** New instances of picocli command classes, each annotated with {@code @Command(name = ...)}. */
  List<Object> commands();
}
