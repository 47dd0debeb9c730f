/** The {@code strata} command: node control, tiering policy, dataset tools, feature jobs, demo. */
module io.strata.ops {
  requires io.strata.sdk;
  requires io.strata.store;
  requires io.strata.node;
  requires io.strata.gpu;
  requires info.picocli;
  requires com.fasterxml.jackson.databind;
  requires java.net.http;

  uses io.strata.ops.CommandProvider;

  provides io.strata.ops.CommandProvider with
      io.strata.ops.bench.BenchCommands;

  opens io.strata.ops to
      info.picocli;
  opens io.strata.ops.bench to
      info.picocli;
}
