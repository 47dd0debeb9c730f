package io.strata.sdk.files;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class LocationsTest {
  @Test
  void pathsAndFileUrisNameLocalDirectoriesAndOtherFileSystemsAreRefusedByName() {
    assertEquals(Path.of("/data/ev"), Locations.local("/data/ev"));
    assertEquals(Path.of("rel/ev"), Locations.local("rel/ev"));
    assertEquals(Path.of("/data/ev"), Locations.local("file:///data/ev"));
    assertEquals(Path.of("/data/ev"), Locations.local("file:/data/ev"));
    assertEquals(Path.of("/data/e v"), Locations.local("file:///data/e%20v"));
    assertEquals(Path.of("/data/ev"), Locations.local("file://localhost/data/ev"));
    IllegalArgumentException h = assertThrows(IllegalArgumentException.class, () -> Locations.local("hdfs://nn:8020/data/ev"));
    assertTrue(h.getMessage().contains("needs a local or mounted directory") && h.getMessage().contains("not hdfs://"), h.getMessage());
    IllegalArgumentException s3 = assertThrows(IllegalArgumentException.class, () -> Locations.local("s3a://bucket/ev"));
    assertTrue(s3.getMessage().contains("s3a:// file system is not supported"), s3.getMessage());
    assertThrows(IllegalArgumentException.class, () -> Locations.dataset("s3a://bucket/ev"));
    // s3:// is read (syntax only here: nothing is asked of a store until a read), never written.
    Path inBucket = Locations.dataset("s3://bucket/data/ev");
    assertTrue(Locations.remote(inBucket), inBucket.toString());
    assertEquals("s3://bucket/data/ev", inBucket.toString());
    assertEquals("s3://bucket/data", inBucket.getParent().toString());
    IllegalArgumentException w = assertThrows(IllegalArgumentException.class, () -> Locations.local("s3://bucket/ev"));
    assertTrue(w.getMessage().contains("not s3://") && w.getMessage().contains("never writes"), w.getMessage());
    assertThrows(IllegalArgumentException.class, () -> Locations.dataset("s3://Not_A_Bucket/ev"));
    assertThrows(IllegalArgumentException.class, () -> Locations.dataset("s3:///ev"));
    assertEquals(Path.of("/data/ev"), Locations.dataset("/data/ev"));
    assertEquals(Path.of("/data/ev"), Locations.dataset("file:///data/ev"));
    IllegalArgumentException other = assertThrows(IllegalArgumentException.class, () -> Locations.local("file://otherhost/data"));
    assertTrue(other.getMessage().contains("otherhost"), other.getMessage());
  }
}
