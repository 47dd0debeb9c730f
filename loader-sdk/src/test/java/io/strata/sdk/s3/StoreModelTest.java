package io.strata.sdk.s3;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import org.junit.jupiter.api.Test;

class StoreModelTest {
  private static final S3Settings PRIOR = S3Settings.DEFAULT; // 100 ms, 90 MB/s

  @Test
  void theSettingsStandUntilEnoughRequestsWereTimed() {
    StoreModel m = new StoreModel();
    assertEquals(9_000_000, m.gapBytes(PRIOR), "100 ms at 90 MB/s");
    for (int i = 0; i < StoreModel.FIRST_BYTE_SAMPLES - 1; i++) {
      m.firstByte(2_000_000); // 2 ms
    }
    assertEquals(9_000_000, m.gapBytes(PRIOR), "one first byte short");
    m.firstByte(2_000_000);
    assertEquals(0.002, m.firstByteSeconds(PRIOR), 1e-12);
    assertEquals(180_000, m.gapBytes(PRIOR), "2 ms at the prior's 90 MB/s");
    for (int i = 0; i < StoreModel.RATE_SAMPLES; i++) {
      m.body(1_000_000, 10_000_000); // 1 MB in 10 ms: 100 MB/s
      m.body(1000, 1); // too small to say anything of the rate
    }
    assertEquals(100e6, m.bytesPerSecond(PRIOR), 1e-3);
    assertEquals(200_000, m.gapBytes(PRIOR));
  }

  @Test
  void averagesMoveTowardsNewFiguresAndTheGapIsBounded() {
    StoreModel m = new StoreModel();
    for (int i = 0; i < 200; i++) {
      m.firstByte(1_000_000_000L); // a second
      m.body(1L << 30, 1_000_000_000L); // a GiB a second
    }
    assertEquals(StoreModel.MAX_GAP, m.gapBytes(PRIOR));
    for (int i = 0; i < 200; i++) {
      m.firstByte(1_000_000); // 1 ms
    }
    assertEquals(0.001, m.firstByteSeconds(PRIOR), 1e-6);
  }

  @Test
  void settingsNameWhatIsWrong() {
    S3Settings s = S3Settings.of(Map.of("firstByteMs", "20", "connectionMBps", "50", "partMiB", "16"));
    assertEquals(20, s.firstByteMs());
    assertEquals(16L << 20, s.partBytes());
    assertEquals(1_000_000, new StoreModel().gapBytes(s));
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> S3Settings.of(Map.of("bogus", "1")));
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> S3Settings.of(Map.of("accessKeyId", "a"))); // without its secret
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> S3Settings.of(Map.of("endpoint", "ftp://x")));
    String shown = S3Settings.of(Map.of("accessKeyId", "AKIAEXAMPLE", "secretAccessKey", "s3cr3t-value")).toString();
    assertEquals(false, shown.contains("s3cr3t-value") || shown.contains("AKIAEXAMPLE"), shown);
  }
}
