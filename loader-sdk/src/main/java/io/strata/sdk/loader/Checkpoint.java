package io.strata.sdk.loader;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A loader's position: the epoch and step of the next batch it will return. It is the whole
 * state needed to resume: the plan (shuffle, shard, batching) is recomputed from the loader's
 * configuration, whose hash travels with the checkpoint so that a checkpoint is never applied to
 * a different plan. Serialized as 20 bytes ({@link #toBytes()}).
 *
 * @param epoch epoch of the next batch
 * @param step step (batch index within the epoch) of the next batch
 * @param planHash hash of the plan that produced it
 */
public record Checkpoint(int epoch, long step, int planHash) {
  private static final int MAGIC = 0x314B4353; // "SCK1"
  public static final int BYTES = 20;

  public Checkpoint {
    if (epoch < 0 || step < 0) {
      throw new IllegalArgumentException("epoch and step must not be negative: " + epoch + ", " + step);
    }
  }

  public byte[] toBytes() {
    return ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN)
        .putInt(MAGIC).putInt(planHash).putInt(epoch).putLong(step).array();
  }

  /** Reads {@link #toBytes()} output; anything else is an {@link IllegalArgumentException}. */
  public static Checkpoint parse(byte[] bytes) {
    if (bytes == null || bytes.length != BYTES) {
      throw new IllegalArgumentException(
          "a checkpoint is " + BYTES + " bytes, got " + (bytes == null ? "none" : bytes.length));
    }
    ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    if (b.getInt() != MAGIC) {
      throw new IllegalArgumentException("not a Strata loader checkpoint (bad magic)");
    }
    int plan = b.getInt();
    int epoch = b.getInt();
    long step = b.getLong();
    return new Checkpoint(epoch, step, plan);
  }
}
