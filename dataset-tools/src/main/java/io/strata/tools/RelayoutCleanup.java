package io.strata.tools;

import io.strata.sdk.files.Manifest;
import io.strata.sdk.files.StripeFooters;
import io.strata.sdk.files.VersionLeases;
import io.strata.sdk.internal.AtomicFiles;
import io.strata.sdk.internal.Json;
import io.strata.sdk.internal.SafePaths;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * What {@link Relayout#cleanUp} does: finishes or undoes what an interrupted relayout left
 * (temporary directories, layout directories no manifest references, and the old files listed in
 * {@code relayout.pending} once no process reads their version). Stateless; the caller's thread.
 */
final class RelayoutCleanup {
  private RelayoutCleanup() {}

  static void run(Path dir) throws IOException {
    if (!Files.exists(dir.resolve(Manifest.FILE_NAME))) {
      return;
    }
    dir = SafePaths.trusted(dir);
    Relayout.finishRollback(dir); // a rollback a crash interrupted: its swap first, so both versions stay referenced
    Manifest m = Manifest.read(dir);
    Set<String> referenced = new HashSet<>();
    Set<String> layouts = new HashSet<>();
    Manifest previous = Relayout.previous(dir, m);
    for (Manifest version : previous == null ? List.of(m) : List.of(m, previous)) {
      for (Manifest.OrcFileInfo f : version.files()) {
        referenced.add(f.path());
        int slash = f.path().indexOf('/');
        if (slash > 0) {
          layouts.add(f.path().substring(0, slash));
        }
      }
    }
    Path pending = dir.resolve(Relayout.PENDING);
    if (Files.exists(pending)) {
      // Each entry: a replaced version and its files no manifest names any more, removed once no
      // process reads that version (VersionLeases); kept listed, and its files kept, until then.
      // (A bare path is an entry of an older build: removed at once.)
      var still = Json.array();
      for (var n : Json.parse(Files.readAllBytes(pending))) {
        String version = n.isObject() ? n.path("version").asText("") : null;
        if (version != null && VersionLeases.inUse(dir, version)) {
          still.add(n);
          n.path("paths").forEach(p -> {
            int slash = p.asText().indexOf('/');
            if (slash > 0) {
              layouts.add(p.asText().substring(0, slash));
            }
          });
          continue;
        }
        for (var p : n.isObject() ? n.path("paths") : Json.array().add(n)) {
          removeOldFile(dir, p.asText(), referenced);
        }
        if (version != null && !version.isEmpty()) {
          VersionLeases.forget(dir, version);
        }
      }
      if (still.isEmpty()) {
        Files.delete(pending);
      } else {
        AtomicFiles.write(pending, Json.pretty(still).getBytes(StandardCharsets.UTF_8));
      }
    }
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
      for (Path p : ds) {
        String name = p.getFileName().toString();
        boolean staleLayout = name.startsWith(Relayout.LAYOUT_PREFIX) && !layouts.contains(name);
        if ((name.startsWith(Relayout.TMP_PREFIX) || staleLayout) && Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
          AtomicFiles.deleteTree(p);
        }
      }
    }
  }

  /**
   * Removes a file of a replaced version (and its sidecar, and its layout directory once empty)
   * unless a manifest names it. Every directory on the way below {@code dir} is opened without
   * following links ({@link SafePaths#deleteInside}): a name in {@code relayout.pending} that
   * passes through a link is refused, never followed.
   */
  private static void removeOldFile(Path dir, String p, Set<String> referenced) throws IOException {
    if (referenced.contains(p)) {
      return;
    }
    String what = "a file listed in " + Relayout.PENDING;
    SafePaths.deleteInside(dir, p, what);
    SafePaths.deleteInside(dir, p + StripeFooters.SUFFIX, what);
    int slash = p.lastIndexOf('/');
    if (slash > 0 && p.indexOf('/') == slash && p.startsWith(Relayout.LAYOUT_PREFIX)) {
      Path parent = dir.resolve(p.substring(0, slash));
      if (Files.isDirectory(parent, LinkOption.NOFOLLOW_LINKS) && isEmpty(parent)) {
        SafePaths.deleteInside(dir, p.substring(0, slash), what);
      }
    }
  }


  private static boolean isEmpty(Path d) throws IOException {
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(d)) {
      return !ds.iterator().hasNext();
    }
  }
}
