package io.strata.sdk.loader;

import io.strata.sdk.Column;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.format.SegmentInfo;
import io.strata.sdk.format.SegmentWriter;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.PrivateDirs;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.SequencedMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The persistent batch cache (seed 001): prefetched batches and the last few consumed ones, as
 * Arrow IPC files under {@code root/<job key>/}, by default in this user's private directory
 * under {@code /dev/shm} (a root is this user's alone, or refused: {@link PrivateDirs}). After a crash,
 * a restarted loader maps the cached batches that follow its checkpoint and serves them at once,
 * while its readers start. Files are written atomically; files of this job that do not parse or
 * do not match are deleted; directories of other jobs untouched for {@code staleAfter} are
 * deleted; the total size is bounded (a batch that does not fit is simply not cached).
 */
final class BatchCache {
  private static final Pattern NAME = Pattern.compile("b(\\d{12})\\.arrow");

  private final Path dir;
  private final String jobKey;
  private final long maxBytes;
  private final int lookback;
  private final NavigableMap<Long, Long> files = new ConcurrentSkipListMap<>();

  BatchCache(Path root, String jobKey, long maxBytes, int lookback, Duration staleAfter) throws IOException {
    // The root is this user's alone (created 0700, or refused): nobody else may plant a job
    // directory or a link in it for the clean-up below to follow.
    root = PrivateDirs.ensure(root);
    this.dir = root.resolve(jobKey);
    this.jobKey = jobKey;
    this.maxBytes = maxBytes;
    this.lookback = lookback;
    if (Files.isSymbolicLink(dir)) {
      Files.delete(dir); // a link is never a job's directory
    }
    Files.createDirectories(dir);
    cleanOtherJobs(root, staleAfter);
    try (DirectoryStream<Path> s = Files.newDirectoryStream(dir)) {
      for (Path p : s) {
        Matcher m = NAME.matcher(p.getFileName().toString());
        if (m.matches() && Files.isRegularFile(p)) {
          files.put(Long.parseLong(m.group(1)), Files.size(p));
        } else {
          delete(p);
        }
      }
    }
  }

  /**
   * The default root: {@code batches} in this user's private directory ({@link
   * PrivateDirs#userRoot()}: {@code /dev/shm/strata-UID} when /dev/shm is writable, else in the
   * temporary directory processes share, since the cache must outlive the job).
   */
  static Path defaultRoot() {
    try {
      return PrivateDirs.userRoot().resolve("batches");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void cleanOtherJobs(Path root, Duration staleAfter) throws IOException {
    Instant cutoff = Instant.now().minus(staleAfter);
    try (DirectoryStream<Path> s = Files.newDirectoryStream(root)) {
      for (Path p : s) {
        if (p.equals(dir) || !Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
          continue; // a link is never followed (nor is what it names deleted)
        }
        if (Files.getLastModifiedTime(p, LinkOption.NOFOLLOW_LINKS).toInstant().isBefore(cutoff)) {
          delete(p);
        }
      }
    }
  }

  /** Deletes {@code p}: a file or link itself, or a job directory and what it holds, never following a link. */
  private static void delete(Path p) throws IOException {
    if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
      try (Stream<Path> s = Files.list(p)) {
        for (Path f : s.toList()) {
          Files.deleteIfExists(f); // a job directory holds files (and links, deleted as links) only
        }
      }
    }
    Files.deleteIfExists(p);
  }

  Path dir() {
    return dir;
  }

  private Path path(long g) {
    return dir.resolve(String.format("b%012d.arrow", g));
  }

  /** Whether batch {@code g} is cached (without opening it). */
  boolean has(long g) {
    return files.containsKey(g);
  }

  /** Total bytes cached. */
  long bytes() {
    long b = 0;
    for (long v : files.values()) {
      b += v;
    }
    return b;
  }

  int count() {
    return files.size();
  }

  /** Writes batch {@code g} unless it is cached already or would exceed the size bound. */
  void store(long g, Batch batch, String dataset, String datasetVersion) throws IOException {
    if (files.containsKey(g) || bytes() + batch.dataBytes() > maxBytes) {
      return;
    }
    Map<String, String> meta = new LinkedHashMap<>(BatchCodec.metadata(batch));
    meta.put(BatchCodec.JOB, jobKey);
    SequencedMap<String, Column> cols = batch.columns();
    long size =
        SegmentWriter.write(
            path(g), new SegmentInfo(dataset, datasetVersion, 0, 0, batch.rows(), List.copyOf(cols.keySet())), cols, meta);
    files.put(g, size);
  }

  /**
   * Maps cached batch {@code g}, or returns null when it is absent or does not check out (the
   * file is then deleted).
   */
  Batch open(long g, int epoch, long step, int planHash, long stepsPerEpoch) throws IOException {
    if (!files.containsKey(g)) {
      return null;
    }
    SegmentFile f;
    try {
      f = SegmentFile.open(path(g), SegmentFile.Verify.ALWAYS);
    } catch (CorruptFileException | NoSuchFileException e) {
      forget(g);
      return null;
    }
    boolean ok = false;
    try {
      Map<String, String> m = f.metadata();
      if (!jobKey.equals(m.get(BatchCodec.JOB))
          || !Integer.toString(epoch).equals(m.get(BatchCodec.EPOCH))
          || !Long.toString(step).equals(m.get(BatchCodec.STEP))
          || !Integer.toString(planHash).equals(m.get(BatchCodec.PLAN))) {
        return null;
      }
      SequencedMap<String, Column> cols = new LinkedHashMap<>();
      for (String name : f.columnNames()) {
        cols.put(name, f.column(name));
      }
      int[] offsets = BatchCodec.offsets(m.get(BatchCodec.UNIT_OFFSETS));
      long[] ids = BatchCodec.ids(m.get(BatchCodec.UNIT_IDS));
      Batch b =
          new Batch(epoch, step, planHash, stepsPerEpoch, f.rows(), cols, offsets, ids,
              Integer.parseInt(m.get(BatchCodec.WINDOW)), Integer.parseInt(m.get(BatchCodec.LOOKAHEAD)),
              Batch.Source.CACHE, f);
      ok = true;
      return b;
    } catch (RuntimeException e) {
      return null;
    } finally {
      if (!ok) {
        f.close();
        forget(g);
      }
    }
  }

  private void forget(long g) throws IOException {
    files.remove(g);
    Files.deleteIfExists(path(g));
  }

  /** Batch {@code g} was handed to the job: drop batches older than the lookback. */
  void consumed(long g) throws IOException {
    for (Long old : files.headMap(g - lookback, false).keySet()) {
      forget(old);
    }
  }

  /** Deletes temporary files left by interrupted writes. */
  void cleanTemporaries() throws IOException {
    try (DirectoryStream<Path> s = Files.newDirectoryStream(dir, AtomicFiles.TEMP_PREFIX + "*")) {
      for (Path p : s) {
        Files.deleteIfExists(p);
      }
    }
  }
}
