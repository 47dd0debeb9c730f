"""The Python job gets exactly the Java Loader's batches: every mode, shuffled and not, sharded,
from ORC and from segments, derived features included."""

import pytest

import strata
from batches import java_batches, same_batch

FEATURES = ["sample_id", "event_time", "amount", "merchant_category", "is_online", "merchant_id", "quantity",
            "embedding", "balance", "score", "channel", "event_date", "device_hash", "tokens"]

CASES = {
    "samples-shuffled": dict(java=["--mode", "samples", "--batch", 16, "--seed", 7],
                             py=dict(mode="samples", batch_samples=16, seed=7)),
    "samples-ordered-rank1of2-2epochs": dict(
        java=["--mode", "samples", "--batch", 9, "--no-shuffle", "--rank", 1, "--world", 2, "--epochs", 2],
        py=dict(mode="samples", batch_samples=9, shuffle=False, rank=1, world=2, epochs=2)),
    "rows-shuffled-blocks": dict(java=["--mode", "rows", "--batch", 3000, "--shuffle-block", 100, "--seed", 2],
                                 py=dict(mode="rows", batch_rows=3000, shuffle_block=100, seed=2)),
    "rows-sequential": dict(java=["--mode", "rows", "--batch", 5000, "--no-shuffle"],
                            py=dict(mode="rows", batch_rows=5000, shuffle=False)),
    "windows": dict(java=["--mode", "windows", "--batch", 20, "--window", 8, "--lookahead", 2, "--stride", 3,
                          "--seed", 4],
                    py=dict(mode="windows", batch_samples=20, window=8, lookahead=2, stride=3, seed=4)),
}


def compare(strata_cli, dataset, tmp_path, features, java_args, py_kwargs, java_extra=(), py_extra=None):
    dump = tmp_path / "java"
    strata_cli("loader", "run", "--dataset", dataset, "--features", ",".join(features), "--dump-batches", dump,
               *java_args, *java_extra)
    expected = java_batches(str(dump))
    assert expected, "the Java loader wrote no batch"
    loader = strata.Loader(dataset, features=features, **py_kwargs, **(py_extra or {}))
    n = 0
    for b in loader:
        k = (int(b.schema.metadata[b"strata.epoch"]), int(b.schema.metadata[b"strata.step"]))
        assert n < len(expected), "the Python loader returned more batches than the Java one"
        assert k == expected[n][0]
        same_batch(b, expected[n][1], "batch %s" % (k,))
        n += 1
    assert n == len(expected), "Python: %d batches, Java: %d" % (n, len(expected))
    return loader


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_batches_as_the_java_loader(cli, dataset, tmp_path, case):
    c = CASES[case]
    compare(cli, dataset, tmp_path, FEATURES, c["java"], c["py"])


def test_same_batches_from_segments(cli, dataset, ssd, tmp_path):
    features = ["amount", "merchant_id", "embedding", "channel"]
    loader = compare(cli, dataset, tmp_path, features, ["--batch", 16, "--seed", 11],
                          dict(batch_samples=16, seed=11), java_extra=["--ssd", ssd], py_extra=dict(ssd=ssd))
    assert loader.stats["ssdBytes"] > 0, loader.stats


def test_same_derived_feature(cli, dataset, tmp_path):
    features = ["amount", "zscore(log1p(amount))", "log1p(quantity)"]
    compare(cli, dataset, tmp_path, features, ["--batch", 16, "--seed", 5], dict(batch_samples=16, seed=5))


def test_fixed_width_columns_are_views_of_shared_memory(dataset):
    loader = strata.Loader(dataset, features=["amount", "merchant_id"], batch_samples=16, seed=1)
    b = next(iter(loader))
    a = b.column(0).to_numpy(zero_copy_only=True)  # raises if a copy were needed
    assert a.dtype.name == "float64" and len(a) == b.num_rows
    assert not a.flags.owndata
    loader.close()
