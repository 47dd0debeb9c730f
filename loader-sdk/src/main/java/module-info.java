/**
 * Strata's loader SDK: the library a training job links. Formats (ORC datasets, Arrow IPC
 * segments), readers, batch assembly and the cache-node client. No CUDA: shipping batches to a
 * GPU is the {@code io.strata.gpu} module's.
 *
 * <p>Exported to everyone: what a training job imports, and the types those signatures need
 ({@code io.strata.sdk}, the value types every other package uses and which use none of them:
 * {@code Column}, {@code FeatureType}, {@code ChunkInfo}, {@code FeatureInfo}, {@code SegmentLease},
 * {@code CorruptFileException}, {@code Progress}; {@code io.strata.sdk.dataset}: {@code Dataset};
 * {@code io.strata.sdk.tier}, the tier concepts a job names: {@code Tier}, {@code TierStats},
 * {@code SegmentSource}; {@code io.strata.sdk.loader}:
 * {@code Loader}, {@code LoaderBuilder}, {@code Batch}, {@code Checkpoint}, {@code BatchMemory},
 * {@code PlanProgram}, {@code BatchMode}; {@code io.strata.sdk.node}: {@code NodeClient},
 * {@code NodeSegments}; {@code io.strata.sdk.derive}: derived features, their specs and the
 * store interface a job passes a feature store as). Formats, dataset files, the tiers' machinery
 * ({@code io.strata.sdk.tiering}: the SSD tier's store, promotion, reads across the tiers; {@code
 * io.strata.sdk.hadoop} and {@code io.strata.sdk.s3}: HDFS and S3 as read-only {@code java.nio}
 * file systems, over {@code io.strata.sdk.remote}'s shared paths and channels) and
 * internals are exported to Strata's own modules alone.
 *
 * <p>The ORC, Parquet, Hadoop and AWS SDK libraries are automatic modules (their jars declare no module), and the
 * qualified exports name Strata's modules, which are compiled after this one: the two warnings
 * those give are expected, and suppressed here alone.
 */
@SuppressWarnings({"requires-automatic", "module"})
module io.strata.sdk {
  requires orc.core;
  // parquet-hadoop, -common and -encoding patched into parquet-column (they split packages among
  // them); the two packages only parquet-hadoop's jar holds are exported to this module by the build.
  requires parquet.column;
  requires hive.storage.api;
  requires hadoop.client.api;
  requires transitive com.fasterxml.jackson.databind;
  requires software.amazon.awssdk.services.s3;
  requires software.amazon.awssdk.core;
  requires software.amazon.awssdk.awscore;
  requires software.amazon.awssdk.auth;
  requires software.amazon.awssdk.regions;
  requires software.amazon.awssdk.http.apache5;
  requires software.amazon.awssdk.http;
  requires java.net.http;
  requires java.management;
  requires java.sql; // orc-core's timestamp statistics are java.sql.Timestamp
  requires static com.google.errorprone.annotations; // @GuardedBy, checked at compile time

  exports io.strata.sdk;
  exports io.strata.sdk.loader;
  exports io.strata.sdk.node;
  exports io.strata.sdk.dataset;
  exports io.strata.sdk.tier;
  exports io.strata.sdk.derive;
  exports io.strata.sdk.format to io.strata.tools, io.strata.store, io.strata.node, io.strata.gpu, io.strata.ops;
  exports io.strata.sdk.files to io.strata.tools, io.strata.store, io.strata.node, io.strata.gpu, io.strata.ops;
  exports io.strata.sdk.tiering to io.strata.tools, io.strata.store, io.strata.node, io.strata.gpu, io.strata.ops;
  exports io.strata.sdk.hadoop to io.strata.tools, io.strata.store, io.strata.node, io.strata.gpu, io.strata.ops;
  exports io.strata.sdk.s3 to io.strata.tools, io.strata.store, io.strata.node, io.strata.gpu, io.strata.ops;
  exports io.strata.sdk.internal to io.strata.tools, io.strata.store, io.strata.node, io.strata.gpu, io.strata.ops;
}
