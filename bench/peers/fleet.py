"""The jobs of `strata bench fleet` (issue 58): one training job's input pipeline, run as its own
process, reading a dataset larger than memory from a slow tier for several epochs, the way each
side's documentation recommends, every side shuffling alike.

    python fleet.py prepare SPEC.json   # the Parquet copy's sample table and reference digests
    python fleet.py job SPEC.json       # one job; JSON lines on stdout: "first", one per epoch, "end"

The shuffle every side applies (the spec's "blockChunks" B): the chunks (ORC stripes, Parquet row
groups: the same rows) in a shuffled order, taken B at a time, and the units (rows, or samples
with all their rows) whose first row lies in a block's chunks shuffled among themselves and cut
into batches: each epoch reads every chunk once. Strata's loader does this itself
(`shuffle_chunks=B`); the peers are written here as their users would write it over their
tool's documented API, with a buffer of the block's row groups, as MosaicML Streaming's `py1b`
shuffle and Ray Data's local shuffle buffer do. (The orders differ between sides: each side's
own seeded permutation; what is alike is the shuffle's kind and buffer.)

Every batch's values are checked: a job adds, for each feature, an order-free digest of
(row, value) over every row it delivers in an epoch, and each epoch's digests must equal the
reference computed from the Parquet copy with pyarrow alone (each row once an epoch).
"""

import json
import os
import sys
import time

import numpy as np

M1 = np.uint64(0x9E3779B97F4A7C15)
M2 = np.uint64(0xBF58476D1CE4E5B9)
M3 = np.uint64(0x94D049BB133111EB)


def canonical(values):
    """A column's values as uint64 words, the same whatever the reader's dtype for the type."""
    a = canonical_array(values)
    if a.dtype.kind == "f":
        a = a.view(np.uint32 if a.itemsize == 4 else np.uint64)
    return a.astype(np.uint64, copy=False) if a.dtype.kind in "iu" else a.astype(np.uint64)


def values_of(col):
    """A pyarrow column (Array or ChunkedArray) as numpy: fixed-size lists (embeddings) as a 2-D array."""
    import pyarrow as pa

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if pa.types.is_list(col.type) or pa.types.is_fixed_size_list(col.type) or pa.types.is_large_list(col.type):
        flat = col.flatten().to_numpy(zero_copy_only=False)
        return flat.reshape(len(col), -1) if len(col) else flat.reshape(0, 1)
    return col.to_numpy(zero_copy_only=False)


def numpy_values(batch, name):
    """A feature of a Strata numpy batch (``output="numpy"``): lists of equal length (embeddings) as a 2-D array."""
    values = batch[name]
    offsets = batch.get(name + ".offsets")
    valid = batch.get(name + ".valid")
    if valid is not None and offsets is None:
        # nulls as pyarrow's to_numpy gives them (the reference's reading): NaN, integers made float64
        # first; None in an object array of bools
        kind = values.dtype.kind
        values = values.astype(np.float64 if kind in "iu" else object if kind == "b" else values.dtype)
        values[~valid] = None if kind == "b" else np.nan
    if offsets is None:
        return values
    n = len(offsets) - 1
    if n == 0:
        return values.reshape(0, 1)
    width = int(offsets[1] - offsets[0])
    if int(offsets[-1]) != n * width or not np.all(np.diff(offsets) == width):
        raise SystemExit("fleet: %s holds lists of different lengths" % name)
    return values.reshape(n, width)


def digest(rows, values):
    """Order-free digest of (row, value) pairs: a sum (mod 2^64) of a mix of each pair. A 2-D
    feature (an embedding) counts each element, at row * width + its place."""
    values = np.asarray(values)
    rows = np.asarray(rows, dtype=np.uint64)
    if values.ndim == 2:
        d = values.shape[1]
        rows = (rows[:, None] * np.uint64(d) + np.arange(d, dtype=np.uint64)).ravel()
        values = values.ravel()
    with np.errstate(over="ignore"):
        h = rows * M1 + canonical(values)
        h ^= h >> np.uint64(31)
        h *= M2
        h ^= h >> np.uint64(29)
        h *= M3
        h ^= h >> np.uint64(32)
        return int(h.sum(dtype=np.uint64))


