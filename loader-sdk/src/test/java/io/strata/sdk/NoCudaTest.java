package io.strata.sdk;

import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** A CPU training job links the SDK alone: no CUDA bindings come with it (they are the gpu module's). */
class NoCudaTest {
  @Test
  void theSdksClassPathHasNoCudaBindings() {
    for (String c : new String[] {"org.bytedeco.javacpp.Pointer", "org.bytedeco.cuda.global.cudart", "io.strata.gpu.GpuShipper"}) {
      assertThrows(ClassNotFoundException.class, () -> Class.forName(c), c + " is on the SDK's class path");
    }
  }
}
