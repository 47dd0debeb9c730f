#!/usr/bin/env python3
"""Compiles gather.cu to PTX with NVRTC (no GPU needed): gather-ptx.py LIBNVRTC [OUT].

LIBNVRTC: libnvrtc.so.13 (the CUDA toolkit's, or the nvidia-cuda-nvrtc wheel's). The PTX targets
compute_80, so that the driver compiles it for any GPU from the A100 on."""
import ctypes, os, sys

here = os.path.dirname(os.path.abspath(__file__))
lib = ctypes.CDLL(sys.argv[1])
out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "resources", "io", "strata", "gpu", "gather.ptx")
src = open(os.path.join(here, "gather.cu"), "rb").read()
prog = ctypes.c_void_p()
def ok(rc, what):
    if rc != 0:
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        raise SystemExit(what + ": " + lib.nvrtcGetErrorString(rc).decode())
ok(lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"gather.cu", 0, None, None), "nvrtcCreateProgram")
opts = [b"--gpu-architecture=compute_80", b"-default-device", b"--std=c++17"]
arr = (ctypes.c_char_p * len(opts))(*opts)
rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
size = ctypes.c_size_t()
lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
log = ctypes.create_string_buffer(size.value)
lib.nvrtcGetProgramLog(prog, log)
if log.value.strip():
    sys.stderr.write(log.value.decode() + "\n")
ok(rc, "nvrtcCompileProgram")
lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
ptx = ctypes.create_string_buffer(size.value)
ok(lib.nvrtcGetPTX(prog, ptx), "nvrtcGetPTX")
os.makedirs(os.path.dirname(out), exist_ok=True)
with open(out, "wb") as f:
    f.write(b"// Generated from gather.cu by gather-ptx.py (NVRTC); do not edit.\n" + ptx.value)
print("wrote", out, len(ptx.value), "bytes")
