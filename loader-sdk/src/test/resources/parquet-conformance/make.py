"""Writes the pyarrow conformance files and every file's expected values, as pyarrow reads them.

    target/pyvenv/bin/python loader-sdk/src/test/resources/parquet-conformance/make.py [--check]

pyarrow/*.parquet: one table of every Parquet type pyarrow writes, in several writer settings
(codecs, page versions, dictionary or plain, page checksums, integer-backed decimals, the byte
stream split and delta encodings). parquet-testing/: files from apache/parquet-testing (see
LICENSE.txt there), taken as they are. writers/: files DuckDB and polars wrote with their defaults
(writers/make.py, which needs those two). expected/*.json.gz: each file's top-level columns as
pyarrow reads them, in the canonical form ParquetConformanceTest compares Strata's reading with
(below); files.json names each file's expectation. With --check nothing is written: pyarrow's
reading of every committed file is compared with the committed expectations (a pytest runs that).

Canonical values: null; true/false; integers as JSON integers (dates as days since the epoch,
timestamps as nanoseconds since the epoch, UTC for instants); floats as the IEEE bits of the
value widened to float64 ("NaN" for any NaN); decimals as the unscaled integer's decimal text;
strings as text; binaries as lowercase hex; lists as arrays. "type" is the Strata feature type a
column is expected to be served as, or null where Strata refuses it (the reason is Strata's).
"""
import datetime
import decimal
import gzip
import hashlib
import json
import math
import os
import struct
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = 1500
GROUP = 600


