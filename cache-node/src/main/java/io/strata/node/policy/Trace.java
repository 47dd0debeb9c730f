package io.strata.node.policy;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A read trace: one read of one feature chunk by one job per row, in time order, as CSV with the
 * header {@code time,job,dataset,feature,chunk,bytes}. Jobs and keys are interned to dense ints
 * so that policies work on arrays.
 */
public final class Trace {
  public static final String HEADER = "time,job,dataset,feature,chunk,bytes";

  private final double[] time;
  private final int[] job;
  private final int[] key;
  private final long[] keyBytes;
  private final List<String> jobNames;
  private final List<String> keyNames;

  Trace(double[] time, int[] job, int[] key, long[] keyBytes, List<String> jobNames, List<String> keyNames) {
    this.time = time;
    this.job = job;
    this.key = key;
    this.keyBytes = keyBytes;
    this.jobNames = jobNames;
    this.keyNames = keyNames;
  }

  /** Number of reads. */
  public int size() {
    return time.length;
  }

  public double time(int i) {
    return time[i];
  }

  public int job(int i) {
    return job[i];
  }

  public int key(int i) {
    return key[i];
  }

  /** Bytes of key {@code k} (a feature chunk has one size). */
  public long bytes(int k) {
    return keyBytes[k];
  }

  public int jobs() {
    return jobNames.size();
  }

  public int keys() {
    return keyNames.size();
  }

  public String jobName(int j) {
    return jobNames.get(j);
  }

  /** {@code dataset/feature/chunk} of key {@code k}. */
  public String keyName(int k) {
    return keyNames.get(k);
  }

  /** Sum of the sizes of every key read at least once. */
  public long distinctBytes() {
    long b = 0;
    for (long x : keyBytes) {
      b += x;
    }
    return b;
  }

  /** Sum of the bytes of every read. */
  public long totalBytes() {
    long b = 0;
    for (int k : key) {
      b += keyBytes[k];
    }
    return b;
  }

  /** Builds a trace row by row. */
  public static final class Builder {
    private double[] time = new double[1024];
    private int[] job = new int[1024];
    private int[] key = new int[1024];
    private long[] keyBytes = new long[256];
    private final Map<String, Integer> jobs = new HashMap<>();
    private final Map<String, Integer> keys = new HashMap<>();
    private final List<String> jobNames = new ArrayList<>();
    private final List<String> keyNames = new ArrayList<>();
    private int n;
    private double last = Double.NEGATIVE_INFINITY;

    /** Adds a read; rows must come in time order and a key keeps one size. */
    public Builder add(double t, String jobName, String dataset, String feature, int chunk, long bytes) {
      if (!(t >= last)) {
        throw new IllegalArgumentException("row " + (n + 1) + ": time " + t + " goes back from " + last + " (rows must be in time order)");
      }
      if (bytes <= 0) {
        throw new IllegalArgumentException("row " + (n + 1) + ": bytes must be positive, got " + bytes);
      }
      if (chunk < 0) {
        throw new IllegalArgumentException("row " + (n + 1) + ": chunk must not be negative, got " + chunk);
      }
      last = t;
      int j = jobs.computeIfAbsent(jobName, x -> {
        jobNames.add(x);
        return jobNames.size() - 1;
      });
      String name = dataset + "/" + feature + "/" + chunk;
      Integer k = keys.get(name);
      if (k == null) {
        k = keyNames.size();
        keys.put(name, k);
        keyNames.add(name);
        if (k == keyBytes.length) {
          keyBytes = Arrays.copyOf(keyBytes, k * 2);
        }
        keyBytes[k] = bytes;
      } else if (keyBytes[k] != bytes) {
        throw new IllegalArgumentException(
            "row " + (n + 1) + ": " + name + " has " + bytes + " bytes but had " + keyBytes[k] + " before");
      }
      if (n == time.length) {
        time = Arrays.copyOf(time, n * 2);
        job = Arrays.copyOf(job, n * 2);
        key = Arrays.copyOf(key, n * 2);
      }
      time[n] = t;
      job[n] = j;
      key[n] = k;
      n++;
      return this;
    }

    public Trace build() {
      return new Trace(Arrays.copyOf(time, n), Arrays.copyOf(job, n), Arrays.copyOf(key, n),
          Arrays.copyOf(keyBytes, keyNames.size()), List.copyOf(jobNames), List.copyOf(keyNames));
    }
  }

  /** Reads a CSV trace; a malformed row is an {@link IllegalArgumentException} naming the line. */
  public static Trace read(Path file) throws IOException {
    Builder b = new Builder();
    try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      String header = r.readLine();
      if (header == null) {
        throw new IllegalArgumentException(file + " is empty; expected the header '" + HEADER + "'");
      }
      if (!header.strip().replace(" ", "").equalsIgnoreCase(HEADER)) {
        throw new IllegalArgumentException(file + ": header is '" + header + "', expected '" + HEADER + "'");
      }
      String line;
      int lineNo = 1;
      while ((line = r.readLine()) != null) {
        lineNo++;
        if (line.isBlank()) {
          continue;
        }
        String[] f = line.split(",", -1);
        if (f.length != 6) {
          throw new IllegalArgumentException(file + " line " + lineNo + ": expected 6 fields, got " + f.length + ": " + line);
        }
        try {
          b.add(Double.parseDouble(f[0].strip()), f[1].strip(), f[2].strip(), f[3].strip(), Integer.parseInt(f[4].strip()),
              Long.parseLong(f[5].strip()));
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException(file + " line " + lineNo + ": bad number (" + e.getMessage() + "): " + line);
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException(file + " line " + lineNo + ": " + e.getMessage());
        }
      }
    }
    return b.build();
  }

  /** Writes the trace as CSV. */
  public void write(Path file) throws IOException {
    try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      w.write(HEADER);
      w.newLine();
      for (int i = 0; i < size(); i++) {
        String[] k = keyNames.get(key[i]).split("/");
        w.write(String.format(Locale.ROOT, "%.3f,%s,%s,%s,%s,%d", time[i], jobNames.get(job[i]), k[0], k[1], k[2], keyBytes[key[i]]));
        w.newLine();
      }
    }
  }
}
