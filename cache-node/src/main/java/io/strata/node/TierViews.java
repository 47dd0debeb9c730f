package io.strata.node;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;
import java.util.Map;

/**
 * What {@link TierManager} answers: plain records, no JSON and no HTTP. {@code NodeApi} writes
 * them as the JSON bodies of docs/API.md (a record's components are its fields, in order; a null
 * component is left out).
 */
final class TierViews {
  private TierViews() {}

  /**
   * {@code GET /v1/datasets/{name}}; in a list, a registered dataset that cannot be served now has
   * only its name, path and why ({@code refused}).
   */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  record DatasetView(String name, String version, String path, long rows, int chunks, long orcBytes,
      List<FeatureView> features, long ssdBytes, Long quotaBytes, String refused) {
    DatasetView(String name, String version, String path, long rows, int chunks, long orcBytes,
        List<FeatureView> features, long ssdBytes, Long quotaBytes) {
      this(name, version, path, rows, chunks, orcBytes, features, ssdBytes, quotaBytes, null);
    }

    static DatasetView refused(String name, String path, String why) {
      return new DatasetView(name, null, path, 0, 0, 0, List.of(), 0, null, why);
    }
  }

  /** A feature of a dataset: its type and the SSD bytes the policy reckons it takes, or why it is not served. */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  record FeatureView(String name, String type, Long policyBytes, String unsupported) {}

  /** {@code POST /v1/resolve}: the segments to map, the ORC source for the rest, and the residency generation. */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  record Resolved(String dataset, String version, List<SegmentView> segments, String orcSource, long residency,
      String residencyFile) {}

  /** One segment to map, and the requested features it holds. */
  record SegmentView(String path, int chunk, long bytes, List<String> features) {}

  /** {@code POST /v1/reads}. */
  record ReadsAnswer(int accepted, int promotionsScheduled, boolean planned, long residency) {}

  /** {@code POST /v1/plans} with {@code ranks}: where each rank's plan went ({@code here}, or {@code shared} with the cluster for its host). */
  record DistributedPlanAnswer(String job, String dataset, int world, List<RankPlan> ranks) {}

  /** One rank of a distributed plan: its host, its name on the node, where its plan went, its steps when installed here. */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  record RankPlan(int rank, String host, String job, String placed, Integer steps) {}

  /** {@code POST /v1/plans}: the steps are given for a program, not for a chunk order. */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  record PlanAnswer(String job, String dataset, String version, Integer steps, Long stepsPerEpoch, Long startStep,
      long reads, int jobsPlanned) {}

  /** {@code POST /v1/segments/check}. */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  record SegmentCheck(boolean resident, boolean damaged, String problem) {}

  /** {@code POST /v1/promote}. */
  record Promoted(int scheduled, long bytes) {}

  /** {@code POST /v1/evict}. */
  record Evicted(int evicted) {}

  /** {@code POST /v1/pin} and {@code /v1/unpin}. */
  record Pinned(boolean pinned, String target, int promotionsScheduled) {}

  /** {@code GET /v1/policy}. */
  record PolicyView(String policy, List<String> policies, long ssdBudgetBytes, long flashWriteBudgetBytesPerHour, double popularityDiscount,
      long promotionBytesPerSecond, Map<String, Long> quotas, List<String> pins, long pinnedBytes,
      Map<String, String> sources, List<String> hddRoots, Map<String, Long> decisions) {}

  /** {@code GET /v1/tiers}. */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  record Status(double uptimeSeconds, Ssd ssd, Hdd hdd, Dram dram, Traffic traffic, List<Stream> topStreams,
      List<JobRow> jobs, List<JobRow> recentJobs, List<String> pins, PolicyBrief policy, List<DatasetBrief> datasets,
      TierHistory.Churn churn, List<String> startupNotes, ClusterBrief cluster) {}

