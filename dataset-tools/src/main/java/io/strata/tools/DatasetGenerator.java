package io.strata.tools;

import io.strata.sdk.internal.SafePaths;
import io.strata.sdk.files.DatasetFiles;
import io.strata.sdk.files.Manifest;
import io.strata.sdk.files.OrcIo;
import io.strata.sdk.files.OrcTypes;
import io.strata.sdk.files.SampleIndex;
import io.strata.sdk.files.StreamChecksums;
import io.strata.sdk.files.FileTails;
import io.strata.sdk.files.StripeFooters;
import io.strata.sdk.ChunkInfo;
import io.strata.sdk.FeatureInfo;
import io.strata.sdk.Progress;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.orc.CompressionKind;
import org.apache.orc.OrcFile;
import org.apache.orc.Reader;
import org.apache.orc.TypeDescription;
import org.apache.orc.Writer;

/**
 * Generates realistic event datasets (seed 000's time-series table): rows are events grouped and
 * sorted by {@code sample_id}, with Zipf-distributed (power-law) sample lengths, an increasing
 * {@code event_time} within each sample, and feature columns of mixed types and widths: floats,
 * Zipf categorical strings, booleans, small and large integers, decimals, dates, nullable scores,
 * fixed-length embeddings and variable-length token lists.
 *
 * <p>The output is a function of the options alone: the same seed gives identical bytes. Files are
 * generated in parallel, each from its own random stream, and each chunk (ORC stripe) holds
 * exactly {@code rowsPerChunk} rows except the last. The manifest is written last, so an
 * interrupted run leaves no dataset that looks complete.
 */
@SuppressWarnings("exports") // its signatures name the SDK's dataset files, exported to Strata's modules alone
public final class DatasetGenerator {
  static final int BATCH = 4096;
  private static final long EPOCH_2023 = 1_672_531_200L;

  private DatasetGenerator() {}

  /**
   * What to generate.
   *
   * @param name dataset name
   * @param rows total rows (events)
   * @param features number of columns including {@code sample_id} and {@code event_time} (at least 2)
   * @param seed random seed; the same seed gives identical files
   * @param meanSampleLength target mean rows per sample
   * @param rowsPerChunk rows per ORC stripe (the chunk, the unit of promotion)
   * @param chunksPerFile stripes per ORC file
   * @param embeddingDim length of the {@code embedding} list feature
   * @param threads files written in parallel
   * @param replace overwrite an existing dataset in the directory
   */
  public record Options(
      String name,
      long rows,
      int features,
      long seed,
      int meanSampleLength,
      int rowsPerChunk,
      int chunksPerFile,
      int embeddingDim,
      int threads,
      boolean replace) {
    public Options {
      Manifest.checkName(name);
      require(rows >= 1, "rows must be at least 1, got " + rows);
      require(features >= 2, "features must be at least 2 (sample_id and event_time), got " + features);
      require(features <= 1000, "features must be at most 1000, got " + features);
      require(meanSampleLength >= 1, "mean sample length must be at least 1, got " + meanSampleLength);
      require(rows / meanSampleLength < Integer.MAX_VALUE / 2, "too many samples: raise the mean sample length");
      require(rowsPerChunk >= 1, "rows per chunk must be at least 1, got " + rowsPerChunk);
      require(chunksPerFile >= 1, "chunks per file must be at least 1, got " + chunksPerFile);
      require(embeddingDim >= 1 && embeddingDim <= 4096, "embedding dimension must be in 1..4096, got " + embeddingDim);
      require(threads >= 1, "threads must be at least 1, got " + threads);
    }

    /** Defaults for everything but the name, row count and seed. */
    public static Options of(String name, long rows, long seed) {
      return new Options(
          name, rows, 10, seed, 400, 1 << 20, 4, 8, Math.max(1, Runtime.getRuntime().availableProcessors()), false);
    }

    public Options withFeatures(int n) {
      return new Options(name, rows, n, seed, meanSampleLength, rowsPerChunk, chunksPerFile, embeddingDim, threads, replace);
    }

    public Options withChunking(int rowsPerChunk, int chunksPerFile) {
      return new Options(name, rows, features, seed, meanSampleLength, rowsPerChunk, chunksPerFile, embeddingDim, threads, replace);
    }

    public Options withMeanSampleLength(int n) {
      return new Options(name, rows, features, seed, n, rowsPerChunk, chunksPerFile, embeddingDim, threads, replace);
    }

    public Options withThreads(int n) {
      return new Options(name, rows, features, seed, meanSampleLength, rowsPerChunk, chunksPerFile, embeddingDim, n, replace);
    }

    public Options withReplace(boolean r) {
      return new Options(name, rows, features, seed, meanSampleLength, rowsPerChunk, chunksPerFile, embeddingDim, threads, r);
    }

    private static void require(boolean ok, String message) {
      if (!ok) {
        throw new IllegalArgumentException(message);
      }
    }
  }

