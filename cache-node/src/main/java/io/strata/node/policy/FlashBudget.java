package io.strata.node.policy;

/**
 * The flash write budget of {@link StrataPolicy}: a token bucket refilled at the budget's rate
 * (bytes per hour), holding at most one hour's worth, spent by every admission. No budget (0 or
 * less) is an endless bucket. It also keeps the policy's clock: the time of the latest refill.
 *
 * <p>Not thread-safe: its policy's alone, under whatever serializes the policy.
 */
final class FlashBudget {
  private double bytesPerSecond;
  private double burst;
  private double tokens;
  private double lastRefill = Double.NaN;

  /** A full bucket of {@code bytesPerHour} (0 or less: none). */
  FlashBudget(double bytesPerHour) {
    this.bytesPerSecond = bytesPerHour > 0 ? bytesPerHour / 3600 : Double.POSITIVE_INFINITY;
    this.burst = bytesPerHour > 0 ? bytesPerHour : Double.POSITIVE_INFINITY;
    this.tokens = burst;
  }

  /** Changes the rate (bytes per hour; 0 for none); the bucket keeps what it holds, up to the new burst. */
  void set(double bytesPerHour) {
    if (bytesPerHour < 0) {
      throw new IllegalArgumentException("flash write budget must not be negative: " + bytesPerHour);
    }
    bytesPerSecond = bytesPerHour > 0 ? bytesPerHour / 3600 : Double.POSITIVE_INFINITY;
    burst = bytesPerHour > 0 ? bytesPerHour : Double.POSITIVE_INFINITY;
    tokens = Math.min(tokens, burst);
  }

  /** Adds what the time since the last refill earned (the first call only starts the clock). */
  void refill(double time) {
    if (Double.isNaN(lastRefill)) {
      lastRefill = time;
      return;
    }
    if (time > lastRefill) {
      tokens = Math.min(burst, tokens + (time - lastRefill) * bytesPerSecond);
      lastRefill = time;
    }
  }

  /** The time of the latest refill: the policy's idea of now between reads (0 before any). */
  double now() {
    return Double.isNaN(lastRefill) ? 0 : lastRefill;
  }

  /** Bytes that may be written right now. */
  double tokens() {
    return tokens;
  }

  /** Whether less than a quarter of the burst is left: only chunks with reads ahead are written then. */
  boolean low() {
    return tokens < 0.25 * burst;
  }

  void spend(long bytes) {
    tokens -= bytes;
  }

  /** The budget in bytes per hour; 0 for none. */
  double perHour() {
    return Double.isInfinite(burst) ? 0 : burst;
  }
}
