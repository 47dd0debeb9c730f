package io.strata.ops;

import io.strata.sdk.Column;
import io.strata.sdk.format.SegmentFile;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

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

    @Override
    public Integer call() throws Exception {
      PrintWriter w = spec.commandLine().getOut();
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
        } catch (java.io.IOException e) {
          bad++;
          w.printf("BAD  %s%n", Main.describe(e));
        }
      }
      return bad == 0 ? 0 : Main.FAILURE;
    }
  }
}
