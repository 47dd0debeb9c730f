package io.strata.sdk.files;

import io.strata.tools.DatasetImporter;
import io.strata.sdk.FeatureInfo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.sdk.Column;
import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.hive.ql.exec.vector.BytesColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.orc.InMemoryKeystore;
import org.apache.orc.OrcFile;
import org.apache.orc.TypeDescription;
import org.apache.orc.Writer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A column protected by ORC column encryption reads, without its key, as the writer's masked
 * values: it is imported as a feature that is not served, with the reason, never as data.
 */
class EncryptedColumnsTest {
  @TempDir Path tmp;

  @Test
  void anEncryptedColumnIsNotServedAndTheOthersAre() throws Exception {
    Path orc = tmp.resolve("in/part-00000.orc");
    java.nio.file.Files.createDirectories(orc.getParent());
    TypeDescription schema = TypeDescription.fromString("struct<id:bigint,ssn:string,score:bigint>");
    OrcFile.WriterOptions wo = OrcFile.writerOptions(OrcIo.CONF).fileSystem(OrcIo.FS).setSchema(schema)
        .encrypt("pii:ssn").masks("sha256:ssn");
    // The key provider's types live in orc-shims, whose package orc-core's module owns (a split
    // package): named here only at run time, where both are on the class path.
    InMemoryKeystore keys = new InMemoryKeystore();
    Class<?> algorithm = Class.forName("org.apache.orc.EncryptionAlgorithm");
    Object aes128 = algorithm.getField("AES_CTR_128").get(null);
    InMemoryKeystore.class.getMethod("addKey", String.class, algorithm, byte[].class).invoke(keys, "pii", aes128, new byte[16]);
    OrcFile.WriterOptions.class.getMethod("setKeyProvider", Class.forName("org.apache.orc.impl.KeyProvider")).invoke(wo, keys);
    int rows = 1000;
    try (Writer w = OrcFile.createWriter(OrcIo.hadoopPath(orc), wo)) {
      VectorizedRowBatch b = schema.createRowBatch(rows);
      for (int r = 0; r < rows; r++) {
        ((LongColumnVector) b.cols[0]).vector[r] = r;
        ((BytesColumnVector) b.cols[1]).setVal(r, ("123-45-" + (1000 + r)).getBytes(StandardCharsets.UTF_8));
        ((LongColumnVector) b.cols[2]).vector[r] = 7L * r;
      }
      b.size = rows;
      w.addRowBatch(b);
    }
    Path dir = tmp.resolve("ds");
    Manifest m = DatasetImporter.importFiles(new DatasetImporter.Options("people", List.of(orc), dir, null, true, false),
        Progress.NONE);
    FeatureInfo ssn = m.features().stream().filter(f -> f.name().equals("ssn")).findFirst().orElseThrow();
    assertFalse(ssn.supported());
    assertTrue(ssn.unsupportedReason().contains("encrypted") && ssn.unsupportedReason().contains("'pii'")
        && ssn.unsupportedReason().startsWith("not served"), ssn.unsupportedReason());
    try (Dataset ds = Dataset.open(dir); Arena arena = Arena.ofConfined()) {
      assertEquals(List.of("id", "score"), ds.featureNames());
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ds.feature("ssn"));
      assertTrue(e.getMessage().contains("encrypted") && e.getMessage().split("not served", -1).length == 2, e.getMessage());
      Map<String, Column> cols = ds.readChunk(0, List.of("id", "score"), arena);
      for (int r = 0; r < rows; r++) {
        assertEquals(r, cols.get("id").getLong(r));
        assertEquals(7L * r, cols.get("score").getLong(r));
      }
    }
  }
}
