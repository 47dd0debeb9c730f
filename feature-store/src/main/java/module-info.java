/** Strata's feature store: derived features computed once and shared by every job (RocksDB). */
module io.strata.store {
  requires transitive io.strata.sdk;
  requires rocksdbjni;
  requires com.fasterxml.jackson.databind;
  requires java.management;

  exports io.strata.store;
}
