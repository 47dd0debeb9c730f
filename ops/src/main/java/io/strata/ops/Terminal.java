package io.strata.ops;

import io.strata.sdk.Progress;
import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Human output: sizes, rates, tables and progress. */
public final class Terminal {
  private Terminal() {}

  /** A ratio for people: a percentage with one decimal (0.144 prints as 14.4%). */
  public static String percent(double ratio) {
    return String.format(Locale.ROOT, "%.1f%%", 100 * ratio);
  }

  public static String bytes(long b) {
    String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = b;
    int u = 0;
    while (Math.abs(v) >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return u == 0 ? b + " B" : String.format(Locale.ROOT, "%.1f %s", v, units[u]);
  }

  public static String count(double n) {
    if (Math.abs(n) >= 1e9) {
      return String.format(Locale.ROOT, "%.2f G", n / 1e9);
    }
    if (Math.abs(n) >= 1e6) {
      return String.format(Locale.ROOT, "%.2f M", n / 1e6);
    }
    if (Math.abs(n) >= 1e4) {
      return String.format(Locale.ROOT, "%.1f k", n / 1e3);
    }
    return String.format(Locale.ROOT, n == Math.rint(n) ? "%.0f" : "%.2f", n);
  }

  public static String seconds(double s) {
    if (s < 1) {
      return String.format(Locale.ROOT, "%.1f ms", s * 1000);
    }
    if (s < 120) {
      return String.format(Locale.ROOT, "%.2f s", s);
    }
    return String.format(Locale.ROOT, "%dm%02ds", (long) s / 60, (long) s % 60);
  }

  /**
   * A remaining time as a clock, one format at every magnitude: {@code 0:05}, {@code 4:38},
   * {@code 1:02:03} (hours past 99 as days: {@code 3d 04:00:00}).
   */
  public static String clock(double s) {
    if (!(s >= 0) || Double.isInfinite(s)) {
      return "?";
    }
    long t = Math.round(Math.ceil(s));
    long h = t / 3600;
    long m = t / 60 % 60;
    long sec = t % 60;
    if (h == 0) {
      return String.format(Locale.ROOT, "%d:%02d", m, sec);
    }
    if (h < 100) {
      return String.format(Locale.ROOT, "%d:%02d:%02d", h, m, sec);
    }
    return String.format(Locale.ROOT, "%dd %02d:%02d:%02d", h / 24, h % 24, m, sec);
  }

  /** A plain text table with aligned columns. */
  public static final class Table {
    private final List<String[]> rows = new ArrayList<>();
    private final String[] header;
    private boolean alignNumbers = true;

    public Table(String... header) {
      this.header = header;
    }

    /** Left-aligns every cell (for label/value tables whose values are prose). */
    public Table leftAligned() {
      alignNumbers = false;
      return this;
    }

    public Table row(Object... cells) {
      String[] r = new String[header.length];
      for (int i = 0; i < r.length; i++) {
        r[i] = i < cells.length ? String.valueOf(cells[i]) : "";
      }
      rows.add(r);
      return this;
    }

    public void print(PrintWriter out) {
      int[] w = new int[header.length];
      for (int i = 0; i < w.length; i++) {
        w[i] = header[i].length();
        for (String[] r : rows) {
          w[i] = Math.max(w[i], r[i].length());
        }
      }
      line(out, header, w, false);
      StringBuilder sep = new StringBuilder();
      for (int i = 0; i < w.length; i++) {
        sep.append(i == 0 ? "" : "  ").append("-".repeat(w[i]));
      }
      out.println(sep);
      for (String[] r : rows) {
        line(out, r, w, alignNumbers);
      }
      out.flush();
    }

    private static void line(PrintWriter out, String[] cells, int[] w, boolean alignNumbers) {
      StringBuilder sb = new StringBuilder();
      for (int i = 0; i < cells.length; i++) {
        if (i > 0) {
          sb.append("  ");
        }
        boolean numeric = alignNumbers && !cells[i].isEmpty() && (Character.isDigit(cells[i].charAt(0)) || cells[i].charAt(0) == '-') && i > 0;
        String pad = " ".repeat(w[i] - cells[i].length());
        sb.append(numeric ? pad + cells[i] : cells[i] + pad);
      }
      out.println(sb.toString().stripTrailing());
    }
  }

  /**
   * Progress of long work: a bar with rate and ETA, redrawn in place, on a terminal; a plain log
   * line every few seconds otherwise.
   */
  public static final class Bar implements Progress {
    private final String what;
    private final PrintWriter err;
    private final boolean tty;
    private final int width;
    private final long started = System.nanoTime();
    private long lastPrint;
    private boolean drawn;

    public Bar(String what, PrintWriter err) {
      this(what, err, interactive());
    }

    /** Whether the process talks to a terminal (since JDK 22 a console exists even when it does not). */
    @SuppressWarnings("SystemConsoleNull") // null where the JDK has no console at all (jdk.console unset)
    private static boolean interactive() {
      java.io.Console console = System.console();
      return console != null && console.isTerminal() && System.getenv("STRATA_NO_TTY") == null;
    }

    private Bar(String what, PrintWriter err, boolean tty) {
      this(what, err, tty, tty ? terminalColumns() : Integer.MAX_VALUE);
    }

    /** A bar for a terminal of {@code width} columns when {@code tty}, else one line per update (tests). */
    Bar(String what, PrintWriter err, boolean tty, int width) {
      this.what = what;
      this.err = err;
      this.tty = tty;
      this.width = width;
    }

    @Override
    public synchronized void update(long done, long total, String unit) {
      long now = System.nanoTime();
      boolean finished = total > 0 && done >= total;
      long interval = tty ? 100_000_000L : 5_000_000_000L;
      if (!finished && now - lastPrint < interval) {
        return;
      }
      lastPrint = now;
      String line = line(what, done, total, unit, Math.max(1e-9, (now - started) / 1e9), tty, width);
      if (tty) {
        err.print("\r" + line + "\u001b[K");
        if (finished) {
          err.println();
        }
        drawn = !finished;
      } else {
        err.println(line);
      }
      err.flush();
    }

    /**
     * One progress line that fits in {@code width} columns (one less, so that the cursor never
     * wraps): the bar shrinks first, then the rate goes, then the label is cut.
     */
    static String line(String what, long done, long total, String unit, double elapsedSeconds, boolean withBar, int width) {
      double rate = done / elapsedSeconds;
      int room = width == Integer.MAX_VALUE ? width : width - 1;
      if (total <= 0) {
        return fit(String.format(Locale.ROOT, "%s %s %s  %s %s/s", what, count(done), unit, count(rate), unit), room);
      }
      double f = Math.min(1, (double) done / total);
      String eta = rate > 0 ? clock((total - done) / rate) : "?";
      String counts = String.format(Locale.ROOT, "%5.1f%%  %s/%s %s", 100 * f, count(done), count(total), unit);
      String speed = String.format(Locale.ROOT, "  %s %s/s", count(rate), unit);
      String tail = "  ETA " + eta;
      String text = what + " " + counts + speed + tail;
      if (text.length() > room) {
        text = what + " " + counts + tail; // the rate goes before the label is cut
      }
      int barCells = withBar ? Math.min(30, room - text.length() - 3) : 0;
      if (barCells >= 5) {
        int filled = (int) (f * barCells);
        return what + " [" + "#".repeat(filled) + " ".repeat(barCells - filled) + "] " + text.substring(what.length() + 1);
      }
      return fit(text, room);
    }

    private static String fit(String s, int room) {
      return s.length() <= room ? s : s.substring(0, Math.max(0, room - 1)) + "…";
    }

    /** Columns of the controlling terminal: $COLUMNS, else what stty says, else 80. */
    private static int terminalColumns() {
      String env = System.getenv("COLUMNS");
      if (env != null && env.matches("\\d{1,4}") && Integer.parseInt(env) >= 20) {
        return Integer.parseInt(env);
      }
      try {
        Process p = new ProcessBuilder("stty", "size").redirectInput(ProcessBuilder.Redirect.from(new File("/dev/tty")))
            .redirectErrorStream(true).start();
        String[] rc = new String(p.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).trim().split("\\s+");
        if (p.waitFor() == 0 && rc.length == 2 && rc[1].matches("\\d{1,4}") && Integer.parseInt(rc[1]) >= 20) {
          return Integer.parseInt(rc[1]);
        }
      } catch (IOException | InterruptedException | RuntimeException e) {
        if (e instanceof InterruptedException) {
          Thread.currentThread().interrupt();
        }
      }
      return 80;
    }

    /** Ends the bar's line if it was left open. */
    public synchronized void done() {
      if (tty && drawn) {
        err.println();
        err.flush();
        drawn = false;
      }
    }
  }
}
