package io.strata.sdk;

import io.strata.sdk.tier.Tier;
import io.strata.sdk.tier.TierStats;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class TierTest {
  @Test
  void everyTierHasOneNameAndIsCountedApart() {
    TierStats stats = new TierStats();
    for (Tier t : Tier.values()) {
      assertEquals(t, Tier.parse(t.apiName()));
      stats.record(t, 10L * (t.ordinal() + 1), 1);
    }
    assertEquals(List.of("ssd", "hdd", "peer"), Arrays.stream(Tier.values()).map(Tier::apiName).toList());
    assertEquals(30, stats.bytes(Tier.PEER));
    assertEquals(10.0 / 30, stats.ssdByteFraction(), 1e-12, "the SSD share is of the SSD and HDD bytes");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Tier.parse("SSD"));
    assertTrue(e.getMessage().contains("'SSD'") && e.getMessage().contains("ssd, hdd, peer"), e.getMessage());
  }
}
