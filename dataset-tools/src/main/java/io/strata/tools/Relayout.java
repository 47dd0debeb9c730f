package io.strata.tools;

import io.strata.sdk.files.DatasetFiles;
import io.strata.sdk.files.Manifest;
import io.strata.sdk.files.OrcIo;
import io.strata.sdk.files.FileTails;
import io.strata.sdk.files.StreamChecksums;
import io.strata.sdk.files.VersionLeases;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.Progress;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.Json;
import io.strata.sdk.internal.SafePaths;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.orc.Reader;
import org.apache.orc.TypeDescription;

/**
 * Rewrites a dataset's ORC files with its columns in another order (features read together stored
 * together), as a new version of the same dataset: same rows, same values, same sample index; its
 * stripes (chunks) the old ones, or, with a stripe size, consecutive old stripes of a file merged
 * up to that size (on a disk that seeks, a column's part of a stripe is then long enough to be
 * worth a seek: what a stripe of a few megabytes is not).
 *
 * <p>The new files are written under {@code .tmp-relayout-*} in the dataset directory, compared
 * value for value with the old ones (every row of every column, every type), and only then moved
 * to {@code layout-<version>/} and made current by replacing {@code manifest.json} atomically.
 * Until that replacement the old version is the dataset: a failed check, an error or a kill at
 * any point leaves it as it was. The old version stays as the previous one ({@code
 * manifest.previous.json} and its files), for the jobs and nodes still reading it and for {@link
 * #rollback}; the version before it is removed after the replacement, once no process reads it
 * any more ({@link VersionLeases}: every open {@link io.strata.sdk.dataset.Dataset} leases its version).
 * The list of what to remove is kept in {@code relayout.pending} first, so that a kill in between
 * is finished by the next relayout, which also removes leftover temporary directories and layouts
 * neither version nor a pending one references; a version still read stays listed until a later
 * relayout, rollback or {@link #cleanUp} finds it free.
 *
 * <p>Not thread-safe; one relayout of a dataset at a time (its caller's concern). Datasets with
 * columns under ORC column encryption are refused: without the key their values read as masked
 * ones, and rewriting would store the masks as data.
 */
@SuppressWarnings("exports") // its signatures name the SDK's dataset files, exported to Strata's modules alone
public final class Relayout {
  static final String TMP_PREFIX = ".tmp-relayout-";
  static final String LAYOUT_PREFIX = "layout-";
  static final String PENDING = "relayout.pending";
  /** The previous version's manifest, kept by a relayout in place ({@link #rollback}). */
  public static final String PREVIOUS = "manifest.previous.json";
  /** A rollback's swap of the two manifests, written before it is carried out ({@link #rollback}). */
  static final String ROLLBACK_JOURNAL = "rollback.journal";
  /** Runs on the directory of new files before they are checked (tests damage a file here); nothing by default. */
  static volatile Consumer<Path> beforeCheck = p -> {};
  /** Runs between a rollback's two manifest writes (tests crash it here); nothing by default. */
  static volatile Runnable betweenRollbackWrites = () -> {};

  private Relayout() {}

  /**
   * What {@code dataset relayout} merges stripes up to by default, in MiB: the largest stripe the
   * ORC reader reads ahead ({@code OrcReads}' 32 MiB), so that the read-ahead keeps working.
   */
  public static final int DEFAULT_STRIPE_MIB = 32;

  /** What a relayout did: the new manifest, the column order, the bytes written and how long it took. */
  public record Result(Manifest manifest, String previousVersion, List<String> order, long bytes, double seconds) {}

  /**
   * Rewrites the dataset in {@code dir} with its columns in {@code order} (every column of its
   * schema once, or twice for a column to be stored twice: {@link CoAccessOrder.Plan#layout});
   * returns the new version's manifest. The dataset is unchanged unless this returns.
   */
  public static Result rewrite(Path dir, List<String> order, Progress progress) throws IOException {
    return rewrite(dir, order, 0, progress);
  }

