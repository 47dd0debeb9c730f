"""The tools a PyTorch user would pick instead of Strata, side by side with it (`strata bench peers`).

    peers.py SPEC.json SCENARIO [CORES]

CORES (atom and rows): 1 to run every process of the scenario on one core, all (the default) on
every core this process may use.

Each peer is used through its own API the way its documentation recommends (batched access
where it offers it), on the same data and the same requests as Strata, and every peer's batch is
checked equal to Strata's for the same request before it is timed. One JSON object per
scenario on stdout (its last line). Scenarios:

  prepare   write the peers' copies of the dataset (Arrow IPC, Parquet, .npy per column, a Hugging
            Face dataset on disk) and the document corpus (untimed)
  atom      seed 000's own workload: 512 random identifiers per batch, all rows of each
  rows      shuffled single rows, fixed-width features, as torch tensors; 0 and 2 workers
  docs      seed 004's: random documents by id from 1, 2, 4 and 8 processes
  memory    seed 001's: host memory of 1, 3 and 8 concurrent jobs, every process counted
  cold      seed 000's workload on data larger than the memory given (a memory cgroup), the
            page cache dropped first; each peer a fresh process (Strata a fresh loader service)
  job-*     one process of the docs and memory scenarios (started by them)

The rates are batches (documents) per second after a warm-up, in this process's steady state;
the data lies in the page cache (warm), except in `cold`.
"""

import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def versions():
    out = {"python": sys.version.split()[0]}
    for mod in ("numpy", "pyarrow", "torch", "duckdb", "datasets", "ray", "lz4"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # not installed: the peer is reported unavailable
            out[mod] = None
    return out


def warmup_seconds(seconds):
    """Untimed warm-up every peer gets alike: long enough for a JIT (Strata's loader service, on a
    small machine its compiler threads compete with the work) to reach steady state."""
    return min(2.0, seconds / 2)


_TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu():
    """CPU seconds (user and system, every thread) of this process, of every live process under it
    (DataLoader workers, Ray's processes, the loader service it started), of its children already
    reaped, and of this run's loader service wherever it was started: every process of a side."""
    parent, ticks = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as fh:
                s = fh.read()
        except OSError:
            continue
        f = s[s.rindex(")") + 2:].split()
        parent[int(d)] = int(f[1])
        ticks[int(d)] = int(f[11]) + int(f[12])
    me = os.getpid()
    svc = service_pid()
    total = 0
    for pid in ticks:
        p, hops = pid, 0
        while p not in (me, 0, 1) and hops < 64:
            p, hops = parent.get(p, 0), hops + 1
        if p == me or pid == svc:
            total += ticks[pid]
    t = os.times()
    return total / _TICK + t.children_user + t.children_system


def settle(limit=3.0):
    """Waits (at most `limit` s) until no process of this run spends CPU (under 5 ms in 100 ms):
    a side's prefetching, its workers' shutdown or a collector finishes in no other side's turn."""
    t0 = time.perf_counter()
    last = tree_cpu()
    while time.perf_counter() - t0 < limit:
        time.sleep(0.1)
        now = tree_cpu()
        if now - last < 0.005:
            return
        last = now


def pin_cores(count):
    """Confines this process, and so every process it starts (DataLoader workers, Ray, the loader
    service: one service per core set, its socket given by the caller), to the first `count` of the
    CPUs it may use ("all": every one of them, nothing changed)."""
    if count != "all":
        allowed = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, set(allowed[:max(1, int(count))]))


def cores():
    """The CPUs this run may use."""
    return len(os.sched_getaffinity(0))


def rate(step, seconds, warmup=2, min_batches=3):
    """Calls step() (one batch; returns its rows) `warmup` times and for warmup_seconds(seconds),
    then for `seconds` (at least `min_batches` times); returns batches/s and rows/s."""
    t0 = time.perf_counter()
    k = 0
    while k < warmup or time.perf_counter() - t0 < warmup_seconds(seconds):
        step()
        k += 1
    n = 0
    rows = 0
    t0 = time.perf_counter()
    while n < min_batches or time.perf_counter() - t0 < seconds:
        rows += step()
        n += 1
    dt = time.perf_counter() - t0
    return {"batches": n, "seconds": dt, "batchesPerSecond": n / dt, "rowsPerSecond": rows / dt}


class IterStep:
    """One batch of an iterator a step (a DataLoader's: a new iterator is made when one ends);
    returns 1 (its rows are not counted)."""

    def __init__(self, make_iter, skip):
        self.make_iter = make_iter
        self.skip = skip
        self.it = None

    def __call__(self):
        while True:
            if self.it is None:
                self.it = self.make_iter()
            try:
                next(self.it)
                return 1
            except StopIteration:
                self.it = None

    def close(self):
        self.it = None


# Turns of the scenarios run at equal cores (atom, rows): five shorter turns in the same time, so
# that a median turn is past a JIT's warm-up even on one core, where its compiler threads take the
# core from the work (Strata's first turn on one core ran 108 batches/s, its third 170).
EQUAL_CORES_ROUNDS = 5

# Batches taken untimed at the start of each turn: a loader's prefetched batches (4 by default),
# assembled while another side was timed, are not counted as this side's speed.
DRAIN = 5


def until_steady(step, warmup):
    """Steps on (at most 3 x `warmup` s) until two slices in a row run within 10 % of each other:
    a JIT still compiling (on one core its compiler threads take the core from the work) is not
    timed. A side that is steady at once pays two slices."""
    piece = min(0.5, warmup / 2)
    limit = time.perf_counter() + 3 * warmup
    prev = None
    while time.perf_counter() < limit:
        n = 0
        t0 = time.perf_counter()
        while n < 3 or time.perf_counter() - t0 < piece:
            step()
            n += 1
        r = n / (time.perf_counter() - t0)
        if prev is not None and abs(r - prev) <= 0.1 * max(r, prev):
            return
        prev = r


