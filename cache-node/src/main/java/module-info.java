/**
 * Strata's cache node: the tiers, reuse-driven promotion, the policy and the node API (Vert.x).
 * Micrometer's and Hazelcast's jars are automatic modules (they declare none): the warning that gives is
 * suppressed here alone, as is the one for the qualified export to the {@code strata} command's module,
 * which is built after this one.
 */
@SuppressWarnings({"requires-automatic", "module"})
module io.strata.node {
  requires transitive io.strata.sdk;
  requires io.strata.tools; // the relayout advice (CoAccessOrder)
  requires static com.google.errorprone.annotations; // @GuardedBy, checked at compile time
  requires io.strata.store;
  requires io.vertx.core;
  requires io.vertx.web;
  requires io.vertx.clustermanager.hazelcast;
  requires com.hazelcast.core;
  requires java.net.http;
  requires java.logging;
  requires java.management; // a derivation request's CPU time
  requires io.netty.codec;
  requires io.netty.codec.http;
  requires com.github.benmanes.caffeine;
  requires micrometer.core;
  requires micrometer.registry.prometheus;
  requires com.fasterxml.jackson.databind;

  exports io.strata.node;
  // The API writes the facade's answers (package-private records) as JSON through Jackson.
  opens io.strata.node to com.fasterxml.jackson.databind;
  exports io.strata.node.policy;
  // The simulator, recorded traces and the simulation-only baselines (Caffeine, OPT): for the
  // operator's and the benchmarks' commands, not part of the node's API.
  exports io.strata.node.sim to io.strata.ops;
}
