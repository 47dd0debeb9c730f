package io.strata.ops;

import com.fasterxml.jackson.databind.node.ArrayNode;
import io.strata.sdk.Column;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.internal.Json;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code strata segment ...}: inspect segment files. */
@Command(name = "segment", mixinStandardHelpOptions = true, description = "Segment file tools.",
    subcommands = {SegmentCommand.Verify.class})
final class SegmentCommand implements Runnable {
  @Spec CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  @Command(name = "verify", mixinStandardHelpOptions = true, description = "Check segment files: structure and every buffer checksum.")
  static final class Verify implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Parameters(arity = "1..*", paramLabel = "FILE", description = "Segment files.")
    List<Path> files;

    @Option(names = "--json", description = "Print one JSON object: each file with ok or its problem.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      PrintWriter w = json ? new PrintWriter(Writer.nullWriter()) : spec.commandLine().getOut();
      ArrayNode results = Json.array();
      int bad = 0;
      for (Path p : files) {
        try (SegmentFile f = SegmentFile.open(p, SegmentFile.Verify.ALWAYS)) {
          StringBuilder cols = new StringBuilder();
          for (String c : f.columnNames()) {
            Column col = f.column(c);
            cols.append(cols.isEmpty() ? "" : ", ").append(c).append(':').append(col.type());
          }
          w.printf("ok   %s  %s %s chunk %d rows [%d, %d)  %s%n", p, f.info().dataset(), f.info().datasetVersion(),
              f.info().chunk(), f.info().rowStart(), f.info().rowEnd(), cols);
          results.addObject().put("file", p.toString()).put("ok", true).put("dataset", f.info().dataset())
              .put("version", f.info().datasetVersion()).put("chunk", f.info().chunk()).put("columns", cols.toString());
        } catch (IOException e) {
          bad++;
          w.printf("BAD  %s%n", Main.describe(e));
          results.addObject().put("file", p.toString()).put("ok", false).put("problem", Main.describe(e));
        }
      }
      if (json) {
        spec.commandLine().getOut().println(Json.compact(Json.object().put("files", files.size()).put("bad", bad).set("results", results)));
      }
      w.flush();
      return bad == 0 ? 0 : Main.FAILURE;
    }
  }
}