  /**
   * What was generated.
   *
   * @param manifest the dataset's manifest
   * @param bytes total ORC bytes written
   * @param seconds wall time
   */
  public record Report(Manifest manifest, long bytes, double seconds) {
    public double rowsPerSecond() {
      return manifest.rows() / seconds;
    }

    public double megabytesPerSecond() {
      return bytes / 1e6 / seconds;
    }
  }

  /** Generates into {@code dir}; see the class comment. */
  public static Report generate(Path dir, Options o, Progress progress) throws IOException {
    Objects.requireNonNull(progress, "progress");
    long started = System.nanoTime();
    SafePaths.trusted(dir); // no link another user planted on the way to what is written (or replaced)
    if (Files.exists(dir.resolve(Manifest.FILE_NAME))) {
      if (!o.replace()) {
        throw new FileAlreadyExistsException(
            dir.resolve(Manifest.FILE_NAME).toString(), null, "a dataset already exists there (use --replace)");
      }
      Files.delete(dir.resolve(Manifest.FILE_NAME));
    }
    Files.createDirectories(dir);
    long[] sampleStarts = sampleStarts(o);
    int samples = sampleStarts.length - 1;
    GeneratedColumns.Strings strings = new GeneratedColumns.Strings(o.seed());
    List<GeneratedColumns.Template> templates = GeneratedColumns.templates(o.features(), o.embeddingDim(), strings);
    TypeDescription schema = TypeDescription.createStruct();
    for (GeneratedColumns.Template t : templates) {
      schema.addField(t.name(), OrcTypes.orcType(t.type()));
    }
    long rowsPerFile = (long) o.rowsPerChunk() * o.chunksPerFile();
    int files = (int) ((o.rows() + rowsPerFile - 1) / rowsPerFile);
    AtomicLong written = new AtomicLong();
    AtomicInteger threadNo = new AtomicInteger();
    ThreadFactory named = r -> {
      Thread t = new Thread(r, "strata-generate-" + threadNo.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
    List<Path> paths = new ArrayList<>();
    try (ExecutorService pool = Executors.newFixedThreadPool(Math.min(o.threads(), files), named)) {
      List<Future<?>> futures = new ArrayList<>();
      for (int f = 0; f < files; f++) {
        int file = f;
        Path path = dir.resolve(String.format("part-%05d.orc", f));
        paths.add(path);
        futures.add(pool.submit(() -> {
          writeFile(path, file, o, schema, templates, sampleStarts, written, progress);
          return null;
        }));
      }
      for (Future<?> fu : futures) {
        try {
          fu.get();
        } catch (ExecutionException e) {
          futures.forEach(x -> x.cancel(true));
          Throwable c = e.getCause();
          if (c instanceof UncheckedIOException u) {
            throw u.getCause();
          }
          if (c instanceof IOException io) {
            throw io;
          }
          throw new IOException("generating " + dir + " failed: " + c, c);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted while generating " + dir, e);
        }
      }
    }
    // Stripe map, checksums and version, read back from the files written.
    List<Manifest.OrcFileInfo> fileInfos = new ArrayList<>();
    List<ChunkInfo> chunks = new ArrayList<>();
    long row = 0;
    long bytes = 0;
    for (int f = 0; f < files; f++) {
      Path path = paths.get(f);
      long fileRows;
      String crc = DatasetFiles.crc32c(path);
      try (Reader reader = OrcIo.open(path)) {
        fileRows = DatasetImporter.addStripes(reader, f, row, chunks);
        StripeFooters.write(path, reader, crc);
      }
      row += fileRows;
      long size = Files.size(path);
      bytes += size;
      fileInfos.add(new Manifest.OrcFileInfo(path.getFileName().toString(), size, fileRows, crc));
    }
    long[] ids = new long[samples];
    long[] ends = new long[samples];
    for (int s = 0; s < samples; s++) {
      ids[s] = sampleId(s);
      ends[s] = sampleStarts[s + 1];
    }
    String indexPath = "samples.idx";
    SampleIndex.write(dir.resolve(indexPath), ids, sampleStarts, ends, samples);
    List<FeatureInfo> features = DatasetImporter.features(schema);
    Manifest manifest =
        new Manifest(
            o.name(),
            DatasetFiles.version(fileInfos),
            row,
            features,
            fileInfos,
            chunks,
            new Manifest.SampleIndexInfo("sample_id", indexPath, samples))
        .withStreamChecksums(StreamChecksums.write(dir.resolve(StreamChecksums.FILE_NAME), StreamChecksums.FILE_NAME, paths));
    FileTails.write(dir, manifest); // after the sidecars it carries
    manifest.write(dir);
    return new Report(manifest, bytes, (System.nanoTime() - started) / 1e9);
  }

  static long sampleId(int ordinal) {
    return 1_000_000L + 3L * ordinal;
  }

  /**
   * Sample boundaries: lengths follow a power law (continuous Zipf, exponent 1.6) between a
   * minimum and 40 times the mean, with the minimum chosen so that the mean is about
   * {@code meanSampleLength}; the last sample is cut at the row count.
   */
  static long[] sampleStarts(Options o) {
    double exponent = 1.6;
    double max = 40.0 * o.meanSampleLength();
    double lo = 1e-3;
    double hi = o.meanSampleLength();
    for (int i = 0; i < 60; i++) {
      double mid = (lo + hi) / 2;
      if (Zipf.boundedMean(mid, max, exponent) < o.meanSampleLength()) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    double min = Math.max(1e-3, lo);
    SplittableRandom r = new SplittableRandom(o.seed() * 0x9E3779B97F4A7C15L + 1);
    long[] starts = new long[1024];
    int n = 0;
    long row = 0;
    while (row < o.rows()) {
      if (n + 2 > starts.length) {
        starts = Arrays.copyOf(starts, starts.length * 2);
      }
      starts[n++] = row;
      long len = Math.max(1, Math.round(Zipf.bounded(r, min, max, exponent)));
      row = Math.min(o.rows(), row + len);
    }
    starts[n++] = o.rows();
    return Arrays.copyOf(starts, n);
  }

  private static void writeFile(
      Path path,
      int file,
      Options o,
      TypeDescription schema,
      List<GeneratedColumns.Template> templates,
      long[] sampleStarts,
      AtomicLong written,
      Progress progress)
      throws IOException {
    long rowsPerFile = (long) o.rowsPerChunk() * o.chunksPerFile();
    long first = file * rowsPerFile;
    long end = Math.min(o.rows(), first + rowsPerFile);
    Files.deleteIfExists(path);
    SplittableRandom r = new SplittableRandom(mix(o.seed() + 0x632BE59BD9B4E019L * (file + 1)));
    OrcFile.WriterOptions wo =
        OrcFile.writerOptions(OrcIo.CONF)
            .fileSystem(OrcIo.FS)
            .setSchema(schema)
            .compress(CompressionKind.ZSTD)
            .stripeSize(1L << 40)
            .blockPadding(false)
            .memory(new OrcIo.ExplicitStripes())
            .useUTCTimestamp(true)
            .rowIndexStride(10_000);
    VectorizedRowBatch batch = schema.createRowBatch(TypeDescription.RowBatchVersion.USE_DECIMAL64, BATCH);
    GeneratedColumns.Rows rows = new GeneratedColumns.Rows();
    int sample = Arrays.binarySearch(sampleStarts, first);
    if (sample < 0) {
      sample = -sample - 2;
    }
    try (Writer w = OrcFile.createWriter(OrcIo.hadoopPath(path), wo)) {
      long row = first;
      while (row < end) {
        long chunkEnd = Math.min(end, row + o.rowsPerChunk());
        while (row < chunkEnd) {
          batch.reset();
          int n = (int) Math.min(BATCH, chunkEnd - row);
          for (int i = 0; i < n; i++) {
            long g = row + i;
            while (sampleStarts[sample + 1] <= g) {
              sample++;
            }
            long pos = g - sampleStarts[sample];
            rows.sample[i] = sampleId(sample);
            rows.position[i] = pos;
            // Events start somewhere in 2023-2024 and follow every 15 minutes to 3 hours.
            long base = EPOCH_2023 + (mix(sample * 0x9E37L + o.seed()) >>> 40) % (2 * 365 * 86_400L);
            rows.eventSeconds[i] = base + pos * 5_400 + (mix(g ^ o.seed()) >>> 50) % 4_500;
          }
          rows.n = n;
          for (int c = 0; c < templates.size(); c++) {
            templates.get(c).filler().fill(batch.cols[c], rows, r);
          }
          batch.size = n;
          w.addRowBatch(batch);
          row += n;
          progress.update(written.addAndGet(n), o.rows(), "rows");
        }
        w.writeIntermediateFooter();
      }
    }
  }

  /** A 64-bit mixing function (splitmix64's finalizer). */
  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
