package io.strata.sdk.dataset;

import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.files.Manifest;
import io.strata.sdk.files.HddTable;
import io.strata.sdk.files.SampleIndex;
import io.strata.sdk.files.VersionLeases;
import io.strata.sdk.internal.Confinement;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.SequencedMap;

/**
 * A dataset on the HDD tier: its ORC or Parquet files, its manifest, and the optional sample
 * index. Opening reads the manifest only; the files are opened on first read. While open it leases
 * its version, so that a relayout keeps that version's files until it is closed. Thread-safe.
 */
public final class Dataset implements AutoCloseable {
  private final Path dir;
  private final Manifest manifest;
  private final HddTable table;
  private final SampleIndex samples;
  /** This process reads {@link #version()}: a relayout keeps its files until every reader closes (VersionLeases). */
  private final AutoCloseable lease;

  private Dataset(Path dir, Manifest manifest, HddTable table, SampleIndex samples) {
    this.dir = dir;
    this.manifest = manifest;
    this.table = table;
    this.samples = samples;
    this.lease = VersionLeases.acquire(dir, manifest.version());
  }

  /** Opens the dataset in {@code dir} (which holds {@code manifest.json}). */
  public static Dataset open(Path dir) throws IOException {
    return open(dir, Confinement.NONE);
  }

  /**
   * Opens the dataset in {@code dir}, every file it ever opens (manifest, sample index, data files,
   * their sidecars) confined by {@code confinement}; Strata's own modules only (the node, which
   * reads datasets for others): its type is in a package exported to them alone.
   */
  @SuppressWarnings("exports")
  public static Dataset open(Path dir, Confinement confinement) throws IOException {
    Path abs = dir.toAbsolutePath().normalize();
    Manifest m = Manifest.read(abs, confinement);
    SampleIndex idx = m.sampleIndex() == null ? null : SampleIndex.open(abs.resolve(m.sampleIndex().path()), confinement);
    return new Dataset(abs, m, HddTable.open(abs, m, confinement), idx);
  }

  public Path directory() {
    return dir;
  }

  public String name() {
    return manifest.name();
  }

  /** The content version; see {@link Manifest#version()}. */
  public String version() {
    return manifest.version();
  }

  public long rows() {
    return manifest.rows();
  }

  /** The manifest this dataset was opened from; Strata's own modules only: its type is in a package exported to them alone (a job on the module path cannot name it). */
  @SuppressWarnings("exports")
  public Manifest manifest() {
    return manifest;
  }

  /** All top-level columns, served or not. */
  public List<FeatureInfo> columns() {
    return manifest.features();
  }

  /** Whether the dataset stores a column named {@code name} (served or not). */
  public boolean hasColumn(String name) {
    for (FeatureInfo f : manifest.features()) {
      if (f.name().equals(name)) {
        return true;
      }
    }
    return false;
  }

  /** Names of the columns Strata serves. */
  public List<String> featureNames() {
    return manifest.features().stream().filter(FeatureInfo::supported).map(FeatureInfo::name).toList();
  }

  /** The served feature {@code name}; an unknown or unsupported name is an {@link IllegalArgumentException}. */
  public FeatureInfo feature(String name) {
    for (FeatureInfo f : manifest.features()) {
      if (f.name().equals(name)) {
        if (!f.supported()) {
          throw new IllegalArgumentException(f.notServed(name()));
        }
        return f;
      }
    }
    throw new IllegalArgumentException(
        "dataset " + name() + " has no feature '" + name + "' (it has " + featureNames() + ")");
  }

  public List<ChunkInfo> chunks() {
    return manifest.chunks();
  }

  /** Index of the chunk that holds global row {@code row}. */
  public int chunkOf(long row) {
    return table.chunkOf(row);
  }

  /** The sample index, when the dataset has one; Strata's own modules only: its type is in a package exported to them alone (a job on the module path cannot name it). */
  @SuppressWarnings("exports")
  public Optional<SampleIndex> sampleIndex() {
    return Optional.ofNullable(samples);
  }

  /** The reader of this dataset's files (HDD tier: ORC or Parquet); Strata's own modules only: its type is in a package exported to them alone (a job on the module path cannot name it). */
  @SuppressWarnings("exports")
  public HddTable table() {
    return table;
  }

  /** Decodes chunk {@code chunk} (an ORC stripe, a Parquet row group) of {@code features} into {@code arena}. */
  public SequencedMap<String, Column> readChunk(int chunk, List<String> features, Arena arena) throws IOException {
    return table.readChunk(chunk, features, arena);
  }

  /** Closes the data files, then the sample index, then the version lease, each even when one before failed. */
  @Override
  public void close() throws IOException {
    try {
      table.close();
    } finally {
      try {
        if (samples != null) {
          samples.close();
        }
      } finally {
        closeLease();
      }
    }
  }

  private void closeLease() throws IOException {
    try {
      lease.close();
    } catch (IOException | RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IOException(e);
    }
  }


}
