/**
 * Strata's cache node: the tiers, reuse-driven promotion, the policy and the node API (Vert.x).
 * Micrometer's and Hazelcast's jars are automatic modules (they declare none): the warning that gives is
 * suppressed here alone.
 */
@SuppressWarnings("requires-automatic")
module io.strata.node {
  requires transitive io.strata.sdk;
  requires io.strata.store;
  requires io.vertx.core;
  requires io.vertx.web;
  requires io.vertx.clustermanager.hazelcast;
  requires com.hazelcast.core;
  requires java.net.http;
  requires java.logging;
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
}
