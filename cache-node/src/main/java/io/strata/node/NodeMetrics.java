package io.strata.node;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.strata.sdk.tier.Tier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The node's metrics in Prometheus's text format ({@code GET /metrics}), through Micrometer: the
 * tiers' counters and gauges (with {@code # HELP}), read bytes per dataset and per planned job and
 * tier, latency histograms of resolves and promotions, and the JVM's and the process's own
 * (memory, GC, threads, classes, CPU, uptime, file descriptors).
 *
 * <p>Threads and locks: the registry is thread-safe. The tiers' values are taken once per scrape
 * as a snapshot ({@link Values}, built under the tiers' monitor) that every meter reads; the
 * dataset and job meters are added and removed by the scraping thread alone ({@link #scrape()} is
 * synchronized). Timers are recorded from any thread.
 */
final class NodeMetrics implements AutoCloseable {
  /** The tiers jobs read from (and report): their host's SSD and HDD tiers. */
  private static final List<Tier> JOB_TIERS = List.of(Tier.SSD, Tier.HDD);

  /**
   * The tiers' values at one moment: named counters and gauges, and bytes read from each tier
   * (indexed by {@link Tier#ordinal()}) per dataset and per job with a plan.
   */
  record Values(Map<String, Number> values, Map<String, long[]> datasetBytes, Map<String, long[]> jobBytes) {
    static final Values EMPTY = new Values(Map.of(), Map.of(), Map.of());

    double get(String name) {
      Number n = values.get(name);
      return n == null ? 0 : n.doubleValue();
    }
  }

  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final Supplier<Values> source;
  private final JvmGcMetrics gc = new JvmGcMetrics();
  private final Timer resolves;
  private final Timer promotionsFromOrc;
  private final Timer promotionsFromStore;
  private final Map<String, List<Meter>> datasetMeters = new HashMap<>();
  private final Map<String, List<Meter>> jobMeters = new HashMap<>();
  private volatile Values now = Values.EMPTY;

  NodeMetrics(Supplier<Values> source) {
    this.source = source;
    new JvmMemoryMetrics().bindTo(registry);
    gc.bindTo(registry);
    new JvmThreadMetrics().bindTo(registry);
    new ClassLoaderMetrics().bindTo(registry);
    new ProcessorMetrics().bindTo(registry);
    new UptimeMetrics().bindTo(registry);
    new FileDescriptorMetrics().bindTo(registry);
    counter("strata.reads", "reads", "Feature chunk reads the jobs reported", null);
    counter("strata.ssd.reads", "ssdReads", "Reported reads served by the SSD tier", null);
    counter("strata.flash.written", "flashBytes", "Bytes written to the SSD tier (segments)", "bytes");
    counter("strata.promotions", "promotions", "Feature chunks promoted to the SSD tier", null);
    counter("strata.promotion.failures", "promotionFailures", "Promotions that failed (the chunk stays on ORC)", null);
    counter("strata.promotions.rejected", "rejectedPromotions", "Promotions refused because the queue was full", null);
    counter("strata.evictions", "evictions", "Feature chunks evicted from the SSD tier", null);
    counter("strata.damaged.segments", "damagedSegments", "Segments found damaged (by a reader or the scrub), dropped and placed again", null);
    counter("strata.vanished.segments", "vanishedSegments", "Resident segments whose file was found gone or replaced, dropped and placed again", null);
    counter("strata.repaired.segments", "repairedSegments", "Feature chunks placed again after their segment was found gone or damaged", null);
    counter("strata.scrubbed", "scrubbedBytes", "Bytes of segments whose checksums the background scrub verified", "bytes");
    for (Tier tier : JOB_TIERS) {
      FunctionCounter.builder("strata.read", this, m -> m.now.get(tier.apiName() + "Bytes"))
          .baseUnit("bytes").tags("tier", tier.apiName()).description("Bytes the jobs reported reading, by the tier that served them")
          .register(registry);
    }
    gauge("strata.ssd", "ssdBytesHeld", "Bytes of the segments on the SSD tier", "bytes");
    gauge("strata.ssd.budget", Setting.SSD_BUDGET_BYTES.key(), "The SSD tier's byte budget", "bytes");
    gauge("strata.ssd.unlinked.mapped", "unlinkedMappedBytes", "Evicted segments still mapped by the node or jobs (SSD space not yet free)", "bytes");
    gauge("strata.pending.promotions", "pendingPromotions", "Promotions queued or running", null);
    gauge("strata.datasets", "datasets", "Registered datasets", null);
    gauge("strata.jobs", "jobs", "Jobs with a plan", null);
    gauge("strata.byte.hit.ratio", "byteHitRatio", "Share of the reported bytes served by the SSD tier", null);
    gauge("strata.flash.write.rate", "flashBytesPerSecond", "Bytes written to the SSD tier per second over the last minute", "bytes.per.second");
    this.resolves = Timer.builder("strata.resolve").description("Time to answer where a job's feature chunks live")
        .publishPercentileHistogram().minimumExpectedValue(Duration.ofNanos(20_000)).maximumExpectedValue(Duration.ofSeconds(10))
        .register(registry);
    Timer.Builder promotion = Timer.builder("strata.promotion").description("Time to promote one feature chunk (read, throttle, write)")
        .publishPercentileHistogram().minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofMinutes(5));
    this.promotionsFromOrc = promotion.tags("source", "orc").register(registry);
    this.promotionsFromStore = promotion.tags("source", "feature-store").register(registry);
  }

  private void counter(String name, String key, String help, String unit) {
    FunctionCounter.builder(name, this, m -> m.now.get(key)).description(help).baseUnit(unit).register(registry);
  }

  private void gauge(String name, String key, String help, String unit) {
    Gauge.builder(name, this, m -> m.now.get(key)).description(help).baseUnit(unit).register(registry);
  }

  Timer resolves() {
    return resolves;
  }

  /** The timer of promotions from ORC, or from the feature store (derived features). */
  Timer promotions(boolean derived) {
    return derived ? promotionsFromStore : promotionsFromOrc;
  }

  /** Everything, in Prometheus's text format (version 0.0.4). */
  synchronized String scrape() {
    Values v = source.get();
    now = v;
    follow(v.datasetBytes(), Values::datasetBytes, datasetMeters, "strata.dataset.read", "dataset",
        "Bytes read from the dataset, by tier");
    follow(v.jobBytes(), Values::jobBytes, jobMeters, "strata.job.read", "job",
        "Bytes a job with a plan read, by tier (removed when its plan ends)");
    return registry.scrape();
  }

  /** Adds meters for new names and removes those of names gone (jobs whose plans ended). */
  private void follow(Map<String, long[]> bytes, Function<Values, Map<String, long[]>> of,
      Map<String, List<Meter>> meters, String metric, String label, String help) {
    for (String name : bytes.keySet()) {
      meters.computeIfAbsent(name, n -> {
        List<Meter> list = new ArrayList<>();
        for (Tier tier : JOB_TIERS) {
          int at = tier.ordinal();
          list.add(FunctionCounter.builder(metric, this, m -> {
            long[] b = of.apply(m.now).get(n);
            return b == null ? 0 : b[at];
          }).baseUnit("bytes").tags(Tags.of(label, n, "tier", tier.apiName())).description(help).register(registry));
        }
        return list;
      });
    }
    meters.entrySet().removeIf(e -> {
      if (bytes.containsKey(e.getKey())) {
        return false;
      }
      e.getValue().forEach(registry::remove);
      return true;
    });
  }

  @Override
  public void close() {
    gc.close();
    registry.close();
  }
}
