package io.strata.ops.serve;

import io.strata.sdk.loader.LoaderBuilder;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.ops.common.Messages;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.tier.Tier;
import io.strata.sdk.tier.TierStats;
import io.strata.sdk.files.Locations;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.Json;
import io.strata.sdk.internal.PrivateDirs;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.BatchMemory;
import io.strata.sdk.loader.BatchMode;
import io.strata.sdk.loader.Checkpoint;
import io.strata.sdk.loader.Loader;
import io.strata.sdk.node.NodeClient;
import io.strata.sdk.tiering.SegmentStore;
import io.strata.store.FeatureStore;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;


/**
 * One Python loader: its Java loader, its shared memory and the batches the job holds.
 *
 * <p>Bounds: a session asks for at most {@link #MAX_THREADS_PER_SESSION} prefetch threads and
 * {@link #MAX_PREFETCH} batches ahead; the sessions of one service (every Python job of the user
 * on the host) hold at most {@link #MAX_THREADS_PER_HOST} prefetch threads together, counted in
 * {@link #THREADS_IN_USE} (an atomic: sessions start and end on their own threads) from before the
 * loader starts them until after it has stopped them.
 */
final class Session implements AutoCloseable {
  private static final int CORES = Runtime.getRuntime().availableProcessors();
  /** Prefetch threads one session may ask for: twice the host's cores, at least 4. */
  static final int MAX_THREADS_PER_SESSION = Math.max(4, 2 * CORES);
  /** Prefetch threads every session of this service holds together: eight times the cores, at least 16. */
  static final int MAX_THREADS_PER_HOST = Math.max(16, 8 * CORES);
  /** Batches a session may assemble ahead. */
  static final int MAX_PREFETCH = 64;
  static final java.util.concurrent.atomic.AtomicInteger THREADS_IN_USE = new java.util.concurrent.atomic.AtomicInteger();
  /** The prefetch threads this session holds of {@link #THREADS_IN_USE}, given back at close. */
  private int threadsHeld;
  private final PrintStream out;
  private final List<AutoCloseable> resources = new ArrayList<>();
  private final Map<Long, Held> held = new HashMap<>();
  private ShmMemory shm;
  private Loader loader;
  private long seq;
  private long copiedBytes;
  private long servedBytes;
  /** Whether each batch message says what its units are ({@code "units": true} in the request). */
  private boolean withUnits;

  /** A batch the job holds, and the spill slab of its buffers that lay outside every slab. */
  private record Held(Batch batch, BatchMemory.Slab spill) {}

  private Session(PrintStream out) {
    this.out = out;
  }

  static Session open(String requestLine, PrintStream out) throws Exception {
    Session s = new Session(out);
    boolean ok = false;
    try {
      s.start(Json.parse(requestLine));
      ok = true;
      return s;
    } finally {
      if (!ok) {
        s.close();
      }
    }
  }

  private static String text(JsonNode r, String field, String dflt) {
    JsonNode v = r.get(field);
    return v == null || v.isNull() ? dflt : v.asText();
  }

  private static int integer(JsonNode r, String field, int dflt) {
    JsonNode v = r.get(field);
    if (v == null || v.isNull()) {
      return dflt;
    }
    if (!v.canConvertToInt()) {
      throw new IllegalArgumentException(field + " must be an integer, got " + v);
    }
    return v.intValue();
  }

