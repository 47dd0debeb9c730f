"""Writes the edge-case Parquet files ParquetWritersTest reads (issue 52), with pyarrow.

    target/pyvenv/bin/python loader-sdk/src/test/resources/parquet-conformance/edge/make.py

empty-row-groups.parquet: row groups of 3, 0 and 3 rows (an empty write between batches).
empty-table.parquet: an empty table (one row group of 0 rows).
nan-bits.parquet: FLOAT, FLOAT16 and DOUBLE columns holding signalling and quiet NaNs with
payloads, both signs; the test knows every bit pattern (listed here and in the test).
derived-names.parquet: int64 columns named like derived specs, as SQL engines name unaliased
expressions: v, "log1p(v)", "zscore(v)" and "log1p(w)" (no column w); their values are not
those derivations of v.
paged.parquet: int64 v = 0..2999 in two row groups of small plain pages, with page indexes (an
offset index says where each page is, so a read of some rows reads some pages).
mixed-a.parquet, mixed-b.parquet: one dataset's files as two writers store the same columns: a
decimal(18,3) as FIXED_LEN_BYTE_ARRAY (pyarrow's default) and as INT64 (polars' way, here
pyarrow's store_decimal_as_integer), an int64 column optional in one and required in the other.
"""
import decimal
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))

F32 = [0x7F800001, 0x7FC00001, 0xFF800001, 0x7FBFFFFF, 0x3F800000, 0x7F800000]
F16 = [0x7C01, 0x7E00, 0xFC01, 0x7DFF, 0x3C00, 0x7C00]
F64 = [0x7FF0000000000001, 0x7FF8000000000001, 0xFFF0000000000001, 0x7FF7FFFFFFFFFFFF, 0x3FF0000000000000, 0x7FF0000000000000]


def main():
    t = pa.table({"v": pa.array([1, 2, 3], pa.int64()), "s": pa.array(["a", None, "c"])})
    with pq.ParquetWriter(os.path.join(HERE, "empty-row-groups.parquet"), t.schema) as w:
        w.write_table(t)
        w.write_table(t.slice(0, 0))
        w.write_table(pa.table({"v": pa.array([4, 5, 6], pa.int64()), "s": pa.array(["d", "e", None])}))
    pq.write_table(t.slice(0, 0), os.path.join(HERE, "empty-table.parquet"))
    pq.write_table(pa.table({
        "f": pa.array(np.array(F32, dtype=np.uint32).view(np.float32)),
        "h": pa.array(np.array(F16, dtype=np.uint16).view(np.float16)),
        "d": pa.array(np.array(F64, dtype=np.uint64).view(np.float64)),
    }), os.path.join(HERE, "nan-bits.parquet"), use_dictionary=False)
    n = 1000
    v = np.arange(1, n + 1, dtype=np.int64)
    pq.write_table(pa.table({"v": v, "log1p(v)": v * 10, "zscore(v)": v * 100, "log1p(w)": v * 1000}),
                   os.path.join(HERE, "derived-names.parquet"), row_group_size=400)
    pq.write_table(pa.table({"v": np.arange(3000, dtype=np.int64)}), os.path.join(HERE, "paged.parquet"),
                   row_group_size=1500, use_dictionary=False, compression="none", data_page_size=1024,
                   write_page_index=True)
    dec = pa.decimal128(18, 3)
    a = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                  "price": pa.array([decimal.Decimal("1.500"), None, decimal.Decimal("-999999999999999.999")], dec)})
    pq.write_table(a, os.path.join(HERE, "mixed-a.parquet"))
    b = pa.Table.from_arrays([pa.array([4, 5], pa.int64()), pa.array([decimal.Decimal("0.001"), decimal.Decimal("42.000")], dec)],
                             schema=pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("price", dec)]))
    pq.write_table(b, os.path.join(HERE, "mixed-b.parquet"), store_decimal_as_integer=True)


if __name__ == "__main__":
    main()
