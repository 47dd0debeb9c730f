package io.strata.sdk.format;

import io.strata.sdk.Column;
import io.strata.sdk.FeatureType;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Exports a batch's buffers, wherever they are (host or device memory), through the Arrow C Data
 * and C Device Data interfaces: an {@code ArrowDeviceArray} (a struct array, one child per
 * feature) and its {@code ArrowSchema}, so that a consumer in the same process (pyarrow, cuDF, a
 * CUDA kernel, a framework) reads the buffers without a copy. Layouts are the specification's
 * (docs/FORMAT.md, "Arrow C Device export"): {@code ArrowArray} 80 bytes, {@code ArrowSchema} 72,
 * {@code ArrowDeviceArray} 128 (the array, {@code device_id} at 80, {@code device_type} at 88,
 * {@code sync_event} at 96, three reserved words).
 *
 * <p>Each export owns its structs in an arena of its own, found again at release through the
 * struct's {@code private_data} (consumers may move the base struct, so its address names
 * nothing). The release callbacks are two upcall stubs shared by every export; calling one marks
 * the base struct and its children released and frees the export's structs; the batch's buffers
 * are not the export's and stay the batch's. Thread-safe: exports are registered in a concurrent
 * map and released from whatever thread the consumer calls from.
 */
public final class ArrowCExport {
  /** {@code ARROW_DEVICE_CPU}. */
  public static final int DEVICE_CPU = 1;
  /** {@code ARROW_DEVICE_CUDA}. */
  public static final int DEVICE_CUDA = 2;

  static final long ARRAY_BYTES = 80;
  static final long SCHEMA_BYTES = 72;
  static final long DEVICE_ARRAY_BYTES = 128;
  private static final long FLAG_NULLABLE = 2;

  /**
   * One feature's buffers at their addresses (0 for an absent buffer), for the export.
   *
   * @param name the feature
   * @param type its type
   * @param length rows
   * @param nulls null rows
   * @param validity validity bitmap
   * @param offsets int32 offsets (strings, binaries, lists)
   * @param values values, string bytes, or a list's element values
   * @param childLength a list's elements
   * @param childNulls null elements of a list
   * @param childValidity a list's element validity
   * @param childOffsets offsets of a list's string or binary elements
   */
  public record Field(String name, FeatureType type, int length, long nulls, long validity, long offsets, long values,
      int childLength, long childNulls, long childValidity, long childOffsets) {}

  /** An export: the addresses of its {@code ArrowDeviceArray} and {@code ArrowSchema}. */
  public record Exported(long deviceArray, long schema) {}

  private static final Map<Long, Arena> LIVE = new ConcurrentHashMap<>();
  private static final AtomicLong IDS = new AtomicLong();
  private static final MemorySegment RELEASE_ARRAY;
  private static final MemorySegment RELEASE_SCHEMA;

  static {
    RELEASE_ARRAY = stub("releaseArray");
    RELEASE_SCHEMA = stub("releaseSchema");
  }

