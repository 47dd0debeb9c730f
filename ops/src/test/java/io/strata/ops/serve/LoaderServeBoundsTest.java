package io.strata.ops.serve;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.Progress;
import io.strata.sdk.internal.Json;
import io.strata.tools.DatasetGenerator;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 51: a client asking the loader service for 100,000 threads made it start 10,332 and keep
 * them. Sessions ask within bounds, the service's sessions together too, and what a session holds
 * is given back when it ends; a malformed request is answered in the protocol's words.
 */
class LoaderServeBoundsTest {
  @TempDir Path tmp;

  /** One session over {@code lines}; its answers. */
  private static String[] session(String... lines) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8)) {
      LoaderServe.session(new BufferedReader(new StringReader(String.join("\n", lines) + "\n")), ps);
    }
    return out.toString(StandardCharsets.UTF_8).strip().split("\n");
  }

  private Path dataset() throws Exception {
    Path dir = tmp.resolve("ds");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("ds", 5_000, 3).withFeatures(4).withChunking(2_500, 1)
        .withMeanSampleLength(10), Progress.NONE);
    return dir;
  }

  private static String request(Path ds, int threads, int prefetch) {
    return Json.compact(Json.object().put("dataset", ds.toString()).put("threads", threads).put("prefetch", prefetch)
        .put("shmRoot", ds.getParent().resolve("shm").toString()));
  }

  private static JsonNode parse(String line) throws Exception {
    return Json.parse(line.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void threadsArePerSessionAndPerServiceBoundedAndGivenBack() throws Exception {
    Path ds = dataset();
    int before = Thread.activeCount();
    JsonNode e = parse(session(request(ds, 100_000, 4))[0]);
    assertTrue(e.path("error").asText().contains("threads must be 1 to " + Session.MAX_THREADS_PER_SESSION), e.toString());
    assertTrue(e.path("usage").asBoolean(), e.toString());
    assertTrue(parse(session(request(ds, 1, 100_000))[0]).path("error").asText()
        .contains("prefetch must be 1 to " + Session.MAX_PREFETCH));
    assertEquals(0, Session.THREADS_IN_USE.get());

    // The service's bound: sessions holding all but one of its threads leave room for one more thread, not two.
    Session.THREADS_IN_USE.addAndGet(Session.MAX_THREADS_PER_HOST - 1);
    try {
      String refused = session(request(ds, 2, 4))[0];
      assertTrue(refused.contains("would pass its bound of " + Session.MAX_THREADS_PER_HOST), refused);
      String[] served = session(request(ds, 1, 4), "next", "close");
      assertTrue(served[0].contains("\"ready\""), served[0]);
      assertTrue(served[1].contains("\"batch\""), served[1]);
    } finally {
      Session.THREADS_IN_USE.addAndGet(-(Session.MAX_THREADS_PER_HOST - 1));
    }
    assertEquals(0, Session.THREADS_IN_USE.get(), "every session gave its threads back");
    Thread.sleep(200);
    assertTrue(Thread.activeCount() <= before + 2, "no thread left behind: " + Thread.activeCount() + " against " + before);
  }

  @Test
  void aMalformedReleaseIsAnsweredInTheProtocolsWords() throws Exception {
    Path ds = dataset();
    String[] a = session(request(ds, 1, 2), "next", "release twelve");
    String last = a[a.length - 1];
    assertTrue(last.contains("'release' takes the number of a batch the job holds, got 'twelve'"), last);
    assertFalse(last.contains("For input string"), last);
  }
}
