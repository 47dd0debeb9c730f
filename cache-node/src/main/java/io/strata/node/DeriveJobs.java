package io.strata.node;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.Progress;
import io.strata.sdk.internal.Json;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Derived-feature computations as jobs to poll: {@code POST /v1/features} validates the request,
 * answers 202 with a job at once, and the computation (which may take hours) runs on this class's
 * own threads, never on the API's. A request for a feature already being derived joins that job.
 *
 * <p>Threads and locks: {@link #THREADS} named platform threads ({@code strata-derive-N}) run the
 * computations; the job table is guarded by this object's monitor, held only to add, find and
 * retire jobs; a job's state and progress are volatile fields its thread writes and pollers read.
 * Bounded: at most {@link #MAX_ACTIVE} jobs queued or running (more get 429), and the last {@link
 * #MAX_FINISHED} finished jobs are kept for polling. {@link #close()} interrupts the computations;
 * the feature store keeps what they wrote, and the next request resumes from there.
 */
final class DeriveJobs implements AutoCloseable {
  static final int THREADS = 2;
  static final int MAX_ACTIVE = 64;
  static final int MAX_FINISHED = 256;

  /** The work of one derivation: the feature's state once it is stored and placed. */
  interface Work {
    ObjectNode run(Progress progress) throws Exception;
  }

  private static final class Job implements Progress {
    final String id;
    final String dataset;
    final String spec;
    final long submitted = System.currentTimeMillis();
    volatile String state = "queued";
    volatile long started;
    volatile long finished;
    volatile long done;
    volatile long total = -1;
    volatile ObjectNode result;
    volatile int errorStatus;
    volatile String error;

    Job(String id, String dataset, String spec) {
      this.id = id;
      this.dataset = dataset;
      this.spec = spec;
    }

    @Override
    public void update(long d, long t, String unit) {
      done = d;
      total = t;
    }

    synchronized ObjectNode json() {
      ObjectNode o = Json.object().put("job", id).put("state", state).put("dataset", dataset).put("spec", spec);
      o.put("submittedAt", Instant.ofEpochMilli(submitted).toString());
      if (started > 0) {
        o.put("seconds", ((finished > 0 ? finished : System.currentTimeMillis()) - started) / 1000.0);
      }
      if (total > 0) {
        o.putObject("progress").put("chunksDone", done).put("chunks", total);
      }
      if (result != null) {
        o.set("feature", result);
      }
      if (error != null) {
        o.putObject("error").put("status", errorStatus).put("message", error);
      }
      return o;
    }
  }

  private final ExecutorService threads;
  private final Map<String, Job> byId = new HashMap<>();
  private final Map<String, Job> activeByFeature = new HashMap<>();
  private final Deque<Job> finished = new ArrayDeque<>();
  private final AtomicInteger next = new AtomicInteger();
  private int active;

  DeriveJobs() {
    AtomicInteger n = new AtomicInteger();
    this.threads = new ThreadPoolExecutor(THREADS, THREADS, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
        r -> Thread.ofPlatform().name("strata-derive-" + n.incrementAndGet()).daemon(true).unstarted(r));
  }

  /**
   * The job deriving {@code spec} (canonical) of {@code dataset}: a new one running {@code work},
   * or the one already queued or running for the same feature.
   */
  ObjectNode submit(String dataset, String spec, Work work) {
    Job job;
    synchronized (this) {
      Job running = activeByFeature.get(dataset + "\0" + spec);
      if (running != null) {
        return running.json();
      }
      if (active >= MAX_ACTIVE) {
        throw NodeException.busy(MAX_ACTIVE + " derivations are queued or running already; poll them and ask again");
      }
      job = new Job("derive-" + next.incrementAndGet(), dataset, spec);
      byId.put(job.id, job);
      activeByFeature.put(dataset + "\0" + spec, job);
      active++;
    }
    threads.execute(() -> run(job, work));
    return job.json();
  }

  private void run(Job job, Work work) {
    job.started = System.currentTimeMillis();
    job.state = "running";
    try {
      job.result = work.run(job);
      job.state = "done";
    } catch (NodeException e) {
      fail(job, NodeApi.status(e.kind()), e.getMessage());
    } catch (IOException | UncheckedIOException e) {
      fail(job, 500, "I/O error: " + e.getMessage());
    } catch (IllegalArgumentException e) {
      fail(job, 400, e.getMessage());
    } catch (Exception | Error e) {
      fail(job, 500, "derivation failed: " + e);
    } finally {
      job.finished = System.currentTimeMillis();
      synchronized (this) {
        active--;
        activeByFeature.remove(job.dataset + "\0" + job.spec, job);
        finished.addLast(job);
        while (finished.size() > MAX_FINISHED) {
          byId.remove(finished.removeFirst().id);
        }
      }
    }
  }

  private static void fail(Job job, int status, String message) {
    synchronized (job) {
      job.errorStatus = status;
      job.error = message;
      job.state = "failed";
    }
  }

  /** A job's state, or 404 once it is unknown (never submitted, or forgotten among older finished ones). */
  synchronized ObjectNode get(String id) {
    Job j = byId.get(id);
    if (j == null) {
      throw NodeException.notFound("no derivation job '" + (id.length() > 80 ? id.substring(0, 80) + "..." : id) + "' (the last " + MAX_FINISHED
          + " finished jobs are kept)");
    }
    return j.json();
  }

  /** Interrupts the computations; what they stored stays and is resumed by the next request. */
  @Override
  public void close() {
    threads.shutdownNow();
    try {
      threads.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
