package io.strata.sdk.loader;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A loader's position: the epoch and step of the next batch it will return. It is the whole
 * state needed to resume: the plan (shuffle, shard, batching) is recomputed from the loader's
 * configuration, whose hash travels with the checkpoint so that a checkpoint is never applied to
 * a different plan. Serialized as 20 bytes ({@link #toBytes()}); a loader with substitutable
 * reads, which may deliver the steps of an epoch in another order, also records which steps after
 * {@code step} it already delivered ({@code ahead}), in 28 bytes.
 *
 * @param epoch epoch of the next batch
 * @param step step (batch index within the epoch) of the next batch; with substitutable reads,
 *     the first step of the epoch not delivered yet
 * @param planHash hash of the plan that produced it
 * @param ahead with substitutable reads, bit {@code i} set when step {@code step + i} of the epoch
 *     was delivered already (bit 0 is never set); 0 otherwise
 */
public record Checkpoint(int epoch, long step, int planHash, long ahead) {
  private static final int MAGIC = 0x314B4353; // "SCK1"
  private static final int MAGIC_AHEAD = 0x324B4353; // "SCK2"
  public static final int BYTES = 20;
  /** Bytes of a checkpoint with steps delivered ahead (substitutable reads). */
  public static final int BYTES_AHEAD = 28;

  public Checkpoint {
    if (epoch < 0 || step < 0) {
      throw new IllegalArgumentException("epoch and step must not be negative: " + epoch + ", " + step);
    }
    if ((ahead & 1) != 0) {
      throw new IllegalArgumentException("the step a checkpoint resumes at cannot be delivered already");
    }
  }

  /** A position in a plan read in order. */
  public Checkpoint(int epoch, long step, int planHash) {
    this(epoch, step, planHash, 0);
  }

  public byte[] toBytes() {
    if (ahead == 0) {
      return ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN)
          .putInt(MAGIC).putInt(planHash).putInt(epoch).putLong(step).array();
    }
    return ByteBuffer.allocate(BYTES_AHEAD).order(ByteOrder.LITTLE_ENDIAN)
        .putInt(MAGIC_AHEAD).putInt(planHash).putInt(epoch).putLong(step).putLong(ahead).array();
  }

  /** Reads {@link #toBytes()} output; anything else is an {@link IllegalArgumentException}. */
  public static Checkpoint parse(byte[] bytes) {
    if (bytes == null || (bytes.length != BYTES && bytes.length != BYTES_AHEAD)) {
      throw new IllegalArgumentException(
          "a checkpoint is " + BYTES + " or " + BYTES_AHEAD + " bytes, got " + (bytes == null ? "none" : bytes.length));
    }
    ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    int magic = b.getInt();
    if (magic != (bytes.length == BYTES ? MAGIC : MAGIC_AHEAD)) {
      throw new IllegalArgumentException("not a Strata loader checkpoint (bad magic)");
    }
    int plan = b.getInt();
    int epoch = b.getInt();
    long step = b.getLong();
    long ahead = bytes.length == BYTES_AHEAD ? b.getLong() : 0;
    if (bytes.length == BYTES_AHEAD && ahead == 0) {
      throw new IllegalArgumentException("not a Strata loader checkpoint (a 28-byte checkpoint names steps delivered ahead)");
    }
    return new Checkpoint(epoch, step, plan, ahead);
  }
}