def table():
    rng = np.random.default_rng(20261126)
    n = ROWS
    nulls = rng.random(n) < 0.1

    def col(values, typ, nullable=True):
        mask = nulls if nullable else None
        return pa.array(values, type=typ, mask=mask)

    def ints(lo, hi):
        v = rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64 if lo < 0 or hi < 2**63 else np.uint64)
        v[0], v[1] = lo, hi
        return v

    f32 = rng.standard_normal(n).astype(np.float32)
    f32[:4] = [np.nan, np.inf, -np.inf, -0.0]
    f64 = rng.standard_normal(n) * 1e6
    f64[:4] = [np.nan, -np.inf, np.inf, -0.0]
    f16 = rng.standard_normal(n).astype(np.float16)
    f16[:2] = [np.nan, np.inf]
    words = ["", "a", "héllo", "日本語", "x" * 300, "tab\tand\nnewline"]
    strs = [words[i % len(words)] + str(i) if i % 7 else words[i % len(words)] for i in range(n)]
    bins = [bytes(rng.integers(0, 256, size=int(rng.integers(0, 20)), dtype=np.uint8)) for _ in range(n)]
    fixed = [bytes(rng.integers(0, 256, size=4, dtype=np.uint8)) for _ in range(n)]
    days = rng.integers(-800000, 2900000, size=n)
    days[0], days[1] = -719162, 2932896  # 0001-01-01, 9999-12-31
    ms = rng.integers(-(2**41), 2**41, size=n)
    us = rng.integers(-(2**53), 2**53, size=n)
    ns = rng.integers(-(2**62), 2**62, size=n)
    ctx = decimal.Context(prec=60)

    def decs(p, s):
        out = []
        for i in range(n):
            digits = int(rng.integers(1, p + 1))
            u = 0
            for _ in range(digits):
                u = u * 10 + int(rng.integers(0, 10))
            if i == 0:
                u = 10**p - 1
            if rng.random() < 0.5 or i == 1:
                u = -u if i != 0 else u
            if i == 1:
                u = -(10**p - 1)
            out.append(ctx.scaleb(decimal.Decimal(u), -s))
        return out

    def lists(make, empty_every=5):
        out = []
        for i in range(n):
            k = 0 if i % empty_every == 0 else int(rng.integers(1, 6))
            out.append([None if rng.random() < 0.1 else make() for _ in range(k)])
        return out

    cols = {
        "b": col(rng.random(n) < 0.5, pa.bool_()),
        "i8": col(ints(-128, 127), pa.int8()),
        "i16": col(ints(-32768, 32767), pa.int16()),
        "i32": col(ints(-(2**31), 2**31 - 1), pa.int32()),
        "i64": col(ints(-(2**63), 2**63 - 1), pa.int64(), nullable=False),
        "u8": col(ints(0, 255), pa.uint8()),
        "u16": col(ints(0, 65535), pa.uint16()),
        "u32": col(ints(0, 2**32 - 1), pa.uint32()),
        "u64": col(np.concatenate([np.array([0, 2**64 - 1], dtype=np.uint64), rng.integers(0, 2**64 - 1, size=n - 2, dtype=np.uint64, endpoint=True)]), pa.uint64()),
        "f16": col(f16, pa.float16()),
        "f32": col(f32, pa.float32()),
        "f64": col(f64, pa.float64(), nullable=False),
        "s": col(strs, pa.string()),
        "cat": pa.array([words[i % 3] for i in range(n)], pa.string()).dictionary_encode(),
        "bin": col(bins, pa.binary()),
        "fixed": col(fixed, pa.binary(4)),
        "d": col(days.astype(np.int32), pa.date32()),
        "ts_ms": col(ms, pa.timestamp("ms")),
        "ts_us": col(us, pa.timestamp("us")),
        "ts_ns": col(ns, pa.timestamp("ns")),
        "ts_us_utc": col(us, pa.timestamp("us", tz="UTC")),
        "ts_ns_ny": col(ns, pa.timestamp("ns", tz="America/New_York")),
        "dec9": col(decs(9, 2), pa.decimal128(9, 2)),
        "dec18": col(decs(18, 4), pa.decimal128(18, 4)),
        "dec38": col(decs(38, 10), pa.decimal128(38, 10)),
        "l_i64": col(lists(lambda: int(rng.integers(-(2**62), 2**62))), pa.list_(pa.int64())),
        "l_f32": col(lists(lambda: float(rng.standard_normal())), pa.list_(pa.float32())),
        "l_s": col(lists(lambda: words[int(rng.integers(0, len(words)))]), pa.list_(pa.string())),
        "l_dec": col(lists(lambda: decimal.Decimal(int(rng.integers(-99999, 99999))).scaleb(-2)), pa.list_(pa.decimal128(7, 2))),
        "l_d": col(lists(lambda: datetime.date(2000, 1, 1) + datetime.timedelta(days=int(rng.integers(0, 9000)))), pa.list_(pa.date32())),
        "st": pa.StructArray.from_arrays([pa.array(ints(0, 9)), pa.array(strs)], names=["x", "y"]),
        "m": pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
        "ll": pa.array([[[i], []] for i in range(n)], pa.list_(pa.list_(pa.int32()))),
        "t32": pa.array((np.arange(n) % 86400).astype(np.int32), pa.time32("s")),
    }
    return pa.table(cols)


# Writer settings: file name -> pq.write_table keywords.
VARIANTS = {
    "plain-none": dict(compression="none", use_dictionary=False),
    "dict-snappy": dict(compression="snappy"),
    "v2-zstd": dict(compression="zstd", data_page_version="2.0"),
    "gzip-checksums": dict(compression="gzip", write_page_checksum=True),
    "lz4raw-intdecimals": dict(compression="lz4", store_decimal_as_integer=True),
    "encodings": dict(
        compression="snappy", use_dictionary=False,
        column_encoding={"f32": "BYTE_STREAM_SPLIT", "f64": "BYTE_STREAM_SPLIT", "i32": "DELTA_BINARY_PACKED",
                         "i64": "DELTA_BINARY_PACKED", "s": "DELTA_BYTE_ARRAY", "bin": "DELTA_LENGTH_BYTE_ARRAY"}),
    "brotli": dict(compression="brotli"),
}


def strata_type(t):
    """The Strata feature type a pyarrow type is served as, or None."""
    if pa.types.is_dictionary(t):
        return strata_type(t.value_type)
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})" if t.precision <= 38 else None
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        e = strata_type(t.value_type)
        return None if e is None or e.startswith("list") else f"list<{e}>"
    simple = {
        pa.bool_(): "bool", pa.int8(): "int8", pa.int16(): "int16", pa.int32(): "int32", pa.int64(): "int64",
        pa.uint8(): "int16", pa.uint16(): "int32", pa.uint32(): "int64", pa.uint64(): "decimal(20,0)",
        pa.float16(): "float32", pa.float32(): "float32", pa.float64(): "float64",
        pa.string(): "string", pa.large_string(): "string", pa.binary(): "binary", pa.large_binary(): "binary",
        pa.date32(): "date",
    }
    if pa.types.is_fixed_size_binary(t):
        return "binary"
    return simple.get(t)


