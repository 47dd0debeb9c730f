package io.strata.bench;

import static io.strata.bench.BenchPeers.f2;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.ops.NodeCommand;
import io.strata.ops.Processes;
import io.strata.ops.Terminal;
import io.strata.sdk.Progress;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.internal.Json;
import io.strata.sdk.node.NodeClient;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "api", mixinStandardHelpOptions = true,
    description = "The node API on loopback: requests/s and latency of resolve under concurrent clients, beside /health (the HTTP floor).")
final class ApiBench implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--clients", split = ",", defaultValue = "1,8,32,128", description = "Concurrent clients; default ${DEFAULT-VALUE}.")
  List<Integer> clients;

  @Option(names = "--seconds", defaultValue = "5", description = "Seconds per measurement; default ${DEFAULT-VALUE}.")
  double seconds;

  @Option(names = "--json", description = "Print the figures as one JSON object.")
  boolean json;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter log = spec.commandLine().getErr();
    Path dir = Files.createTempDirectory("strata-bench-api");
    Process node = null;
    try {
      Path ds = dir.resolve("hdd/events");
      DatasetGenerator.generate(ds, DatasetGenerator.Options.of("events", 400_000, 1)
          .withChunking(25_000, 4), Progress.NONE);
      NodeCommand.Child child = NodeCommand.startChild(List.of("-Xmx512m"), dir.resolve("node"),
          List.of("--port", "0", "--hdd-root", dir.resolve("hdd").toString()), dir.resolve("node.log"));
      node = child.process();
      String url = child.url();
      NodeClient client = new NodeClient(url, null);
      client.registerDataset(ds);
      client.promote("events", List.of("amount", "score"), null);
      String body = Json.compact(Json.object().put("job", "bench").put("dataset", "events")
          .<ObjectNode>set("features", Json.MAPPER.valueToTree(List.of("amount", "score", "merchant_category")))
          .set("chunks", Json.MAPPER.valueToTree(List.of(0, 1, 2, 3, 4, 5, 6, 7))));
      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      HttpRequest resolve = HttpRequest.newBuilder(URI.create(url + "/v1/resolve")).header("content-type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(body)).build();
      HttpRequest health = HttpRequest.newBuilder(URI.create(url + "/health")).GET().build();
      measure(http, resolve, 4, 1.0);
      measure(http, health, 4, 1.0);
      ObjectNode res = Json.object();
      res.put("benchmark", "api").put("secondsPerPoint", seconds);
      ArrayNode points = res.putArray("points");
      Terminal.Table t = new Terminal.Table("clients", "resolve req/s", "p50 ms", "p99 ms", "/health req/s", "p99 ms",
          "resolve/health");
      for (int c : clients) {
        double[] r = measure(http, resolve, c, seconds);
        double[] h = measure(http, health, c, seconds);
        points.addObject().put("clients", c).put("resolveRps", r[0]).put("resolveP50Ms", r[1]).put("resolveP99Ms", r[2])
            .put("healthRps", h[0]).put("healthP50Ms", h[1]).put("healthP99Ms", h[2]).put("resolveVsHealth", r[0] / h[0]);
        t.row(c, String.format(Locale.ROOT, "%.0f", r[0]), f2(r[1]), f2(r[2]), String.format(Locale.ROOT, "%.0f", h[0]), f2(h[2]),
            f2(r[0] / h[0]));
        log.printf("%d clients: resolve %.0f req/s p99 %.2f ms; health %.0f req/s%n", c, r[0], r[2], h[0]);
        log.flush();
      }
      if (json) {
        out.println(Json.compact(res));
      } else {
        out.printf("node %s on loopback (a separate process); Java HttpClient load from this process%n", url);
        t.print(out);
      }
      return 0;
    } finally {
      if (node != null) {
        node.destroy();
        node.waitFor(20, TimeUnit.SECONDS);
      }
      Processes.deleteTree(dir);
    }
  }

  /** {requests/s, p50 ms, p99 ms} of {@code clients} closed-loop clients for {@code seconds}. */
  private static double[] measure(HttpClient http, HttpRequest req, int clients, double seconds) throws Exception {
    long end = System.nanoTime() + (long) (seconds * 1e9);
    List<long[]> lat = new ArrayList<>();
    CountDownLatch done = new CountDownLatch(clients);
    long[] errors = new long[1];
    long t0 = System.nanoTime();
    for (int i = 0; i < clients; i++) {
      long[] mine = new long[1 << 20];
      lat.add(mine);
      Thread.ofVirtual().start(() -> {
        int n = 1;
        try {
          while (System.nanoTime() < end && n < mine.length) {
            long t = System.nanoTime();
            HttpResponse<Void> r = http.send(req, HttpResponse.BodyHandlers.discarding());
            if (r.statusCode() != 200) {
              synchronized (errors) {
                errors[0]++;
              }
            }
            mine[n++] = System.nanoTime() - t;
          }
        } catch (Exception e) {
          synchronized (errors) {
            errors[0]++;
          }
        } finally {
          mine[0] = n - 1L;
          done.countDown();
        }
      });
    }
    done.await();
    double elapsed = (System.nanoTime() - t0) / 1e9;
    if (errors[0] > 0) {
      throw new IOException(errors[0] + " requests failed during the API benchmark");
    }
    int total = lat.stream().mapToInt(a -> (int) a[0]).sum();
    long[] all = new long[total];
    int k = 0;
    for (long[] a : lat) {
      System.arraycopy(a, 1, all, k, (int) a[0]);
      k += (int) a[0];
    }
    Arrays.sort(all);
    return new double[] {total / elapsed, all[total / 2] / 1e6, all[(int) Math.min(total - 1, total * 0.99)] / 1e6};
  }
}
