"""output="numpy": the Java loader's batches as numpy arrays over the same shared memory, every
type, and pyarrow never imported."""

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

import strata
from batches import java_batches
from test_equality import FEATURES


def _bits(arr):
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False))


def _values(arr):
    """An Arrow array's values in the numpy layout, computed through pyarrow."""
    t = arr.type
    if pa.types.is_boolean(t):
        return np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.bool_)
    if pa.types.is_decimal(t):
        w = np.frombuffer(arr.buffers()[1], np.int64, 2 * (arr.offset + len(arr)))[2 * arr.offset:]
        return w.reshape(len(arr), 2)
    dtype = {32: np.int32, 64: np.int64, 8: np.int8, 16: np.int16}
    if pa.types.is_floating(t):
        dtype = {32: np.float32, 64: np.float64}
    return np.frombuffer(arr.buffers()[1], dtype[t.bit_width], arr.offset + len(arr))[arr.offset:]


def over_shared_memory(a):
    """Whether an array views a batch's slab (its bases lead to the client's holder of the batch's lease)."""
    while a is not None:
        if type(a).__name__ == "_Held":
            return True
        a = getattr(a, "base", None)
    return False


def same(batch, expected, where):
    """A numpy batch holds exactly the Arrow batch's values: validity, offsets and data."""
    assert set(batch.types) == set(expected.schema.names), where
    for name in expected.schema.names:
        arr = expected.column(expected.schema.get_field_index(name))
        w = "%s %s" % (where, name)
        if arr.null_count:
            assert np.array_equal(batch[name + ".valid"], _bits(arr)), w + ": validity differs"
            valid = _bits(arr)
        else:
            assert name + ".valid" not in batch, w
            valid = np.ones(len(arr), dtype=np.bool_)
        t = arr.type
        if pa.types.is_list(t) or pa.types.is_string(t) or pa.types.is_binary(t):
            off = np.frombuffer(arr.buffers()[1], np.int32, len(arr) + 1, arr.offset * 4)
            assert np.array_equal(batch[name + ".offsets"], off - off[0]), w + ": offsets differ"
            if pa.types.is_list(t):
                assert np.array_equal(batch[name], _values(arr.flatten())), w + ": elements differ"
            else:
                data = bytes(memoryview(arr.buffers()[2])[off[0]:off[-1]]) if len(arr) else b""
                assert batch[name].tobytes() == data, w + ": bytes differ"
        else:
            got, want = batch[name], _values(arr)
            assert got.shape == want.shape, w
            assert np.array_equal(got[valid].view(np.uint8), want[valid].view(np.uint8)), w + ": values differ"


@pytest.mark.parametrize("mode", ["samples", "rows"])
def test_numpy_batches_hold_the_java_loaders_values(cli, dataset, tmp_path, mode):
    dump = tmp_path / "java"
    size = 16 if mode == "samples" else 3000
    cli("loader", "run", "--dataset", dataset, "--features", ",".join(FEATURES), "--dump-batches", dump,
        "--mode", mode, "--batch", size, "--seed", 7)
    expected = java_batches(str(dump))
    loader = strata.Loader(dataset, features=FEATURES, mode=mode, batch_samples=size, batch_rows=size, seed=7,
                           output="numpy")
    n = 0
    for b in loader:
        assert isinstance(b, dict)
        assert (b.epoch, b.step) == expected[n][0]
        same(b, expected[n][1], "batch %s" % (expected[n][0],))
        for name, a in b.items():  # views of the shared memory are read-only (bools unpacked are copies)
            assert not (over_shared_memory(a) and a.flags.writeable), name
        n += 1
    assert n == len(expected)


def test_an_array_kept_past_its_batch_keeps_its_values(dataset):
    loader = strata.Loader(dataset, features=["amount"], batch_samples=16, seed=3, epochs=3, prefetch=1,
                           output="numpy")
    it = iter(loader)
    kept = next(it)["amount"]
    copy = kept.copy()
    assert over_shared_memory(kept)
    for _ in it:  # every later batch: the slab of the kept one is not reused while it lives
        pass
    assert np.array_equal(kept, copy)
    loader.close()


def test_pyarrow_is_never_imported(dataset):
    code = ("import sys, strata\n"
            "ld = strata.Loader(sys.argv[1], features=['amount', 'embedding', 'channel'], batch_samples=8, output='numpy')\n"
            "n = sum(len(b['amount']) for b in ld)\n"
            "assert n > 0\n"
            "print(sorted(m for m in ('pyarrow', 'pandas') if m in sys.modules))\n")
    p = subprocess.run([sys.executable, "-c", code, dataset], capture_output=True, text=True, env=os.environ,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "[]", p.stdout


def test_bad_output_is_a_usage_error(dataset):
    with pytest.raises(strata.StrataUsageError, match="output must be arrow or numpy"):
        strata.Loader(dataset, output="pandas")
    with pytest.raises(strata.StrataUsageError, match="pin_memory"):
        strata.Loader(dataset, output="numpy", pin_memory=True)
