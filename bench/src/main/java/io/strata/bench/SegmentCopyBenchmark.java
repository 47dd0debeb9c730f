package io.strata.bench;

import io.strata.sdk.Column;
import io.strata.sdk.format.ColumnBuilder;
import io.strata.sdk.FeatureType;
import io.strata.sdk.format.SegmentFile;
import io.strata.sdk.format.SegmentInfo;
import io.strata.sdk.format.SegmentWriter;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Copying a feature column range out of a mapped segment, next to {@code MemorySegment.copy}
 * between two native buffers of the same size (the ceiling), in the same run.
 *
 * <p>The segment holds one float64 column of 8 Mi rows (64 MiB, resident in the page cache after
 * warm-up). Each operation copies {@code rangeBytes} starting at a random row: {@code
 * segmentColumnRange} from the segment's zero-copy column view, {@code segmentAppendRange}
 * through {@link ColumnBuilder#appendRange} (the path batch assembly uses), and {@code
 * nativeToNative} from an ordinary native buffer with the same bytes.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow", "-Xmx1g"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class SegmentCopyBenchmark {
  static final int ROWS = 8 << 20;

  @Param({"65536", "1048576", "16777216"})
  public int rangeBytes;

  private Path dir;
  private SegmentFile segment;
  private Column column;
  private Arena arena;
  private MemorySegment nativeSource;
  private MemorySegment destination;
  private long[] starts;
  private int next;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    dir = Files.createTempDirectory("strata-bench-copy");
    Path file = dir.resolve("seg.arrow");
    try (Arena build = Arena.ofConfined()) {
      ColumnBuilder b = new ColumnBuilder(FeatureType.FLOAT64, build, ROWS);
      SplittableRandom r = new SplittableRandom(1);
      for (int i = 0; i < ROWS; i++) {
        b.appendDouble(r.nextDouble());
      }
      SequencedMap<String, Column> cols = new LinkedHashMap<>();
      cols.put("x", b.build());
      SegmentWriter.write(file, new SegmentInfo("bench", "v1", 0, 0, ROWS, List.of("x")), cols);
    }
    segment = SegmentFile.open(file, SegmentFile.Verify.ALWAYS);
    column = segment.column("x");
    arena = Arena.ofShared();
    nativeSource = arena.allocate(column.values().byteSize(), 64);
    MemorySegment.copy(column.values(), 0, nativeSource, 0, nativeSource.byteSize());
    destination = arena.allocate(rangeBytes, 64);
    SplittableRandom r = new SplittableRandom(2);
    starts = new long[4096];
    int rowsPerRange = rangeBytes / 8;
    for (int i = 0; i < starts.length; i++) {
      starts[i] = r.nextInt(ROWS - rowsPerRange);
    }
  }

  private long nextStart() {
    next = (next + 1) & (starts.length - 1);
    return starts[next];
  }

  @Benchmark
  public MemorySegment segmentColumnRange() {
    MemorySegment.copy(column.values(), nextStart() * 8, destination, 0, rangeBytes);
    return destination;
  }

  @Benchmark
  public MemorySegment nativeToNative() {
    MemorySegment.copy(nativeSource, nextStart() * 8, destination, 0, rangeBytes);
    return destination;
  }

  @Benchmark
  public Column segmentAppendRange() {
    try (Arena batch = Arena.ofConfined()) {
      ColumnBuilder b = new ColumnBuilder(FeatureType.FLOAT64, batch, rangeBytes / 8);
      b.appendRange(column, (int) nextStart(), rangeBytes / 8);
      return b.build();
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    segment.close();
    arena.close();
    try (var s = Files.list(dir)) {
      for (Path p : s.toList()) {
        Files.delete(p);
      }
    }
    Files.delete(dir);
  }
}