  /** A native function pointer to {@code void method(void*)} of this class, alive for the process. */
  @SuppressWarnings("restricted")
  private static MemorySegment stub(String method) {
    try {
      return Linker.nativeLinker().upcallStub(MethodHandles.lookup().findStatic(ArrowCExport.class, method,
          MethodType.methodType(void.class, MemorySegment.class)), FunctionDescriptor.ofVoid(ValueLayout.ADDRESS), Arena.global());
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private ArrowCExport() {}

  /** Exports live at the moment (not yet released by their consumers). */
  public static int live() {
    return LIVE.size();
  }

  /**
   * Exports {@code rows} rows of {@code fields} on device {@code deviceType}/{@code deviceId};
   * {@code syncEvent} is the handle of the event the consumer waits on before reading (a {@code
   * cudaEvent_t} on CUDA; the export holds it and points {@code sync_event} there), or 0.
   */
  public static Exported export(int rows, List<Field> fields, int deviceType, long deviceId, long syncEvent) {
    long arrayId = IDS.incrementAndGet();
    long schemaId = IDS.incrementAndGet();
    Arena arrays = Arena.ofShared();
    Arena schemas = Arena.ofShared();
    boolean ok = false;
    try {
      MemorySegment device = arrays.allocate(DEVICE_ARRAY_BYTES, 8);
      MemorySegment children = arrays.allocate(8L * Math.max(1, fields.size()), 8);
      for (int i = 0; i < fields.size(); i++) {
        children.setAtIndex(ValueLayout.ADDRESS, i, column(arrays, fields.get(i)));
      }
      array(device, rows, 0, new long[] {0}, children, fields.size(), arrays, arrayId);
      device.set(ValueLayout.JAVA_LONG, 80, deviceId);
      device.set(ValueLayout.JAVA_INT, 88, deviceType);
      if (syncEvent != 0) {
        MemorySegment event = arrays.allocate(8, 8);
        event.set(ValueLayout.JAVA_LONG, 0, syncEvent);
        device.set(ValueLayout.ADDRESS, 96, event);
      }

      MemorySegment schema = schemas.allocate(SCHEMA_BYTES, 8);
      MemorySegment fieldSchemas = schemas.allocate(8L * Math.max(1, fields.size()), 8);
      for (int i = 0; i < fields.size(); i++) {
        Field f = fields.get(i);
        fieldSchemas.setAtIndex(ValueLayout.ADDRESS, i, fieldSchema(schemas, f.name(), f.type()));
      }
      schema(schema, schemas, "+s", "", 0, fieldSchemas, fields.size(), schemaId);
      LIVE.put(arrayId, arrays);
      LIVE.put(schemaId, schemas);
      ok = true;
      return new Exported(device.address(), schema.address());
    } finally {
      if (!ok) {
        arrays.close();
        schemas.close();
      }
    }
  }

  private static MemorySegment column(Arena arena, Field f) {
    MemorySegment a = arena.allocate(ARRAY_BYTES, 8);
    FeatureType t = f.type();
    switch (t.kind()) {
      case STRING, BINARY -> array(a, f.length(), f.nulls(), new long[] {f.validity(), f.offsets(), f.values()}, null, 0,
          arena, 0);
      case LIST -> {
        MemorySegment child = arena.allocate(ARRAY_BYTES, 8);
        FeatureType e = t.element();
        long[] childBuffers = e.isVariableWidth() ? new long[] {f.childValidity(), f.childOffsets(), f.values()}
            : new long[] {f.childValidity(), f.values()};
        array(child, f.childLength(), f.childNulls(), childBuffers, null, 0, arena, 0);
        MemorySegment kids = arena.allocate(8, 8);
        kids.set(ValueLayout.ADDRESS, 0, child);
        array(a, f.length(), f.nulls(), new long[] {f.validity(), f.offsets()}, kids, 1, arena, 0);
      }
      default -> array(a, f.length(), f.nulls(), new long[] {f.validity(), f.values()}, null, 0, arena, 0);
    }
    return a;
  }

  private static void array(MemorySegment a, long length, long nulls, long[] buffers, MemorySegment children, int nChildren,
      Arena arena, long id) {
    MemorySegment b = arena.allocate(8L * buffers.length, 8);
    for (int i = 0; i < buffers.length; i++) {
      b.setAtIndex(ValueLayout.JAVA_LONG, i, buffers[i]);
    }
    a.set(ValueLayout.JAVA_LONG, 0, length);
    a.set(ValueLayout.JAVA_LONG, 8, nulls);
    a.set(ValueLayout.JAVA_LONG, 16, 0); // offset
    a.set(ValueLayout.JAVA_LONG, 24, buffers.length);
    a.set(ValueLayout.JAVA_LONG, 32, nChildren);
    a.set(ValueLayout.ADDRESS, 40, b);
    a.set(ValueLayout.ADDRESS, 48, children == null ? MemorySegment.NULL : children);
    a.set(ValueLayout.ADDRESS, 56, MemorySegment.NULL); // dictionary
    a.set(ValueLayout.ADDRESS, 64, RELEASE_ARRAY);
    a.set(ValueLayout.JAVA_LONG, 72, id);
  }

  private static MemorySegment fieldSchema(Arena arena, String name, FeatureType t) {
    MemorySegment s = arena.allocate(SCHEMA_BYTES, 8);
    if (t.kind() == FeatureType.Kind.LIST) {
      MemorySegment kids = arena.allocate(8, 8);
      kids.set(ValueLayout.ADDRESS, 0, fieldSchema(arena, "item", t.element()));
      schema(s, arena, "+l", name, FLAG_NULLABLE, kids, 1, 0);
    } else {
      schema(s, arena, format(t), name, FLAG_NULLABLE, null, 0, 0);
    }
    return s;
  }

  private static void schema(MemorySegment s, Arena arena, String format, String name, long flags, MemorySegment children,
      int nChildren, long id) {
    s.set(ValueLayout.ADDRESS, 0, arena.allocateFrom(format));
    s.set(ValueLayout.ADDRESS, 8, arena.allocateFrom(name));
    s.set(ValueLayout.ADDRESS, 16, MemorySegment.NULL); // metadata
    s.set(ValueLayout.JAVA_LONG, 24, flags);
    s.set(ValueLayout.JAVA_LONG, 32, nChildren);
    s.set(ValueLayout.ADDRESS, 40, children == null ? MemorySegment.NULL : children);
    s.set(ValueLayout.ADDRESS, 48, MemorySegment.NULL); // dictionary
    s.set(ValueLayout.ADDRESS, 56, RELEASE_SCHEMA);
    s.set(ValueLayout.JAVA_LONG, 64, id);
  }

  /** A host column's buffers as a {@link Field} (an unsliced column, as a batch's are). */
  public static Field hostField(String name, Column c) {
    if (c.offset() != 0 || (c.child() != null && c.child().offset() != 0)) {
      throw new IllegalArgumentException("only unsliced columns (as in batches) can be exported: " + name);
    }
    Column child = c.child();
    return new Field(name, c.type(), c.length(), c.nullCount(), c.validity().address(), c.offsets().address(),
        child == null ? c.values().address() : child.values().address(), child == null ? 0 : child.length(),
        child == null ? 0 : child.nullCount(), child == null ? 0 : child.validity().address(),
        child == null ? 0 : child.offsets().address());
  }

  /** The C Data Interface format string of {@code t} (lists are nested schemas, "+l"). */
  static String format(FeatureType t) {
    return switch (t.kind()) {
      case BOOL -> "b";
      case INT8 -> "c";
      case INT16 -> "s";
      case INT32 -> "i";
      case INT64 -> "l";
      case FLOAT32 -> "f";
      case FLOAT64 -> "g";
      case STRING -> "u";
      case BINARY -> "z";
      case DATE -> "tdD";
      case TIMESTAMP -> "tsn:";
      case DECIMAL -> "d:" + t.precision() + "," + t.scale();
      case LIST -> "+l";
    };
  }

  // Upcalls: a struct handed to release; its private_data names the export (0 for children).
  // Found by name through a method handle lookup, hence "unused".
  @SuppressWarnings({"restricted", "UnusedMethod"})
  private static void releaseArray(MemorySegment base) {
    release(base.reinterpret(ARRAY_BYTES), 64, 72, 48, 32);
  }

  @SuppressWarnings({"restricted", "UnusedMethod"})
  private static void releaseSchema(MemorySegment base) {
    release(base.reinterpret(SCHEMA_BYTES), 56, 64, 40, 32);
  }

  private static void release(MemorySegment s, long releaseAt, long idAt, long childrenAt, long countAt) {
    long id = s.get(ValueLayout.JAVA_LONG, idAt);
    markReleased(s, releaseAt, childrenAt, countAt, s.byteSize());
    if (id != 0) {
      Arena arena = LIVE.remove(id);
      if (arena != null) {
        arena.close();
      }
    }
  }

  @SuppressWarnings("restricted")
  private static void markReleased(MemorySegment s, long releaseAt, long childrenAt, long countAt, long size) {
    s.set(ValueLayout.ADDRESS, releaseAt, MemorySegment.NULL);
    long n = s.get(ValueLayout.JAVA_LONG, countAt);
    MemorySegment kids = s.get(ValueLayout.ADDRESS, childrenAt);
    if (n > 0 && kids.address() != 0) {
      MemorySegment k = kids.reinterpret(8 * n);
      for (int i = 0; i < n; i++) {
        MemorySegment child = k.getAtIndex(ValueLayout.ADDRESS, i).reinterpret(size);
        if (child.get(ValueLayout.ADDRESS, releaseAt).address() != 0) {
          markReleased(child, releaseAt, childrenAt, countAt, size);
        }
      }
    }
  }
}
