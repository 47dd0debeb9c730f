"""Parquet datasets through the Python client, and the conformance files' expectations as pyarrow reads them."""

import datetime
import decimal
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import strata

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAKE = os.path.join(ROOT, "loader-sdk", "src", "test", "resources", "parquet-conformance", "make.py")


def test_pyarrow_reads_the_conformance_files_as_their_expectations_say():
    # The Java conformance test compares Strata's reading with these expectations; this keeps them pyarrow's.
    p = subprocess.run([sys.executable, MAKE, "--check"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr


def table(n=30000):
    rng = np.random.default_rng(5)
    sample = np.sort(rng.integers(0, n // 20, size=n))
    nulls = rng.random(n) < 0.05
    return pa.table({
        "sample_id": pa.array(sample, pa.int64()),
        "amount": pa.array(rng.standard_normal(n), pa.float64(), mask=nulls),
        "qty": pa.array(rng.integers(-300, 300, size=n), pa.int16()),
        "flag": pa.array(rng.random(n) < 0.5, pa.bool_()),
        "label": pa.array(["c%d" % (i % 37) for i in range(n)], pa.string(), mask=nulls),
        "emb": pa.array([rng.standard_normal(4).astype(np.float32).tolist() for _ in range(n)], pa.list_(pa.float32())),
        "day": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=int(d)) for d in rng.integers(0, 2000, n)]),
        "at": pa.array(rng.integers(0, 2**60, size=n), pa.timestamp("ns")),
        "price": pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-10**9, 10**9, n)], pa.decimal128(18, 2)),
    })


def test_a_parquet_dataset_reads_as_pyarrow_reads_it(cli, tmp_path):
    t = table()
    files = tmp_path / "files"
    files.mkdir()
    pq.write_table(t.slice(0, 18000), files / "a.parquet", row_group_size=5000)
    pq.write_table(t.slice(18000), files / "b.parquet", row_group_size=5000, compression="zstd")
    ds = tmp_path / "ds"
    cli("dataset", "import", "-o", ds, "--sample-column", "sample_id", files)
    features = t.column_names
    got = []
    for b in strata.Loader(str(ds), features=features, mode="rows", batch_rows=4096, shuffle=False):
        got.append(b)
    out = pa.Table.from_batches(got)
    assert out.num_rows == t.num_rows
    for name in features:
        want = t.column(name).combine_chunks()
        have = out.column(name).combine_chunks()
        assert have.cast(want.type).equals(want), name
    # Whole samples, shuffled: every sample's rows once, as they are in the files.
    seen = 0
    for b in strata.Loader(str(ds), features=["sample_id", "amount"], batch_samples=64, seed=3):
        seen += b.num_rows
    assert seen == t.num_rows
