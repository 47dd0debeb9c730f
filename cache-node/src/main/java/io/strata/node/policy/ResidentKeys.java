package io.strata.node.policy;

import java.util.Arrays;

/**
 * The keys {@link StrataPolicy} holds resident and their bytes: a flag per key and a dense list
 * of the resident ones (each key's slot in it, so that a removal is a swap with the last), grown
 * on demand. Sizes are the policy's: it passes the bytes a key takes when it adds, removes or
 * resizes one.
 *
 * <p>Not thread-safe: its policy's alone, under whatever serializes the policy.
 */
final class ResidentKeys {
  private boolean[] resident = new boolean[256];
  private int[] slot = new int[256];
  private int[] keys = new int[256];
  private int count;
  private long bytes;

  /** Room for keys below {@code n}. */
  void ensure(int n) {
    if (n > resident.length) {
      resident = Arrays.copyOf(resident, n);
      slot = Arrays.copyOf(slot, n);
      keys = Arrays.copyOf(keys, n);
    }
  }

  boolean contains(int key) {
    return key < resident.length && resident[key];
  }

  void add(int key, long keyBytes) {
    resident[key] = true;
    slot[key] = count;
    keys[count++] = key;
    bytes += keyBytes;
  }

  void remove(int key, long keyBytes) {
    resident[key] = false;
    int s = slot[key];
    int last = keys[--count];
    keys[s] = last;
    slot[last] = s;
    bytes -= keyBytes;
  }

  /** A resident key's bytes changed by {@code delta}. */
  void resized(long delta) {
    bytes += delta;
  }

  /** Bytes the resident keys take. */
  long bytes() {
    return bytes;
  }

  int count() {
    return count;
  }

  /** The {@code i}-th resident key ({@code 0 <= i < count()}; the order changes as keys go). */
  int key(int i) {
    return keys[i];
  }
}
