/**
 * Strata's feature store: derived features computed once and shared by every job (RocksDB). The
 * RocksDB jar is an automatic module (it declares none): the warning that gives is suppressed.
 */
@SuppressWarnings("requires-automatic")
module io.strata.store {
  requires transitive io.strata.sdk;
  requires rocksdbjni;
  requires transitive com.fasterxml.jackson.databind;
  requires java.management;

  exports io.strata.store;
}
