package io.strata.node.sim;

import io.strata.sdk.tier.Tier;
import io.strata.node.policy.CachePolicy;
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
 * header {@code time,job,dataset,feature,chunk,bytes}, and optionally what the jobs told the node
 * about their plans, in rows whose feature starts with {@code @}:
 *
 * <ul>
 *   <li>{@code time,job,dataset,@plan,FIRST_STEP,STEPS_PER_EPOCH|SUBSTITUTABLE|F1;F2|STEPS}: the
 *       job's plan as the node expanded it: from global step FIRST_STEP on, each step's chunks
 *       (steps separated by spaces, a step's chunks by dots; a step reads every listed feature of
 *       each of its chunks); SUBSTITUTABLE is 0 or 1.
 *   <li>{@code time,job,dataset,@step,STEP,0}: the job reported that it reached global step STEP.
 *   <li>{@code time,job,dataset,@end,0,0}: the job ended its plan (or its plan expired).
 * </ul>
 *
 * A read row may carry a seventh field, {@code ssd} or {@code hdd}: which tier served it live (the
 * node's recorded traces have it). Jobs and keys are interned to dense ints so that policies work
 * on arrays; a key named only in plans has size 0 until it is read.
 */
public final class Trace {
  public static final String HEADER = "time,job,dataset,feature,chunk,bytes";

  private final double[] time;
  private final int[] job;
  private final int[] key;
  private final long[] keyBytes;
  private final List<String> jobNames;
  private final List<String> keyNames;
  private final byte[] tier;
  private final List<Control> controls;

  /** The tier that served a read live, when the trace says. */
  public enum Tier {
    UNKNOWN,
    SSD,
    HDD
  }

  /** What a job told the node besides its reads; applies before read {@code at}. */
  public sealed interface Control permits PlanRecord, StepRecord, EndRecord {
    int at();

    double time();

    int job();

    String dataset();
  }

  /** A declared plan, expanded; {@code plan}'s keys are this trace's keys. */
  public record PlanRecord(int at, double time, int job, String dataset, List<String> features, int[][] stepChunks,
      CachePolicy.JobPlan plan) implements Control {}

  /** The job reached global step {@code step}. */
  public record StepRecord(int at, double time, int job, String dataset, long step) implements Control {}

  /** The job's plan ended. */
  public record EndRecord(int at, double time, int job, String dataset) implements Control {}

  Trace(double[] time, int[] job, int[] key, long[] keyBytes, List<String> jobNames, List<String> keyNames, byte[] tier,
      List<Control> controls) {
    this.time = time;
    this.job = job;
    this.key = key;
    this.keyBytes = keyBytes;
    this.jobNames = jobNames;
    this.keyNames = keyNames;
    this.tier = tier;
    this.controls = controls;
  }

  /** The same reads without plan, step or end records: what a node learns when jobs declare nothing. */
  public Trace withoutPlans() {
    return new Trace(time, job, key, keyBytes, jobNames, keyNames, tier, List.of());
  }

  /** Plan, step and end records in order. */
  public List<Control> controls() {
    return controls;
  }

  /** Which tier served read {@code i} live. */
  public Tier tier(int i) {
    return Tier.values()[tier[i]];
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
    /** An empty trace. */
    public Builder() {}

    private double[] time = new double[1024];
    private int[] job = new int[1024];
    private int[] key = new int[1024];
    private long[] keyBytes = new long[256];
    private final Map<String, Integer> jobs = new HashMap<>();
    private final Map<String, Integer> keys = new HashMap<>();
    private final List<String> jobNames = new ArrayList<>();
    private final List<String> keyNames = new ArrayList<>();
    private byte[] tier = new byte[1024];
    private final List<Control> controls = new ArrayList<>();
    private int n;
    private int rows;
    private double last = Double.NEGATIVE_INFINITY;

    private void checkTime(double t) {
      rows++;
      if (!(t >= last)) {
        throw new IllegalArgumentException("row " + rows + ": time " + t + " goes back from " + last + " (rows must be in time order)");
      }
      last = t;
    }

    private int job(String jobName) {
      return jobs.computeIfAbsent(jobName, x -> {
        jobNames.add(x);
        return jobNames.size() - 1;
      });
    }

    private int key(String dataset, String feature, int chunk) {
      String name = dataset + "/" + feature + "/" + chunk;
      Integer k = keys.get(name);
      if (k == null) {
        k = keyNames.size();
        keys.put(name, k);
        keyNames.add(name);
        if (k == keyBytes.length) {
          keyBytes = Arrays.copyOf(keyBytes, k * 2);
        }
      }
      return k;
    }

    /** Adds a read; rows must come in time order and a key keeps one size. */
    public Builder add(double t, String jobName, String dataset, String feature, int chunk, long bytes) {
      return add(t, jobName, dataset, feature, chunk, bytes, Tier.UNKNOWN);
    }

    /** Adds a read served live by {@code servedBy}. */
    public Builder add(double t, String jobName, String dataset, String feature, int chunk, long bytes, Tier servedBy) {
      checkTime(t);
      if (bytes <= 0) {
        throw new IllegalArgumentException("row " + rows + ": bytes must be positive, got " + bytes);
      }
      if (chunk < 0) {
        throw new IllegalArgumentException("row " + rows + ": chunk must not be negative, got " + chunk);
      }
      checkName(feature, "feature");
      int j = job(jobName);
      int k = key(dataset, feature, chunk);
      if (keyBytes[k] == 0) {
        keyBytes[k] = bytes;
      } else if (keyBytes[k] != bytes) {
        throw new IllegalArgumentException(
            "row " + rows + ": " + keyNames.get(k) + " has " + bytes + " bytes but had " + keyBytes[k] + " before");
      }
      if (n == time.length) {
        time = Arrays.copyOf(time, n * 2);
        job = Arrays.copyOf(job, n * 2);
        key = Arrays.copyOf(key, n * 2);
        tier = Arrays.copyOf(tier, n * 2);
      }
      time[n] = t;
      job[n] = j;
      key[n] = k;
      tier[n] = (byte) servedBy.ordinal();
      n++;
      return this;
    }

    private void checkName(String name, String what) {
      if (name.isEmpty() || name.startsWith("@") || name.contains(",") || name.contains("|") || name.contains(";")
          || name.contains("\n")) {
        throw new IllegalArgumentException("row " + rows + ": " + what + " '" + name
            + "' cannot be traced (empty, starts with @, or holds , | ; or a line break)");
      }
    }

    /**
     * Adds a job's plan as the node expanded it: from global step {@code firstStep} on, step
     * {@code s} reads every feature of each chunk in {@code stepChunks[s]}.
     */
    public Builder plan(double t, String jobName, String dataset, List<String> features, long firstStep, long stepsPerEpoch,
        boolean substitutable, int[][] stepChunks) {
      checkTime(t);
      if (features.isEmpty()) {
        throw new IllegalArgumentException("row " + rows + ": a plan needs at least one feature");
      }
      for (String f : features) {
        checkName(f, "feature");
      }
      int j = job(jobName);
      int total = 0;
      for (int[] step : stepChunks) {
        total = Math.addExact(total, Math.multiplyExact(step.length, features.size()));
      }
      int[] planKeys = new int[total];
      int[] ends = new int[stepChunks.length];
      int i = 0;
      for (int s = 0; s < stepChunks.length; s++) {
        for (int c : stepChunks[s]) {
          if (c < 0) {
            throw new IllegalArgumentException("row " + rows + ": chunk must not be negative, got " + c);
          }
          for (String f : features) {
            planKeys[i++] = key(dataset, f, c);
          }
        }
        ends[s] = i;
      }
      CachePolicy.JobPlan jp;
      try {
        jp = new CachePolicy.JobPlan(planKeys, ends, firstStep, stepsPerEpoch, substitutable);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("row " + rows + ": " + e.getMessage());
      }
      controls.add(new PlanRecord(n, t, j, dataset, List.copyOf(features), stepChunks, jp));
      return this;
    }

    /** Adds a step report. */
    public Builder step(double t, String jobName, String dataset, long step) {
      checkTime(t);
      if (step < 0) {
        throw new IllegalArgumentException("row " + rows + ": step must not be negative, got " + step);
      }
      controls.add(new StepRecord(n, t, job(jobName), dataset, step));
      return this;
    }

    /** Adds the end of a job's plan. */
    public Builder end(double t, String jobName, String dataset) {
      checkTime(t);
      controls.add(new EndRecord(n, t, job(jobName), dataset));
      return this;
    }

    public Trace build() {
      return new Trace(Arrays.copyOf(time, n), Arrays.copyOf(job, n), Arrays.copyOf(key, n),
          Arrays.copyOf(keyBytes, keyNames.size()), List.copyOf(jobNames), List.copyOf(keyNames), Arrays.copyOf(tier, n),
          List.copyOf(controls));
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
        if (f.length != 6 && !(f.length == 7 && !f[3].strip().startsWith("@"))) {
          throw new IllegalArgumentException(file + " line " + lineNo + ": expected 6 fields, got " + f.length + ": " + line);
        }
        try {
          double t = Double.parseDouble(f[0].strip());
          String job = f[1].strip();
          String ds = f[2].strip();
          switch (f[3].strip()) {
            case "@plan" -> readPlan(b, t, job, ds, Long.parseLong(f[4].strip()), f[5].strip());
            case "@step" -> b.step(t, job, ds, Long.parseLong(f[4].strip()));
            case "@end" -> b.end(t, job, ds);
            default -> {
              if (f[3].strip().startsWith("@")) {
                throw new IllegalArgumentException("unknown record '" + f[3].strip() + "' (expected @plan, @step or @end)");
              }
              Tier tier = Tier.UNKNOWN;
              if (f.length == 7) {
                tier = switch (f[6].strip()) {
                  case "ssd" -> Tier.SSD;
                  case "hdd" -> Tier.HDD;
                  case "" -> Tier.UNKNOWN;
                  default -> throw new IllegalArgumentException("tier must be ssd or hdd, got '" + f[6].strip() + "'");
                };
              }
              b.add(t, job, ds, f[3].strip(), Integer.parseInt(f[4].strip()), Long.parseLong(f[5].strip()), tier);
            }
          }
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException(file + " line " + lineNo + ": bad number (" + e.getMessage() + "): " + line);
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException(file + " line " + lineNo + ": " + e.getMessage());
        }
      }
    }
    return b.build();
  }

  /** Parses the payload of a plan row: {@code STEPS_PER_EPOCH|SUBSTITUTABLE|F1;F2|STEPS}. */
  private static void readPlan(Builder b, double t, String job, String ds, long firstStep, String payload) {
    String[] p = payload.split("\\|", -1);
    if (p.length != 4) {
      throw new IllegalArgumentException("a @plan row's last field is STEPS_PER_EPOCH|SUBSTITUTABLE|FEATURES|STEPS, got '"
          + (payload.length() > 80 ? payload.substring(0, 80) + "..." : payload) + "'");
    }
    String[] steps = p[3].isBlank() ? new String[0] : p[3].strip().split(" ");
    int[][] chunks = new int[steps.length][];
    for (int s = 0; s < steps.length; s++) {
      String[] cs = steps[s].isEmpty() || steps[s].equals("-") ? new String[0] : steps[s].split("\\.");
      chunks[s] = new int[cs.length];
      for (int i = 0; i < cs.length; i++) {
        chunks[s][i] = Integer.parseInt(cs[i]);
      }
    }
    b.plan(t, job, ds, List.of(p[2].split(";")), firstStep, Long.parseLong(p[0]), p[1].equals("1"), chunks);
  }

  /** Writes the trace as CSV, plan records included. */
  public void write(Path file) throws IOException {
    try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      w.write(HEADER);
      w.newLine();
      int c = 0;
      for (int i = 0; i <= size(); i++) {
        while (c < controls.size() && controls.get(c).at() == i) {
          w.write(controlRow(controls.get(c++)));
          w.newLine();
        }
        if (i == size()) {
          break;
        }
        String[] k = keyNames.get(key[i]).split("/");
        w.write(String.format(Locale.ROOT, "%.3f,%s,%s,%s,%s,%d", time[i], jobNames.get(job[i]), k[0], k[1], k[2], keyBytes[key[i]]));
        if (tier[i] != 0) {
          w.write(tier[i] == Tier.SSD.ordinal() ? ",ssd" : ",hdd");
        }
        w.newLine();
      }
    }
  }

  /** The CSV row of a plan, step or end record. */
  public String controlRow(Control c) {
    String head = String.format(Locale.ROOT, "%.3f,%s,%s,", c.time(), jobNames.get(c.job()), c.dataset());
    return head + switch (c) {
      case PlanRecord p -> "@plan," + p.plan().firstStep() + "," + planPayload(p.plan().stepsPerEpoch(), p.plan().substitutable(),
          p.features(), p.stepChunks());
      case StepRecord s -> "@step," + s.step() + ",0";
      case EndRecord e -> "@end,0,0";
    };
  }

  /** The last field of a @plan row. */
  public static String planPayload(long stepsPerEpoch, boolean substitutable, List<String> features, int[][] stepChunks) {
    StringBuilder sb = new StringBuilder();
    sb.append(stepsPerEpoch).append('|').append(substitutable ? 1 : 0).append('|').append(String.join(";", features)).append('|');
    for (int s = 0; s < stepChunks.length; s++) {
      if (s > 0) {
        sb.append(' ');
      }
      if (stepChunks[s].length == 0) {
        sb.append('-');
      }
      for (int i = 0; i < stepChunks[s].length; i++) {
        if (i > 0) {
          sb.append('.');
        }
        sb.append(stepChunks[s][i]);
      }
    }
    return sb.toString();
  }
}
