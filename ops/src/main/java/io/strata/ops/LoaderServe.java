package io.strata.ops;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.sdk.Column;
import io.strata.sdk.Dataset;
import io.strata.sdk.Tier;
import io.strata.sdk.TierStats;
import io.strata.sdk.dataset.Locations;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.Json;
import io.strata.sdk.internal.PrivateDirs;
import io.strata.sdk.loader.Batch;
import io.strata.sdk.loader.BatchMemory;
import io.strata.sdk.loader.BatchMode;
import io.strata.sdk.loader.Checkpoint;
import io.strata.sdk.loader.Loader;
import io.strata.sdk.node.NodeClient;
import io.strata.sdk.tier.SegmentStore;
import io.strata.store.FeatureStore;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The back end of the Python client ({@code strata loader serve}): one Java {@link Loader} per
 * Python loader, assembling batches straight into shared-memory files that the Python process
 * maps, so the Python job receives exactly the Java loader's batches without a copy.
 *
 * <p>The protocol (docs/API.md, "The Python client's protocol") is one JSON object a line. The
 * client writes the request as its first line; the server answers {@code ready} (or {@code
 * error}). Then the client writes {@code next} for each batch it wants and {@code release N} when
 * it no longer holds batch {@code N}; each {@code next} gets one line: a batch, {@code end}, or
 * {@code error}. A batch names, for every buffer of every column, the slab file under the shared
 * directory and the offset and length inside it; slabs the loader freed since the last batch are
 * listed as {@code retired}. End of input (the job died) ends the server, which removes its
 * directory.
 *
 * <p>Threads: the loader's prefetch threads allocate slabs; the server's single thread reads
 * requests, answers and closes released batches (which frees or recycles their slabs). The slab
 * registry is a concurrent skip list keyed by address, the retired queue lock-free.
 */
public final class LoaderServe {
  /** Prefix of the shared directories; the owner's pid follows, so stale ones can be found. */
  static final String DIR_PREFIX = "strata-py-";
  /** More batches than this held by the job at once is a leak on its side, not a working set. */
  static final int MAX_HELD = 256;

  private LoaderServe() {}

  /** Runs one session on this process's standard input and output; returns the exit code. */
  static int run() throws IOException {
    PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
    // Nothing else may write on the protocol stream.
    System.setOut(System.err);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    return session(in, protocol);
  }

  /** One session: the request line, then requests until {@code close} or end of input. */
  static int session(BufferedReader in, PrintStream protocol) throws IOException {
    String first = in.readLine();
    if (first == null) {
      return Main.USAGE;
    }
    try (Session s = Session.open(first, protocol)) {
      return s.loop(in);
    } catch (IllegalArgumentException e) {
      send(protocol, Json.object().put("error", Main.describe(e)).put("usage", true));
      return Main.USAGE;
    } catch (Exception e) {
      send(protocol, Json.object().put("error", Main.describe(e)));
      return Main.FAILURE;
    }
  }

  /** The file holding the pid of the service listening on {@code socket}. */
  public static Path pidFile(Path socket) {
    return socket.resolveSibling(socket.getFileName() + ".pid");
  }

