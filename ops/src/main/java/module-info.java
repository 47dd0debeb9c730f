/** The {@code strata} command: node control, tiering policy, dataset tools, feature jobs, demo. */
module io.strata.ops {
  requires io.strata.sdk;
  requires io.strata.tools;
  requires io.strata.store;
  requires io.strata.node;
  requires io.strata.gpu;
  requires info.picocli;
  requires com.fasterxml.jackson.databind;
  requires java.net.http;

  // 'strata bench' and 'strata soak': the benchmarks module, which runs on the class path beside
  // this one (the launcher's), where it reads the command's public types without exports.
  uses io.strata.ops.CommandProvider;

  opens io.strata.ops to
      info.picocli;
}