  /**
   * A clustered node's view of its cluster: its id, the live members, residency entries, what it
   * announced and retracted, members seen leaving, and its peer reads (copied from peers, failed,
   * served to peers), beside its ORC decodes for comparison; the planned jobs of every node and
   * the bytes read per dataset across the cluster.
   */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  record ClusterBrief(String nodeId, List<String> members, int residencyEntries, long announced, long retracted,
      long membersLeft, long cleanedEntries, long droppedUpdates, String lastLeft, long peerReads, long peerBytes,
      double peerSeconds, long peerFailures, String lastPeerFailure, long servedToPeers, long servedBytes,
      long orcSegmentBytes, double orcSeconds, List<Cluster.Job> jobs, Map<String, Long> datasetReadBytes,
      int heldByOthers) {}

  @JsonInclude(JsonInclude.Include.NON_NULL)
  record Ssd(String directory, long bytes, long residentBytes, long budgetBytes, int segments, int pendingPromotions,
      long unlinkedMappedBytes, long damagedSegments, String lastDamagedSegment, long vanishedSegments,
      long repairedSegments, long scrubbedBytes, long scrubPasses, long scrubBytesPerSecond) {}

  /** The HDD tier: datasets, their ORC bytes, the roots, and the bytes this node's own promotions read from ORC. */
  record Hdd(int datasets, long bytes, List<String> roots, long promotionReadBytes, long promotionsFromReaders) {}

  record Dram(long budgetBytes, long openDatasets, long hostBytes, long pageCacheBytes) {}

  @JsonInclude(JsonInclude.Include.NON_NULL)
  record Traffic(long reads, long ssdReads, long ssdBytes, long hddBytes, double byteHitRatio, long hddBytesAvoided,
      long flashBytesWritten, double flashBytesPerHour, double flashBytesPerSecondLastMinute, long promotions,
      long promotionFailures, String lastPromotionFailure, long rejectedPromotions, long evictions,
      long derivedComputations, long hddBytesInFlight, long hddBytesLanded, double meanLandingSeconds) {}

  /** A feature stream (dataset/feature) and the bytes read of it per tier. */
  record Stream(String stream, long ssdBytes, long hddBytes) {}

  /** A job's row: progress in steps, bytes per tier, hit ratio, rate; how and when it ended for a recent job. */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  record JobRow(String job, String dataset, int features, long stepsDone, long steps, double progress, long ssdBytes,
      long hddBytes, double byteHitRatio, double seconds, double bytesPerSecond, String how, Double endedSecondsAgo) {

    static JobRow of(Jobs.Job j, long step, long ssd, long hdd, double seconds, String how, Double endedSecondsAgo) {
      long total = j.endStep() - j.firstStep();
      long done = Math.max(0, Math.min(total, step + 1 - j.firstStep()));
      return new JobRow(j.name(), j.dataset(), j.features().size(), done, total, total == 0 ? 0 : (double) done / total,
          ssd, hdd, ssd + hdd == 0 ? 0 : (double) ssd / (ssd + hdd), seconds, seconds <= 0 ? 0 : (ssd + hdd) / seconds,
          how, endedSecondsAgo);
    }
  }

  record PolicyBrief(String policy, long ssdBudgetBytes, long flashWriteBudgetBytesPerHour, double popularityDiscount) {}

  /** A dataset's bytes on HDD and SSD, its quota (-1: none), and what a relayout would gain (null before reads). */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  record DatasetBrief(String name, long orcBytes, long ssdBytes, long quotaBytes, Layout layout) {}

  /**
   * The dataset's column order against the one its readers' co-access suggests: the data read
   * requests per stripe read (jobs weighted by their stripe reads) now and after a relayout, and
   * whether the node suggests one.
   */
  record Layout(int jobs, double runsPerStripeNow, double runsPerStripeLearned, int chunksNow, int chunksAfterRelayout,
      double readsPerEpochNow, double readsPerEpochLearned, boolean relayoutSuggested) {}
}