  /**
   * As {@link #rewrite(Path, List, Progress)}, with consecutive stripes of a file merged into one
   * while their bytes together stay within {@code stripeBytes} (0: every stripe kept as it is).
   */
  public static Result rewrite(Path dir, List<String> order, long stripeBytes, Progress progress) throws IOException {
    Objects.requireNonNull(progress, "progress");
    requireStripeBytes(stripeBytes);
    long t0 = System.nanoTime();
    dir = SafePaths.trusted(dir);
    cleanUp(dir);
    Manifest old = checked(dir, order);
    Path tmp = dir.resolve(TMP_PREFIX + ProcessHandle.current().pid() + "-" + System.nanoTime());
    Files.createDirectory(tmp);
    boolean ok = false;
    try {
      RelayoutWriter.Written w = RelayoutWriter.writeVerified(dir, old, order, stripeBytes, tmp, progress);
      String layout = LAYOUT_PREFIX + w.version().substring(0, Math.min(16, w.version().length()));
      Manifest.StreamChecksumsInfo sums = RelayoutWriter.streamChecksums(tmp, w, layout + "/");
      Path target = dir.resolve(layout);
      // A layout directory of this name that is still there (after the clean-up above) is a kept
      // version's — the previous one, when the relayout goes back to its order, or the current one
      // — and jobs may be reading it: it is never deleted or replaced. Holding the very same files,
      // it is the new version's too; else the new one takes a name of its own.
      boolean reuse = false;
      if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
        reuse = sameFiles(tmp, target);
        if (!reuse) {
          layout = layout + "-" + Long.toHexString(System.nanoTime());
          target = dir.resolve(layout);
          sums = new Manifest.StreamChecksumsInfo(layout + "/" + StreamChecksums.FILE_NAME, sums.crc32c());
        }
      }
      List<Manifest.OrcFileInfo> placed = new ArrayList<>();
      for (Manifest.OrcFileInfo i : w.infos()) {
        placed.add(new Manifest.OrcFileInfo(layout + "/" + i.path(), i.bytes(), i.rows(), i.crc32c()));
      }
      Manifest next = new Manifest(old.name(), w.version(), old.rows(), w.features(), placed, w.chunks(), old.sampleIndex(),
          w.replicas()).withStreamChecksums(sums);
      // Commit: the new files forced to disk (the ORC writer never syncs), the layout directory
      // appears whole (one rename, itself forced to disk), the old files are listed for removal, then
      // the manifest is replaced (one rename): from here on the new version is the dataset, and a
      // crash at any point leaves either the old manifest or a new one whose files are all on disk.
      if (reuse) {
        AtomicFiles.deleteTree(tmp);
      } else {
        AtomicFiles.fsyncTree(tmp);
        Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
        AtomicFiles.fsyncDirectory(dir);
        FileTails.write(dir, next); // into the layout directory, before the manifest names it
      }
      // The old version stays as the previous one (its manifest kept beside, its files on disk,
      // for jobs and nodes still reading it and for a rollback); the one before it goes.
      Set<String> keep = new HashSet<>();
      placed.forEach(i -> keep.add(i.path()));
      old.files().forEach(i -> keep.add(i.path()));
      // What is still pending (versions readers held at an earlier relayout) stays listed.
      var pending = Files.exists(dir.resolve(PENDING)) ? (com.fasterxml.jackson.databind.node.ArrayNode) Json.parse(
          Files.readAllBytes(dir.resolve(PENDING))) : Json.array();
      Manifest before = previous(dir, old);
      if (before != null) {
        var entry = pending.addObject().put("version", before.version());
        var paths = entry.putArray("paths");
        for (Manifest.OrcFileInfo i : before.files()) {
          if (!keep.contains(i.path())) {
            paths.add(i.path());
          }
        }
      }
      VersionLeases.prepare(dir, next.version());
      AtomicFiles.write(dir.resolve(PENDING), Json.pretty(pending).getBytes(StandardCharsets.UTF_8));
      AtomicFiles.write(dir.resolve(PREVIOUS), Files.readAllBytes(dir.resolve(Manifest.FILE_NAME)));
      next.write(dir);
      ok = true;
      cleanUp(dir);
      return new Result(next, old.version(), List.copyOf(order), w.bytes(), (System.nanoTime() - t0) / 1e9);
    } finally {
      if (!ok && Files.exists(tmp)) {
        AtomicFiles.deleteTree(tmp);
      }
    }
  }

  /** Whether directory {@code b} holds exactly the regular files of {@code a}, byte for byte (and no links). */
  private static boolean sameFiles(Path a, Path b) throws IOException {
    if (!Files.isDirectory(b, LinkOption.NOFOLLOW_LINKS)) {
      return false;
    }
    List<Path> mine = new ArrayList<>();
    List<Path> theirs = new ArrayList<>();
    try (var s = Files.walk(a)) {
      s.filter(p -> !p.equals(a)).forEach(p -> mine.add(a.relativize(p)));
    }
    try (var s = Files.walk(b)) {
      // The tails file is written after the layout's move (FileTails): not one of the new files.
      s.filter(p -> !p.equals(b) && !p.equals(b.resolve(FileTails.FILE_NAME))).forEach(p -> theirs.add(b.relativize(p)));
    }
    if (!new HashSet<>(mine).equals(new HashSet<>(theirs))) {
      return false;
    }
    for (Path rel : mine) {
      Path x = a.resolve(rel);
      Path y = b.resolve(rel);
      if (Files.isSymbolicLink(y) || Files.isDirectory(x) != Files.isDirectory(y, LinkOption.NOFOLLOW_LINKS)) {
        return false;
      }
      if (!Files.isDirectory(x) && Files.mismatch(x, y) != -1) {
        return false;
      }
    }
    return true;
  }

  /**
   * Writes the dataset in {@code dir} with its columns in {@code order} as a new dataset directory
   * {@code out} (which must not exist): ORC files, sample index and manifest, checked value for
   * value against {@code dir} before {@code out} appears, whole, by one rename of a temporary
   * directory beside it. {@code dir} is not changed; a failure or a kill leaves no {@code out}
   * (only a {@code .tmp-relayout-*} directory beside it, after a kill).
   */
  public static Result rewriteTo(Path dir, Path out, List<String> order, Progress progress) throws IOException {
    return rewriteTo(dir, out, order, 0, progress);
  }

  /** As {@link #rewriteTo(Path, Path, List, Progress)}, with stripes merged up to {@code stripeBytes} as {@link #rewrite(Path, List, long, Progress)}. */
  public static Result rewriteTo(Path dir, Path out, List<String> order, long stripeBytes, Progress progress)
      throws IOException {
    Objects.requireNonNull(progress, "progress");
    requireStripeBytes(stripeBytes);
    long t0 = System.nanoTime();
    Manifest old = checked(dir, order);
    Path target = SafePaths.trusted(out.toAbsolutePath().normalize());
    if (Files.exists(target)) {
      throw new FileAlreadyExistsException(target.toString(), null, "the relayout's output directory exists already");
    }
    if (target.getParent() == null || !Files.isDirectory(target.getParent())) {
      throw new NoSuchFileException(String.valueOf(target.getParent()), null, "no directory to write the relayout in");
    }
    Path tmp = target.getParent().resolve(TMP_PREFIX + target.getFileName() + "-" + ProcessHandle.current().pid() + "-"
        + System.nanoTime());
    Files.createDirectory(tmp);
    boolean ok = false;
    try {
      RelayoutWriter.Written w = RelayoutWriter.writeVerified(dir, old, order, stripeBytes, tmp, progress);
      if (old.sampleIndex() != null) {
        Path index = tmp.resolve(old.sampleIndex().path());
        Files.createDirectories(index.getParent());
        Files.copy(dir.resolve(old.sampleIndex().path()), index);
      }
      Manifest next = new Manifest(old.name(), w.version(), old.rows(), w.features(), w.infos(), w.chunks(), old.sampleIndex(),
          w.replicas()).withStreamChecksums(RelayoutWriter.streamChecksums(tmp, w, ""));
      FileTails.write(tmp, next);
      next.write(tmp);
      AtomicFiles.fsyncTree(tmp); // the ORC files, their footers and the index: the ORC writer never syncs
      Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
      AtomicFiles.fsyncDirectory(target.getParent());
      ok = true;
      return new Result(next, old.version(), List.copyOf(order), w.bytes(), (System.nanoTime() - t0) / 1e9);
    } finally {
      if (!ok && Files.exists(tmp)) {
        AtomicFiles.deleteTree(tmp);
      }
    }
  }

  /**
   * The chunks (stripes) the dataset of {@code m} has after a relayout merging stripes up to {@code
   * stripeBytes}; a Parquet dataset's row groups as they are (a relayout refuses it).
   */
  public static int chunksAfter(Manifest m, long stripeBytes) {
    requireStripeBytes(stripeBytes);
    return m.fileFormat() == Manifest.FileFormat.ORC ? RelayoutWriter.groups(m, stripeBytes).size() : m.chunks().size();
  }

  /**
   * The old stripes' bytes to merge up to so that the new stripes, second copies included, stay
   * within {@code stripeBytes}: scaled by the dataset's bytes over its bytes with the copies (0
   * stays 0: every stripe kept).
   */
  public static long mergeBytes(long stripeBytes, long datasetBytes, long replicaBytes) {
    if (stripeBytes <= 0 || datasetBytes <= 0) {
      return stripeBytes;
    }
    return Math.max(1, (long) ((double) stripeBytes * datasetBytes / (datasetBytes + Math.max(0, replicaBytes))));
  }

  private static void requireStripeBytes(long stripeBytes) {
    if (stripeBytes < 0) {
      throw new IllegalArgumentException("the stripe size must not be negative: " + stripeBytes);
    }
  }

  /**
   * The bytes each column of the dataset in {@code dir} takes in its ORC files (its streams, as
   * the writer recorded them in the files' statistics; a list column's elements included): what
   * storing it twice would cost.
   */
  public static Map<String, Long> columnBytes(Path dir) throws IOException {
    Manifest m = requireOrc(Manifest.read(dir));
    Map<String, Long> out = new LinkedHashMap<>();
    for (Manifest.OrcFileInfo info : m.files()) {
      Path file = DatasetFiles.resolve(dir, info.path());
      try (Reader reader = OrcIo.open(file)) {
        TypeDescription schema = reader.getSchema();
        org.apache.orc.ColumnStatistics[] stats = reader.getStatistics();
        List<String> names = schema.getFieldNames();
        for (FeatureInfo f : m.features()) {
          int i = names.indexOf(f.name());
          if (i < 0) {
            throw new IOException(file + " has no column '" + f.name() + "' although the manifest lists it");
          }
          TypeDescription t = schema.getChildren().get(i);
          long bytes = 0;
          for (int id = t.getId(); id <= t.getMaximumId() && id < stats.length; id++) {
            bytes += stats[id].getBytesOnDisk();
          }
          out.merge(f.name(), bytes, Long::sum);
        }
      }
    }
    return out;
  }

  /**
   * Refuses a dataset whose files are not ORC: a relayout rewrites ORC files (with orc-core,
   * stream checksums and all); rewriting Parquet files is not built (docs/FORMAT.md).
   */
  static Manifest requireOrc(Manifest m) {
    if (m.fileFormat() != Manifest.FileFormat.ORC) {
      throw new IllegalArgumentException("dataset " + m.name() + " is " + m.fileFormat().text() + ": a relayout rewrites"
          + " ORC files only; rewriting Parquet files is not built");
    }
    return m;
  }

  /** The dataset's manifest, once its format, its columns and {@code order} allow a relayout. */
  private static Manifest checked(Path dir, List<String> order) throws IOException {
    Manifest old = requireOrc(Manifest.read(dir));
    for (FeatureInfo f : old.features()) {
      if (!f.supported() && f.unsupportedReason() != null && f.unsupportedReason().contains("encrypted")) {
        throw new IllegalArgumentException("dataset " + old.name() + " has a column under ORC column encryption ('"
            + f.name() + "'): a relayout would store its masked values as data");
      }
    }
    List<String> names = old.features().stream().map(FeatureInfo::name).toList();
    Map<String, Integer> times = new HashMap<>();
    order.forEach(f -> times.merge(f, 1, Integer::sum));
    if (!times.keySet().equals(new HashSet<>(names)) || times.values().stream().anyMatch(n -> n > 2)) {
      throw new IllegalArgumentException("the new order must name every column of " + old.name()
          + " once (twice for one stored twice): " + names);
    }
    return old;
  }

  /**
   * Finishes or undoes what an interrupted relayout left: temporary directories, layout
   * directories the manifest does not reference, and old files listed in {@code relayout.pending}
   * that the manifest no longer references.
   */
  public static void cleanUp(Path dir) throws IOException {
    RelayoutCleanup.run(dir);
  }

  /**
   * The previous version's manifest that a relayout in place kept, or null where there is none or
   * it is not a manifest of this dataset (then its files are not kept either).
   */
  static Manifest previous(Path dir) throws IOException {
    return previous(dir, Manifest.read(dir));
  }

  /** As above, {@code current} being the dataset's manifest as the caller read it. */
  static Manifest previous(Path dir, Manifest current) throws IOException {
    Path file = dir.resolve(PREVIOUS);
    if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
      return null;
    }
    try {
      Manifest p = Manifest.parse(file, Files.readAllBytes(file));
      return p.name().equals(current.name()) && p.rows() == current.rows() ? p : null;
    } catch (CorruptFileException e) {
      return null;
    }
  }

  /** What a rollback did: the version the dataset was, and the one it is now. */
  public record Rollback(String fromVersion, String toVersion) {}

  /**
   * Makes the previous version (kept by the last relayout in place) the dataset again, and the
   * present one the previous: a second rollback undoes the first. The swap is one step: journaled
   * ({@code rollback.journal}), then both manifests replaced, the journal removed; a crash in
   * between is carried out by the next clean-up, relayout or rollback. Every file of the version gone back to must be there with
   * its size ({@code dataset verify} checks their bytes). Not while a relayout of the dataset runs.
   */
  public static Rollback rollback(Path dir) throws IOException {
    dir = SafePaths.trusted(dir);
    finishRollback(dir); // one a crash interrupted, first
    Path file = dir.resolve(PREVIOUS);
    if (!Files.isRegularFile(dir.resolve(Manifest.FILE_NAME))) {
      throw new NoSuchFileException(dir.toString(), null, "not a dataset directory (no manifest.json)");
    }
    if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
      throw new NoSuchFileException(file.toString(), null, "no previous version to go back to (a relayout in place keeps one)");
    }
    Manifest current = Manifest.read(dir);
    checkPending(dir); // what the clean-up after the swap would remove, refused now if it leads through a link
    byte[] previousBytes = Files.readAllBytes(file);
    Manifest p = Manifest.parse(file, previousBytes);
    if (!p.name().equals(current.name()) || p.rows() != current.rows()) {
      throw new CorruptFileException(file, "the previous version is of another dataset (" + p.name() + ", "
          + p.rows() + " rows), not of " + current.name() + " (" + current.rows() + " rows)");
    }
    for (Manifest.OrcFileInfo f : p.files()) {
      Path orc;
      try {
        orc = SafePaths.inside(dir, f.path(), "a file of the previous version " + p.version());
      } catch (java.nio.file.AccessDeniedException e) {
        throw new CorruptFileException(file, e.getReason() + " (" + f.path() + "): cannot go back to it");
      }
      if (!Files.isRegularFile(orc, LinkOption.NOFOLLOW_LINKS)
          || Files.size(orc) != f.bytes()) {
        throw new CorruptFileException(orc, "a file of the previous version " + p.version()
            + " is missing or not its size (" + f.bytes() + " bytes): cannot go back to it");
      }
    }
    byte[] currentBytes = Files.readAllBytes(dir.resolve(Manifest.FILE_NAME));
    // One step: the swap is journaled first (one atomic write naming both manifests' new contents),
    // then carried out. A crash before the journal is whole changes nothing; after it, the next
    // clean-up (which every relayout, rollback and clean-up runs first) carries the swap out
    // before it looks at what the manifests reference, so it never deletes a version's files
    // because the two manifests were caught naming the same one.
    var journal = Json.object();
    journal.put(Manifest.FILE_NAME, java.util.Base64.getEncoder().encodeToString(previousBytes));
    journal.put(PREVIOUS, java.util.Base64.getEncoder().encodeToString(currentBytes));
    AtomicFiles.write(dir.resolve(ROLLBACK_JOURNAL), Json.pretty(journal).getBytes(StandardCharsets.UTF_8));
    finishRollback(dir);
    cleanUp(dir); // replaced versions no process reads any more go now
    return new Rollback(current.version(), p.version());
  }

  /**
   * Carries out a journaled rollback's swap ({@link #rollback}) if one is there: both manifests
   * written from the journal (each write atomic, the same bytes again if done already), then the
   * journal removed. A journal that does not parse is one a crash cut short before it was whole
   * (it is written atomically, so it cannot be): it is refused, naming it.
   */
  static void finishRollback(Path dir) throws IOException {
    Path journal = dir.resolve(ROLLBACK_JOURNAL);
    if (!Files.isRegularFile(journal, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    var j = Json.parse(Files.readAllBytes(journal));
    byte[] manifest;
    byte[] previous;
    try {
      manifest = java.util.Base64.getDecoder().decode(j.path(Manifest.FILE_NAME).asText(""));
      previous = java.util.Base64.getDecoder().decode(j.path(PREVIOUS).asText(""));
    } catch (IllegalArgumentException e) {
      throw new CorruptFileException(journal, "the rollback journal is damaged: " + e.getMessage());
    }
    Manifest.parse(journal, manifest); // a manifest, or refused before anything is written
    Manifest.parse(journal, previous);
    AtomicFiles.write(dir.resolve(Manifest.FILE_NAME), manifest);
    betweenRollbackWrites.run();
    AtomicFiles.write(dir.resolve(PREVIOUS), previous);
    Files.delete(journal);
    AtomicFiles.fsyncDirectory(dir);
  }

  /** Refuses a {@code relayout.pending} naming a file outside the dataset or through a link. */
  private static void checkPending(Path dir) throws IOException {
    Path pending = dir.resolve(PENDING);
    if (!Files.isRegularFile(pending, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    for (var n : Json.parse(Files.readAllBytes(pending))) {
      for (var p : n.isObject() ? n.path("paths") : Json.array().add(n)) {
        SafePaths.inside(dir, p.asText(), "a file listed in " + PENDING);
      }
    }
  }
}
