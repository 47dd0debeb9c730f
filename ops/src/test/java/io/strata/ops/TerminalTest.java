package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;

/** The progress line fits the terminal, and remaining times read the same at every magnitude. */
class TerminalTest {
  @Test
  void aProgressLineFitsTheTerminalItIsDrawnIn() {
    for (int width : new int[] {40, 60, 80, 120, 200}) {
      for (long done : new long[] {0, 1, 999_999, 123_456_789, 9_999_999_999L}) {
        String line = Terminal.Bar.line("materialize zscore(seq_mean(log1p(amount), last=16))", done, 10_000_000_000L, "rows",
            3.5, true, width);
        assertTrue(line.length() < width, width + " columns: " + line.length() + " '" + line + "'");
      }
    }
    String wide = Terminal.Bar.line("import", 50, 100, "rows", 2, true, 120);
    assertTrue(wide.contains("[###############               ]") && wide.contains("ETA 0:02") && wide.contains("rows/s"), wide);
    String narrow = Terminal.Bar.line("import", 50, 100, "rows", 2, true, 40);
    assertTrue(narrow.contains("ETA 0:02") && narrow.contains("50.0%"), "the ETA and the share stay: " + narrow);
    // Drawn through a terminal of 60 columns: one line, redrawn in place, never wider.
    StringWriter out = new StringWriter();
    Terminal.Bar bar = new Terminal.Bar("generate", new PrintWriter(out), true, 60);
    bar.update(10, 100, "rows");
    bar.update(100, 100, "rows");
    for (String l : out.toString().split("\r")) {
      String visible = l.replace("\u001b[K", "").strip();
      assertTrue(visible.length() < 60, visible);
    }
  }

  @Test
  void remainingTimesAreOneClockFormat() {
    assertEquals("0:00", Terminal.clock(0));
    assertEquals("0:01", Terminal.clock(0.0004));
    assertEquals("0:05", Terminal.clock(4.2));
    assertEquals("1:22", Terminal.clock(81.69)); // rounded up: never promises too soon
    assertEquals("4:38", Terminal.clock(278));
    assertEquals("1:02:03", Terminal.clock(3723));
    assertEquals("4d 04:00:00", Terminal.clock(100 * 3600));
    assertEquals("?", Terminal.clock(Double.NaN));
  }
}
