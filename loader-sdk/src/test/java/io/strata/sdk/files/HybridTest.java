package io.strata.sdk.files;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Random;
import org.apache.parquet.bytes.HeapByteBufferAllocator;
import org.apache.parquet.column.values.rle.RunLengthBitPackingHybridEncoder;
import org.junit.jupiter.api.Test;

/** {@link Hybrid} decodes exactly what parquet-java's encoder writes, runs and bit-packed groups alike, at every width. */
class HybridTest {
  private static byte[] encode(int width, int[] values) throws Exception {
    try (RunLengthBitPackingHybridEncoder e =
        new RunLengthBitPackingHybridEncoder(width, 64, 1 << 20, HeapByteBufferAllocator.getInstance())) {
      for (int v : values) {
        e.writeInt(v);
      }
      java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
      e.toBytes().writeAllTo(out);
      return out.toByteArray();
    }
  }

  @Test
  void everyWidthRoundTripsWithRunsAndPackedGroups() throws Exception {
    Random r = new Random(58);
    for (int width = 0; width <= 32; width++) {
      long bound = width == 32 ? 1L << 32 : 1L << width;
      int n = 1000 + r.nextInt(3000);
      int[] values = new int[n];
      for (int i = 0; i < n; ) {
        // Stretches of one value (RLE runs) between stretches of random ones (bit-packed groups).
        int len = 1 + r.nextInt(40);
        boolean run = r.nextBoolean();
        int v = (int) (r.nextLong() & (bound - 1));
        for (int k = 0; k < len && i < n; k++, i++) {
          values[i] = run ? v : (int) (r.nextLong() & (bound - 1));
        }
      }
      byte[] bytes = encode(width, values);
      int[] out = new int[n];
      int end = Hybrid.decode(ByteBuffer.wrap(bytes), 0, bytes.length, width, out, n);
      assertArrayEquals(values, out, "width " + width);
      assertTrue(end <= bytes.length, "width " + width);
    }
  }

  @Test
  void aLongRunFillsAndFewerValuesThanTheRunHoldsAreTaken() throws Exception {
    int[] values = new int[10_000];
    Arrays.fill(values, 5);
    byte[] bytes = encode(3, values);
    assertTrue(bytes.length < 10, "one run, a few bytes: " + bytes.length);
    int[] out = new int[7];
    Hybrid.decode(ByteBuffer.wrap(bytes), 0, bytes.length, 3, out, 7);
    assertArrayEquals(new int[] {5, 5, 5, 5, 5, 5, 5}, out);
  }

  @Test
  void dataThatEndsEarlyIsRefusedNotReadPast() throws Exception {
    int[] values = new int[64];
    for (int i = 0; i < values.length; i++) {
      values[i] = i % 13;
    }
    byte[] bytes = encode(4, values);
    int[] out = new int[64];
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> Hybrid.decode(ByteBuffer.wrap(bytes), 0, bytes.length - 3, 4, out, 64));
    assertTrue(e.getMessage().contains("ends"), e.getMessage());
    assertThrows(IllegalStateException.class, () -> Hybrid.decode(ByteBuffer.wrap(new byte[0]), 0, 0, 4, out, 1));
    assertThrows(IllegalStateException.class, () -> Hybrid.decode(ByteBuffer.wrap(bytes), 0, bytes.length, 33, out, 1));
    assertEquals(0, Hybrid.decode(ByteBuffer.wrap(new byte[0]), 0, 0, 4, out, 0));
  }
}
