package io.strata.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The emulated HDD of {@code bench relayout --emulate-hdd}: reads made inside its cgroup reach
 * the device and are counted, reads made after leaving it are not, and closing it leaves no mount,
 * loop device, cgroup or image behind. Skipped, with the reason, where it cannot be built (root,
 * the cgroup v1 blkio controller, loop devices, {@code losetup} and {@code mkfs.ext4} are needed).
 */
class EmulatedHddTest {
  @TempDir Path dir;

  private static String unavailable() {
    String why = EmulatedHdd.unavailable();
    if (why == null && !Files.isWritable(Path.of("/proc/sys/vm/drop_caches"))) {
      return "cannot drop the page cache";
    }
    return why;
  }

  @Test
  void readsInsideReachTheDeviceAndAreCountedAndNothingIsLeftBehind() throws Exception {
    String why = unavailable();
    Assumptions.assumeTrue(why == null, () -> "skipped: " + why);
    Path root;
    Path cgroupDir;
    try (EmulatedHdd hdd = EmulatedHdd.create(dir, 64L << 20, 1_000, 200_000_000L)) {
      root = hdd.root();
      cgroupDir = EmulatedHdd.BLKIO.resolve("strata-hdd-" + ProcessHandle.current().pid());
      assertTrue(Files.isDirectory(cgroupDir));
      byte[] data = new byte[2 << 20];
      new Random(1).nextBytes(data);
      Path inside = root.resolve("inside.bin");
      Path outside = root.resolve("outside.bin");
      for (Path p : new Path[] {inside, outside}) {
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
          ch.write(ByteBuffer.wrap(data));
          ch.force(true);
        }
      }
      Files.writeString(Path.of("/proc/sys/vm/drop_caches"), "1");
      long[] d0 = hdd.deviceReads();
      hdd.enter();
      byte[] back;
      try {
        back = Files.readAllBytes(inside);
      } finally {
        hdd.leave();
      }
      long[] d1 = hdd.deviceReads();
      assertTrue(Arrays.equals(data, back), "the bytes read back are the bytes written");
      assertTrue(d1[0] - d0[0] >= 2, "requests counted inside: " + (d1[0] - d0[0]));
      assertTrue(d1[1] - d0[1] >= data.length, "bytes counted inside: " + (d1[1] - d0[1]));
      Files.readAllBytes(outside);
      assertEquals(d1[0], hdd.deviceReads()[0], "reads after leaving are not the cgroup's");
    }
    assertFalse(Files.exists(cgroupDir), "cgroup removed");
    assertFalse(Files.exists(dir.resolve("hdd.img")), "image removed");
    assertFalse(Files.exists(root), "mount point removed");
    String mounts = Files.readString(Path.of("/proc/self/mounts"), StandardCharsets.UTF_8);
    assertFalse(mounts.contains(root.toString()), "unmounted");
  }
}
