/**
 * Strata's dataset tooling: what the command and batch jobs use to make and reshape datasets, and
 * a training job never links. The generator of synthetic datasets, the importer (a directory of
 * ORC or Parquet files made a dataset: its manifest, stripe map, checksums and sample index), the
 * Parquet export, and the relayout with the co-access order it learns (column order and second
 * copies from what jobs read). The ORC, Parquet and Hadoop libraries are automatic modules (their
 * jars declare no module): the warning that gives is suppressed here alone.
 */
@SuppressWarnings("requires-automatic")
module io.strata.tools {
  requires transitive io.strata.sdk;
  requires orc.core;
  requires parquet.column;
  requires hive.storage.api;
  requires hadoop.client.api;
  requires com.fasterxml.jackson.databind;

  exports io.strata.tools;
}
