package io.strata.sdk.files;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The HDD model against request streams computed by hand, and against what such drives are known to do. */
class DiskModelTest {
  private static final DiskModel M = DiskModel.HDD;
  private static final double MS = 1e-3;

  @Test
  void aStreamOfRequestsCostsWhatTheHandComputedTimesSay() {
    DiskModel.Replay r = M.replay();
    final long B = 10_000_000; // where the stream starts on the drive
    // First: no position known, an average seek (7.4) and latency (30 / 7,200 s) plus the overhead (0.2) and 4 KiB at 200 MB/s.
    assertEquals(0.2 + 7.4 + 4.166_667 + 0.020_48, r.read(B, 4096) / MS, 1e-5);
    // Where the previous ended: overhead and transfer only.
    assertEquals(0.2 + 0.020_48, r.read(B + 4096, 4096) / MS, 1e-5);
    // A forward skip of 174,000 bytes: the skipped bytes pass under the head (0.87 ms), then 64 KiB.
    assertEquals(0.2 + 0.87 + 0.327_68, r.read(B + 8192 + 174_000, 65_536) / MS, 1e-5);
    long end = B + 8192 + 174_000 + 65_536;
    // Back 1 MB: a seek of 0.23 + 7.17 * sqrt(1e6 / (4e12 / 3)) = 0.236 209 ms, latency, overhead, 4 KiB.
    assertEquals(0.2 + 0.236_209 + 4.166_667 + 0.020_48, r.read(end - 1_000_000, 4096) / MS, 1e-5);
    end = end - 1_000_000 + 4096;
    // Forward 100 MB: seeking (0.23 + 7.17 * 0.008 660 = 0.292 093 ms, plus latency) beats 500 ms of transfer.
    assertEquals(0.2 + 0.292_093 + 4.166_667 + 0.020_48, r.read(end + 100_000_000, 4096) / MS, 1e-5);
    assertEquals(5, r.requests());
    assertEquals(4096 * 4 + 65_536, r.bytes());
    assertEquals(3, r.seeks(), "the first, the one backwards and the long skip");
    assertEquals((0.2 * 5 + 7.4 + 4.166_667 * 3 + 0.87 + 0.236_209 + 0.292_093 + 0.020_48 * 4 + 0.327_68), r.seconds() / MS, 1e-4);
  }

  @Test
  void theModelsOwnFiguresAreThoseOfA7200RpmDrive() {
    // About 100 random 4 KiB reads a second across the whole drive (85 here), up to 200 within a small part of it.
    double whole = M.randomReadsPerSecond(4096, M.capacityBytes());
    assertEquals(1 / ((0.2 + 7.4 + 4.166_667 + 0.020_48) * MS), whole, 0.01);
    double near = M.randomReadsPerSecond(4096, M.capacityBytes() / 100);
    assertTrue(near > 150 && near < 200, "within 1 % of the drive: " + near);
    // About 200 MB/s sequential (1 MiB requests back to back: 192.7 MB/s).
    assertEquals(1_048_576 / ((0.2 + 5.242_88) * MS) / 1e6, M.sequentialBytesPerSecond(1 << 20) / 1e6, 0.01);
    // A short forward skip costs about its length at the transfer rate.
    assertEquals(0.87 * MS, M.positionSeconds(174_000), 1e-9);
  }

  @Test
  void theBreakEvenGapIsWhereReadingThroughCostsWhatSkippingDoes() {
    long g = M.breakEvenGapBytes();
    assertTrue(g > 900_000 && g < 940_000, "about 4.6 ms of transfer: " + g);
    double skip = M.commandOverheadMs() * MS + M.seekSeconds(g) + M.latencySeconds();
    assertTrue(g / M.bytesPerSecond() <= skip);
    assertTrue((g + 1) / M.bytesPerSecond() > M.commandOverheadMs() * MS + M.seekSeconds(g + 1) + M.latencySeconds());
  }

  @Test
  void badModelsAndRequestsAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> new DiskModel("x", 1, 2, 7200, 1e8, 1L << 40, 0));
    assertThrows(IllegalArgumentException.class, () -> M.replay().read(-1, 10));
  }
}