def canon(v, t):
    if v is None:
        return None
    if pa.types.is_dictionary(t):
        return canon(v, t.value_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [canon(x, t.value_type) for x in v]
    if pa.types.is_boolean(t):
        return bool(v)
    if pa.types.is_integer(t):
        return str(v) if t == pa.uint64() else int(v)
    if pa.types.is_floating(t):
        f = float(v)
        return "NaN" if math.isnan(f) else struct.unpack("<q", struct.pack("<d", f))[0]
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return v
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return v.hex()
    if pa.types.is_date32(t):
        return (v - datetime.date(1970, 1, 1)).days
    if pa.types.is_decimal(t):
        sign, digits, exp = v.as_tuple()
        u = int("".join(map(str, digits)) or "0") * 10 ** (exp + t.scale)
        return str(-u if sign else u)
    raise TypeError(t)


def expectations(path):
    try:
        f = pq.ParquetFile(path)
        tbl = f.read()
    except Exception as e:  # what pyarrow says of a file it cannot read
        return {"error": type(e).__name__}
    out = {"rows": tbl.num_rows, "columns": {}}
    for name in tbl.column_names:
        c = tbl.column(name)
        t = c.type
        if pa.types.is_timestamp(t):
            ints_ = c.cast(pa.int64()).to_pylist()
            k = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[t.unit]
            vals = [None if x is None else x * k for x in ints_]
        elif pa.types.is_date32(t):
            vals = c.cast(pa.int32()).to_pylist()
        elif pa.types.is_float16(t):
            vals = [None if x is None else canon(float(np.float32(x)), pa.float32()) for x in c.to_numpy(zero_copy_only=False).tolist()]
            vals = [None if m else v for v, m in zip(vals, c.is_null().to_pylist())]
        else:
            st = strata_type(t)
            if st is None:
                out["columns"][name] = {"type": None}
                continue
            vals = [canon(x, t) for x in c.to_pylist()]
        out["columns"][name] = {"type": strata_type(t), "values": vals}
    return out


def dump(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def main():
    check = "--check" in sys.argv
    if not check:
        t = table()
        os.makedirs(os.path.join(HERE, "pyarrow"), exist_ok=True)
        for name, kw in VARIANTS.items():
            pq.write_table(t, os.path.join(HERE, "pyarrow", name + ".parquet"), row_group_size=GROUP, **kw)
    index = {}
    blobs = {}
    for sub in ("pyarrow", "parquet-testing", "writers"):
        for name in sorted(os.listdir(os.path.join(HERE, sub))):
            if not (name.endswith(".parquet") or name.endswith(".parquet.encrypted")):
                continue
            e = dump(expectations(os.path.join(HERE, sub, name)))
            key = hashlib.sha256(e).hexdigest()[:16]
            index[sub + "/" + name] = key
            blobs[key] = e
    if check:
        want = json.load(open(os.path.join(HERE, "files.json")))
        bad = [f for f in want if want[f] != index.get(f)] + [f for f in index if f not in want]
        if bad:
            sys.exit("pyarrow " + pa.__version__ + " reads these differently from the committed expectations: " + ", ".join(bad))
        print(f"{len(index)} files read by pyarrow {pa.__version__} as expected")
        return
    os.makedirs(os.path.join(HERE, "expected"), exist_ok=True)
    for old in os.listdir(os.path.join(HERE, "expected")):
        os.remove(os.path.join(HERE, "expected", old))
    for key, e in blobs.items():
        with open(os.path.join(HERE, "expected", key + ".json.gz"), "wb") as out:
            out.write(gzip.compress(e, mtime=0))
    with open(os.path.join(HERE, "files.json"), "w") as out:
        json.dump(index, out, indent=1, sort_keys=True)
        out.write("\n")


if __name__ == "__main__":
    main()
