package io.strata.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/** One job of {@code bench fleet}: its name, batching mode ({@code samples} or {@code rows}), features and shuffle seed. */
record FleetJob(String name, String mode, List<String> features, long seed) {
  /** The jobs: half sample batches, half rows; each 3 or 4 features drawn without replacement by Zipf popularity (exponent 1). */
  static List<FleetJob> draw(int jobs) {
    Random r = new Random(58);
    List<FleetJob> out = new ArrayList<>();
    for (int k = 0; k < jobs; k++) {
      int n = 3 + (k % 2);
      List<String> pool = new ArrayList<>(FleetBench.FEATURES);
      List<String> mine = new ArrayList<>();
      while (mine.size() < n) {
        double total = 0;
        for (int i = 0; i < pool.size(); i++) {
          total += 1.0 / (FleetBench.FEATURES.indexOf(pool.get(i)) + 1);
        }
        double x = r.nextDouble() * total;
        int pick = pool.size() - 1;
        for (int i = 0; i < pool.size(); i++) {
          x -= 1.0 / (FleetBench.FEATURES.indexOf(pool.get(i)) + 1);
          if (x <= 0) {
            pick = i;
            break;
          }
        }
        mine.add(pool.remove(pick));
      }
      out.add(new FleetJob("fleet-" + k, k % 2 == 0 ? "samples" : "rows", mine, k + 1));
    }
    return out;
  }
}
