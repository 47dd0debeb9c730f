package io.strata.bench;

import io.strata.ops.CommandProvider;
import java.util.List;

/** {@code strata bench} and {@code strata soak}, given to the command line through the service loader. */
public final class BenchCommands implements CommandProvider {
  @Override
  public List<Object> commands() {
    return List.of(new BenchCommand(), new SoakCommand());
  }
}