def rounds_rate(steps, seconds, rounds=3, keep_open=True, steady=False):
    """The peers of one table, timed in turns: the machine is shared and its speed drifts, so each
    peer (a step function: one batch, returns its rows) is timed for seconds/rounds in each of
    `rounds` rounds (the order turned each round), after a warm-up (its start-up batches and
    warmup_seconds); a peer's figure is its median round. With keep_open every peer stays open
    from round to round (warmed once); otherwise a peer with worker processes (an IterStep) is
    closed after each turn, so that no other peer's workers are alive while one is timed, and
    warmed again at its next."""
    def warm(step):
        for _ in range(getattr(step, "skip", 2)):
            step()
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < warmup_seconds(seconds):
            step()
        if steady:
            until_steady(step, warmup_seconds(seconds))

    if keep_open:
        for step in steps.values():
            warm(step)
    per = {name: [] for name in steps}
    names = list(steps)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            step = steps[name]
            if not keep_open:
                warm(step)
            # No other side's work in this turn (settle), and none of this side's done before it:
            # the batches a side assembled ahead while idle are taken untimed.
            settle()
            for _ in range(DRAIN):
                step()
            n = 0
            rows = 0
            c0 = tree_cpu()
            t0 = time.perf_counter()
            while n < 3 or time.perf_counter() - t0 < seconds / rounds:
                rows += step()
                n += 1
            dt = time.perf_counter() - t0
            cpu = tree_cpu() - c0
            per[name].append({"batches": n, "seconds": dt, "batchesPerSecond": n / dt, "rowsPerSecond": rows / dt,
                              "cpuSecondsPerBatch": cpu / n})
            if not keep_open and isinstance(step, IterStep):
                step.close()
                gc.collect()
    out = {}
    for name, rs in per.items():
        mid = sorted(rs, key=lambda x: x["batchesPerSecond"])[len(rs) // 2]
        out[name] = dict(mid, rounds=[round(x["batchesPerSecond"], 1) for x in rs],
                         cpuSecondsPerBatch=sorted(x["cpuSecondsPerBatch"] for x in rs)[len(rs) // 2])
    return out


def iterate_rate(make_iter, seconds, skip, per=lambda b: 1):
    """The rate of an iterator (a DataLoader): the first `skip` batches (start-up, workers filling
    their queues), and the batches of warmup_seconds(seconds) after them, are not timed; a new
    iterator is made when one ends."""
    it = make_iter()
    seen = 0
    t0 = time.perf_counter()
    while seen < skip or time.perf_counter() - t0 < warmup_seconds(seconds):
        try:
            next(it)
        except StopIteration:
            it = make_iter()
            continue
        seen += 1
        if seen == skip:
            t0 = time.perf_counter()
    n = 0
    c0 = tree_cpu()
    t0 = time.perf_counter()
    while n < 3 or time.perf_counter() - t0 < seconds:
        try:
            next(it)
        except StopIteration:
            it = make_iter()
            continue
        n += 1
    dt = time.perf_counter() - t0
    cpu = tree_cpu() - c0
    del it
    return {"batches": n, "seconds": dt, "batchesPerSecond": n / dt, "cpuSecondsPerBatch": cpu / n}


# ----------------------------------------------------------------------------------- data

def files(spec):
    d = spec["peerData"]
    return {
        "ipc": os.path.join(d, "events.arrow"),
        "ranges": os.path.join(d, "ranges.npy"),
        "parquet": os.path.join(d, "events.parquet"),
        "npy": os.path.join(d, "npy"),
        "hf": os.path.join(d, "hf"),
        "docs": os.path.join(d, "docs"),
    }


def prepare(spec):
    """The peers' copies of the Strata dataset, each in the form its tool reads, written once."""
    import pyarrow as pa
    import pyarrow.ipc as ipc
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    f = files(spec)
    os.makedirs(f["npy"], exist_ok=True)
    manifest = json.load(open(os.path.join(spec["dataset"], "manifest.json")))
    table = pa.concat_tables([orc.read_table(os.path.join(spec["dataset"], p["path"])) for p in manifest["files"]])
    table = table.combine_chunks()
    # Arrow IPC file, the seed's own store (uncompressed, memory-mappable)
    with pa.OSFile(f["ipc"], "wb") as out, ipc.new_file(out, table.schema) as w:
        w.write_table(table, max_chunksize=1 << 20)
    # the identifier -> row range table (the seed's "dimensions table")
    ids = table.column("sample_id").to_numpy()
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    ends = np.r_[starts[1:], len(ids)]
    np.save(f["ranges"], np.stack([ids[starts], starts, ends], 1))
    # Parquet with its row number (Ray's batches are checked against the rows they hold)
    pq.write_table(table.append_column("row", pa.array(np.arange(table.num_rows, dtype=np.int64))), f["parquet"],
                   row_group_size=1 << 20)
    # one .npy per column: fixed-width values; strings and lists as offsets + values
    for name in table.column_names:
        col = table.column(name).combine_chunks()
        t = col.type
        if col.null_count:
            # numpy has no nulls: the values (nulls as zero) beside a validity mask, as Strata's tensors give them
            np.save(os.path.join(f["npy"], name + ".valid.npy"), col.is_valid().to_numpy(zero_copy_only=False))
            col = col.fill_null(0) if not (pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_list(t)) else col
        if pa.types.is_string(t) or pa.types.is_binary(t):
            col = col.cast(pa.large_string()) if pa.types.is_string(t) else col.cast(pa.large_binary())
            np.save(os.path.join(f["npy"], name + ".offsets.npy"), np.frombuffer(col.buffers()[1], dtype=np.int64)[:len(col) + 1])
            np.save(os.path.join(f["npy"], name + ".bytes.npy"), np.frombuffer(col.buffers()[2], dtype=np.uint8))
        elif pa.types.is_list(t):
            np.save(os.path.join(f["npy"], name + ".offsets.npy"), col.offsets.to_numpy())
            np.save(os.path.join(f["npy"], name + ".values.npy"), col.values.to_numpy())
        elif pa.types.is_boolean(t):
            np.save(os.path.join(f["npy"], name + ".npy"), col.to_numpy(zero_copy_only=False))
        elif pa.types.is_decimal(t):
            np.save(os.path.join(f["npy"], name + ".npy"), np.frombuffer(col.buffers()[1], dtype=np.int64).reshape(-1, 2))
        elif pa.types.is_timestamp(t):
            np.save(os.path.join(f["npy"], name + ".npy"), col.cast(pa.int64()).to_numpy())
        else:
            np.save(os.path.join(f["npy"], name + ".npy"), col.to_numpy())
    # a Hugging Face dataset on disk (Arrow files it memory-maps)
    import datasets

    datasets.Dataset(table.select(spec["rowFeatures"])).save_to_disk(f["hf"])
    prepare_docs(spec)
    emit({"prepared": spec["peerData"], "rows": table.num_rows, "samples": int(len(starts))})


# ----------------------------------------------------------------------------------- ATOM

def atom_fetchers(spec, only=("pyarrowIpc", "numpyMemmap", "duckdbParquet")):
    """Each peer's way to get all rows of a list of sample ids, as a dict of column -> numpy (or
    Arrow for strings), materialized (what a training step then ships to a GPU); the peers named
    in `only` (each opened only when named: the cold runs time one peer a process)."""
    f = files(spec)
    ranges = np.load(f["ranges"])
    where = {int(s): i for i, s in enumerate(ranges[:, 0])}
    cols = spec["atomFeatures"]
    out = {}
    if "pyarrowIpc" in only:
        out["pyarrowIpc"] = _pyarrow_ipc(f, ranges, where, cols)
    if "numpyMemmap" in only:
        out["numpyMemmap"] = _numpy_memmap(f, ranges, where, cols)
    if "duckdbParquet" in only:
        out["duckdbParquet"] = _duckdb_parquet(f, cols)
    return out


def _pyarrow_ipc(f, ranges, where, cols):
    import pyarrow as pa
    import pyarrow.ipc as ipc

    # pyarrow over a memory-mapped Arrow IPC file, with the identifier -> row range table: the seed's own code
    table = ipc.open_file(pa.memory_map(f["ipc"])).read_all().select(cols)

    def pyarrow_ipc(sample_ids):
        parts = [table.slice(int(ranges[where[s], 1]), int(ranges[where[s], 2] - ranges[where[s], 1])) for s in sample_ids]
        return pa.concat_tables(parts).combine_chunks()

    return pyarrow_ipc


def _numpy_memmap(f, ranges, where, cols):
    # per-column numpy.memmap arrays (the seed's second candidate): ranges concatenated per column,
    # sliced through plain ndarray views of the maps (a slice of the np.memmap subclass costs ~5x more)
    def load(name):
        return np.asarray(np.load(os.path.join(f["npy"], name), mmap_mode="r"))

    mm = {}
    for c in cols:
        p = os.path.join(f["npy"], c + ".npy")
        if os.path.exists(os.path.join(f["npy"], c + ".valid.npy")):
            mm[c + ".valid"] = ("fixed", load(c + ".valid.npy"))
        if os.path.exists(p):
            mm[c] = ("fixed", load(c + ".npy"))
        elif os.path.exists(os.path.join(f["npy"], c + ".bytes.npy")):
            mm[c] = ("var", load(c + ".offsets.npy"), load(c + ".bytes.npy"))
        else:
            mm[c] = ("list", load(c + ".offsets.npy"), load(c + ".values.npy"))

    def numpy_memmap(sample_ids):
        spans = [(int(ranges[where[s], 1]), int(ranges[where[s], 2])) for s in sample_ids]
        out = {}
        for c, m in mm.items():
            if m[0] == "fixed":
                out[c] = np.concatenate([m[1][a:b] for a, b in spans])
            else:
                offs, vals = m[1], m[2]
                lengths = np.concatenate([np.diff(offs[a:b + 1]) for a, b in spans])
                o = np.zeros(len(lengths) + 1, dtype=np.int64)
                np.cumsum(lengths, out=o[1:])
                out[c] = (o, np.concatenate([vals[offs[a]:offs[b]] for a, b in spans]))
        return out

    return numpy_memmap


def _duckdb_parquet(f, cols):
    # DuckDB over Parquet (the seed's baseline): one query per batch, ids as a list parameter
    import duckdb

    con = duckdb.connect()
    select = ", ".join('p."%s"' % c for c in cols)
    # the rows of the requested samples, samples in the order asked, rows in file order
    query = ("SELECT %s FROM read_parquet('%s') p JOIN (SELECT unnest($ids) AS sid, generate_subscripts($ids, 1) AS pos) q"
             " ON p.sample_id = q.sid ORDER BY q.pos, p.row") % (select, f["parquet"])

    def duckdb_parquet(sample_ids):
        return con.execute(query, {"ids": list(map(int, sample_ids))}).to_arrow_table()

    return duckdb_parquet


def as_table(x, cols):
    """A peer's batch as a pyarrow Table, for comparison."""
    import pyarrow as pa

    if isinstance(x, pa.Table):
        return x.select(cols).combine_chunks()
    return None


def check_atom(batch, got, cols, peer):
    """Strata's batch (a RecordBatch) against a peer's answer for the same sample ids."""
    import pyarrow as pa

    if isinstance(got, dict):  # numpy peer: compare column values (where valid) and validity
        for c in cols:
            want = batch.column(c)
            g = got[c]
            t = want.type
            if c + ".valid" in got:
                valid = want.is_valid().to_numpy(zero_copy_only=False)
                if not np.array_equal(valid, got[c + ".valid"]):
                    raise SystemExit("peer %s differs from Strata in the nulls of column %s" % (peer, c))
                want = want.filter(valid)
                g = g[valid]
            if isinstance(g, tuple):
                offs, vals = g
                if pa.types.is_list(t):
                    same = np.array_equal(np.asarray(want.offsets) - want.offsets[0].as_py(), offs) and np.array_equal(
                        want.flatten().to_numpy(), vals)
                else:
                    same = want.to_pylist() == [bytes(vals[offs[i]:offs[i + 1]]).decode() for i in range(len(offs) - 1)]
            elif pa.types.is_boolean(t):
                same = np.array_equal(want.to_numpy(zero_copy_only=False), g)
            elif pa.types.is_decimal(t):
                same = np.array_equal(np.frombuffer(want.buffers()[1], dtype=np.int64).reshape(-1, 2)[want.offset:want.offset + len(want)], g)
            elif pa.types.is_timestamp(t):
                same = np.array_equal(want.cast(pa.int64()).to_numpy(), g)
            else:
                same = np.array_equal(want.to_numpy(zero_copy_only=False), g)
            if not same:
                raise SystemExit("peer %s differs from Strata in column %s" % (peer, c))
        return
    t = as_table(got, cols)
    for c in cols:
        want = batch.column(c)
        g = t.column(c).chunk(0) if t.column(c).num_chunks else t.column(c)
        if pa.types.is_timestamp(want.type):
            want, g = want.cast(pa.int64()), g.cast(pa.timestamp(want.type.unit)).cast(pa.int64())
        if not want.equals(g.cast(want.type) if g.type != want.type else g):
            raise SystemExit("peer %s differs from Strata in column %s" % (peer, c))


class Pipelined:
    """A peer's fetch on `threads` threads, `threads` batches in flight (a step: one batch, in order)."""

    def __init__(self, fetch, ids, threads):
        import collections
        import concurrent.futures

        self.fetch = fetch
        self.ids = ids
        self.pool = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="peer")
        self.pending = collections.deque(self.pool.submit(fetch, ids()) for _ in range(threads))

    def __call__(self):
        got = self.pending.popleft().result()
        self.pending.append(self.pool.submit(self.fetch, self.ids()))
        return _rows(got)

    def close(self):
        self.pool.shutdown(wait=True, cancel_futures=True)


def atom(spec):
    import strata
    from strata.torch import to_tensors

    cols = spec["atomFeatures"]
    seconds = spec["seconds"]
    fetch = atom_fetchers(spec)
    result = {"scenario": "atom", "batchSamples": 512, "features": cols, "peers": {}}
    # Equality: Strata's first batches, and each peer asked for the same sample ids.
    checker = strata.Loader(spec["dataset"], features=cols, batch_samples=512, ssd=spec["ssd"], seed=7, units=True)
    checked = 0
    for b in checker:
        for name, fn in fetch.items():
            check_atom(b, fn(checker.units), cols, name)
        checked += 1
        if checked >= spec["checkBatches"]:
            break
    checker.close()
    result["batchesChecked"] = checked
    ranges = np.load(files(spec)["ranges"])
    rng = np.random.default_rng(11)

    def ids():
        return ranges[rng.choice(len(ranges), 512, replace=False), 0]

    steps = {name: (lambda fn=fn: _rows(fn(ids()))) for name, fn in fetch.items()}
    n = cores()
    result["cores"] = n
    pools = []
    if n > 1:
        # With more than one core, each peer as a user runs it on threads (torchdata's ParallelMapper
        # does this): `n` batches in flight on `n` threads, numpy's and pyarrow's copies release the GIL.
        for name, fn in fetch.items():
            if name != "duckdbParquet":  # DuckDB runs its own threads on every core
                pool = Pipelined(fn, ids, n)
                pools.append(pool)
                steps["%sThreads%d" % (name, n)] = pool
    # Strata: its Python client, batches as torch tensors (strings stay Arrow arrays), as a job reads them;
    # one assembly thread, and as many as cores.
    loaders = []
    for threads in sorted({1, n}):
        ld = strata.Loader(spec["dataset"], features=cols, batch_samples=512, ssd=spec["ssd"], seed=1, epochs=100000,
                           threads=threads, drop_last=True)
        loaders.append(ld)

        def step(it=iter(ld)):
            b = next(it)
            to_tensors(b)
            return b.num_rows

        steps["strata%d" % threads] = step
    result["peers"] = rounds_rate(steps, seconds, rounds=EQUAL_CORES_ROUNDS, steady=True)
    for ld in loaders:
        ld.close()
    for pool in pools:
        pool.close()
    gc.collect()
    emit(result)


def _rows(x):
    if isinstance(x, dict):
        v = next(iter(x.values()))
        return len(v[0]) - 1 if isinstance(v, tuple) else len(v)
    return x.num_rows


# ----------------------------------------------------------------------------------- rows

def rows(spec):
    import torch
    from torch.utils.data import BatchSampler, DataLoader, Dataset, IterableDataset, RandomSampler, get_worker_info

    import strata
    from strata.torch import StrataIterableDataset, to_tensors

    f = files(spec)
    feats = spec["rowFeatures"]
    B = spec["batchRows"]
    seconds = spec["seconds"]
    mm = {c: np.load(os.path.join(f["npy"], c + ".npy"), mmap_mode="r") for c in feats}
    for c in feats:
        if os.path.exists(os.path.join(f["npy"], c + ".valid.npy")):
            mm[c + ".valid"] = np.load(os.path.join(f["npy"], c + ".valid.npy"), mmap_mode="r")
    n = len(mm[feats[0]])
    # Plain ndarray views of the maps: indexing the np.memmap subclass costs a wrapper object a call.
    arrays = {c: np.asarray(a) for c, a in mm.items()}

    def gather(idx):
        return {c: torch.from_numpy(a[idx]) for c, a in arrays.items()}

    def permutation(seed):
        # torch's permutation, as a PyTorch user shuffles (numpy's int64 one is about 3x slower)
        return torch.randperm(n, generator=torch.Generator().manual_seed(seed)).numpy()

    class MemmapBatches(Dataset):
        """A map-style Dataset whose items are whole batches: a BatchSampler hands __getitem__
        a list of indices, one fancy-indexing gather per column (what a careful user writes)."""

        def __len__(self):
            return n

        def __getitem__(self, idx):
            return gather(np.asarray(idx))

    class MemmapPermutation(IterableDataset):
        """An IterableDataset over a seeded permutation, each worker its share of the batches."""

        def __init__(self, seed):
            self.seed = seed

        def __iter__(self):
            info = get_worker_info()
            w, i = (1, 0) if info is None else (info.num_workers, info.id)
            perm = permutation(self.seed)
            for k, s in enumerate(range(0, n - B + 1, B)):
                if k % w == i:
                    yield gather(perm[s:s + B])

    result = {"scenario": "rows", "batchRows": B, "features": feats, "rows": n, "peers": {}}

    # Equality: Strata's first batches' rows, asked of every peer that can be asked for rows.
    import datasets

    hf = datasets.load_from_disk(f["hf"]).with_format("torch")
    checker = strata.Loader(spec["dataset"], features=feats, mode="rows", batch_rows=B, ssd=spec["ssd"], seed=7,
                            units=True)
    checked = 0
    for b in checker:
        t = to_tensors(b)
        idx = checker.units
        answers = {"numpyMemmap": gather(idx), "huggingFace": hf[idx.tolist()]}
        for peer, got in answers.items():
            for c in feats:
                valid = t.get(c + ".valid")
                # compared in the peer's dtype (Hugging Face's torch format makes float64 float32 and ints int64)
                g = got[c]
                want = t[c].to(g.dtype)
                if valid is not None:
                    if peer == "numpyMemmap" and not torch.equal(valid, got[c + ".valid"]):
                        raise SystemExit("peer %s differs from Strata in the nulls of column %s" % (peer, c))
                    want, g = want[valid], g[valid]
                if not torch.equal(want, g):
                    raise SystemExit("peer %s differs from Strata in column %s" % (peer, c))
        checked += 1
        if checked >= spec["checkBatches"]:
            break
    checker.close()
    result["batchesChecked"] = checked
    ray_check = None

    # Every side on the cores this run has: no workers, and as many workers as cores (Strata: as
    # many assembly threads as cores).
    threads = cores()
    result["cores"] = threads
    for workers in sorted({0, threads}):
        skip = 2 * workers + 2
        steps = {}
        closing = []
        if workers == 0:
            perm_state = {"perm": permutation(3), "at": 0, "epoch": 0}

            def plain():
                at = perm_state["at"]
                if at + B > n:  # a new order each epoch (Strata's order changes each epoch too)
                    perm_state["epoch"] += 1
                    perm_state["perm"] = permutation(3 + perm_state["epoch"])
                    at = 0
                gather(perm_state["perm"][at:at + B])
                perm_state["at"] = at + B
                return B

            steps["numpyLoop"] = plain
            ld = strata.Loader(spec["dataset"], features=feats, mode="rows", batch_rows=B, ssd=spec["ssd"], seed=1,
                               epochs=100000, threads=threads)
            closing.append(ld)

            def strata_loop(sit=iter(ld)):
                to_tensors(next(sit))
                return B

            steps["strataLoop"] = strata_loop
        steps["numpyBatchSampler"] = IterStep(
            lambda: iter(DataLoader(MemmapBatches(), sampler=BatchSampler(RandomSampler(range(n)), B, drop_last=True),
                                    batch_size=None, num_workers=workers)), skip)
        steps["numpyIterable"] = IterStep(
            lambda: iter(DataLoader(MemmapPermutation(5), batch_size=None, num_workers=workers)), skip)
        steps["huggingFace"] = IterStep(
            lambda: iter(DataLoader(hf, batch_size=B, shuffle=True, num_workers=workers, drop_last=True)), skip)
        # Strata's own default: each worker's loader assembles on its share of the cores.
        steps["strata"] = IterStep(
            lambda: iter(DataLoader(StrataIterableDataset(spec["dataset"], features=feats, mode="rows", batch_rows=B,
                                                          ssd=spec["ssd"], seed=1, epochs=100000),
                                    batch_size=None, num_workers=workers)), skip)
        peers = rounds_rate(steps, seconds, rounds=EQUAL_CORES_ROUNDS, keep_open=workers == 0, steady=True)
        for step in steps.values():
            if isinstance(step, IterStep):
                step.close()
        for ld in closing:
            ld.close()
        gc.collect()
        if spec.get("ray", True) and workers == 0:
            peers["rayData"], ray_check = ray_rows(spec, f, feats, B, n, seconds, mm)
        result["workers%d" % workers] = peers
    if ray_check is not None:
        result["rayChecked"] = ray_check
    emit(result)


def ray_rows(spec, f, feats, B, n, seconds, mm):
    """Ray Data: read_parquet, then iter_torch_batches with its local shuffle buffer (its
    recommended way to shuffle for training); Ray runs its own parallelism (one figure)."""
    try:
        import ray
    except Exception as e:
        return {"available": False, "reason": "ray is not installed: %s" % e}, None
    import logging

    ray.init(num_cpus=cores(), include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False,
             configure_logging=False)
    try:
        ds = ray.data.read_parquet(f["parquet"]).select_columns(feats + ["row"])
        ray.data.DataContext.get_current().enable_progress_bars = False
        # Its batches hold the rows they say: each checked against the dataset's rows.
        it = ds.iter_torch_batches(batch_size=B, local_shuffle_buffer_size=4 * B)
        first = next(iter(it))
        idx = first["row"].numpy()
        for c in feats:
            valid = np.asarray(mm[c + ".valid"][idx]) if c + ".valid" in mm else np.ones(len(idx), dtype=bool)
            if not np.array_equal(first[c].numpy()[valid], np.asarray(mm[c][idx])[valid]):
                raise SystemExit("Ray Data's batch differs from the dataset in column %s" % c)
        data = ray.data.read_parquet(f["parquet"]).select_columns(feats).materialize()
        r = iterate_rate(lambda: iter(data.iter_torch_batches(batch_size=B, local_shuffle_buffer_size=4 * B, drop_last=True)),
                         seconds, 2)
        return r, int(len(idx))
    finally:
        ray.shutdown()


# ----------------------------------------------------------------------------------- docs

def docs_files(spec):
    d = files(spec)["docs"]
    return {"text": os.path.join(d, "docs.txt"), "offsets": os.path.join(d, "offsets.npy"),
            "lz4": os.path.join(d, "docs.lz4"), "lz4index": os.path.join(d, "lz4index.npy"), "orc": os.path.join(d, "orc"),
            "ids": os.path.join(d, "ids.npy")}


def corpus(count, seed=5):
    """Documents of a few hundred words (MS MARCO passages are 50-400 words), ids not dense."""
    rng = np.random.default_rng(seed)
    words = np.array(["w%04d" % i for i in range(8000)])
    zipf = rng.zipf(1.3, size=4000000) % len(words)
    lengths = rng.integers(40, 320, size=count)
    at = 0
    out = []
    for i in range(count):
        k = int(lengths[i])
        if at + k > len(zipf):
            at = 0
        out.append(" ".join(words[zipf[at:at + k]]))
        at += k
    return out


def prepare_docs(spec):
    """The document corpus in each store's form: a plain file with an offset table (`indexed`),
    lz4-compressed blocks with a sorted offset index in a numpy.memmap, the blocks read from the file
    (the docs store ir_datasets uses, written here from its published description: "similar to
    indexed, but using lz4 for compression of documents in disk and a sorted index offset, built
    with memory maps from Numpy"), and ORC for Strata (imported, promoted)."""
    import lz4.block
    import pyarrow as pa
    import pyarrow.orc as orc

    d = docs_files(spec)
    os.makedirs(files(spec)["docs"], exist_ok=True)
    texts = corpus(spec["docs"])
    ids = np.arange(len(texts), dtype=np.int64) * 7 + 1000
    np.save(d["ids"], ids)
    enc = [t.encode() for t in texts]
    offsets = np.zeros(len(enc) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(e) for e in enc])
    with open(d["text"], "wb") as out:
        for e in enc:
            out.write(e)
    np.save(d["offsets"], np.stack([ids, offsets[:-1], offsets[1:]], 1))
    # lz4 blocks of ~64 KiB of documents; index rows: doc id, block offset, block length, position in block, length
    block, index, pos, at = [], [], 0, 0
    with open(d["lz4"], "wb") as out:
        def flush():
            nonlocal block, at, pos
            if block:
                raw = b"".join(block)
                comp = lz4.block.compress(raw, store_size=True)
                out.write(comp)
                for row in index[-len(block):]:
                    row[1], row[2] = at, len(comp)
                at += len(comp)
                block, pos = [], 0

        for i, e in enumerate(enc):
            index.append([int(ids[i]), 0, 0, pos, len(e)])
            block.append(e)
            pos += len(e)
            if pos >= 64 << 10:
                flush()
        flush()
    np.save(d["lz4index"], np.array(index, dtype=np.int64))  # sorted by doc id
    os.makedirs(d["orc"], exist_ok=True)
    orc.write_table(pa.table({"doc_id": pa.array(ids), "text": pa.array(texts, type=pa.string())}),
                    os.path.join(d["orc"], "docs.orc"), stripe_size=16 << 20)


def docs_job(spec, store, count, seed, ready):
    """One process reading `count` random documents by id through `store`; prints its rate, then
    (with `ready`) waits on stdin so that its memory can be measured."""
    d = docs_files(spec)
    ids = np.load(d["ids"])
    rng = np.random.default_rng(seed)
    want = ids[rng.integers(0, len(ids), size=count)]
    got = 0
    if store == "dict":
        table = np.load(d["offsets"])
        docs = {}
        with open(d["text"], "rb") as fh:
            data = fh.read()
        for i, a, b in table:
            docs[int(i)] = data[a:b].decode()
        del data
        t0 = time.perf_counter()
        for i in want:
            got += len(docs[int(i)])
    elif store == "indexed":
        table = np.load(d["offsets"])
        where = {int(i): (int(a), int(b)) for i, a, b in table}
        fh = open(d["text"], "rb")
        t0 = time.perf_counter()
        for i in want:
            a, b = where[int(i)]
            fh.seek(a)
            got += len(fh.read(b - a).decode())
    elif store == "lz4":
        import lz4.block

        # As ir_datasets' docs store: the sorted index in a numpy.memmap, the compressed blocks read
        # from the file (seek and read, as `indexed` reads documents), not mapped.
        index = np.load(d["lz4index"], mmap_mode="r")
        keys = index[:, 0]
        fh = open(d["lz4"], "rb")
        t0 = time.perf_counter()
        for i in want:
            k = int(np.searchsorted(keys, i))
            _, off, length, pos, n = index[k]
            fh.seek(int(off))
            block = lz4.block.decompress(fh.read(int(length)))
            got += len(block[pos:pos + n].decode())
    elif store == "strata":
        import strata

        # Strata's lookup by id (strata.Documents): the sample index mapped, the text read from the
        # SSD tier's segment (offsets, then bytes) in this process; the standard library alone.
        docs = strata.Documents(spec["docsDataset"], "text", ssd=spec["docsSsd"])
        t0 = time.perf_counter()
        for i in want:
            got += len(docs[int(i)])
    else:
        raise SystemExit("no document store %r" % store)
    seconds = time.perf_counter() - t0
    emit({"docs": count, "seconds": seconds, "chars": got})
    if ready:
        emit({"ready": os.getpid()})
        sys.stdin.readline()


def pss(pid):
    """Proportional set size of a process (bytes), shared pages split among their users."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


def service_pid():
    """The loader service of this run (the pid file beside its socket)."""
    sock = os.environ.get("STRATA_LOADER_SOCKET")
    try:
        return int(open(sock + ".pid").read().strip())
    except (OSError, ValueError, TypeError):
        return None


def until_ready(p):
    """The last message a job process printed before it said it was ready (None if it ended first)."""
    r = None
    for line in p.stdout:
        msg = json.loads(line)
        if "ready" in msg:
            break
        r = msg
    return r


_compiled = []


def compile_client():
    """Byte-compiles the strata package once per run, as installing it with pip does: otherwise,
    in a checkout (and with PYTHONDONTWRITEBYTECODE set), every job compiles the client's modules
    at import, about 1 MiB of each job's memory that an installed client does not pay. The peers'
    packages are installed, so compiled already."""
    if _compiled:
        return
    import compileall

    import strata

    compileall.compile_dir(os.path.dirname(strata.__file__), quiet=1)
    _compiled.append(True)


def run_jobs(spec_file, scenario, store, count, jobs, extra=(), service=True):
    """Starts `jobs` processes of `scenario` at once; returns their results and the host memory
    (the sum of every process's PSS, the loader service's included where the store uses it:
    `service` and a store named strata*) while all of them hold."""
    compile_client()
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), spec_file, scenario, store, str(count), str(k),
                               *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for k in range(jobs)]
    results = []
    try:
        for p in procs:
            r = until_ready(p)
            if r is None:
                raise SystemExit("a %s job (%s) ended before it was ready" % (scenario, store))
            results.append(r)
        memory = sum(pss(p.pid) for p in procs)
        svc = service_pid() if service and store.startswith("strata") else None
        if svc:
            memory += pss(svc)
        return results, memory
    finally:
        for p in procs:
            try:
                p.stdin.write("\n")
                p.stdin.flush()
            except OSError:
                pass
        for p in procs:
            p.wait(timeout=120)


def docs(spec, spec_file):
    result = {"scenario": "docs", "docs": spec["docs"], "processes": {}}
    # Equality: every store returns Strata's document for the same ids.
    d = docs_files(spec)
    import strata

    ld = strata.Loader(spec["docsDataset"], features=["text", "doc_id"], batch_samples=spec["docsBatch"], ssd=spec["docsSsd"],
                       seed=3)
    b = next(iter(ld))
    ids = b.column("doc_id").to_numpy()
    texts = b.column("text").to_pylist()
    ld.close()
    table = np.load(d["offsets"])
    where = {int(i): (int(a), int(e)) for i, a, e in table}
    with open(d["text"], "rb") as fh:
        for i, t in zip(ids, texts):
            a, e = where[int(i)]
            fh.seek(a)
            if fh.read(e - a).decode() != t:
                raise SystemExit("the indexed store differs from Strata for document %d" % i)
    import lz4.block

    index = np.load(d["lz4index"])
    with open(d["lz4"], "rb") as fh:
        for i, t in zip(ids, texts):
            k = int(np.searchsorted(index[:, 0], i))
            _, off, length, pos, n = index[k]
            fh.seek(int(off))
            if lz4.block.decompress(fh.read(int(length)))[pos:pos + n].decode() != t:
                raise SystemExit("the lz4 docs store differs from Strata for document %d" % i)
    docs_by_id = strata.Documents(spec["docsDataset"], "text", ssd=spec["docsSsd"])
    for i, t in zip(ids, texts):
        if docs_by_id[int(i)] != t:
            raise SystemExit("strata.Documents differs from Strata's loader for document %d" % i)
    docs_by_id.close()
    result["docsChecked"] = len(ids)
    for procs in spec["docsProcesses"]:
        row = {}
        for store in ("dict", "indexed", "lz4", "strata"):
            # Strata's documents are looked up in the job's own process (strata.Documents): no service.
            rs, mem = run_jobs(spec_file, "job-docs", store, spec["docsPerProcess"], procs, service=False)
            secs = max(r["seconds"] for r in rs)
            row[store] = {"docsPerSecond": sum(r["docs"] for r in rs) / secs, "hostBytes": mem}
        result["processes"][str(procs)] = row
    emit(result)

# ----------------------------------------------------------------------------------- cold

def memory_cgroup():
    """(kind, directory) of this process's memory cgroup where a child group with a memory limit
    can be made, or (None, why not)."""
    try:
        lines = open("/proc/self/cgroup").read().splitlines()
    except OSError as e:
        return None, "no /proc/self/cgroup (%s)" % e
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            d = os.path.join("/sys/fs/cgroup/memory", path.lstrip("/"))
            if os.path.exists(os.path.join(d, "memory.limit_in_bytes")) and os.access(d, os.W_OK):
                return ("v1", d), None
            return None, "the memory cgroup %s cannot be written here" % d
    for line in lines:
        if line.startswith("0::"):
            d = os.path.join("/sys/fs/cgroup", line[3:].lstrip("/"))
            try:
                delegated = "memory" in open(os.path.join(d, "cgroup.subtree_control")).read().split()
            except OSError:
                delegated = False
            if delegated and os.access(d, os.W_OK):
                return ("v2", d), None
            return None, "the cgroup %s does not hand the memory controller to child groups here" % d
    return None, "this process has no memory cgroup"


class ColdGroup:
    """A child memory cgroup with a limit on memory, page cache included (what the seed did to its
    process): every process a run starts, Strata's loader service included, is charged to it."""

    def __init__(self, where, limit):
        self.kind, parent = where
        self.dir = os.path.join(parent, "strata-cold-%d-%d" % (os.getpid(), time.monotonic_ns()))
        os.mkdir(self.dir)
        limit_file = "memory.limit_in_bytes" if self.kind == "v1" else "memory.max"
        with open(os.path.join(self.dir, limit_file), "w") as fh:
            fh.write(str(limit))

    def enter(self):
        """Moves the calling process into the group (a Popen preexec_fn: the child, before exec)."""
        with open(os.path.join(self.dir, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))

    def pids(self):
        with open(os.path.join(self.dir, "cgroup.procs")) as fh:
            return [int(x) for x in fh.read().split()]

    def stat(self):
        """The group's memory by kind now (bytes): anonymous, page cache, shared memory."""
        keys = {"rss": "anon", "cache": "file", "shmem": "shmem", "mapped_file": "fileMapped"} if self.kind == "v1" else \
            {"anon": "anon", "file": "file", "shmem": "shmem", "file_mapped": "fileMapped"}
        out = {}
        try:
            for line in open(os.path.join(self.dir, "memory.stat")):
                k, v = line.split()
                if k in keys:
                    out[keys[k]] = int(v)
        except (OSError, ValueError):
            pass
        return out

    def peak(self):
        name = "memory.max_usage_in_bytes" if self.kind == "v1" else "memory.peak"
        try:
            return int(open(os.path.join(self.dir, name)).read())
        except (OSError, ValueError):
            return None

    def close(self):
        """Waits for the group's processes to end (killing them after 30 s), then removes it."""
        deadline = time.monotonic() + 30
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in self.pids():
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        while self.pids() and time.monotonic() < deadline + 10:
            time.sleep(0.1)
        os.rmdir(self.dir)


def read_ahead_kb(path):
    """The read-ahead window (KiB) of the block device holding `path` (what a page fault on a
    mapped file reads around the page it needs), or None where it cannot be read."""
    try:
        st = os.stat(path)
        q = "/sys/dev/block/%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))
        for cand in (os.path.join(q, "queue", "read_ahead_kb"), os.path.join(q, "..", "queue", "read_ahead_kb")):
            if os.path.exists(cand):
                return int(open(cand).read())
    except (OSError, ValueError):
        pass
    return None


def data_files(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                for n in names:
                    yield os.path.join(root, n)
        elif os.path.exists(p):
            yield p


def evict(paths):
    """Drops the files' pages from the page cache (fsync, then posix_fadvise DONTNEED: clean pages
    that no process maps); returns the fraction of their bytes still cached after (mincore)."""
    import ctypes
    import mmap

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    total = cached = 0
    for f in data_files(paths):
        size = os.path.getsize(f)
        if size == 0:
            continue
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fsync(fd)  # dirty pages (a file written just before) are not dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
            if addr is not None and addr != ctypes.c_void_p(-1).value:
                vec = (ctypes.c_ubyte * ((size + mmap.PAGESIZE - 1) // mmap.PAGESIZE))()
                if libc.mincore(addr, size, vec) == 0:
                    cached += sum(v & 1 for v in bytes(vec)) * mmap.PAGESIZE
                libc.munmap(addr, size)
        finally:
            os.close(fd)
        total += size
    return min(1.0, cached / total) if total else 0.0


def io_read_bytes(pid):
    """Bytes a process made the kernel fetch from storage (/proc/PID/io read_bytes); 0 when gone."""
    try:
        for line in open("/proc/%d/io" % pid):
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def cold_job(spec, peer):
    """One peer in a process of its own, in a memory cgroup smaller than the data, its files
    dropped from the page cache just before: seed 000's batches (512 random identifiers, all their
    rows) for `seconds`; the first batch timed on its own (opening included)."""
    import torch  # a training job has it loaded, whichever peer feeds it: its memory counts for all

    cols = spec["atomFeatures"]
    rng = np.random.default_rng(17)
    t0 = time.perf_counter()
    if peer in ("strata", "strataRows"):
        import strata
        from strata.torch import to_tensors

        if peer == "strata":
            ld = strata.Loader(spec["dataset"], features=cols, batch_samples=512, ssd=spec["ssd"], seed=5, epochs=100000,
                               threads=spec["threads"], drop_last=True)
        else:
            ld = strata.Loader(spec["dataset"], features=spec["rowFeatures"], mode="rows", batch_rows=spec["batchRows"],
                               ssd=spec["ssd"], seed=5, epochs=100000, threads=spec["threads"])
        it = iter(ld)

        def step():
            b = next(it)
            to_tensors(b)
            return b.num_rows
    elif peer == "numpyRows":
        # the numpy.memmap gather loop of the rows table: one fancy-indexing gather a column a batch
        d = files(spec)["npy"]
        mm = {}
        for c in spec["rowFeatures"]:
            mm[c] = np.load(os.path.join(d, c + ".npy"), mmap_mode="r")
            if os.path.exists(os.path.join(d, c + ".valid.npy")):
                mm[c + ".valid"] = np.load(os.path.join(d, c + ".valid.npy"), mmap_mode="r")
        n = len(mm[spec["rowFeatures"][0]])
        B = spec["batchRows"]
        perm = [rng.permutation(n)]
        at = [0]

        def step():
            if at[0] + B > n:  # a new order each epoch, as the rows table's loop (and Strata) read
                perm[0] = rng.permutation(n)
                at[0] = 0
            idx = perm[0][at[0]:at[0] + B]
            {c: torch.from_numpy(np.asarray(a[idx])) for c, a in mm.items()}
            at[0] += B
            return B
    else:
        fetch = atom_fetchers(spec, only=(peer,))[peer]
        ranges = np.load(files(spec)["ranges"])

        def step():
            return _rows(fetch(ranges[rng.choice(len(ranges), 512, replace=False), 0]))
    step()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    batches = rows = 0
    while batches < 3 or time.perf_counter() - t0 < spec["seconds"]:
        rows += step()
        batches += 1
    secs = time.perf_counter() - t0
    emit({"batches": batches, "seconds": secs, "batchesPerSecond": batches / secs, "rowsPerSecond": rows / secs,
          "firstBatchSeconds": first})
    emit({"ready": os.getpid()})
    sys.stdin.readline()


def cold(spec, spec_file):
    """Seed 000's workload, and shuffled single rows, cold: data larger than the memory given (a
    memory cgroup, page cache included), the peer's files dropped from the page cache before each
    run; each peer in a fresh process (Strata with a fresh loader service of its own, in the same
    group), three turns, the order turned each turn, the median turn per peer."""
    where, why = memory_cgroup()
    if where is None:
        emit({"scenario": "cold", "available": False, "reason": why})
        return
    f = files(spec)
    row_files = [os.path.join(f["npy"], c + ext) for c in spec["rowFeatures"] for ext in (".npy", ".valid.npy")]
    data = {"pyarrowIpc": [f["ipc"]], "numpyMemmap": [f["npy"]], "strata": [spec["ssd"], spec["dataset"]],
            "numpyRows": row_files, "strataRows": [spec["ssd"], spec["dataset"]]}
    limit = spec["coldMemoryBytes"]
    result = {"scenario": "cold", "available": True, "memoryBytes": limit, "cgroup": where[0], "peers": {},
              "readAheadKb": read_ahead_kb(f["ipc"]),
              "dataBytes": {p: sum(os.path.getsize(x) for x in data_files(paths)) for p, paths in data.items()}}
    runs = {p: [] for p in data}
    order = list(data)
    for turn in range(spec.get("coldTurns", 3)):
        for peer in (order if turn % 2 == 0 else order[::-1]):
            left = evict(data[peer])
            group = ColdGroup(where, limit)
            service_dir = tempfile.mkdtemp(prefix="strata-cold-")
            try:
                env = dict(os.environ)
                if peer == "strata":
                    # A loader service of its own, started by the job inside the group, gone 1 s after it.
                    env["STRATA_LOADER_SOCKET"] = os.path.join(service_dir, "loader.sock")
                    env["STRATA_LOADER_IDLE_EXIT"] = "1"
                p = subprocess.Popen([sys.executable, os.path.abspath(__file__), spec_file, "job-cold", peer],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                     preexec_fn=group.enter)
                r = until_ready(p)
                if r is None:
                    why = "the cold %s job ended before it was ready (exit %s; killed at the %d MiB limit?)" % (
                        peer, p.wait(timeout=60), limit >> 20)
                    if spec.get("quick"):  # the CI check: say why, as when no memory cgroup can be made
                        emit({"scenario": "cold", "available": False, "reason": why})
                        return
                    raise SystemExit(why)
                r["readBytes"] = sum(io_read_bytes(pid) for pid in group.pids())
                r["peakBytes"] = group.peak()
                r["memoryNow"] = group.stat()
                r["cachedBeforeFraction"] = round(left, 4)
                p.stdin.write("\n")
                p.stdin.close()
                p.wait(timeout=60)
            finally:
                group.close()
                shutil.rmtree(service_dir, ignore_errors=True)
            runs[peer].append(r)
    # Seed 000's table under "peers"; shuffled single rows (the rows table's numpy gather loop
    # against strata.Loader, 16,384 rows a batch, 5 features) under "rows".
    result["rows"] = {"peers": {}}
    for peer, rs in runs.items():
        best = sorted(rs, key=lambda x: x["batchesPerSecond"])[len(rs) // 2]
        entry = dict(best, rounds=[round(x["batchesPerSecond"], 2) for x in rs])
        if peer == "numpyRows":
            result["rows"]["peers"]["numpyLoop"] = entry
        elif peer == "strataRows":
            result["rows"]["peers"]["strata"] = entry
        else:
            result["peers"][peer] = entry
    emit(result)


# ----------------------------------------------------------------------------------- memory

def memory_job(spec, store, count, seed, ready):
    """One training job reading `count` batches of shuffled rows as tensors, then holding."""
    from strata.torch import to_tensors

    feats = spec["rowFeatures"]
    B = spec["batchRows"]
    if store == "numpy":
        import torch

        f = files(spec)
        mm = {c: np.load(os.path.join(f["npy"], c + ".npy"), mmap_mode="r") for c in feats}
        n = len(mm[feats[0]])
        perm = np.random.default_rng(seed).permutation(n)
        t0 = time.perf_counter()
        for k in range(count):
            s = (k * B) % (n - B)
            {c: torch.from_numpy(np.asarray(a[perm[s:s + B]])) for c, a in mm.items()}
    else:
        import strata

        ld = strata.Loader(spec["dataset"], features=feats, mode="rows", batch_rows=B, ssd=spec["ssd"], seed=seed,
                           epochs=100000, threads=spec["threads"], prefetch=spec.get("prefetch", 4))
        it = iter(ld)
        t0 = time.perf_counter()
        for _ in range(count):
            to_tensors(next(it))
    emit({"batches": count, "seconds": time.perf_counter() - t0})
    if ready:
        emit({"ready": os.getpid()})
        sys.stdin.readline()


def memory(spec, spec_file):
    result = {"scenario": "memory", "jobs": {}}
    for jobs in spec["memoryJobs"]:
        row = {}
        for store in ("numpy", "strata"):
            rs, mem = run_jobs(spec_file, "job-memory", store, spec["memoryBatches"], jobs)
            row[store] = {"hostBytes": mem, "batchesPerSecond": sum(r["batches"] / r["seconds"] for r in rs)}
        result["jobs"][str(jobs)] = row
    emit(result)


def main():
    spec_file, scenario = sys.argv[1], sys.argv[2]
    spec = json.load(open(spec_file))
    if scenario in ("atom", "rows") and len(sys.argv) > 3:
        pin_cores(sys.argv[3])
    if scenario == "prepare":
        prepare(spec)
    elif scenario == "versions":
        emit(versions())
    elif scenario == "atom":
        atom(spec)
    elif scenario == "rows":
        rows(spec)
    elif scenario == "docs":
        docs(spec, spec_file)
    elif scenario == "memory":
        memory(spec, spec_file)
    elif scenario == "job-docs":
        docs_job(spec, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), True)
    elif scenario == "cold":
        cold(spec, spec_file)
    elif scenario == "job-cold":
        cold_job(spec, sys.argv[3])
    elif scenario == "job-memory":
        memory_job(spec, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), True)
    else:
        raise SystemExit("unknown scenario %r" % scenario)


if __name__ == "__main__":
    main()
