/**
 * Strata's loader SDK: the library a training job links. Formats (ORC datasets, Arrow IPC
 * segments), readers, batch assembly and the cache-node client.
 */
module io.strata.sdk {
  requires orc.core;
  requires hive.storage.api;
  requires hadoop.client.api;
  requires com.fasterxml.jackson.databind;
  requires java.net.http;
  requires java.management;
  requires org.bytedeco.javacpp;
  requires org.bytedeco.cuda;

  exports io.strata.sdk;
  exports io.strata.sdk.format;
  exports io.strata.sdk.dataset;
  exports io.strata.sdk.tier;
  exports io.strata.sdk.loader;
  exports io.strata.sdk.gpu;
  exports io.strata.sdk.node;
  exports io.strata.sdk.derive;
  exports io.strata.sdk.internal to
      io.strata.store,
      io.strata.node,
      io.strata.ops,
      io.strata.bench;
}
