"""Byte-level comparison of Arrow batches."""

import glob
import os

import numpy as np
import pyarrow as pa


def java_batches(directory):
    """The batches `strata loader run --dump-batches` wrote, in (epoch, step) order."""
    def key(p):
        e, s = os.path.basename(p)[len("batch-"):-len(".arrow")].split("-")
        return int(e), int(s)

    out = []
    for p in sorted(glob.glob(os.path.join(directory, "batch-*.arrow")), key=key):
        with pa.memory_map(p) as src:
            r = pa.ipc.open_file(src)
            assert r.num_record_batches == 1, p
            out.append((key(p), r.get_batch(0)))
    return out


def _valid_bits(arr):
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False))


def same_bytes(a, b, where=""):
    """Asserts two arrays hold the same values, byte for byte: validity, offsets and data."""
    assert a.type == b.type, "%s: type %s vs %s" % (where, a.type, b.type)
    assert len(a) == len(b), "%s: length %d vs %d" % (where, len(a), len(b))
    assert a.null_count == b.null_count, "%s: nulls %d vs %d" % (where, a.null_count, b.null_count)
    assert np.array_equal(_valid_bits(a), _valid_bits(b)), where + ": validity differs"
    t = a.type
    if pa.types.is_list(t):
        oa = np.frombuffer(a.buffers()[1], np.int32, len(a) + 1, a.offset * 4)
        ob = np.frombuffer(b.buffers()[1], np.int32, len(b) + 1, b.offset * 4)
        assert np.array_equal(oa - oa[0], ob - ob[0]), where + ": list offsets differ"
        same_bytes(a.flatten(), b.flatten(), where + ".element")
    elif pa.types.is_string(t) or pa.types.is_binary(t):
        oa = np.frombuffer(a.buffers()[1], np.int32, len(a) + 1, a.offset * 4)
        ob = np.frombuffer(b.buffers()[1], np.int32, len(b) + 1, b.offset * 4)
        assert np.array_equal(oa - oa[0], ob - ob[0]), where + ": offsets differ"
        da = memoryview(a.buffers()[2])[oa[0]:oa[-1]] if len(a) else b""
        db = memoryview(b.buffers()[2])[ob[0]:ob[-1]] if len(b) else b""
        assert bytes(da) == bytes(db), where + ": string bytes differ"
    elif pa.types.is_boolean(t):
        assert a.equals(b), where + ": bools differ"
    else:
        w = t.bit_width // 8
        va = bytes(memoryview(a.buffers()[1])[a.offset * w:(a.offset + len(a)) * w])
        vb = bytes(memoryview(b.buffers()[1])[b.offset * w:(b.offset + len(b)) * w])
        if a.null_count:
            mask = np.repeat(_valid_bits(a), w)
            va = np.frombuffer(va, np.uint8)[mask].tobytes()
            vb = np.frombuffer(vb, np.uint8)[mask].tobytes()
        assert va == vb, where + ": values differ"


def same_batch(py, java, where=""):
    assert py.schema.names == java.schema.names, "%s: columns %s vs %s" % (where, py.schema.names, java.schema.names)
    for name, a, b in zip(py.schema.names, py.columns, java.columns):
        same_bytes(a, b, "%s %s" % (where, name))