  private void start(JsonNode r) throws Exception {
    if (r == null || !r.isObject()) {
      throw new IllegalArgumentException("the first line must be a JSON object (the loader's settings)");
    }
    String datasetPath = text(r, "dataset", null);
    if (datasetPath == null) {
      throw new IllegalArgumentException("dataset is required");
    }
    Dataset ds = Dataset.open(Locations.dataset(datasetPath));
    resources.add(ds);
    String ssd = text(r, "ssd", null);
    if (ssd != null && !Files.isDirectory(Path.of(ssd))) {
      // A mistyped tier would otherwise become a new, empty one, and every read silently go to ORC.
      throw new IllegalArgumentException("no SSD tier directory at " + ssd + " (promote features there first: strata promote"
          + " --ssd " + ssd + ")");
    }
    String nodeUrl = text(r, "node", null);
    if (ssd != null && nodeUrl != null) {
      throw new IllegalArgumentException("give node or ssd, not both: the node owns its SSD tier");
    }
    SegmentStore store = ssd == null ? null : SegmentStore.open(Path.of(ssd), false, SegmentFile.Verify.FIRST_OPEN);
    if (store != null) {
      resources.add(store);
    }
    String fs = text(r, "featureStore", null);
    FeatureStore fstore = fs == null ? null : FeatureStore.openReader(Path.of(fs));
    if (fstore != null) {
      resources.add(fstore);
    }
    List<String> features = new ArrayList<>();
    JsonNode fl = r.get("features");
    if (fl == null || fl.isNull()) {
      features.addAll(ds.featureNames());
    } else if (fl.isArray()) {
      fl.forEach(f -> features.add(f.asText()));
    } else {
      throw new IllegalArgumentException("features must be a list of names or derived specs");
    }
    String job = text(r, "job", "python-" + ProcessHandle.current().pid());
    boolean shuffle = !r.has("shuffle") || r.get("shuffle").asBoolean(true);
    int batch = integer(r, "batch", 512);
    int depth = integer(r, "prefetch", 4);
    int threads = integer(r, "threads", 1);
    if (threads < 1 || threads > MAX_THREADS_PER_SESSION) {
      throw new IllegalArgumentException("threads must be 1 to " + MAX_THREADS_PER_SESSION + " (twice this host's cores), got "
          + threads);
    }
    if (depth < 1 || depth > MAX_PREFETCH) {
      throw new IllegalArgumentException("prefetch must be 1 to " + MAX_PREFETCH + " batches, got " + depth);
    }
    if (THREADS_IN_USE.addAndGet(threads) > MAX_THREADS_PER_HOST) {
      int now = THREADS_IN_USE.addAndGet(-threads);
      throw new IllegalStateException("the loader service's jobs hold " + now + " prefetch threads already, and " + threads
          + " more would pass its bound of " + MAX_THREADS_PER_HOST + " (eight times this host's cores); ask for fewer");
    }
    threadsHeld = threads;
    LoaderBuilder b = Loader.builder(ds)
        .derivedStore(fstore)
        .name(job)
        .features(features)
        .segments(store)
        .seed(r.path("seed").asLong(0))
        .epochs(integer(r, "epochs", 1))
        .shard(integer(r, "rank", 0), integer(r, "world", 1))
        .prefetch(depth, threads)
        .shuffle(shuffle)
        .shuffleChunks(integer(r, "shuffleChunks", 0))
        .substitutable(r.path("substitutable").asBoolean(false))
        .dropLast(r.path("dropLast").asBoolean(false));
    withUnits = r.path("units").asBoolean(false);
    BatchMode mode;
    try {
      mode = BatchMode.parse(text(r, "mode", "samples"));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("mode " + e.getMessage());
    }
    switch (mode) {
      case SAMPLES -> b.sampleBatches(batch);
      case ROWS -> {
        b.rowBatches(batch, shuffle);
        if (r.hasNonNull("shuffleBlock")) {
          b.shuffleBlock(integer(r, "shuffleBlock", 1));
        }
      }
      case WINDOWS -> b.windows(integer(r, "window", 32), integer(r, "lookahead", 1), integer(r, "stride", 1), batch);
    }
    String warning = null;
    if (nodeUrl != null) {
      // The job's token (the service's environment is whichever job started it).
      String token = text(r, "token", null);
      NodeClient client = new NodeClient(nodeUrl, token == null || token.isBlank() ? null : token);
      try {
        client.health();
      } catch (IOException e) {
        warning = "strata: warning: " + Messages.describe(e) + "; reading from ORC until the node answers";
      }
      b.node(client, job);
    }
    if (r.hasNonNull("startEpoch")) {
      b.startEpoch(integer(r, "startEpoch", 0));
    }
    String resume = text(r, "resume", null);
    if (resume != null) {
      byte[] bytes;
      try {
        bytes = HexFormat.of().parseHex(resume);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("the state's checkpoint is not hexadecimal");
      }
      b.resumeFrom(Checkpoint.parse(bytes));
    }
    String shmRoot = text(r, "shmRoot", null);
    // Slabs in a directory of this user's alone: the default one, or the one given if it is private.
    shm = ShmMemory.create(shmRoot == null ? PrivateDirs.userRoot()
        : PrivateDirs.ensure(Path.of(shmRoot)));
    b.batchMemory(shm);
    loader = b.build();
    ObjectNode ready = Json.object();
    ObjectNode body = ready.putObject("ready");
    body.put("dir", shm.dir().toString());
    body.put("stepsPerEpoch", loader.stepsPerEpoch());
    body.put("position", HexFormat.of().formatHex(loader.position().toBytes()));
    ArrayNode schema = body.putArray("schema");
    for (String f : features) {
      schema.addObject().put("name", f);
    }
    if (warning != null) {
      body.put("warning", warning);
    }
    LoaderServe.send(out, ready);
  }

