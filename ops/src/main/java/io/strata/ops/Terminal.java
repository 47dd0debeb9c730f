package io.strata.ops;

import io.strata.sdk.Progress;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Human output: sizes, rates, tables and progress. */
public final class Terminal {
  private Terminal() {}

  /** A ratio for people: a percentage with one decimal (0.144 prints as 14.4%). */
  public static String percent(double ratio) {
    return String.format(java.util.Locale.ROOT, "%.1f%%", 100 * ratio);
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
    private final long started = System.nanoTime();
    private long lastPrint;
    private boolean drawn;

    public Bar(String what, PrintWriter err) {
      this.what = what;
      this.err = err;
      this.tty = System.console() != null && System.console().isTerminal() && System.getenv("STRATA_NO_TTY") == null;
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
      double elapsed = Math.max(1e-9, (now - started) / 1e9);
      double rate = done / elapsed;
      String eta = total > 0 && rate > 0 ? seconds((total - done) / rate) : "?";
      String line;
      if (total > 0) {
        double f = Math.min(1, (double) done / total);
        String bar = tty ? "[" + "#".repeat((int) (f * 30)) + " ".repeat(30 - (int) (f * 30)) + "] " : "";
        line = String.format(Locale.ROOT, "%s %s%5.1f%%  %s/%s %s  %s %s/s  ETA %s",
            what, bar, 100 * f, count(done), count(total), unit, count(rate), unit, eta);
      } else {
        line = String.format(Locale.ROOT, "%s %s %s  %s %s/s", what, count(done), unit, count(rate), unit);
      }
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
