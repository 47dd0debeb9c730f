"""Writes Parquet files as DuckDB and polars write them by default (issue 52: writers the project's
own files did not cover), for ParquetConformanceTest (make.py in the directory above computes
their expected values with pyarrow, as for every other file).

    python -m venv /tmp/wv && /tmp/wv/bin/pip install duckdb polars pyarrow
    /tmp/wv/bin/python loader-sdk/src/test/resources/parquet-conformance/writers/make.py
    target/pyvenv/bin/python loader-sdk/src/test/resources/parquet-conformance/make.py   # expectations

Each writer's defaults (no page checksums, its own codec and encodings), several row groups, the
types a feature table holds, nulls, and a column named as SQL names an unaliased expression
(DuckDB's "log1p(v)"), which Strata serves as the stored column it is.
"""
import datetime
import decimal
import os

import duckdb
import polars as pl

HERE = os.path.dirname(os.path.abspath(__file__))
N = 6000


def main():
    con = duckdb.connect()
    con.execute("SET threads = 1")
    con.execute("CREATE MACRO log1p(a) AS ln(1 + a)")  # a user's macro: the column it makes is named "log1p(v)"
    con.execute(f"""
        CREATE TABLE t AS SELECT
          i AS id,
          CASE WHEN i % 7 = 0 THEN NULL ELSE i * 3 - 1000 END AS v,
          (i % 11)::TINYINT AS small,
          CASE WHEN i % 5 = 0 THEN NULL ELSE i / 7.0 END AS x,
          (i * 1.25)::FLOAT AS f,
          CASE WHEN i % 9 = 0 THEN NULL ELSE (i * 123.456)::DECIMAL(18,3) END AS price,
          'name-' || (i % 13) AS s,
          DATE '2020-01-01' + (i % 400)::INTEGER AS d,
          TIMESTAMP '2024-03-01 00:00:00' + INTERVAL (i) SECOND AS ts,
          i % 2 = 0 AS b,
          TIME '01:02:03' + INTERVAL (i) SECOND AS tod,
          CASE WHEN i % 4 = 0 THEN [] ELSE [i, i + 1, NULL] END AS l
        FROM range({N}) r(i)""")
    con.execute(f"COPY (SELECT id, v, log1p(abs(v)), small, x, f, price, s, d, ts, b, tod, l FROM t) TO "
                f"'{os.path.join(HERE, 'duckdb-defaults.parquet')}' (FORMAT PARQUET, ROW_GROUP_SIZE 2048)")
    rows = []
    for i in range(N):
        rows.append(dict(
            id=i,
            v=None if i % 7 == 0 else i * 3 - 1000,
            x=None if i % 5 == 0 else i / 7.0,
            price=None if i % 9 == 0 else decimal.Decimal(i * 123456).scaleb(-3),
            s=f"name-{i % 13}",
            d=datetime.date(2020, 1, 1) + datetime.timedelta(days=i % 400),
            ts=datetime.datetime(2024, 3, 1) + datetime.timedelta(seconds=i),
            b=i % 2 == 0,
            l=[] if i % 4 == 0 else [i, i + 1, None],
        ))
    df = pl.DataFrame(rows, schema={"id": pl.Int64, "v": pl.Int64, "x": pl.Float64, "price": pl.Decimal(18, 3),
                                    "s": pl.String, "d": pl.Date, "ts": pl.Datetime("us"), "b": pl.Boolean,
                                    "l": pl.List(pl.Int64)})
    df.write_parquet(os.path.join(HERE, "polars-defaults.parquet"), row_group_size=1024)


if __name__ == "__main__":
    main()