  /**
   * The per-host service: sessions over a Unix domain socket, one thread each, in one JVM shared by
   * every Python job of the user on this host (so a job adds its session, not a JVM). A lock file
   * beside the socket makes it the only one; it exits after {@code idle} with no session.
   *
   * <p>Threads: the calling thread accepts (a selector that wakes at least every second, so the
   * idle check runs there too); one {@code strata-py-session-N} thread per connection. The count
   * of open sessions is an atomic.
   */
  static int service(Path socket, Duration idle) throws IOException, InterruptedException {
    // The socket's directory is this user's alone (created 0700, or refused): another user can
    // neither reach the socket nor plant a lock, pid file or link beside it.
    Path dir = PrivateDirs.ensure(socket.toAbsolutePath().getParent());
    Path lockFile = dir.resolve(socket.getFileName() + ".lock");
    try (FileChannel lockChannel = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock lock = lockChannel.tryLock()) {
      if (lock == null) {
        System.err.println("strata: a loader service already runs on " + socket);
        return 0;
      }
      AtomicInteger active = new AtomicInteger();
      @SuppressWarnings("UnnecessaryAsync") // one accepting thread counts; kept atomic should that change
      AtomicInteger counter = new AtomicInteger();
      ServerSocketChannel server = listen(socket);
      try {
        System.err.println("strata: loader service on " + socket + " (pid " + ProcessHandle.current().pid() + ")");
        long idleSince = System.nanoTime();
        boolean closing = false;
        try (Selector selector = Selector.open()) {
          server.register(selector, SelectionKey.OP_ACCEPT);
          while (true) {
            selector.select(1000);
            selector.selectedKeys().clear();
            SocketChannel ch;
            boolean accepted = false;
            while ((ch = server.accept()) != null) {
              accepted = true;
              ch.configureBlocking(true);
              SocketChannel conn = ch;
              active.incrementAndGet();
              Thread.ofPlatform().name("strata-py-session-" + counter.incrementAndGet()).daemon().start(() -> {
                try (conn) {
                  BufferedReader in = new BufferedReader(new InputStreamReader(
                      Channels.newInputStream(conn), StandardCharsets.UTF_8));
                  PrintStream out = new PrintStream(Channels.newOutputStream(conn), false,
                      StandardCharsets.UTF_8);
                  session(in, out);
                } catch (IOException e) {
                  // The job went away mid-answer; its session is closed.
                } finally {
                  active.decrementAndGet();
                }
              });
            }
            if (closing && !accepted) {
              return 0; // nothing connected before the name went, and nothing can connect since
            } else if (closing) {
              // A job connected just before the name went: serve on, under the name again (else
              // the jobs that come while it runs could reach no service until it ends).
              server.close();
              server = listen(socket);
              server.register(selector, SelectionKey.OP_ACCEPT);
              closing = false;
              idleSince = System.nanoTime();
            } else if (active.get() > 0) {
              idleSince = System.nanoTime();
            } else if (System.nanoTime() - idleSince > idle.toNanos()) {
              // Idle: take the name away first, then accept once more. Closing the socket with a
              // job queued on it would reset that job's connection; one connecting from now on
              // finds no service and starts a new one, which takes the lock once this one is gone.
              Files.deleteIfExists(socket);
              Files.deleteIfExists(pidFile(socket));
              closing = true;
            }
          }
        }
      } finally {
        server.close();
        Files.deleteIfExists(socket);
        Files.deleteIfExists(pidFile(socket));
      }
    }
  }

  /** A non-blocking server socket bound to {@code socket} (a stale file there removed), its pid file written. */
  private static ServerSocketChannel listen(Path socket) throws IOException {
    Files.deleteIfExists(socket);
    ServerSocketChannel server =
        ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    boolean success = false;
    try {
      server.bind(UnixDomainSocketAddress.of(socket));
      server.configureBlocking(false);
      Files.writeString(pidFile(socket), Long.toString(ProcessHandle.current().pid()));
      success = true;
      return server;
    } finally {
      if (!success) {
        server.close();
      }
    }
  }

  static void send(PrintStream out, ObjectNode message) {
    out.print(Json.compact(message));
    out.print('\n');
    out.flush();
  }

  /** One Python loader: its Java loader, its shared memory and the batches the job holds. */
  private static final class Session implements AutoCloseable {
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
      Dataset ds = Dataset.open(Locations.local(datasetPath));
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
      Loader.Builder b = Loader.builder(ds)
          .derivedStore(fstore)
          .name(job)
          .features(features)
          .segments(store)
          .seed(r.path("seed").asLong(0))
          .epochs(integer(r, "epochs", 1))
          .shard(integer(r, "rank", 0), integer(r, "world", 1))
          .prefetch(depth, threads)
          .shuffle(shuffle)
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
          warning = "strata: warning: " + Main.describe(e) + "; reading from ORC until the node answers";
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
      send(out, ready);
    }

    int loop(BufferedReader in) throws IOException {
      String line;
      while ((line = in.readLine()) != null) {
        if (line.isEmpty()) {
          continue;
        }
        if (line.startsWith("release ")) {
          release(Long.parseLong(line.substring(8).strip()));
        } else if (line.equals("next")) {
          next();
        } else if (line.equals("close")) {
          return 0;
        } else {
          throw new IllegalArgumentException("unknown request '" + line + "' (expected next, release N or close)");
        }
      }
      return 0;
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
      if (held.size() >= MAX_HELD) {
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
            .put("servedBytes", servedBytes).put("copiedBytes", copiedBytes);
        send(out, msg);
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
      send(out, msg);
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
      if (failure != null) {
        throw failure;
      }
    }
  }
}
