package io.strata.sdk.format;

import io.strata.sdk.Column;
import java.lang.classfile.ClassFile;
import java.lang.classfile.CodeBuilder;
import java.lang.classfile.Label;
import java.lang.constant.ClassDesc;
import java.lang.constant.ConstantDescs;
import java.lang.constant.MethodTypeDesc;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.AccessFlag;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A batch of single rows gathered for several fixed-width features in one pass a run: each row's
 * place in its chunk and in the batch read once, and every feature's value of it copied, so the
 * loads of one row (one a feature, each a cache miss of its own) are in flight together. A pass a
 * feature reads the order once a feature and has one such load in flight a row; on the gather
 * floor's data the one pass was 2–7 % faster (BENCHMARKS.md, "A tighter floor").
 *
 * <p>Why generated: such a loop is fast only with each feature's width fixed in its code (a loop
 * over the features with the widths as data was 3.3 times slower: every access then checks its
 * segment's bounds and liveness anew). So the loop for a set of widths (1, 2, 4 or 8 bytes each,
 * 2 to {@link #MAX} features) is made once, with the {@code java.lang.classfile} API, as a hidden
 * class of this package, and kept by its widths; the JIT compiles it as it would the hand-written
 * loop. The loop copies bytes as they are (loaded and stored with the same layout), so the values
 * are those {@link ColumnBuilder#appendGathered} writes.
 *
 * <p>Threads: the loops are immutable and shared; {@link #append} works on the caller's builders,
 * which one thread owns. The cache is a concurrent map (a loop made twice by a race is harmless).
 */
public final class FusedGather {
  /** The most features one loop takes. */
  static final int MAX = 8;

  /** A loop made for one set of widths: copies rows {@code row[j]} of each {@code src} to positions {@code pos[j]} of its {@code dst}. */
  interface Loop {
    void gather(MemorySegment[] src, MemorySegment[] dst, int[] row, int[] pos, int from, int to);
  }

  /** The loops made, by {@link #key}. */
  private static final ConcurrentHashMap<Integer, Loop> LOOPS = new ConcurrentHashMap<>();

  private FusedGather() {}

  /** Whether {@link #append} takes these builders: 2 to {@link #MAX} of them, each of a fixed width of 1, 2, 4 or 8 bytes. */
  public static boolean fits(List<ColumnBuilder> out) {
    if (out.size() < 2 || out.size() > MAX) {
      return false;
    }
    for (ColumnBuilder b : out) {
      if (!b.type().isFixedWidth() || !layoutWidth(b.width)) {
        return false;
      }
    }
    return true;
  }

  private static boolean layoutWidth(int w) {
    return w == 1 || w == 2 || w == 4 || w == 8;
  }

  /**
   * Appends the single rows of {@code order} to every builder {@code out[i]} from its columns
   * {@code cols[i]} (by chunk), as {@link ColumnBuilder#appendGathered}{@code (cols[i], order)} for
   * each would, in one pass a run. The builders must {@link #fits fit}. A column that turns out
   * shorter than its chunk, or a segment that fails mid-copy, throws with the builders part-way
   * (the caller truncates them, as after a failed {@code appendGathered}).
   */
  public static void append(List<ColumnBuilder> out, Column[][] cols, GatherOrder order) {
    if (!fits(out)) {
      throw new IllegalArgumentException("a fused gather takes 2 to " + MAX + " builders of 1, 2, 4 or 8 bytes a value");
    }
    int k = out.size();
    boolean[] anyNulls = new boolean[k];
    int[] widths = new int[k];
    for (int i = 0; i < k; i++) {
      anyNulls[i] = ColumnCopies.begin(out.get(i), cols[i], order);
      widths[i] = out.get(i).width;
    }
    if (order.size() == 0) {
      return;
    }
    MemorySegment[] dst = new MemorySegment[k];
    for (int i = 0; i < k; i++) {
      dst[i] = CopyLoops.sameClass(ColumnCopies.target(out.get(i)));
    }
    Loop loop = loop(widths);
    MemorySegment[] src = new MemorySegment[k];
    int[] local = order.local();
    int[] pos = order.positions();
    for (int r = 0; r < order.runs(); r++) {
      int chunk = order.runChunk(r);
      for (int i = 0; i < k; i++) {
        Column c = cols[i][chunk];
        src[i] = CopyLoops.sameClass(c.values().asSlice((long) c.offset() * widths[i]));
      }
      loop.gather(src, dst, local, pos, order.runStart(r), order.runStart(r + 1));
    }
    for (int i = 0; i < k; i++) {
      ColumnCopies.end(out.get(i), cols[i], order, anyNulls[i]);
    }
  }

  /** The loop for {@code widths}, made on first use. */
  static Loop loop(int[] widths) {
    int key = key(widths);
    Loop l = LOOPS.get(key);
    if (l == null) {
      l = make(widths.clone());
      Loop raced = LOOPS.putIfAbsent(key, l);
      if (raced != null) {
        l = raced;
      }
    }
    return l;
  }

  /** The widths as a number (a batch asks once): their count, then two bits a width (its log2). */
  private static int key(int[] widths) {
    int key = widths.length;
    for (int w : widths) {
      key = key << 2 | Integer.numberOfTrailingZeros(w);
    }
    return key;
  }

  private static final ClassDesc SEGMENT = ClassDesc.of("java.lang.foreign.MemorySegment");
  private static final ClassDesc VALUE_LAYOUT = ClassDesc.of("java.lang.foreign.ValueLayout");

  /** A layout's static field on {@code ValueLayout}, its type and the value's type, by width. */
  private record Access(String field, ClassDesc layout, ClassDesc value) {
    static Access of(int width) {
      return switch (width) {
        case 1 -> new Access("JAVA_BYTE", VALUE_LAYOUT.nested("OfByte"), ConstantDescs.CD_byte);
        case 2 -> new Access("JAVA_SHORT_UNALIGNED", VALUE_LAYOUT.nested("OfShort"), ConstantDescs.CD_short);
        case 4 -> new Access("JAVA_INT_UNALIGNED", VALUE_LAYOUT.nested("OfInt"), ConstantDescs.CD_int);
        case 8 -> new Access("JAVA_LONG_UNALIGNED", VALUE_LAYOUT.nested("OfLong"), ConstantDescs.CD_long);
        default -> throw new IllegalArgumentException("no fused gather of " + width + "-byte values");
      };
    }
  }

  /**
   * Generates the loop, as if written
   *
   * <pre>{@code
   * void gather(MemorySegment[] src, MemorySegment[] dst, int[] row, int[] pos, int from, int to) {
   *   MemorySegment s0 = src[0], d0 = dst[0], s1 = src[1], d1 = dst[1], ...;
   *   for (int j = from; j < to; j++) {
   *     long r = row[j], p = pos[j];
   *     d0.setAtIndex(JAVA_LONG_UNALIGNED, p, s0.getAtIndex(JAVA_LONG_UNALIGNED, r)); // width 8
   *     d1.setAtIndex(JAVA_INT_UNALIGNED, p, s1.getAtIndex(JAVA_INT_UNALIGNED, r));   // width 4
   *     ...
   *   }
   * }
   * }</pre>
   */
  private static Loop make(int[] widths) {
    ClassDesc self = ClassDesc.of(FusedGather.class.getPackageName() + ".FusedGatherLoop");
    ClassDesc loopType = ClassDesc.of(Loop.class.getName());
    ClassDesc segments = SEGMENT.arrayType();
    ClassDesc ints = ConstantDescs.CD_int.arrayType();
    MethodTypeDesc gatherType =
        MethodTypeDesc.of(ConstantDescs.CD_void, segments, segments, ints, ints, ConstantDescs.CD_int, ConstantDescs.CD_int);
    byte[] bytes = ClassFile.of().build(self, cb -> {
      cb.withFlags(AccessFlag.FINAL, AccessFlag.SUPER);
      cb.withInterfaceSymbols(loopType);
      cb.withMethodBody(ConstantDescs.INIT_NAME, ConstantDescs.MTD_void, ClassFile.ACC_PUBLIC, code -> {
        code.aload(0);
        code.invokespecial(ConstantDescs.CD_Object, ConstantDescs.INIT_NAME, ConstantDescs.MTD_void);
        code.return_();
      });
      cb.withMethodBody("gather", gatherType, ClassFile.ACC_PUBLIC | ClassFile.ACC_FINAL, code -> body(code, widths));
    });
    try {
      MethodHandles.Lookup hidden = MethodHandles.lookup().defineHiddenClass(bytes, true);
      return (Loop) hidden.findConstructor(hidden.lookupClass(), MethodType.methodType(void.class)).invoke();
    } catch (Throwable e) {
      throw new IllegalStateException("could not make the fused gather for widths " + Arrays.toString(widths) + ": " + e, e);
    }
  }

  /** The body of {@code gather}: locals 1-6 the arguments, then each feature's two segments, the index, the row and the position. */
  private static void body(CodeBuilder code, int[] widths) {
    int k = widths.length;
    int first = 7;
    for (int f = 0; f < k; f++) {
      code.aload(1).loadConstant(f).aaload().astore(first + 2 * f);
      code.aload(2).loadConstant(f).aaload().astore(first + 2 * f + 1);
    }
    int j = first + 2 * k;
    int row = j + 1;
    int pos = j + 3;
    Label loop = code.newLabel();
    Label end = code.newLabel();
    code.iload(5).istore(j);
    code.labelBinding(loop);
    code.iload(j).iload(6).if_icmpge(end);
    code.aload(3).iload(j).iaload().i2l().lstore(row);
    code.aload(4).iload(j).iaload().i2l().lstore(pos);
    for (int f = 0; f < k; f++) {
      Access a = Access.of(widths[f]);
      code.aload(first + 2 * f + 1).getstatic(VALUE_LAYOUT, a.field(), a.layout()).lload(pos);
      code.aload(first + 2 * f).getstatic(VALUE_LAYOUT, a.field(), a.layout()).lload(row);
      code.invokeinterface(SEGMENT, "getAtIndex", MethodTypeDesc.of(a.value(), a.layout(), ConstantDescs.CD_long));
      code.invokeinterface(SEGMENT, "setAtIndex", MethodTypeDesc.of(ConstantDescs.CD_void, a.layout(), ConstantDescs.CD_long, a.value()));
    }
    code.iinc(j, 1).goto_(loop);
    code.labelBinding(end);
    code.return_();
  }
}
