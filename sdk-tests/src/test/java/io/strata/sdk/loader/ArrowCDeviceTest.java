package io.strata.sdk.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.strata.sdk.dataset.Dataset;
import io.strata.sdk.Progress;
import io.strata.tools.DatasetGenerator;
import io.strata.sdk.format.ArrowCExport;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A batch exported through the Arrow C Device Data Interface is read by a real consumer in this
 * process: pyarrow, embedded here (libpython loaded through the FFM, the venv {@code .ci/run}
 * makes), imports it with {@code RecordBatch._import_from_c_device}, checks that its buffers are
 * the batch's own (no copy) and that every column equals the same batch written as an Arrow IPC
 * file, then lets go: both release callbacks run. Skipped, with the reason, where there is no
 * such venv or no shared libpython.
 */
class ArrowCDeviceTest {
  @TempDir Path tmp;

  @Test
  @SuppressWarnings("restricted")
  void pyarrowImportsTheBatchWithoutACopyAndReleasesIt() throws Exception {
    Python py = Python.find();
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("events", 20_000, 9).withMeanSampleLength(40), Progress.NONE);
    Path ipc = tmp.resolve("batch.arrow");
    Path result = tmp.resolve("result.txt");
    try (Dataset ds = Dataset.open(dir); Loader loader = Loader.builder(ds).features(ds.featureNames()).sampleBatches(16).build();
        Batch b = loader.next()) {
      b.writeArrowFile(ipc, ds.name(), ds.version());
      int before = ArrowCExport.live();
      ArrowCDevice e = b.exportArrowDevice();
      assertNotEquals(0, e.deviceArray());
      assertEquals(before + 2, ArrowCExport.live(), "the array and the schema are live until released");
      MemorySegment header = MemorySegment.ofAddress(e.deviceArray()).reinterpret(128);
      assertEquals(ArrowCExport.DEVICE_CPU, header.get(ValueLayout.JAVA_INT, 88), "device_type");
      assertEquals(b.rows(), header.get(ValueLayout.JAVA_LONG, 0), "length");
      long amount = b.column("amount").values().address();
      String code = String.join("\n",
          "import sys",
          "sys.path.insert(0, " + quote(py.sitePackages) + ")",
          "import gc, pyarrow as pa, pyarrow.ipc",
          "out = []",
          "try:",
          "    rb = pa.RecordBatch._import_from_c_device(" + e.deviceArray() + ", " + e.schema() + ")",
          "    ref = pa.ipc.open_file(" + quote(ipc.toString()) + ").read_all().combine_chunks().to_batches()[0]",
          "    if rb.schema.names != ref.schema.names: out.append('names %s vs %s' % (rb.schema.names, ref.schema.names))",
          "    if rb.num_rows != ref.num_rows: out.append('rows %d vs %d' % (rb.num_rows, ref.num_rows))",
          "    for n in ref.schema.names:",
          "        if not rb.column(n).equals(ref.column(n)): out.append('column %s differs: %s vs %s' % (n, rb.column(n).type, ref.column(n).type))",
          "    if rb.column('amount').buffers()[1].address != " + amount + ": out.append('amount was copied')",
          "    del rb",
          "    gc.collect()",
          "except Exception as ex:",
          "    out.append('%s: %s' % (type(ex).__name__, ex))",
          "open(" + quote(result.toString()) + ", 'w').write('\\n'.join(out) if out else 'ok')");
      py.run(code);
      assertEquals("ok", Files.readString(result), "pyarrow's verdict");
      assertEquals(before, ArrowCExport.live(), "pyarrow released the array and the schema");
    }
  }

  /** The layout, read back as a C consumer would, and both release callbacks called through their pointers. */
  @Test
  @SuppressWarnings("restricted")
  void theStructsFollowTheSpecificationAndReleaseFreesThem() throws Throwable {
    Path dir = tmp.resolve("events");
    DatasetGenerator.generate(dir, DatasetGenerator.Options.of("events", 5_000, 4).withMeanSampleLength(40), Progress.NONE);
    try (Dataset ds = Dataset.open(dir); Loader loader = Loader.builder(ds).features("amount", "merchant_category", "embedding")
        .sampleBatches(8).build(); Batch b = loader.next()) {
      int before = ArrowCExport.live();
      ArrowCDevice e = b.exportArrowDevice();
      MemorySegment dev = MemorySegment.ofAddress(e.deviceArray()).reinterpret(128);
      MemorySegment schema = MemorySegment.ofAddress(e.schema()).reinterpret(72);
      assertEquals("+s", schema.get(ValueLayout.ADDRESS, 0).reinterpret(8).getString(0), "a struct of the features");
      assertEquals(3, schema.get(ValueLayout.JAVA_LONG, 32));
      assertEquals(3, dev.get(ValueLayout.JAVA_LONG, 32));
      List<String> formats = new ArrayList<>();
      MemorySegment kids = schema.get(ValueLayout.ADDRESS, 40).reinterpret(24);
      for (int i = 0; i < 3; i++) {
        MemorySegment k = kids.getAtIndex(ValueLayout.ADDRESS, i).reinterpret(72);
        formats.add(k.get(ValueLayout.ADDRESS, 8).reinterpret(64).getString(0) + ":" + k.get(ValueLayout.ADDRESS, 0).reinterpret(8).getString(0));
      }
      assertEquals(List.of("amount:g", "merchant_category:u", "embedding:+l"), formats);
      MemorySegment arrays = dev.get(ValueLayout.ADDRESS, 48).reinterpret(24);
      MemorySegment strings = arrays.getAtIndex(ValueLayout.ADDRESS, 1).reinterpret(80);
      assertEquals(3, strings.get(ValueLayout.JAVA_LONG, 24), "validity, offsets, data");
      MemorySegment buffers = strings.get(ValueLayout.ADDRESS, 40).reinterpret(24);
      assertEquals(b.column("merchant_category").offsets().address(), buffers.getAtIndex(ValueLayout.JAVA_LONG, 1), "no copy");
      assertEquals(b.rows(), strings.get(ValueLayout.JAVA_LONG, 0));
      MemorySegment list = arrays.getAtIndex(ValueLayout.ADDRESS, 2).reinterpret(80);
      assertEquals(1, list.get(ValueLayout.JAVA_LONG, 32), "a list has its elements as one child");
      assertEquals(0, dev.get(ValueLayout.ADDRESS, 96).address(), "no sync event on the CPU");
      Linker linker = Linker.nativeLinker();
      FunctionDescriptor release = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS);
      linker.downcallHandle(dev.get(ValueLayout.ADDRESS, 64), release).invokeExact(dev);
      assertEquals(before + 1, ArrowCExport.live(), "the schema is still live");
      linker.downcallHandle(schema.get(ValueLayout.ADDRESS, 56), release).invokeExact(schema);
      assertEquals(before, ArrowCExport.live());
    }
  }

  private static String quote(String s) {
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'";
  }

  /** CPython embedded in this JVM, found through the venv's own interpreter. */
  private static final class Python {
    private static Python instance;
    final String sitePackages;
    private final MethodHandle run;

    private Python(String sitePackages, MethodHandle run) {
      this.sitePackages = sitePackages;
      this.run = run;
    }

    @SuppressWarnings("restricted")
    static synchronized Python find() throws IOException, InterruptedException {
      if (instance != null) {
        return instance;
      }
      Path venv = Path.of(System.getProperty("strata.pyvenv", "../target/pyvenv")).toAbsolutePath().normalize();
      Path exe = venv.resolve("bin/python");
      assumeTrue(Files.isExecutable(exe), "no Python venv at " + venv + " (./strata bench setup makes one)");
      Process p = new ProcessBuilder(exe.toString(), "-c", String.join(";",
          "import sysconfig, site, os, pyarrow",
          "d = sysconfig.get_config_var('LIBDIR') or ''",
          "c = [os.path.join(d, n) for n in (sysconfig.get_config_var('INSTSONAME'), sysconfig.get_config_var('LDLIBRARY')) if n]",
          "print(next((x for x in c if os.path.exists(x) and '.so' in x), ''))",
          "print(site.getsitepackages()[0])")).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assumeTrue(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0, "the venv's python cannot import pyarrow: " + out);
      List<String> lines = new ArrayList<>(out.lines().toList());
      assumeTrue(lines.size() == 2 && !lines.get(0).isBlank(), "no shared libpython beside the venv's python: " + out);
      Linker linker = Linker.nativeLinker();
      // Loaded with RTLD_GLOBAL: extension modules (numpy's, pyarrow's) find libpython's symbols there.
      MethodHandle dlopen = linker.downcallHandle(linker.defaultLookup().find("dlopen").orElseThrow(),
          FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
      MethodHandle dlsym = linker.downcallHandle(linker.defaultLookup().find("dlsym").orElseThrow(),
          FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
      try {
        MemorySegment lib = (MemorySegment) dlopen.invokeExact(Arena.global().allocateFrom(lines.get(0)), 0x2 | 0x100);
        assumeTrue(lib.address() != 0, "dlopen(" + lines.get(0) + ") failed");
        MemorySegment init = (MemorySegment) dlsym.invokeExact(lib, Arena.global().allocateFrom("Py_InitializeEx"));
        MemorySegment runString = (MemorySegment) dlsym.invokeExact(lib, Arena.global().allocateFrom("PyRun_SimpleString"));
        assumeTrue(init.address() != 0 && runString.address() != 0, "no Py_InitializeEx in " + lines.get(0));
        linker.downcallHandle(init, FunctionDescriptor.ofVoid(ValueLayout.JAVA_INT)).invokeExact(0); // no signal handlers
        instance = new Python(lines.get(1),
            linker.downcallHandle(runString, FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS)));
        return instance;
      } catch (Throwable t) {
        throw new IOException("embedding " + lines.get(0) + ": " + t, t);
      }
    }

    void run(String code) throws IOException {
      try (Arena a = Arena.ofConfined()) {
        int rc = (int) run.invokeExact(a.allocateFrom(code));
        if (rc != 0) {
          throw new IOException("the embedded Python failed (rc " + rc + ") running:\n" + code);
        }
      } catch (IOException | RuntimeException | Error e) {
        throw e;
      } catch (Throwable t) {
        throw new IOException(t);
      }
    }
  }
}
