package io.strata.store;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.sdk.derive.DerivedStore.Usage;
import io.strata.sdk.internal.Json;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The feature store's usage log: one JSON line per derived feature a job computed on the fly
 * (dataset, spec, rows, bytes, CPU time), one file per process ({@code <pid>.jsonl}), which {@code
 * features promote} ranks. Advisory: a record that cannot be written is dropped, never failing
 * the job, and a line cut by a crash is skipped when read.
 *
 * <p>Threads and locks: appends of one process are serialized by this object's monitor (one
 * file per process, so processes never interleave).
 */
final class UsageLog {
  private final Path dir;

  /** The log in {@code dir} (created by the store). */
  UsageLog(Path dir) {
    this.dir = dir;
  }

  /** Appends one record to this process's file; never fails. */
  void append(Usage u) {
    var o = Json.object().put("dataset", u.dataset()).put("datasetDir", u.datasetDir()).put("version", u.version())
        .put("spec", u.spec()).put("job", u.job()).put("rows", u.rows()).put("bytes", u.bytes())
        .put("cpuNanos", u.cpuNanos()).put("timeMillis", u.timeMillis());
    Path log = dir.resolve(ProcessHandle.current().pid() + ".jsonl");
    try {
      synchronized (this) {
        Files.writeString(log, Json.compact(o) + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      }
    } catch (IOException e) {
      // Usage is advisory: a full disk must not stop a training job.
    }
  }

  /** Every record of every process; lines that do not parse (a crash mid-write) are skipped. */
  List<Usage> readAll() throws IOException {
    List<Usage> out = new ArrayList<>();
    try (Stream<Path> logs = Files.list(dir)) {
      for (Path log : logs.filter(p -> p.toString().endsWith(".jsonl")).sorted().toList()) {
        for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
          try {
            JsonNode o = Json.parse(line);
            out.add(new Usage(o.path("dataset").asText(), o.path("datasetDir").asText(), o.path("version").asText(),
                o.path("spec").asText(), o.path("job").asText(), o.path("rows").asLong(), o.path("bytes").asLong(),
                o.path("cpuNanos").asLong(), o.path("timeMillis").asLong()));
          } catch (IOException | RuntimeException torn) {
            // A record cut by a crash.
          }
        }
      }
    }
    return out;
  }
}