def emit(out, obj):
    out.write(json.dumps(obj) + "\n")
    out.flush()


def prepare(spec):
    """The slow tier's copies of the generated ORC dataset: Parquet files whose row groups (the
    chunks every side reads) end at sample boundaries near `rowGroupRows` rows, so that a sample
    lies in one chunk; flat per-column .npy files (seed 003's layout) for numpy.memmap; and, in the
    work directory, the sample table and the reference digest of every feature."""
    import pyarrow as pa
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    src = sorted(os.path.join(spec["orc"], f) for f in os.listdir(spec["orc"]) if f.endswith(".orc"))
    cols = ["sample_id"] + spec["stored"]
    table = pa.concat_tables([orc.ORCFile(f).read(columns=cols) for f in src]).combine_chunks()
    # Timestamps as microseconds (what Strata serves, and what the ORC writer stored).
    table = table.cast(pa.schema([pa.field(f.name, pa.timestamp("us") if pa.types.is_timestamp(f.type) else f.type)
                                  for f in table.schema]))
    sid = table.column("sample_id").to_numpy()
    starts = np.flatnonzero(np.r_[True, sid[1:] != sid[:-1]])
    counts = np.diff(np.r_[starts, len(sid)])
    # Row group ends: the first sample start at or after each multiple of rowGroupRows.
    target = spec["rowGroupRows"]
    ends = []
    at = 0
    while at < len(sid):
        want = at + target
        i = np.searchsorted(starts, want)
        end = int(starts[i]) if i < len(starts) else len(sid)
        ends.append(end)
        at = end
    os.makedirs(spec["parquet"], exist_ok=True)
    os.makedirs(spec["flat"], exist_ok=True)
    groups = []
    per_file = spec["rowGroupsPerFile"]
    lo = 0
    for k in range(0, len(ends), per_file):
        name = "part-%05d.parquet" % (k // per_file)
        with pq.ParquetWriter(os.path.join(spec["parquet"], name), table.schema) as w:
            for j, end in enumerate(ends[k:k + per_file]):
                w.write_table(table.slice(lo, end - lo), row_group_size=end - lo)
                groups.append([name, j, lo, end - lo])
                lo = end
    ref = {}
    rows = np.arange(len(sid), dtype=np.uint64)
    for f in spec["features"]:
        v = values_of(table.column(f))
        np.save(os.path.join(spec["flat"], f + ".npy"), canonical_array(v))
        ref[f] = str(digest(rows, v))
        del v
    np.save(os.path.join(spec["work"], "samples.npy"), np.stack([sid[starts], starts, counts], axis=1).astype(np.int64))
    sizes = {}
    for name in sorted({g[0] for g in groups}):
        md = pq.ParquetFile(os.path.join(spec["parquet"], name)).metadata
        for g in range(md.num_row_groups):
            for c in range(md.num_columns):
                col = md.row_group(g).column(c)
                sizes[col.path_in_schema] = sizes.get(col.path_in_schema, 0) + col.total_compressed_size
    with open(os.path.join(spec["work"], "reference.json"), "w") as fh:
        json.dump({"rows": int(len(sid)), "samples": int(len(starts)), "digests": ref, "rowGroups": groups,
                   "columnBytes": sizes}, fh)


def canonical_array(a):
    """A column as the flat file holds it: timestamps as int64 microseconds, dates as int32 days, bools as uint8."""
    a = np.asarray(a)
    if a.dtype.kind == "M":
        unit = np.datetime_data(a.dtype)[0]
        return a.view(np.int64) if unit in ("us", "D") else a.astype("datetime64[us]").view(np.int64)
    if a.dtype == np.bool_:
        return a.astype(np.uint8)
    return a


class Epoch:
    """What a job delivered in one epoch: rows, samples, batches, digests, timings."""

    def __init__(self, features):
        self.t0 = time.time()
        self.rows = 0
        self.samples = 0
        self.batches = 0
        self.dig = {f: 0 for f in features}

    def add(self, row_ids, columns, samples):
        self.rows += len(row_ids)
        self.samples += samples
        self.batches += 1
        for f, v in columns.items():
            self.dig[f] = (self.dig[f] + digest(row_ids, v)) % (1 << 64)

    def report(self, e, reference):
        ok = all(str(v) == reference["digests"][f] for f, v in self.dig.items())
        return {"epoch": e, "start": self.t0, "end": time.time(), "rows": self.rows, "samples": self.samples,
                "batches": self.batches, "valuesChecked": ok}


def block_order(n_chunks, block, rng):
    """The chunks in a shuffled order, cut into blocks of `block`."""
    order = rng.permutation(n_chunks)
    return [order[i:i + block] for i in range(0, n_chunks, block)]


def units_of_block(block_rows, mode, samples):
    """The units of a block: for rows, its rows; for samples, the samples whose first row lies in it
    (as indexes into the sample table). `block_rows` lists the block's row ranges (first, count)."""
    if mode == "rows":
        return np.concatenate([np.arange(a, a + n, dtype=np.int64) for a, n in block_rows])
    starts = samples[:, 1]
    parts = [np.arange(np.searchsorted(starts, a), np.searchsorted(starts, a + n)) for a, n in block_rows]
    return np.concatenate(parts)


def sample_rows(samples, picked):
    """The rows of the picked samples, each sample's rows in order."""
    starts = samples[picked, 1]
    counts = samples[picked, 2]
    total = int(counts.sum())
    offsets = np.repeat(starts - np.r_[0, np.cumsum(counts)[:-1]], counts)
    return np.arange(total, dtype=np.int64) + offsets


def peer_epochs(spec, reference, samples, load_block, out):
    """A peer's epochs: per block, its row groups loaded (`load_block` gives the block's columns, as
    numpy arrays over the block's rows in order), its units shuffled and batched."""
    groups = reference["rowGroups"]
    rng = np.random.default_rng(spec["seed"])
    mode = spec["mode"]
    per = spec["batchRows"] if mode == "rows" else spec["batchSamples"]
    for e in range(spec["epochs"]):
        ep = Epoch(spec["features"])
        for block in block_order(len(groups), spec["blockChunks"], rng):
            ranges = [(groups[g][2], groups[g][3]) for g in block]
            cols = load_block(block)
            units = units_of_block(ranges, mode, samples)
            units = units[rng.permutation(len(units))]
            for i in range(0, len(units), per):
                u = units[i:i + per]
                rows = u if mode == "rows" else sample_rows(samples, u)
                # a row's place among the block's rows laid end to end (its chunks in the block's order)
                pos = np.empty(len(rows), dtype=np.int64)
                off = 0
                for a, n in ranges:
                    inside = (rows >= a) & (rows < a + n)
                    pos[inside] = rows[inside] - a + off
                    off += n
                batch = {f: c[pos] for f, c in cols.items()}
                if ep.batches == 0 and e == 0:
                    emit(out, {"first": time.time()})
                ep.add(rows, batch, len(u) if mode == "samples" else 0)
        emit(out, ep.report(e, reference))


def job(spec):
    out = sys.stdout
    with open(os.path.join(spec["work"], "reference.json")) as fh:
        reference = json.load(fh)
    samples = np.load(os.path.join(spec["work"], "samples.npy"))
    side = spec["side"]
    feats = spec["features"]
    emit(out, {"started": time.time(), "pid": os.getpid()})
    if side == "strata":
        strata_job(spec, reference, samples, out)
        return
    groups = reference["rowGroups"]
    if side in ("pyarrow", "fsspec"):
        import pyarrow.parquet as pq

        if side == "fsspec":
            import fsspec

            # fsspec's block cache over the slow tier, kept on the SSD (its documented local cache;
            # it has no byte budget: what it writes is reported).
            fs = fsspec.filesystem("blockcache", target_protocol="file", cache_storage=spec["fsspecCache"])
        else:
            fs = None
        files = {}

        def open_cached(path):
            # The block cache shares its files between the host's processes without a lock: a job
            # opening a file another job is still creating fails mmap ("mmap length is greater than
            # file size", seen once in 2026-11-28's runs, killing that job). A user sharing the cache
            # has to open again, as here.
            for attempt in range(100):
                try:
                    return fs.open(path, "rb")
                except ValueError as e:
                    if "mmap length" not in str(e) or attempt == 99:
                        raise
                    time.sleep(0.05)

        s3 = None
        if spec.get("s3"):
            from pyarrow import fs as pafs

            # pyarrow's S3 file system at an S3-compatible endpoint, as its documentation shows
            # (endpoint_override, scheme), and ParquetFile's pre_buffer, which its documentation
            # recommends for high-latency file systems such as S3 (coalesced, concurrent range reads).
            c = spec["s3"]
            s3 = pafs.S3FileSystem(access_key=c["accessKey"], secret_key=c["secretKey"], region=c["region"],
                                   scheme=c["scheme"], endpoint_override=c["endpoint"])

        def pf(name):
            if name not in files:
                if s3 is not None:
                    files[name] = pq.ParquetFile(s3.open_input_file(spec["s3"]["bucket"] + "/" + name), pre_buffer=True)
                else:
                    path = os.path.join(spec["parquet"], name)
                    files[name] = pq.ParquetFile(open_cached(path) if fs else path)
            return files[name]

        def load_block(block):
            tables = [pf(groups[g][0]).read_row_group(groups[g][1], columns=feats, use_threads=False) for g in block]
            return {f: np.concatenate([values_of(t.column(f)) for t in tables]) for f in feats}
    elif side == "numpy":
        # numpy.memmap over seed 003's flat files; np.asarray views, copied per block as a user would.
        mm = {f: np.load(os.path.join(spec["flat"], f + ".npy"), mmap_mode="r") for f in feats}

        def load_block(block):
            return {f: np.concatenate([np.asarray(mm[f][groups[g][2]:groups[g][2] + groups[g][3]]) for g in block])
                    for f in feats}
    else:
        raise SystemExit("unknown side " + side)
    peer_epochs(spec, reference, samples, load_block, out)
    emit(out, {"end": time.time()})


def strata_job(spec, reference, samples, out):
    import strata

    mode = spec["mode"]
    ld = strata.Loader(spec["dataset"], features=spec["features"], mode=mode, batch_samples=spec["batchSamples"],
                       batch_rows=spec["batchRows"], seed=spec["seed"], epochs=spec["epochs"], node=spec.get("node"),
                       shuffle_chunks=spec["blockChunks"], threads=1, prefetch=2, units=True, job=spec["name"],
                       output="numpy")
    sid_to_row = None
    if mode == "samples":
        order = np.argsort(samples[:, 0])
        sid_to_row = (samples[order, 0], order)
    epoch, ep = -1, None
    for b in ld:
        e = b.epoch
        if e != epoch:
            if ep is not None:
                emit(out, ep.report(epoch, reference))
            epoch, ep = e, Epoch(spec["features"])
        units = ld.units
        if mode == "rows":
            rows = units.astype(np.int64)
            n_samples = 0
        else:
            picked = sid_to_row[1][np.searchsorted(sid_to_row[0], units)]
            rows = sample_rows(samples, picked)
            n_samples = len(units)
        cols = {f: numpy_values(b, f) for f in spec["features"]}
        if ep.batches == 0 and e == 0:
            emit(out, {"first": time.time()})
        ep.add(rows, cols, n_samples)
        del b, cols
    if ep is not None:
        emit(out, ep.report(epoch, reference))
    ld.close()
    emit(out, {"end": time.time(), "stats": ld.stats})


if __name__ == "__main__":
    what, path = sys.argv[1], sys.argv[2]
    with open(path) as fh:
        spec = json.load(fh)
    {"prepare": prepare, "job": job}[what](spec)
