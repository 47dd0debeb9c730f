package io.strata.node;

import io.strata.sdk.Progress;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.format.SegmentInfo;
import io.strata.sdk.internal.Json;
import io.strata.store.FeatureMeta;
import io.strata.store.FeatureStore;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.tiering.Promoter;
import io.strata.sdk.tiering.SegmentRef;
import io.strata.sdk.tiering.SegmentStore;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Peer reads: a chunk another node of the cluster holds is copied from that node's SSD tier
 * rather than decoded again from ORC on the shared HDD tier. The segment file is streamed
 * ({@code GET /v1/peer/segment}, the cluster's token), written to a temporary file, and lands only
 * when every checksum verifies and it describes exactly the expected chunk ({@link
 * SegmentStore#adopt}); anything else deletes it and the caller decodes ORC instead.
 *
 * <p>A derived feature another node's store holds complete is copied the same way ({@link
 * #derived}): its chunks' stored forms, each checked, ingested into this node's store.
 *
 * <p>Threads: called on promotion threads (and derivation threads), one fetch per call; the HTTP client is shared. A fetch
 * is bounded: 2 s to connect, 10 s to the response's headers, and a watchdog ({@code
 * strata-peer-watchdog}) closes a body that has not arrived within 30 s plus a second per 10 MB.
 */
final class PeerReads implements AutoCloseable {
  /** The largest segment accepted from a peer. */
  static final long MAX_BYTES = 4L << 30;

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2))
      .version(HttpClient.Version.HTTP_1_1).build();
  private final ScheduledExecutorService watchdog = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "strata-peer-watchdog");
    t.setDaemon(true);
    return t;
  });
  private final String token;
  private final TierCounters counters;

  PeerReads(String token, TierCounters counters) {
    this.token = token;
    this.counters = counters;
  }

  /**
   * Copies the segment {@code expected} describes from the first of {@code peers} that serves it
   * whole and verified; null when none did (each failure is counted and the last one kept).
   */
  SegmentRef fetch(List<Cluster.Peer> peers, SegmentInfo expected, SegmentStore store, Promoter.Gate gate)
      throws InterruptedException {
    for (Cluster.Peer p : peers) {
      try {
        long t0 = System.nanoTime();
        SegmentRef ref = fetchFrom(p, expected, store, gate);
        if (ref != null) {
          counters.peerReads.increment();
          counters.peerBytes.add(ref.bytes());
          counters.peerNanos.add(System.nanoTime() - t0);
          return ref;
        }
      } catch (IOException e) {
        counters.peerFailures.increment();
        counters.lastPeerFailure = p.url() + ": " + e.getMessage();
      }
    }
    return null;
  }

  private SegmentRef fetchFrom(Cluster.Peer p, SegmentInfo expected, SegmentStore store, Promoter.Gate gate)
      throws IOException, InterruptedException {
    String feature = expected.columns().getFirst();
    URI uri = URI.create(p.url() + "/v1/peer/segment?dataset=" + enc(expected.dataset()) + "&version="
        + enc(expected.datasetVersion()) + "&feature=" + enc(feature) + "&chunk=" + expected.chunk());
    HttpRequest req = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10))
        .header("Authorization", "Bearer " + token).GET().build();
    HttpResponse<InputStream> resp = http.send(req, HttpResponse.BodyHandlers.ofInputStream());
    InputStream in = resp.body();
    try {
      if (resp.statusCode() == 404) {
        return null; // evicted there since it was announced
      }
      if (resp.statusCode() != 200) {
        throw new IOException("peer answered " + resp.statusCode() + " for " + feature + " chunk " + expected.chunk());
      }
      long length = resp.headers().firstValueAsLong("content-length").orElse(-1);
      if (length <= 0 || length > MAX_BYTES) {
        throw new IOException("peer sent a segment of " + length + " bytes (at most " + MAX_BYTES + " are taken)");
      }
      gate.admit(length);
      ScheduledFuture<?> guard = closeAfter(in, 30 + length / 10_000_000);
      try {
        return store.adopt(expected, length, ch -> copy(in, ch, length));
      } finally {
        guard.cancel(false);
      }
    } finally {
      in.close();
    }
  }

  /** Closes {@code in} after {@code seconds} unless the returned guard is cancelled first: a body that stalls ends. */
  private ScheduledFuture<?> closeAfter(InputStream in, long seconds) {
    return watchdog.schedule(() -> {
      try {
        in.close();
      } catch (IOException ignored) {
        // The reading thread sees the closed stream.
      }
    }, seconds, TimeUnit.SECONDS);
  }

  private static void copy(InputStream in, FileChannel ch, long length) throws IOException {
    byte[] buf = new byte[1 << 20];
    long left = length;
    while (left > 0) {
      int n = in.read(buf, 0, (int) Math.min(buf.length, left));
      if (n < 0) {
        throw new IOException("peer's segment ended after " + (length - left) + " of " + length + " bytes");
      }
      AtomicFiles.writeFully(ch, ByteBuffer.wrap(buf, 0, n));
      left -= n;
    }
    if (in.read() >= 0) {
      throw new IOException("peer sent more than the " + length + " bytes it announced");
    }
  }

  /** The largest stored chunk of a derived feature accepted from a peer. */
  static final long MAX_DERIVED_CHUNK = 1L << 30;

  /**
   * Copies the complete derived feature {@code spec} (canonical) of {@code ds} from the first of
   * {@code peers} whose store holds it ({@code GET /v1/peer/derived}): its description, then each
   * chunk's stored form, each checked ({@link FeatureStore#checkEncoded}) and ingested into {@code
   * store}. Null when no peer holds it or every copy failed (counted, the last failure kept): the
   * caller computes it.
   */
  FeatureMeta derived(List<Cluster.Peer> peers, Dataset ds, String spec, FeatureStore store, Progress progress)
      throws InterruptedException {
    for (Cluster.Peer p : peers) {
      String base = p.url() + "/v1/peer/derived?dataset=" + enc(ds.name()) + "&version=" + enc(ds.version()) + "&spec="
          + enc(spec);
      try {
        byte[] description = get(base, 1 << 20);
        if (description == null) {
          continue; // that peer does not hold it
        }
        FeatureMeta m = FeatureMeta.fromJson(Json.parse(description));
        if (!m.complete() || !m.dataset().equals(ds.name()) || !m.version().equals(ds.version()) || !m.spec().equals(spec)
            || m.chunks() != ds.chunks().size()) {
          throw new IOException("the peer described another feature: " + m.spec() + " of " + m.dataset() + " " + m.version()
              + " (" + m.chunks() + " chunks, complete " + m.complete() + ")");
        }
        return store.ingest(m, (c, reuse) -> {
          byte[] v;
          try {
            v = get(base + "&chunk=" + c, MAX_DERIVED_CHUNK);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("copying chunk " + c + " of " + spec + " from " + p.url() + " was interrupted");
          }
          if (v == null) {
            throw new IOException("the peer no longer holds chunk " + c + " of " + spec);
          }
          FeatureStore.checkEncoded(v);
          ByteBuffer b = reuse != null && reuse.capacity() >= v.length ? reuse.clear() : ByteBuffer.allocateDirect(v.length);
          return b.put(v).flip();
        }, "copied from " + p.url(), progress);
      } catch (IOException | RuntimeException e) {
        counters.peerFailures.increment();
        counters.lastPeerFailure = p.url() + ": derived feature " + spec + ": " + e.getMessage();
      }
    }
    return null;
  }

  /** The body of a GET with the cluster's token; null for 404; at most {@code limit} bytes, in a minute at most. */
  private byte[] get(String uri, long limit) throws IOException, InterruptedException {
    HttpRequest req = HttpRequest.newBuilder(URI.create(uri)).timeout(Duration.ofSeconds(10))
        .header("Authorization", "Bearer " + token).GET().build();
    HttpResponse<InputStream> resp = http.send(req, HttpResponse.BodyHandlers.ofInputStream());
    InputStream in = resp.body();
    try {
      if (resp.statusCode() == 404) {
        return null;
      }
      if (resp.statusCode() != 200) {
        throw new IOException("peer answered " + resp.statusCode());
      }
      long length = resp.headers().firstValueAsLong("content-length").orElse(-1);
      if (length < 0 || length > limit) {
        throw new IOException("peer sent " + length + " bytes (at most " + limit + " are taken)");
      }
      ScheduledFuture<?> guard = closeAfter(in, 60);
      try {
        byte[] body = in.readNBytes((int) length);
        if (body.length != length || in.read() >= 0) {
          throw new IOException("peer sent " + body.length + " bytes of the " + length + " it announced");
        }
        return body;
      } finally {
        guard.cancel(false);
      }
    } finally {
      in.close();
    }
  }

  private static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  @Override
  public void close() {
    watchdog.shutdownNow();
    http.close();
  }
}
