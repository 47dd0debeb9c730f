package io.strata.sdk.loader;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;

/** The batch metadata stored with a cached batch (keys {@code strata.batch.*}). */
final class BatchCodec {
  static final String EPOCH = "strata.batch.epoch";
  static final String STEP = "strata.batch.step";
  static final String PLAN = "strata.batch.plan";
  static final String UNIT_OFFSETS = "strata.batch.unit_offsets";
  static final String UNIT_IDS = "strata.batch.unit_ids";
  static final String WINDOW = "strata.batch.window";
  static final String LOOKAHEAD = "strata.batch.lookahead";
  static final String JOB = "strata.batch.job";

  private BatchCodec() {}

  static Map<String, String> metadata(Batch b) {
    Map<String, String> m = new LinkedHashMap<>();
    m.put(EPOCH, Integer.toString(b.epoch()));
    m.put(STEP, Long.toString(b.step()));
    m.put(PLAN, Integer.toString(b.planHash()));
    ByteBuffer offsets = ByteBuffer.allocate(4 * b.unitOffsets().length).order(ByteOrder.LITTLE_ENDIAN);
    for (int o : b.unitOffsets()) {
      offsets.putInt(o);
    }
    ByteBuffer ids = ByteBuffer.allocate(8 * b.unitIds().length).order(ByteOrder.LITTLE_ENDIAN);
    for (long id : b.unitIds()) {
      ids.putLong(id);
    }
    m.put(UNIT_OFFSETS, Base64.getEncoder().encodeToString(offsets.array()));
    m.put(UNIT_IDS, Base64.getEncoder().encodeToString(ids.array()));
    m.put(WINDOW, Integer.toString(b.windowLength()));
    m.put(LOOKAHEAD, Integer.toString(b.lookahead()));
    return m;
  }

  static int[] offsets(String base64) {
    ByteBuffer b = ByteBuffer.wrap(Base64.getDecoder().decode(base64)).order(ByteOrder.LITTLE_ENDIAN);
    int[] out = new int[b.remaining() / 4];
    for (int i = 0; i < out.length; i++) {
      out[i] = b.getInt();
    }
    return out;
  }

  static long[] ids(String base64) {
    ByteBuffer b = ByteBuffer.wrap(Base64.getDecoder().decode(base64)).order(ByteOrder.LITTLE_ENDIAN);
    long[] out = new long[b.remaining() / 8];
    for (int i = 0; i < out.length; i++) {
      out[i] = b.getLong();
    }
    return out;
  }
}
