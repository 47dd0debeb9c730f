package io.strata.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CliTest {
  @TempDir Path tmp;

  @Test
  void generateDescribePromoteVerify() throws Exception {
    Path ds = tmp.resolve("ev");
    Path ssd = tmp.resolve("ssd");
    Cli.Result g = Cli.run("dataset", "generate", "--out", ds.toString(), "--rows", "30000", "--rows-per-chunk", "10000",
        "--features", "14", "--mean-sample-length", "50", "--json");
    assertEquals(0, g.code(), g.err());
    assertTrue(g.out().contains("\"rows\" : 30000"), g.out());
    Cli.Result d = Cli.run("dataset", "describe", ds.toString());
    assertEquals(0, d.code(), d.err());
    assertTrue(d.out().contains("embedding") && d.out().contains("list<float32>"), d.out());
    // A dataset may be named by a file:// URI (the shared HDD tier of a cluster); other file systems are refused by name.
    Cli.Result du = Cli.run("dataset", "describe", ds.toUri().toString());
    assertEquals(0, du.code(), du.err());
    assertEquals(d.out(), du.out());
    Cli.Result s3 = Cli.run("dataset", "describe", "s3a://bucket/data/ev");
    assertEquals(2, s3.code(), s3.err());
    assertTrue(s3.err().contains("the s3a:// file system is not supported") && !s3.err().contains("\tat "), s3.err());
    Cli.Result p = Cli.run("promote", "--dataset", ds.toString(), "--ssd", ssd.toString(), "--features", "amount,tokens,score", "--chunks", "0,2");
    assertEquals(0, p.code(), p.err());
    assertTrue(p.out().contains("2 chunks"), p.out());
    Cli.Result v = Cli.run("dataset", "verify", ds.toString(), "--ssd", ssd.toString());
    assertEquals(0, v.code(), v.err());
    assertTrue(v.out().contains("verified 2 segments"), v.out());
    try (Stream<Path> s = Files.walk(ssd)) {
      Path seg = s.filter(x -> x.toString().endsWith(".arrow")).findFirst().orElseThrow();
      Cli.Result sv = Cli.run("segment", "verify", seg.toString());
      assertEquals(0, sv.code(), sv.err());
      byte[] bytes = Files.readAllBytes(seg);
      bytes[bytes.length / 2] ^= 0x10;
      Path bad = tmp.resolve("bad.arrow");
      Files.write(bad, bytes);
      Cli.Result sb = Cli.run("segment", "verify", bad.toString());
      assertEquals(1, sb.code());
      assertTrue(sb.out().contains("BAD") && sb.out().contains("bad.arrow"), sb.out());
    }
  }

  @Test
  void wrongArgumentsGiveUsageExitCodeAndOneLine() {
    Cli.Result r = Cli.run("dataset", "generate", "--rows", "ten");
    assertEquals(2, r.code());
    assertTrue(r.err().startsWith("strata: "), r.err());
    assertFalse(r.err().contains("\tat "), "no stack trace: " + r.err());
    Cli.Result bad = Cli.run("dataset", "generate", "--out", tmp.resolve("x").toString(), "--rows", "0");
    assertEquals(2, bad.code());
    assertEquals("strata: rows must be at least 1, got 0", bad.err().strip());
    Cli.Result none = Cli.run("nonsense");
    assertEquals(2, none.code());
  }

  @Test
  void noArgumentsPrintTheHelpAndUnknownCommandsSuggestTheNearest() throws Exception {
    Cli.Result help = Cli.run();
    assertEquals(0, help.code(), help.err());
    assertTrue(help.out().startsWith("Usage: strata") && help.out().contains("promote"), help.out());
    Cli.Result typo = Cli.run("pormote");
    assertEquals(2, typo.code());
    assertTrue(typo.err().startsWith("strata: unknown command 'pormote' for 'strata' (did you mean promote"), typo.err());
    Cli.Result sub = Cli.run("dataset", "genrate");
    assertEquals(2, sub.code());
    assertTrue(sub.err().contains("unknown command 'genrate' for 'strata dataset' (did you mean generate"), sub.err());
    Cli.Result opt = Cli.run("dataset", "generate", "--out", tmp.resolve("y").toString(), "--rowz", "5");
    assertEquals(2, opt.code());
    assertTrue(opt.err().contains("unknown option '--rowz'"), opt.err());
    Cli.Result version = Cli.run("--version");
    assertEquals(0, version.code());
    assertTrue(version.out().startsWith("strata "), version.out());
  }

  @Test
  void importRefusesEmptyAndTruncatedFilesAndLeavesNothingBehind() throws Exception {
    Path ds = tmp.resolve("src");
    assertEquals(0, Cli.run("dataset", "generate", "--out", ds.toString(), "--rows", "20000", "--features", "10").code());
    Path orc;
    try (Stream<Path> s = Files.list(ds)) {
      orc = s.filter(p -> p.toString().endsWith(".orc")).findFirst().orElseThrow();
    }
    Path empty = tmp.resolve("empty.orc");
    Files.write(empty, new byte[0]);
    Path truncated = tmp.resolve("truncated.orc");
    byte[] bytes = Files.readAllBytes(orc);
    Files.write(truncated, Arrays.copyOf(bytes, bytes.length / 2));
    for (Object[] c : new Object[][] {{empty, "empty (0 bytes)"}, {truncated, "truncated"}}) {
      Path out = tmp.resolve("out-" + ((Path) c[0]).getFileName());
      Cli.Result r = Cli.run("dataset", "import", "--out", out.toString(), c[0].toString());
      assertEquals(1, r.code(), r.err());
      assertTrue(r.err().startsWith("strata: " + c[0]) && r.err().contains((String) c[1]), r.err());
      assertFalse(Files.exists(out), "a failed import leaves no " + out);
    }
  }

  @Test
  void refusedCommandsCreateNoDirectory() throws Exception {
    Path ds = tmp.resolve("ds");
    assertEquals(0, Cli.run("dataset", "generate", "--out", ds.toString(), "--rows", "20000", "--features", "10").code());
    Path store = tmp.resolve("store");
    Path ssd = tmp.resolve("ssd");
    Path home = tmp.resolve("home");
    Object[][] cases = {
        {new String[] {"features", "list", "--store", store.toString()}, 1},
        {new String[] {"features", "derive", "--dataset", ds.toString(), "--store", store.toString(), "--spec", "log1p(nosuch)"}, 2},
        {new String[] {"promote", "--dataset", ds.toString(), "--ssd", ssd.toString(), "--features", "nosuch"}, 2},
        {new String[] {"loader", "run", "--dataset", ds.toString(), "--ssd", ssd.toString(), "--features", "amount"}, 1},
        {new String[] {"node", "start", "--home", home.toString(), "--ssd-budget", "lots"}, 2}};
    for (Object[] c : cases) {
      String[] args = (String[]) c[0];
      Cli.Result r = Cli.run(args);
      assertEquals((int) c[1], r.code(), String.join(" ", args) + ": " + r.err());
      for (Path p : List.of(store, ssd, home)) {
        assertFalse(Files.exists(p), String.join(" ", args) + " left " + p);
      }
    }
  }

  @Test
  void featureListsSplitAtCommasOutsideParentheses() {
    LoaderCommand.Run run = new LoaderCommand.Run();
    new picocli.CommandLine(run).parseArgs("--dataset", "x", "--features",
        "amount,ngram_hash(tokens, 2, 1000),zscore(log1p(amount));score");
    assertEquals(List.of("amount", "ngram_hash(tokens, 2, 1000)", "zscore(log1p(amount))", "score"), run.features);
  }

  @Test
  void aMalformedTraceIsAFailureNotAUsageError() throws Exception {
    Path trace = tmp.resolve("bad.csv");
    Files.writeString(trace, "time,job,dataset,feature,chunk,bytes\n0,j,d,f,0,-5\n");
    Cli.Result r = Cli.run("policy", "simulate", "--trace", trace.toString(), "--ssd-budget", "10%");
    assertEquals(1, r.code(), r.err());
    assertTrue(r.err().startsWith("strata: ") && r.err().contains("bad.csv") && r.err().contains("bytes must be positive"), r.err());
  }

  @Test
  void missingAndCorruptInputsFailWithOneLine() throws Exception {
    Cli.Result missing = Cli.run("dataset", "describe", tmp.resolve("nowhere").toString());
    assertEquals(1, missing.code());
    assertTrue(missing.err().contains("no dataset manifest") && missing.err().contains("nowhere"), missing.err());
    assertEquals(1, missing.err().strip().lines().count(), missing.err());
    Path corrupt = Path.of(System.getProperty("strata.conformance.dir"), "corrupt", "negative_dict_entry_lengths.orc");
    Cli.Result imp = Cli.run("dataset", "import", "--out", tmp.resolve("c").toString(), corrupt.toString());
    assertEquals(1, imp.code());
    assertTrue(imp.err().contains("negative_dict_entry_lengths.orc"), imp.err());
    assertEquals(1, imp.err().lines().filter(l -> l.startsWith("strata:")).count(), imp.err());
  }

  /** A directory of ORC files made a dataset where it is: the manifest beside them, nothing copied; -o or --in-place required. */
  @Test
  void importInPlaceWritesTheManifestBesideTheFiles() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("lake"));
    Files.copy(Path.of(System.getProperty("strata.conformance.dir"), "decimal.orc"), dir.resolve("part-0.orc"));
    Cli.Result none = Cli.run("dataset", "import", dir.toString());
    assertEquals(2, none.code(), none.err());
    assertTrue(none.err().contains("give -o DIR") && none.err().contains("--in-place"), none.err());
    Cli.Result two = Cli.run("dataset", "import", "--in-place", dir.toString(), dir.resolve("part-0.orc").toString());
    assertEquals(2, two.code(), two.err());
    Cli.Result r = Cli.run("dataset", "import", "--in-place", dir.toString(), "--json");
    assertEquals(0, r.code(), r.err());
    assertTrue(Files.isRegularFile(dir.resolve("manifest.json")));
    try (var files = Files.list(dir)) {
      assertEquals(1, files.filter(f -> f.getFileName().toString().endsWith(".orc")).count(), "nothing copied");
    }
    assertTrue(Files.readString(dir.resolve("manifest.json")).contains("\"path\" : \"part-0.orc\"")
        || Files.readString(dir.resolve("manifest.json")).contains("\"path\":\"part-0.orc\""), "named beside the manifest");
    assertEquals(0, Cli.run("dataset", "verify", dir.toString()).code());
  }

  @Test
  void importListsUnsupportedColumnsAndServesTheRest() throws Exception {
    Path orc = Path.of(System.getProperty("strata.conformance.dir"), "TestOrcFile.test1.orc");
    Cli.Result r = Cli.run("dataset", "import", "--out", tmp.resolve("t1").toString(), orc.toString());
    assertEquals(0, r.code(), r.err());
    assertTrue(r.out().contains("unsupported column middle"), r.out());
    assertTrue(r.out().contains("unsupported column map"), r.out());
    Cli.Result d = Cli.run("dataset", "describe", tmp.resolve("t1").toString(), "--json");
    assertTrue(d.out().contains("\"type\" : \"binary\""), d.out());
  }
  @Test
  void verifyChecksEveryOrcByteAndAZeroRowDatasetIsValid() throws Exception {
    // decimal.orc imported, then 8 bytes overwritten inside a stream: verify names the damage,
    // and a job reading it from ORC gets the error, never the values.
    Path orc = Files.copy(Path.of(System.getProperty("strata.conformance.dir"), "decimal.orc"), tmp.resolve("decimal.orc"));
    Path ds = tmp.resolve("dec");
    assertEquals(0, Cli.run("dataset", "import", "--out", ds.toString(), orc.toString()).code());
    Cli.Result ok = Cli.run("dataset", "verify", ds.toString());
    assertEquals(0, ok.code(), ok.err());
    assertTrue(ok.out().contains("every stream's"), ok.out());
    long size = Files.size(orc);
    try (var ch = FileChannel.open(orc, StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.wrap(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}), size / 3);
    }
    Cli.Result bad = Cli.run("dataset", "verify", ds.toString());
    assertEquals(1, bad.code(), bad.out());
    assertTrue(bad.err().contains("decimal.orc") && bad.err().contains("stream is damaged"), bad.err());
    Cli.Result read = Cli.run("loader", "run", "--dataset", ds.toString(), "--mode", "rows", "--no-shuffle", "--batch", "1000");
    assertEquals(1, read.code(), read.out());
    assertTrue(read.err().contains("stream is damaged"), read.err());

    // A valid dataset of no rows verifies (exit 0), with or without an SSD tier to check.
    Path empty = tmp.resolve("empty.orc");
    org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration(false);
    org.apache.orc.OrcFile.createWriter(new org.apache.hadoop.fs.Path(empty.toUri()), org.apache.orc.OrcFile.writerOptions(conf)
        .setSchema(org.apache.orc.TypeDescription.fromString("struct<a:bigint,b:string>"))).close();
    Path zero = tmp.resolve("zero");
    Cli.Result imp = Cli.run("dataset", "import", "--out", zero.toString(), empty.toString());
    assertEquals(0, imp.code(), imp.err());
    for (List<String> args : List.of(List.of("dataset", "verify", zero.toString()),
        List.of("dataset", "verify", zero.toString(), "--ssd", tmp.resolve("ssd0").toString()))) {
      Cli.Result v = Cli.run(args.toArray(String[]::new));
      assertEquals(0, v.code(), args + ": " + v.err());
    }
  }
}
