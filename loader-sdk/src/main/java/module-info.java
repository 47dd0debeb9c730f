module io.strata.sdk {
  requires orc.core;
  requires hive.storage.api;
  requires hadoop.client.api;
  requires com.fasterxml.jackson.databind;
  exports io.strata.sdk;
}
