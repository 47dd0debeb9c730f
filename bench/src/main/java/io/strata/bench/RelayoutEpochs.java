package io.strata.bench;

import static io.strata.bench.BenchPeers.median;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.ops.Terminal;
import io.strata.sdk.files.DiskModel;
import io.strata.sdk.internal.Json;
import java.io.PrintWriter;
import java.util.HashMap;
import java.util.LinkedHashMap;
import io.strata.sdk.ChunkInfo;
import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.files.Manifest;
import io.strata.sdk.files.OrcReads;
import io.strata.sdk.format.Columns;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The cold epochs of {@code bench relayout}: every job's epoch read from ORC on one copy of the
 * dataset, each after dropping its files from the page cache (through {@code dropper}, a
 * Python with {@code posix_fadvise}, or the emulated disk's own drop), with the requests the
 * reader issued recorded for the disk model and, on an {@link EmulatedHdd}, the requests the
 * device saw; and the same epochs replayed on a {@link DiskModel} ({@link #modelled}). Runs on the
 * caller's thread.
 */
final class RelayoutEpochs {
  private RelayoutEpochs() {}

  /** One job: the features it reads. */
  record Job(String name, List<String> features) {}

  /** What one epoch of every job cost on one copy: its requests as the reader issued them too. */
  record Epochs(long requests, long bytes, double seconds, long checksum, long deviceRequests, long deviceBytes,
      List<OrcReads.Request> stream, double cpuSeconds, List<Integer> jobStarts) {}

  /**
   * Every job's epoch from ORC on {@code dir}'s dataset, each after dropping the files from the
   * page cache. The values' checksum is taken over the rows cut at {@code grain} (the first rows of
   * the original copy's chunks), so that a copy whose chunks merge consecutive original ones sums
   * the same values to the same checksum.
   */
  static Epochs epochs(Path dir, List<Job> js, String dropper, EmulatedHdd hdd, long gap, long[] grain)
      throws IOException, InterruptedException {
    OrcReads.setGapBytes(gap);
    try (OrcReads.Recording rec = OrcReads.record()) {
      Epochs e = epochs(dir, js, dropper, hdd, grain, rec);
      return new Epochs(e.requests(), e.bytes(), e.seconds(), e.checksum(), e.deviceRequests(), e.deviceBytes(), rec.requests(),
          e.cpuSeconds(), e.jobStarts());
    } finally {
      OrcReads.setGapBytes(-1);
    }
  }

  /** The first rows of the chunks of the copy at {@code dir}: the original copy's, the grain of {@link #epochs}' checksums. */
  static long[] grain(Path dir) throws IOException {
    return Manifest.read(dir).chunks().stream().mapToLong(ChunkInfo::firstRow).toArray();
  }

  private static Epochs epochs(Path dir, List<Job> js, String dropper, EmulatedHdd hdd, long[] grain, OrcReads.Recording rec)
      throws IOException, InterruptedException {
    java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
    double cpu = 0;
    List<Integer> jobStarts = new ArrayList<>();
    long requests = 0;
    long bytes = 0;
    double seconds = 0;
    long checksum = 0;
    long deviceRequests = 0;
    long deviceBytes = 0;
    List<String> files = copyFiles(dir).stream().map(Path::toString).toList();
    for (Job j : js) {
      if (dropper != null) {
        drop(dropper, files);
      }
      long r0 = OrcReads.requests();
      long b0 = OrcReads.bytes();
      long[] d0 = hdd != null ? hdd.deviceReads() : new long[2];
      if (hdd != null) {
        hdd.enter();
      }
      if (rec != null) {
        jobStarts.add(rec.requests().size());
      }
      long t0 = System.nanoTime();
      long cpu0 = threads.getCurrentThreadCpuTime();
      // Each job opens the dataset itself, as a job's own process would: its ORC readers read
      // the files' tails again. The values' checksums are the bench's, not the job's: taken after
      // the epoch, untimed (taken between chunks, they would give a read-ahead free time).
      List<Map<String, Column>> read = new ArrayList<>();
      List<ChunkInfo> chunks;
      try (Arena arena = Arena.ofConfined()) {
        try (Dataset jd = Dataset.open(dir)) {
          chunks = jd.chunks();
          for (int c = 0; c < jd.chunks().size(); c++) {
            read.add(jd.table().readChunk(c, j.features(), arena));
          }
        } finally {
          seconds += (System.nanoTime() - t0) / 1e9;
          // The job's thread's CPU time: its decoding and copies, not time it waited for a core.
          cpu += (threads.getCurrentThreadCpuTime() - cpu0) / 1e9;
        }
        // Per piece of the original chunking, in row order, every feature's values.
        int g = 0;
        for (int c = 0; c < read.size(); c++) {
          ChunkInfo ci = chunks.get(c);
          while (g < grain.length && grain[g] < ci.endRow()) {
            if (grain[g] < ci.firstRow()) {
              throw new IllegalStateException("chunk " + c + " of " + dir + " does not start where an original one did");
            }
            long end = g + 1 < grain.length ? Math.min(grain[g + 1], ci.endRow()) : ci.endRow();
            for (String f : j.features()) {
              Column piece = read.get(c).get(f).slice((int) (grain[g] - ci.firstRow()), (int) (end - grain[g]));
              checksum = checksum * 31 + Columns.checksum(piece);
            }
            g++;
          }
        }
      } finally {
        if (hdd != null) {
          hdd.leave();
          long[] d1 = hdd.deviceReads();
          deviceRequests += d1[0] - d0[0];
          deviceBytes += d1[1] - d0[1];
        }
      }
      requests += OrcReads.requests() - r0;
      bytes += OrcReads.bytes() - b0;
    }
    return new Epochs(requests, bytes, seconds, checksum, deviceRequests, deviceBytes, List.of(), cpu, jobStarts);
  }

  /**
   * The files of the copy at {@code dir} in the manifest's order, each ORC file followed by its
   * stripe-footer sidecar where it has one (FORMAT.md §1.4: on the same disk), then the version's
   * tails file where it has one (which a job reads instead of the files' tails and sidecars).
   */
  static List<Path> copyFiles(Path dir) throws IOException {
    List<Path> out = new ArrayList<>();
    Manifest m = Manifest.read(dir);
    for (Manifest.OrcFileInfo f : m.files()) {
      Path orc = dir.resolve(f.path());
      out.add(orc);
      Path footers = Path.of(orc + ".footers");
      if (Files.isRegularFile(footers)) {
        out.add(footers);
      }
    }
    // The version's tails file (written after its files): every job reads it once (FileTails).
    Path tails = io.strata.sdk.files.FileTails.location(dir, m);
    if (Files.isRegularFile(tails)) {
      out.add(tails);
    }
    return out;
  }

  /** The Python that drops files from the page cache, or null where there is none. */
  static String dropper() {
    try {
      Process p = new ProcessBuilder("python3", "-c", "import os; os.posix_fadvise").redirectErrorStream(true).start();
      p.getInputStream().readAllBytes();
      return p.waitFor() == 0 ? "python3" : null;
    } catch (IOException | InterruptedException e) {
      return null;
    }
  }

  static void drop(String python, List<String> files) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of(python, "-c",
        "import os, sys\nfor p in sys.argv[1:]:\n    fd = os.open(p, os.O_RDONLY)\n"
            + "    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)\n    os.close(fd)\n"));
    cmd.addAll(files);
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (p.waitFor() != 0) {
      throw new IOException("dropping the files from the page cache failed: " + text.strip());
    }
  }

  /**
   * The disk model's figures: every configuration (touching-only and gap-tolerant reads, before
   * and after the relayout, traced and held-out jobs) read warm in alternating rounds (the median
   * epoch is its CPU: decoding, and copying from the page cache), its request stream replayed on
   * {@code model} with each copy's files laid out on the drive back to back in the manifest's
   * order, each followed by its sidecar (a freshly written dataset's layout); the epoch's
   * modelled time is the two in series (the reader waits for each request).
   */
  static ObjectNode modelled(DiskModel model, long gap, Path before, Path after, List<Job> js, List<Job> heldOut,
      int rounds, PrintWriter log) throws IOException, InterruptedException {
    record Config(String name, Path dir, List<Job> jobs, long gap) {}
    List<Config> configs = List.of(new Config("touchingBefore", before, js, 0), new Config("gapBefore", before, js, gap),
        new Config("touchingAfter", after, js, 0), new Config("gapAfter", after, js, gap),
        new Config("heldOutTouchingBefore", before, heldOut, 0), new Config("heldOutGapBefore", before, heldOut, gap),
        new Config("heldOutTouchingAfter", after, heldOut, 0), new Config("heldOutGapAfter", after, heldOut, gap));
    long[] grain = grain(before);
    epochs(before, js, null, null, 0, grain); // warm-up: both copies in the page cache, the code compiled
    epochs(after, js, null, null, 0, grain);
    Map<String, List<Double>> cpu = new LinkedHashMap<>();
    Map<String, Epochs> last = new LinkedHashMap<>();
    for (int round = 0; round < rounds; round++) {
      for (Config c : configs) {
        Epochs e = epochs(c.dir(), c.jobs(), null, null, c.gap(), grain);
        // CPU time, not wall time: on a loaded machine a warm epoch waits for a core (issue 52 saw 4.5-6.1 s against 2.0).
        cpu.computeIfAbsent(c.name(), k -> new ArrayList<>()).add(e.cpuSeconds());
        last.put(c.name(), e);
      }
      log.printf("model round %d/%d: warm epochs %s%n", round + 1, rounds,
          String.join(", ", cpu.entrySet().stream().map(x -> x.getKey() + " " + Terminal.seconds(x.getValue().getLast())).toList()));
    }
    ObjectNode o = Json.object();
    ObjectNode m = o.putObject("disk");
    m.put("name", model.name()).put("averageSeekMs", model.averageSeekMs()).put("singleTrackSeekMs", model.singleTrackSeekMs())
        .put("rpm", model.rpm()).put("averageLatencyMs", model.latencySeconds() * 1e3).put("bytesPerSecond", model.bytesPerSecond())
        .put("capacityBytes", model.capacityBytes()).put("commandOverheadMs", model.commandOverheadMs())
        .put("randomReads4kPerSecondWholeDrive", model.randomReadsPerSecond(4096, model.capacityBytes()))
        .put("randomReads4kPerSecondWithin1Percent", model.randomReadsPerSecond(4096, model.capacityBytes() / 100))
        .put("sequentialMBps1MiBRequests", model.sequentialBytesPerSecond(1 << 20) / 1e6)
        .put("breakEvenGapBytes", model.breakEvenGapBytes());
    o.put("gapBytes", gap);
    o.put("what", "CPU: the median warm epoch's CPU time of each configuration on this machine (the job's thread); I/O: its request stream replayed on the"
        + " model, each copy's files back to back on the drive in the manifest's order with their sidecars, jobs one after"
        + " another; modelled epoch: touching reads (a synchronous reader) CPU + I/O; the gap reader, which reads the next"
        + " chunk ahead while it decodes one, a chunk's CPU and I/O of each job in series (its first read, its last decoding) and"
        + " the rest the longer of the two");
    Map<String, ObjectNode> byName = new LinkedHashMap<>();
    for (Config c : configs) {
      Epochs e = last.get(c.name());
      DiskModel.Replay r = model.replay();
      Map<Path, Long> base = layout(c.dir());
      Map<Path, Path> real = new HashMap<>();
      for (OrcReads.Request q : e.stream()) {
        Path file = real.get(q.file());
        if (file == null) {
          file = q.file().toRealPath();
          real.put(q.file(), file);
        }
        Long at = base.get(file);
        if (at == null) {
          throw new IllegalStateException("a request outside the dataset's files: " + q.file());
        }
        r.read(at + q.offset(), q.length());
      }
      double c0 = median(cpu.get(c.name()));
      Manifest copy = Manifest.read(c.dir());
      ChunkInfo first = copy.chunks().getFirst();
      Path firstFile = c.dir().resolve(copy.files().get(first.file()).path()).toRealPath();
      // As the reader runs: a job whose next chunk's read-ahead reached the disk before its first
      // chunk's own reads were done would decode that chunk after both (the model assumes not).
      int aheadFirst = 0;
      List<Integer> starts = e.jobStarts();
      for (int j = 0; j < starts.size(); j++) {
        int from = starts.get(j);
        int to = j + 1 < starts.size() ? starts.get(j + 1) : e.stream().size();
        int firstAhead = from;
        while (firstAhead < to && !e.stream().get(firstAhead).ahead()) {
          firstAhead++;
        }
        boolean late = false;
        for (int i = firstAhead; i < to; i++) {
          OrcReads.Request q = e.stream().get(i);
          late |= !q.ahead() && real.get(q.file()).equals(firstFile) && q.offset() < first.offset() + first.length()
              && q.offset() + q.length() > first.offset();
        }
        aheadFirst += late ? 1 : 0;
      }
      double serial = c0 + r.seconds();
      // The gap reader reads the next chunk ahead while it decodes one (from a job's first chunk
      // on): per job of n chunks, the first chunk's read and the last one's decoding in series (a
      // chunk's worth of CPU and I/O), the rest the longer of the two (n of the copy it reads: a
      // relayout may have merged stripes).
      double k = copy.chunks().size();
      double inSeries = Math.min(1, k);
      double overlapped = (k - inSeries) / k * Math.max(c0, r.seconds()) + inSeries / k * serial;
      ObjectNode n = o.putObject(c.name());
      n.put("jobs", c.jobs().size()).put("gapBytes", c.gap()).put("requests", r.requests()).put("bytes", r.bytes())
          .put("aheadRequests", e.stream().stream().filter(OrcReads.Request::ahead).count())
          .put("seeks", r.seeks()).put("ioSeconds", r.seconds()).put("cpuSeconds", c0).put("serialSeconds", serial)
          .put("seconds", c.gap() > 0 ? overlapped : serial).put("checksum", e.checksum())
          .put("jobsWhoseReadAheadPassedTheirFirstChunk", aheadFirst);
      byName.put(c.name(), n);
    }
    boolean identical = true;
    for (String prefix : List.of("", "heldOut")) {
      long sum = byName.get(prefix.isEmpty() ? "touchingBefore" : "heldOutTouchingBefore").path("checksum").asLong();
      for (var x : byName.entrySet()) {
        if (x.getKey().startsWith("heldOut") == !prefix.isEmpty()) {
          identical &= x.getValue().path("checksum").asLong() == sum;
        }
      }
    }
    o.put("identical", identical);
    ObjectNode ratios = o.putObject("ratios");
    ratios.put("gapReaderVsTouching", t(byName, "gapBefore") / t(byName, "touchingBefore"));
    ratios.put("gapReaderVsTouchingIo", io(byName, "gapBefore") / io(byName, "touchingBefore"));
    ratios.put("gapReaderVsTouchingSerial", byName.get("gapBefore").path("serialSeconds").asDouble()
        / byName.get("touchingBefore").path("serialSeconds").asDouble());
    ratios.put("relayoutVsTouching", t(byName, "touchingAfter") / t(byName, "touchingBefore"));
    ratios.put("relayoutHeldOutVsTouching", t(byName, "heldOutTouchingAfter") / t(byName, "heldOutTouchingBefore"));
    // The relayout read by the better of the two readers, against the gap reader without it (and against the better reader).
    for (String prefix : List.of("", "heldOut")) {
      String k = prefix.isEmpty() ? "" : "HeldOut";
      String g = prefix.isEmpty() ? "gap" : "heldOutGap";
      String tch = prefix.isEmpty() ? "touching" : "heldOutTouching";
      double bestAfter = Math.min(t(byName, g + "After"), t(byName, tch + "After"));
      double bestBefore = Math.min(t(byName, g + "Before"), t(byName, tch + "Before"));
      ratios.put("relayout" + k + "VsGapReader", bestAfter / t(byName, g + "Before"));
      ratios.put("relayout" + k + "VsBestReader", bestAfter / bestBefore);
      ratios.put("relayout" + k + "VsGapReaderIo", io(byName, g + "After") / io(byName, g + "Before"));
    }
    return o;
  }

  private static double t(Map<String, ObjectNode> m, String k) {
    return m.get(k).path("seconds").asDouble();
  }

  private static double io(Map<String, ObjectNode> m, String k) {
    return m.get(k).path("ioSeconds").asDouble();
  }

  /** Where each file of the copy at {@code dir} starts on the modelled drive: {@link #copyFiles}, back to back. */
  private static Map<Path, Long> layout(Path dir) throws IOException {
    Map<Path, Long> base = new HashMap<>();
    long at = 0;
    for (Path f : copyFiles(dir)) {
      base.put(f.toRealPath(), at);
      at += Files.size(f);
    }
    return base;
  }
}
