package io.strata.tools;

import io.strata.sdk.files.DatasetFiles;
import io.strata.sdk.files.Manifest;
import io.strata.sdk.files.OrcIo;
import io.strata.sdk.files.OrcReads;
import io.strata.sdk.files.StripeFooters;
import io.strata.sdk.files.VersionLeases;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Column;
import io.strata.sdk.CorruptFileException;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.Progress;
import io.strata.sdk.format.Columns;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RelayoutTest {
  @TempDir Path tmp;

  private Path generate(String name) throws IOException {
    Path dir = tmp.resolve(name);
    DatasetGenerator.generate(dir,
        DatasetGenerator.Options.of("events", 50_000, 11).withFeatures(14).withChunking(7_000, 3).withMeanSampleLength(40),
        Progress.NONE);
    return dir;
  }

  private static void copyTree(Path from, Path to) throws IOException {
    try (Stream<Path> s = Files.walk(from)) {
      for (Path p : s.toList()) {
        Path q = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(q);
        } else {
          Files.copy(p, q);
        }
      }
    }
  }

  private static List<String> leftovers(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(Relayout.TMP_PREFIX) || n.equals(Relayout.PENDING))
          .toList();
    }
  }

  /** Every value of every served feature, chunk by chunk, and the sample count, equal in the two datasets. */
  private static void assertSameValues(Path first, Path second) throws IOException {
    try (Dataset a = Dataset.open(first); Dataset b = Dataset.open(second)) {
      assertEquals(a.featureNames().size(), b.featureNames().size());
      for (int c = 0; c < a.chunks().size(); c++) {
        try (Arena arena = Arena.ofConfined()) {
          Map<String, Column> x = a.readChunk(c, a.featureNames(), arena);
          Map<String, Column> y = b.readChunk(c, a.featureNames(), arena);
          for (String f : a.featureNames()) {
            assertEquals(-1, Columns.firstDifference(x.get(f), y.get(f)), "feature " + f + " chunk " + c);
          }
        }
      }
      assertEquals(a.sampleIndex().orElseThrow().size(), b.sampleIndex().orElseThrow().size());
    }
  }

  /** The rewrite's first file will hold other rows (the second file's, same count): the check must catch it. */
  private static void damageFirstRewrittenFile() {
    Relayout.beforeCheck = d -> {
      try {
        Files.copy(d.resolve("part-00001.orc"), d.resolve("part-00000.orc"), StandardCopyOption.REPLACE_EXISTING);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    };
  }

  /** Each file of {@code m} has the stripes its chunks say, and a stripe-footer sidecar that matches it. */
  private static void assertStripesAndFootersMatch(Path dir, Manifest m) throws IOException {
    for (int i = 0; i < m.files().size(); i++) {
      Manifest.OrcFileInfo f = m.files().get(i);
      Path file = dir.resolve(f.path());
      int fi = i;
      try (org.apache.orc.Reader reader = OrcIo.open(file)) {
        assertEquals(m.chunks().stream().filter(c -> c.file() == fi).count(), reader.getStripes().size(), f.path());
        assertNotNull(StripeFooters.load(file, f.crc32c(), f.bytes(), reader.getStripes()),
            "the new file " + f.path() + " has stripe footers that match it");
      }
    }
  }

  /** A generated dataset {@code name}, and an untouched copy of it beside, {@code name-original}. */
  private Path generateWithCopy(String name) throws IOException {
    Path dir = generate(name);
    copyTree(dir, tmp.resolve(name + "-original"));
    return dir;
  }

  @AfterEach
  void resetHook() {
    Relayout.beforeCheck = p -> {};
  }

  @Test
  void aRelayoutKeepsEveryValueRowsChunksAndSamplesUnderANewVersion() throws IOException {
    Path dir = generateWithCopy("d");
    Path original = tmp.resolve("d-original");
    Manifest before = Manifest.read(dir);
    List<String> order = new ArrayList<>(before.features().stream().map(FeatureInfo::name).toList());
    Collections.reverse(order);
    Relayout.Result r = Relayout.rewrite(dir, order, Progress.NONE);
    Manifest after = Manifest.read(dir);
    assertNotEquals(before.version(), after.version());
    assertEquals(before.version(), r.previousVersion());
    assertEquals(order, after.features().stream().map(FeatureInfo::name).toList());
    assertEquals(before.rows(), after.rows());
    assertEquals(before.chunks().size(), after.chunks().size());
    assertEquals(before.sampleIndex(), after.sampleIndex());
    for (Manifest.OrcFileInfo f : before.files()) {
      assertTrue(Files.exists(dir.resolve(f.path())), "the old file " + f.path() + " is kept: the previous version");
    }
    assertEquals(before.version(), Relayout.previous(dir).version());
    assertStripesAndFootersMatch(dir, after);
    assertEquals(List.of(), leftovers(dir));
    // Every value of every served feature, chunk by chunk, against the untouched copy.
    assertSameValues(original, dir);
    // The same order again is refused; another relayout replaces the layout directory.
    assertThrows(IllegalArgumentException.class, () -> Relayout.rewrite(dir, order, Progress.NONE));
    Relayout.rewrite(dir, before.features().stream().map(FeatureInfo::name).toList(), Progress.NONE);
    try (Stream<Path> s = Files.list(dir)) {
      assertEquals(2, s.filter(p -> p.getFileName().toString().startsWith(Relayout.LAYOUT_PREFIX)).count(),
          "the present version's layout and the previous one's");
    }
    // The version before the previous one (the original files) is removed, with its stripe footers.
    assertEquals(after.version(), Relayout.previous(dir).version());
    for (Manifest.OrcFileInfo f : before.files()) {
      assertFalse(Files.exists(dir.resolve(f.path())), "the oldest file " + f.path() + " is removed");
      assertFalse(Files.exists(StripeFooters.sidecar(dir.resolve(f.path()))), "and its stripe footers");
    }
    for (Manifest.OrcFileInfo f : after.files()) {
      assertTrue(Files.exists(dir.resolve(f.path())), "the previous version's " + f.path() + " is kept");
    }
    assertEquals(List.of(), leftovers(dir));
  }

  /**
   * Every value of every served feature equal in the two datasets, row for row, where the second's
   * chunks are the first's or consecutive ones of them merged: each old chunk against its rows of
   * the new chunk holding it.
   */
  private static void assertSameValuesAcrossChunks(Path first, Path second) throws IOException {
    try (Dataset a = Dataset.open(first); Dataset b = Dataset.open(second)) {
      assertEquals(a.rows(), b.rows());
      int nc = 0;
      for (int c = 0; c < a.chunks().size(); c++) {
        var oc = a.chunks().get(c);
        while (b.chunks().get(nc).endRow() <= oc.firstRow()) {
          nc++;
        }
        var bc = b.chunks().get(nc);
        assertTrue(bc.firstRow() <= oc.firstRow() && oc.endRow() <= bc.endRow(), "old chunk " + c + " lies in new chunk " + nc);
        try (Arena arena = Arena.ofConfined()) {
          Map<String, Column> x = a.readChunk(c, a.featureNames(), arena);
          Map<String, Column> y = b.readChunk(nc, a.featureNames(), arena);
          for (String f : a.featureNames()) {
            Column part = y.get(f).slice((int) (oc.firstRow() - bc.firstRow()), (int) oc.rows());
            assertEquals(x.get(f).length(), part.length(), "feature " + f + " chunk " + c);
            assertEquals(-1, Columns.firstDifference(x.get(f), part), "feature " + f + " chunk " + c);
          }
        }
      }
    }
  }

  @Test
  void aStripeSizeMergesConsecutiveStripesOfAFileWithinItAndKeepsEveryValue() throws IOException {
    Path dir = generateWithCopy("merged");
    Path original = tmp.resolve("merged-original");
    Manifest before = Manifest.read(dir);
    assertTrue(before.files().size() >= 2 && before.chunks().size() > before.files().size(), "several stripes a file");
    List<String> order = before.features().stream().map(FeatureInfo::name).toList();
    // A size that takes two of the largest old stripes but not three: the greedy merge, file by file.
    long largest = before.chunks().stream().mapToLong(io.strata.sdk.ChunkInfo::length).max().orElseThrow();
    long limit = 2 * largest + 1;
    int planned = Relayout.chunksAfter(before, limit);
    // The same order, other stripes: a new version all the same.
    Relayout.Result r = Relayout.rewrite(dir, order, limit, Progress.NONE);
    Manifest after = Manifest.read(dir);
    assertNotEquals(before.version(), after.version());
    assertEquals(planned, after.chunks().size());
    assertTrue(after.chunks().size() < before.chunks().size(), "stripes merged: " + after.chunks().size());
    assertEquals(before.rows(), after.rows());
    assertEquals(order, after.features().stream().map(FeatureInfo::name).toList());
    // Each new chunk is consecutive old ones of one file: it starts and ends at an old boundary,
    // the old ones' bytes within the size unless one alone, and the next old one of the file would
    // not have fitted.
    int o = 0;
    for (var nc : after.chunks()) {
      var first = before.chunks().get(o);
      assertEquals(first.firstRow(), nc.firstRow(), "chunk " + nc.index() + " starts at old chunk " + o);
      long bytes = 0;
      int n = 0;
      while (o < before.chunks().size() && before.chunks().get(o).endRow() <= nc.endRow()) {
        assertEquals(first.file(), before.chunks().get(o).file(), "one file's stripes");
        bytes += before.chunks().get(o++).length();
        n++;
      }
      assertEquals(before.chunks().get(o - 1).endRow(), nc.endRow(), "chunk " + nc.index() + " ends at an old boundary");
      assertTrue(n == 1 || bytes <= limit, "within the size: " + bytes);
      if (o < before.chunks().size() && before.chunks().get(o).file() == first.file()) {
        assertTrue(bytes + before.chunks().get(o).length() > limit, "the next stripe of the file did not fit");
      }
      assertEquals(nc.rows(), nc.endRow() - nc.firstRow());
    }
    assertEquals(before.chunks().size(), o);
    assertStripesAndFootersMatch(dir, after);
    assertSameValuesAcrossChunks(original, dir);
    assertEquals(before.version(), r.previousVersion());
    // A size larger than any file: one stripe a file. 0: every stripe kept.
    assertEquals(before.files().size(), Relayout.chunksAfter(before, 1L << 40));
    assertEquals(before.chunks().size(), Relayout.chunksAfter(before, 0));
    assertThrows(IllegalArgumentException.class, () -> Relayout.chunksAfter(before, -1));
    // Back to the version with the old stripes, every value as it was.
    Relayout.rollback(dir);
    assertEquals(before.chunks(), Manifest.read(dir).chunks());
    assertSameValues(original, dir);
  }

  /**
   * A version that a reader still has open (a job, a node that registered the dataset) keeps its
   * files through later relayouts; they go at the first relayout, rollback or clean-up after its
   * last reader closed.
   */
  @Test
  void aVersionStillReadKeepsItsFilesUntilItsLastReaderCloses() throws IOException {
    Path dir = generate("lease");
    Manifest v1 = Manifest.read(dir);
    List<String> names = v1.features().stream().map(FeatureInfo::name).toList();
    List<String> rotated = new ArrayList<>(names);
    Collections.rotate(rotated, 3);
    Manifest v3;
    try (Dataset reader = Dataset.open(dir)) {
      Dataset second = Dataset.open(dir); // a second reader of the same version in this process
      assertTrue(VersionLeases.inUse(dir, v1.version()));
      Relayout.rewrite(dir, names.reversed(), Progress.NONE); // v1 becomes the previous version
      v3 = Relayout.rewrite(dir, rotated, Progress.NONE).manifest(); // v1 is the version before it: still read
      assertNotEquals(v1.version(), v3.version());
      for (Manifest.OrcFileInfo f : v1.files()) {
        assertTrue(Files.exists(dir.resolve(f.path())), f.path() + " of the version still read");
      }
      assertEquals(List.of(Relayout.PENDING), leftovers(dir), "listed for later");
      second.close();
      Relayout.cleanUp(dir);
      assertTrue(Files.exists(dir.resolve(v1.files().get(0).path())), "one reader left: kept");
      try (Arena arena = Arena.ofConfined()) {
        assertEquals(7_000, reader.readChunk(1, List.of(names.get(2)), arena).get(names.get(2)).length(), "the reader reads on");
      }
    }
    assertFalse(VersionLeases.inUse(dir, v1.version()));
    Relayout.cleanUp(dir);
    for (Manifest.OrcFileInfo f : v1.files()) {
      assertFalse(Files.exists(dir.resolve(f.path())), f.path() + " of a version no one reads");
    }
    assertEquals(List.of(), leftovers(dir));
    assertFalse(Files.exists(dir.resolve(VersionLeases.DIR).resolve(v1.version())), "its lease file went with it");
    assertEquals(v3.version(), Manifest.read(dir).version());
  }

  /**
   * A relayout back to the previous version's order writes the files that version already has:
   * the kept directory, which a reader of that version may be reading, is neither deleted nor
   * replaced (issue 52: it was deleted first, and a reader's files vanished), and is the new
   * version's too.
   */
  @Test
  void aRelayoutBackToThePreviousOrderNeverDeletesItsFiles() throws IOException {
    Path dir = generate("back");
    Manifest v1 = Manifest.read(dir);
    List<String> a = new ArrayList<>(v1.features().stream().map(FeatureInfo::name).toList());
    Collections.reverse(a);
    List<String> b = new ArrayList<>(a);
    Collections.swap(b, 0, 1);
    Manifest v2 = Relayout.rewrite(dir, a, Progress.NONE).manifest();
    Path kept = dir.resolve(v2.files().get(0).path());
    Object identity = Files.readAttributes(kept, java.nio.file.attribute.BasicFileAttributes.class).fileKey();
    // A reader of v2 holds it while the dataset moves on to b's order and back to v2's.
    try (Dataset reader = Dataset.open(dir)) {
      Relayout.rewrite(dir, b, Progress.NONE);
      Manifest v4 = Relayout.rewrite(dir, a, Progress.NONE).manifest();
      assertEquals(v2.version(), v4.version(), "the same order, the same files: the same version");
      assertEquals(v2.files(), v4.files(), "the kept directory is the new version's");
      assertEquals(identity, Files.readAttributes(kept, java.nio.file.attribute.BasicFileAttributes.class).fileKey(),
          "the kept file was neither deleted nor replaced");
      try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
        for (var c : reader.chunks()) {
          reader.readChunk(c.index(), reader.featureNames(), arena); // the reader's files are all there
        }
      }
    }
    Relayout.cleanUp(dir); // the versions the reader held go now
    assertTrue(leftovers(dir).isEmpty(), "nothing left: " + leftovers(dir));
    try (Dataset d = Dataset.open(dir)) {
      assertEquals(v2.version(), d.version());
    }
  }

  /**
   * A rollback cut short between its two manifest writes (both then name the version gone back
   * to): the next clean-up carries the swap out before it looks at what is referenced, so the
   * relaid-out version's files are not deleted, and a rollback after it goes forward again.
   */
  @Test
  void aRollbackCutShortIsFinishedAndDeletesNothing() throws IOException {
    Path dir = generate("cut");
    Path original = tmp.resolve("cut-original");
    copyTree(dir, original);
    Manifest before = Manifest.read(dir);
    List<String> order = new ArrayList<>(before.features().stream().map(FeatureInfo::name).toList());
    Collections.reverse(order);
    Manifest next = Relayout.rewrite(dir, order, Progress.NONE).manifest();
    Relayout.betweenRollbackWrites = () -> {
      throw new IllegalStateException("crash");
    };
    try {
      assertThrows(IllegalStateException.class, () -> Relayout.rollback(dir));
    } finally {
      Relayout.betweenRollbackWrites = () -> {};
    }
    assertEquals(before.version(), Manifest.read(dir).version(), "the dataset is the version gone back to");
    Relayout.cleanUp(dir);
    for (Manifest.OrcFileInfo f : next.files()) {
      assertTrue(Files.exists(dir.resolve(f.path())), "the relaid-out version's file is kept: " + f.path());
    }
    assertEquals(next.version(), Relayout.previous(dir).version(), "the swap was carried out");
    assertSameValues(original, dir);
    assertEquals(next.version(), Relayout.rollback(dir).toVersion());
    assertEquals(order, Manifest.read(dir).features().stream().map(FeatureInfo::name).toList());
  }

  @Test
  void aRollbackGoesBackToThePreviousVersionAndASecondOneForward() throws IOException {
    Path dir = generate("r");
    Path original = tmp.resolve("r-original");
    copyTree(dir, original);
    Manifest before = Manifest.read(dir);
    assertThrows(NoSuchFileException.class, () -> Relayout.rollback(dir), "no relayout: nothing to go back to");
    List<String> order = new ArrayList<>(before.features().stream().map(FeatureInfo::name).toList());
    Collections.reverse(order);
    String next = Relayout.rewrite(dir, order, Progress.NONE).manifest().version();
    Relayout.Rollback back = Relayout.rollback(dir);
    assertEquals(next, back.fromVersion());
    assertEquals(before.version(), back.toVersion());
    assertEquals(before.version(), Manifest.read(dir).version());
    assertEquals(before.features(), Manifest.read(dir).features(), "the old order");
    assertSameValues(original, dir);
    Relayout.cleanUp(dir); // what the next relayout does first: both versions' files stay
    Relayout.Rollback forward = Relayout.rollback(dir);
    assertEquals(next, forward.toVersion());
    assertEquals(order, Manifest.read(dir).features().stream().map(FeatureInfo::name).toList());
    assertSameValues(original, dir);
    // A missing file of the version to go back to: refused by name, nothing changed.
    Manifest.OrcFileInfo gone = before.files().get(0);
    Files.delete(dir.resolve(gone.path()));
    var e = assertThrows(CorruptFileException.class, () -> Relayout.rollback(dir));
    assertTrue(e.getMessage().contains(gone.path()), e.getMessage());
    assertEquals(next, Manifest.read(dir).version());
  }

  /**
   * A rollback or clean-up run as root on a dataset another user can write: names in {@code
   * relayout.pending}, a previous manifest and the lease directory that lead through links are
   * refused, and nothing behind them is deleted, read or chmod'ed (issue 51's repro).
   */
  @Test
  void rollbackAndCleanUpNeverDeleteReadOrChmodThroughLinks() throws IOException {
    Path victim = Files.createDirectories(tmp.resolve("victim/keep"));
    Files.writeString(victim.resolve("precious.txt"), "mine");
    Path dir = generate("l");
    Manifest before = Manifest.read(dir);
    List<String> order = new ArrayList<>(before.features().stream().map(FeatureInfo::name).toList());
    Collections.reverse(order);
    String next = Relayout.rewrite(dir, order, Progress.NONE).manifest().version();
    Files.createSymbolicLink(dir.resolve("lnk2"), victim);
    Files.writeString(dir.resolve(Relayout.PENDING), "[{\"version\":\"v0-zz\",\"paths\":[\"lnk2/precious.txt\"]}]");
    var e = assertThrows(java.nio.file.AccessDeniedException.class, () -> Relayout.rollback(dir));
    assertTrue(e.getMessage().contains("passes through a link (lnk2)"), e.getMessage());
    assertEquals(next, Manifest.read(dir).version(), "refused before anything changed");
    assertThrows(java.nio.file.AccessDeniedException.class, () -> Relayout.cleanUp(dir));
    assertEquals("mine", Files.readString(victim.resolve("precious.txt")));
    Files.delete(dir.resolve(Relayout.PENDING));

    // A previous manifest naming a part through a link out (where copies of the parts wait): refused.
    Path out = Files.createDirectories(tmp.resolve("elsewhere"));
    for (Manifest.OrcFileInfo f : before.files()) {
      Files.copy(dir.resolve(f.path()), out.resolve(f.path()));
    }
    Files.createSymbolicLink(dir.resolve("lnk"), out);
    Path previous = dir.resolve(Relayout.PREVIOUS);
    String kept = Files.readString(previous);
    Files.writeString(previous, kept.replace("\"" + before.files().get(0).path() + "\"", "\"lnk/" + before.files().get(0).path() + "\""));
    var c = assertThrows(CorruptFileException.class, () -> Relayout.rollback(dir));
    assertTrue(c.getMessage().contains("passes through a link (lnk)"), c.getMessage());
    assertEquals(next, Manifest.read(dir).version());
    Files.writeString(previous, kept);

    // The lease directory a link to a private directory: a relayout refuses it, and its mode stays.
    Path secret = Files.createDirectory(tmp.resolve("secret"), java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
        java.nio.file.attribute.PosixFilePermissions.fromString("rwx------")));
    io.strata.sdk.internal.AtomicFiles.deleteTree(dir.resolve(VersionLeases.DIR));
    Files.createSymbolicLink(dir.resolve(VersionLeases.DIR), secret);
    var l = assertThrows(java.nio.file.AccessDeniedException.class, () -> Relayout.rewrite(dir, before.features().stream()
        .map(FeatureInfo::name).toList(), Progress.NONE));
    assertTrue(l.getMessage().contains("refused as the dataset's lease directory"), l.getMessage());
    assertEquals("rwx------", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(secret)));
    try (Stream<Path> s = Files.list(secret)) {
      assertEquals(0, s.count(), "nothing written into it");
    }
    assertEquals(next, Manifest.read(dir).version());
  }

  @Test
  void featuresStoredTwiceKeepEveryValueAndAJobReadsTheCopiesThatSaveRequests() throws IOException {
    Path dir = generateWithCopy("d");
    Path original = tmp.resolve("d-original");
    List<String> names = Manifest.read(dir).features().stream().map(FeatureInfo::name).toList();
    String first = names.getFirst();
    String last = names.getLast();
    // The first feature stored again, right before the last: {first, last} becomes one run.
    List<String> layout = new ArrayList<>(names);
    layout.add(layout.size() - 1, first);
    Relayout.rewrite(dir, layout, Progress.NONE);
    Manifest after = Manifest.read(dir);
    assertEquals(names, after.features().stream().map(FeatureInfo::name).toList(), "features once each, in order");
    assertEquals(1, after.replicas().size());
    assertEquals(first, after.replicas().getFirst().feature());
    assertEquals(names.size() - 1, after.replicas().getFirst().position());
    assertEquals(layout, after.layout());
    assertTrue(Files.readString(dir.resolve(Manifest.FILE_NAME)).contains("\"formatVersion\" : 2"),
        "a build that knows no replicas must refuse this manifest");
    assertSameValues(original, dir);
    List<String> pair = List.of(first, last);
    long[] requests = new long[2];
    Map<String, Column> values = null;
    OrcReads.setGapBytes(0); // ranges merged where they touch alone, whatever this machine's disk says it is
    try (Arena arena = Arena.ofConfined()) {
      for (Path d : new Path[] {original, dir}) {
        try (Dataset ds = Dataset.open(d)) {
          ds.table().readChunk(0, pair, arena); // opens the file
          long r0 = OrcReads.requests();
          Map<String, Column> v = ds.table().readChunk(1, pair, arena);
          requests[d == original ? 0 : 1] = OrcReads.requests() - r0;
          if (values == null) {
            values = v;
          } else {
            for (String f : pair) {
              assertEquals(-1, Columns.firstDifference(values.get(f), v.get(f)), f + " read from its copy");
            }
          }
        }
      }
    } finally {
      OrcReads.setGapBytes(-1);
    }
    assertEquals(2, requests[0], "two runs in the original order");
    assertEquals(1, requests[1], "one run: the copy beside the last feature");
    // Relaid out again without copies: the replica goes, the values stay.
    Relayout.rewrite(dir, names.reversed(), Progress.NONE);
    assertEquals(List.of(), Manifest.read(dir).replicas());
    assertSameValues(original, dir);
    // A feature three times is refused.
    List<String> thrice = new ArrayList<>(names);
    thrice.add(first);
    thrice.add(first);
    assertThrows(IllegalArgumentException.class, () -> Relayout.rewrite(dir, thrice, Progress.NONE));
  }

  @Test
  void aRelayoutIntoANewDirectoryLeavesTheOriginalAndWritesAWholeDataset() throws IOException {
    Path dir = generate("d");
    Manifest before = Manifest.read(dir);
    List<String> order = new ArrayList<>(before.features().stream().map(FeatureInfo::name).toList());
    Collections.reverse(order);
    Path out = tmp.resolve("d-relaid");
    Relayout.Result r = Relayout.rewriteTo(dir, out, order, Progress.NONE);
    assertEquals(before.version(), Manifest.read(dir).version(), "the original is untouched");
    for (Manifest.OrcFileInfo f : before.files()) {
      assertEquals(f.crc32c(), DatasetFiles.crc32c(dir.resolve(f.path())));
    }
    Manifest after = Manifest.read(out);
    assertEquals(r.manifest().version(), after.version());
    assertNotEquals(before.version(), after.version());
    assertEquals(before.name(), after.name());
    assertEquals(order, after.features().stream().map(FeatureInfo::name).toList());
    assertSameValues(dir, out);
    assertEquals(List.of(), leftovers(tmp));
    // An existing output directory is refused; a check that fails leaves no output and no temporary directory.
    assertThrows(FileAlreadyExistsException.class, () -> Relayout.rewriteTo(dir, out, order, Progress.NONE));
    damageFirstRewrittenFile();
    Path bad = tmp.resolve("d-bad");
    IOException e = assertThrows(IOException.class, () -> Relayout.rewriteTo(dir, bad, order, Progress.NONE));
    assertTrue(e.getMessage().contains("relayout check failed"), e.getMessage());
    assertFalse(Files.exists(bad));
    assertEquals(List.of(), leftovers(tmp));
  }

  @Test
  void aRewriteThatDoesNotVerifyLeavesTheDatasetAsItWas() throws IOException {
    Path dir = generate("d");
    Manifest before = Manifest.read(dir);
    List<String> order = new ArrayList<>(before.features().stream().map(FeatureInfo::name).toList());
    Collections.swap(order, 2, 9);
    // A rewrite whose first file holds other rows (the second file's, same count): the check must catch it.
    damageFirstRewrittenFile();
    IOException e = assertThrows(IOException.class, () -> Relayout.rewrite(dir, order, Progress.NONE));
    assertTrue(e.getMessage().contains("relayout check failed"), e.getMessage());
    assertEquals(before.version(), Manifest.read(dir).version());
    for (Manifest.OrcFileInfo f : before.files()) {
      assertEquals(f.crc32c(), DatasetFiles.crc32c(dir.resolve(f.path())), "the old file " + f.path() + " is untouched");
    }
    assertEquals(List.of(), leftovers(dir));
  }

  @Test
  void anOrderThatIsNotAPermutationIsRefused() throws IOException {
    Path dir = generate("d");
    List<String> names = Manifest.read(dir).features().stream().map(FeatureInfo::name).toList();
    assertThrows(IllegalArgumentException.class, () -> Relayout.rewrite(dir, names.subList(1, names.size()), Progress.NONE));
    List<String> twice = new ArrayList<>(names);
    twice.set(0, names.get(1));
    assertThrows(IllegalArgumentException.class, () -> Relayout.rewrite(dir, twice, Progress.NONE));
    assertEquals(List.of(), leftovers(dir));
  }

  @Test
  void leftoversOfAnInterruptedRelayoutAreCleanedUp() throws IOException {
    Path dir = generate("d");
    Files.createDirectories(dir.resolve(Relayout.TMP_PREFIX + "123-456"));
    Files.writeString(dir.resolve(Relayout.TMP_PREFIX + "123-456").resolve("part-00000.orc"), "partial");
    Files.createDirectories(dir.resolve(Relayout.LAYOUT_PREFIX + "v1-dead"));
    Relayout.cleanUp(dir);
    assertEquals(List.of(), leftovers(dir));
    assertFalse(Files.exists(dir.resolve(Relayout.LAYOUT_PREFIX + "v1-dead")), "an unreferenced layout goes");
    try (Dataset ds = Dataset.open(dir)) {
      assertEquals(50_000, ds.rows());
    }
  }
}
