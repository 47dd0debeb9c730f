package io.strata.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.sdk.tier.Tier;
import io.strata.sdk.tier.TierStats;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.format.Columns;
import io.strata.sdk.internal.Json;
import io.strata.sdk.node.NodeClient;
import io.strata.sdk.node.NodeSegments;
import io.strata.sdk.tiering.TieredReader;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Everything at once against one node, seeded: readers (each a job mapping the node's segments)
 * read random row ranges and check every value against ORC, while other threads promote, evict,
 * derive, re-register the dataset and change the budget, and the node restarts under them.
 * Run longer with {@code -Dstrata.stress.seconds=N}, another seed with {@code -Dstrata.stress.seed=S}.
 */
class NodeStressTest {
  static final List<String> FEATURES = List.of("amount", "merchant_category", "embedding", "score", "tokens");
  static final long SECONDS = Long.getLong("strata.stress.seconds", 20);
  static final long SEED = Long.getLong("strata.stress.seed", 20261123);

  @TempDir Path home;

  @Test
  void readersSeeOrcValuesWhileEverythingElseHappens() throws Exception {
    Path dir = home.resolve("hdd/events");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("events", 40_000, 4).withFeatures(14).withChunking(4_000, 1)
        .withMeanSampleLength(30), Progress.NONE);
    // A budget of about a third of the features' bytes, so that the policy evicts as it promotes.
    NodeConfig config = NodeConfig.embedded(home, 0).withSsdBudget(3L << 20);
    CacheNode first = CacheNode.start(config, Set.of("ssdBudgetBytes"));
    NodeConfig fixed = config.withPort(first.port());
    CacheNode[] node = {first};
    NodeClient client = new NodeClient(first.url(), null);
    client.registerDataset(dir);

    AtomicBoolean stop = new AtomicBoolean();
    ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
    AtomicLong valuesChecked = new AtomicLong();
    AtomicLong ranges = new AtomicLong();
    AtomicLong ssdRanges = new AtomicLong();
    AtomicLong actions = new AtomicLong();
    @SuppressWarnings("UnnecessaryAsync") // counted on the operator thread, read after it ends
    AtomicLong restarts = new AtomicLong();
    AtomicLong refusals = new AtomicLong();
    List<Thread> threads = new ArrayList<>();

    try (Dataset ds = Dataset.open(dir)) {
      for (int r = 0; r < 3; r++) {
        long seed = SEED * 31 + r;
        String job = "reader-" + r;
        threads.add(Thread.ofPlatform().name("stress-" + job).start(() -> {
          Random rnd = new Random(seed);
          try (NodeSegments segs = new NodeSegments(client, job, ds, FEATURES, 50);
              TieredReader reader = new TieredReader(ds, segs, FEATURES, new TierStats());
              TieredReader orc = new TieredReader(ds, null, FEATURES, new TierStats())) {
            while (!stop.get()) {
              int count = 1 + rnd.nextInt(rnd.nextBoolean() ? 64 : 6_000);
              long start = rnd.nextLong(ds.rows() - count);
              long ssdBefore = reader.stats().bytes(Tier.SSD);
              try (Arena arena = Arena.ofConfined()) {
                Map<String, Column> got = reader.readRows(start, count, arena);
                Map<String, Column> want = orc.readRows(start, count, arena);
                for (String f : FEATURES) {
                  int d = Columns.firstDifference(want.get(f), got.get(f));
                  if (d >= 0) {
                    problems.add(job + ": " + f + " row " + (start + d) + " differs from ORC");
                  }
                }
              }
              if (reader.stats().bytes(Tier.SSD) > ssdBefore) {
                ssdRanges.incrementAndGet();
              }
              valuesChecked.addAndGet((long) count * FEATURES.size());
              ranges.incrementAndGet();
              reader.refresh();
            }
          } catch (Throwable t) {
            problems.add(job + " failed: " + t);
          }
        }));
      }
      String[] specs = {"log1p(amount)", "bucketize(score, [0.25, 0.5, 0.75])", "seq_count(tokens)", "zscore(amount)"};
      threads.add(Thread.ofPlatform().name("stress-operator").start(() -> {
        Random rnd = new Random(SEED);
        while (!stop.get()) {
          try {
            int chunk = rnd.nextInt(ds.chunks().size());
            List<String> fs = List.of(FEATURES.get(rnd.nextInt(FEATURES.size())));
            switch (rnd.nextInt(6)) {
              case 0, 1 -> client.promote("events", fs, List.of(chunk, (chunk + 1) % ds.chunks().size()));
              case 2 -> client.evict("events", rnd.nextBoolean() ? fs : null, List.of(chunk));
              case 3 -> client.startDerive("events", specs[rnd.nextInt(specs.length)]);
              case 4 -> client.registerDataset(dir);
              default -> client.setPolicy(Json.object()
                  .put("ssdBudgetBytes", (1L + rnd.nextInt(4)) << 20));
            }
            actions.incrementAndGet();
          } catch (NodeClient.NodeRequestException e) {
            if (e.status() >= 500) {
              problems.add("operator: the node answered " + e.status() + ": " + e.getMessage());
            }
            refusals.incrementAndGet(); // 409: the budget cannot hold a forced promotion
          } catch (IOException e) {
            // The node is restarting.
          }
          sleepQuietly(20);
        }
      }));
      long end = System.nanoTime() + SECONDS * 1_000_000_000L;
      long nextRestart = System.nanoTime() + SECONDS * 1_000_000_000L / 3;
      while (System.nanoTime() < end && problems.isEmpty()) {
        Thread.sleep(100);
        if (System.nanoTime() > nextRestart) {
          node[0].close();
          node[0] = CacheNode.start(fixed, Set.of("ssdBudgetBytes"));
          restarts.incrementAndGet();
          nextRestart = System.nanoTime() + SECONDS * 1_000_000_000L / 3;
        }
      }
      stop.set(true);
      for (Thread t : threads) {
        t.join(60_000);
      }
      assertTrue(node[0].awaitIdle(60_000), "promotions settle");
      JsonNode status = client.tiers();
      System.out.printf("FAULTS node-stress: seed %d, %d s, %d ranges read (%d touching the SSD tier), %,d values checked against ORC,"
              + " %d operator actions (%d refused), %d restarts, %d promotions, %d evictions, %d promotion failures, 0 wrong values%n",
          SEED, SECONDS, ranges.get(), ssdRanges.get(), valuesChecked.get(), actions.get(), refusals.get(), restarts.get(),
          status.path("traffic").path("promotions").asLong(), status.path("traffic").path("evictions").asLong(),
          status.path("traffic").path("promotionFailures").asLong());
      assertEquals(List.of(), List.copyOf(problems));
      assertTrue(ssdRanges.get() > 0, "some reads were served by the SSD tier");
      assertEquals(0, status.path("traffic").path("promotionFailures").asLong(),
          "no promotion failed (re-registration never closes a dataset under one): " + status.path("traffic"));
      assertEquals(0, status.path("ssd").path("unlinkedMappedBytes").asLong(), "readers closed: nothing evicted stays mapped");
      // The catalog and the directory agree: every segment listed is on disk, every file listed.
      long onDisk;
      try (Stream<Path> files = Files.walk(config.ssdDir())) {
        onDisk = files.filter(p -> p.toString().endsWith(".arrow")).count();
      }
      assertEquals(status.path("ssd").path("segments").asLong(), onDisk, status.path("ssd").toString());
    } finally {
      stop.set(true);
      node[0].close();
    }
  }

  private static void sleepQuietly(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
