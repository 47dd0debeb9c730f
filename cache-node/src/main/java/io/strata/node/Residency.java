package io.strata.node;

import io.strata.sdk.format.ResidencyBeacon;
import io.strata.sdk.tiering.SegmentRef;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The SSD tier's segments as {@link TierState} knows them: the segment each resident key is in,
 * the keys being written (placed, not landed) and since when, when each resident key landed, and
 * the residency counter jobs re-resolve by (published through the beacon on this host).
 *
 * <p>Threads and locks: none of its own. {@link TierState} alone holds it, in a field guarded by its
 * monitor, so every call here is made under that monitor.
 */
final class Residency {
  private final Map<Integer, SegmentRef> refs = new HashMap<>();
  /** Keys being written (placed, not landed), and when each was placed. */
  private final Map<Integer, Double> pending = new HashMap<>();
  /** When each resident key's segment landed (a miss of it reported later than that was a stale reader's). */
  private final Map<Integer, Double> landedAt = new HashMap<>();
  /** Changes whenever a segment lands or goes: readers re-resolve when it differs from what they saw. */
  private long counter;
  /** Where {@link #counter} is published to jobs on this host (null: nowhere). */
  private ResidencyBeacon beacon;

  /**
   * Publishes the counter in {@code b} from now on (set once, before any request), continuing from
   * the value a previous run left there so that jobs still mapping it see a change.
   */
  void attach(ResidencyBeacon b) {
    beacon = b;
    counter = Math.max(counter, b.get() + 1);
    b.publish(counter);
  }

  /** Segments landed or went: jobs re-resolve (at their next report's answer, or at once through the beacon). */
  void changed() {
    counter++;
    if (beacon != null) {
      beacon.publish(counter);
    }
  }

  long counter() {
    return counter;
  }

  /** The beacon's file, or null when there is none. */
  String beaconPath() {
    return beacon == null ? null : beacon.path().toString();
  }

  /** The segment holding {@code key}, or null when it is not resident. */
  SegmentRef segment(int key) {
    return refs.get(key);
  }

  boolean resident(int key) {
    return refs.containsKey(key);
  }

  boolean inFlight(int key) {
    return pending.containsKey(key);
  }

  /** Neither resident nor being written: a placement of it would be new. */
  boolean absent(int key) {
    return !refs.containsKey(key) && !pending.containsKey(key);
  }

  /** When {@code key}'s segment landed, or null when it is not resident (or was found at start-up). */
  Double landedAt(int key) {
    return landedAt.get(key);
  }

  /** {@code key} is being written from {@code now} on. */
  void placing(int key, double now) {
    pending.put(key, now);
  }

  /** {@code key} is no longer being written; returns when it was placed (null: it was not). */
  Double placed(int key) {
    return pending.remove(key);
  }

  /** A segment found on disk at start-up holds {@code key}. */
  void found(int key, SegmentRef ref) {
    refs.put(key, ref);
  }

  /** {@code key}'s segment landed {@code now}; jobs re-resolve. */
  void landed(int key, SegmentRef ref, double now) {
    refs.put(key, ref);
    landedAt.put(key, now);
    changed();
  }

  /** Forgets {@code key}'s segment and when it landed; returns the segment (null: none). */
  SegmentRef drop(int key) {
    landedAt.remove(key);
    return refs.remove(key);
  }

  Set<Integer> residentKeys() {
    return refs.keySet();
  }

  Set<Integer> pendingKeys() {
    return pending.keySet();
  }

  int pendingCount() {
    return pending.size();
  }

  /** A resident segment file: one of the keys it holds (its dataset, version and chunk), and the file. */
  record Resident(KeySpace.KeyInfo key, SegmentRef ref) {}

  /** Every resident segment file once (a file holding several features is listed under one of them). */
  List<Resident> residents(KeySpace keys) {
    List<Resident> out = new ArrayList<>();
    Set<SegmentRef> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    for (Map.Entry<Integer, SegmentRef> e : refs.entrySet()) {
      if (seen.add(e.getValue())) {
        out.add(new Resident(keys.get(e.getKey()), e.getValue()));
      }
    }
    return out;
  }

  /** The SSD bytes resident of one dataset (not counting those in flight). */
  long residentBytes(String dataset, KeySpace keys) {
    return bytesOf(refs.keySet(), dataset, keys);
  }

  /** The SSD bytes a dataset holds or has in flight. */
  long datasetBytes(String dataset, KeySpace keys) {
    return bytesOf(refs.keySet(), dataset, keys) + bytesOf(pending.keySet(), dataset, keys);
  }

  /** Per dataset, the SSD bytes it holds or has in flight. */
  Map<String, Long> bytesByDataset(KeySpace keys) {
    Map<String, Long> out = new TreeMap<>();
    for (int k : refs.keySet()) {
      out.merge(keys.get(k).dataset(), keys.bytes(k), Long::sum);
    }
    for (int k : pending.keySet()) {
      out.merge(keys.get(k).dataset(), keys.bytes(k), Long::sum);
    }
    return out;
  }

  private static long bytesOf(Set<Integer> of, String dataset, KeySpace keys) {
    long b = 0;
    for (int k : of) {
      if (keys.get(k).dataset().equals(dataset)) {
        b += keys.bytes(k);
      }
    }
    return b;
  }

  /** Stops publishing the counter. */
  void close() {
    if (beacon != null) {
      beacon.close();
      beacon = null;
    }
  }
}