  int loop(BufferedReader in) throws IOException {
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isEmpty()) {
        continue;
      }
      if (line.startsWith("release ")) {
        String n = line.substring(8).strip();
        if (!n.matches("\\d{1,18}")) {
          throw new IllegalArgumentException("'release' takes the number of a batch the job holds, got '" + clip(n) + "'");
        }
        release(Long.parseLong(n));
      } else if (line.equals("next")) {
        next();
      } else if (line.equals("close")) {
        return 0;
      } else {
        throw new IllegalArgumentException("unknown request '" + clip(line) + "' (expected next, release N or close)");
      }
    }
    return 0;
  }

  private static String clip(String s) {
    return s.length() > 40 ? s.substring(0, 40) + "..." : s;
  }

  private void release(long n) {
    Held h = held.remove(n);
    if (h != null) {
      h.batch().close();
      if (h.spill() != null) {
        h.spill().close();
      }
    }
  }

  private void next() throws IOException {
    if (held.size() >= LoaderServe.MAX_HELD) {
      throw new IllegalStateException("the job holds " + held.size()
          + " batches without releasing them; drop batches (and arrays made from them) it no longer needs");
    }
    Batch batch = loader.next();
    ObjectNode msg = Json.object();
    if (batch == null) {
      ObjectNode end = msg.putObject("end");
      TierStats s = loader.tierStats();
      end.put("ssdBytes", s.bytes(Tier.SSD)).put("hddBytes", s.bytes(Tier.HDD))
          .put("batchesFromCache", loader.batchesFromCache()).put("derivedChunksComputed", loader.derivedChunksComputed())
          .put("servedBytes", servedBytes).put("copiedBytes", copiedBytes)
          .put("chunkColumnsReadAhead", s.chunkColumnsReadAhead()).put("chunkColumnsReleased", s.chunkColumnsReleased());
      LoaderServe.send(out, msg);
      return;
    }
    boolean ok = false;
    BatchMemory.Slab spill = null;
    try {
      long n = seq++;
      ObjectNode body = msg.putObject("batch");
      body.put("seq", n).put("epoch", batch.epoch()).put("step", batch.step()).put("rows", batch.rows())
          .put("checkpoint", HexFormat.of().formatHex(batch.checkpoint().toBytes()));
      if (withUnits) {
        // What each unit of the batch is (a sample id, a block's first row, a window): little-endian int64s.
        ByteBuffer ids = ByteBuffer.allocate(8 * batch.units()).order(ByteOrder.LITTLE_ENDIAN);
        for (int k = 0; k < batch.units(); k++) {
          ids.putLong(batch.unitId(k));
        }
        body.put("units", Base64.getEncoder().encodeToString(ids.array()));
      }
      long outside = 0;
      for (Column c : batch.columns().values()) {
        outside += outsideBytes(c);
      }
      Spill sp = null;
      if (outside > 0) {
        spill = shm.allocate(outside + 64L * 4 * batch.columns().size());
        sp = new Spill(spill.memory());
      }
      ArrayNode cols = body.putArray("columns");
      for (Map.Entry<String, Column> e : batch.columns().entrySet()) {
        ObjectNode c = cols.addObject();
        c.put("name", e.getKey());
        describe(e.getValue(), c, sp);
      }
      if (sp != null) {
        copiedBytes += sp.used;
      }
      servedBytes += batch.dataBytes();
      shm.drainAnnounced(body.putArray("slabs"));
      shm.drainRetired(body.putArray("retired"));
      held.put(n, new Held(batch, spill));
      ok = true;
    } finally {
      if (!ok) {
        batch.close();
        if (spill != null) {
          spill.close();
        }
      }
    }
    LoaderServe.send(out, msg);
  }

  /** Bytes of the column's buffers that lie outside every slab (overflow memory). */
  private long outsideBytes(Column c) {
    long n = 0;
    for (MemorySegment m : List.of(c.validity(), c.offsets(), c.values())) {
      if (m.byteSize() > 0 && shm.find(m.address(), m.byteSize()) == null) {
        n += m.byteSize();
      }
    }
    return n + (c.child() == null ? 0 : outsideBytes(c.child()));
  }

  /** Where buffers outside the slabs are copied, 64-byte aligned. */
  private static final class Spill {
    final MemorySegment memory;
    long used;

    Spill(MemorySegment memory) {
      this.memory = memory;
    }

    long put(MemorySegment m) {
      long at = (used + 63) & -64L;
      MemorySegment.copy(m, 0, memory, at, m.byteSize());
      used = at + m.byteSize();
      return at;
    }
  }

  private void describe(Column c, ObjectNode into, Spill spill) {
    into.put("type", c.type().toString()).put("length", c.length()).put("offset", c.offset())
        .put("nullCount", c.nullCount());
    ArrayNode bufs = into.putArray("buffers");
    for (MemorySegment m : List.of(c.validity(), c.offsets(), c.values())) {
      if (m.byteSize() == 0) {
        bufs.addNull();
        continue;
      }
      ShmMemory.Region r = shm.find(m.address(), m.byteSize());
      if (r != null) {
        bufs.addArray().add(r.id()).add(m.address() - r.base()).add(m.byteSize());
      } else {
        ShmMemory.Region sr = shm.find(spill.memory.address(), spill.memory.byteSize());
        long at = spill.put(m);
        bufs.addArray().add(sr.id()).add(at).add(m.byteSize());
      }
    }
    if (c.child() != null) {
      describe(c.child(), into.putObject("child"), spill);
    }
  }

  @Override
  public void close() throws IOException {
    for (Held h : held.values()) {
      h.batch().close();
      if (h.spill() != null) {
        h.spill().close();
      }
    }
    held.clear();
    IOException failure = null;
    if (loader != null) {
      loader.close();
    }
    for (AutoCloseable c : resources.reversed()) {
      try {
        c.close();
      } catch (Exception e) {
        failure = failure != null ? failure : new IOException(e.getMessage(), e);
      }
    }
    if (shm != null) {
      shm.close();
    }
    THREADS_IN_USE.addAndGet(-threadsHeld); // the loader, closed above, has stopped them
    threadsHeld = 0;
    if (failure != null) {
      throw failure;
    }
  }
}
