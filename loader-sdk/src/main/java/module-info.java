/**
 * Strata's loader SDK: the library a training job links. Formats (ORC datasets, Arrow IPC
 * segments), readers, batch assembly and the cache-node client. No CUDA: shipping batches to a
 * GPU is the {@code io.strata.gpu} module's.
 *
 * <p>The ORC and Hadoop libraries are automatic modules (their jars declare no module), and the
 * internal package is exported to Strata's own modules, which are compiled after this one: the
 * two warnings those give are expected, and suppressed here alone.
 */
@SuppressWarnings({"requires-automatic", "module"})
module io.strata.sdk {
  requires orc.core;
  requires hive.storage.api;
  requires hadoop.client.api;
  requires transitive com.fasterxml.jackson.databind;
  requires java.net.http;
  requires java.management;
  requires java.sql; // orc-core's timestamp statistics are java.sql.Timestamp

  exports io.strata.sdk;
  exports io.strata.sdk.format;
  exports io.strata.sdk.dataset;
  exports io.strata.sdk.tier;
  exports io.strata.sdk.loader;
  exports io.strata.sdk.node;
  exports io.strata.sdk.derive;
  exports io.strata.sdk.internal to
      io.strata.store,
      io.strata.node,
      io.strata.ops,
      io.strata.bench;
}
