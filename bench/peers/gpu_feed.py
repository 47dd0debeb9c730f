"""A PyTorch job feeding the GPU: Strata's Python client against the same torch pipeline over
numpy.memmap, side by side on one host (issue 32's Python figure).

    gpu_feed.py DATASET SSD WORK [--seconds S] [--batch-rows B] [--workers W]

Every pipeline ends the way PyTorch's documentation recommends: host tensors in pinned memory
(``pin_memory()`` in the loop, or the DataLoader's ``pin_memory=True`` thread), copied with
``.to(device, non_blocking=True)``; a small reduction on the device consumes each batch, and
the clock stops after ``torch.cuda.synchronize()``. Shuffled single rows of the dataset's
fixed-width features (with their validity masks), ``B`` rows a batch:

  strataLoop          strata.Loader in the main process, to_tensors, pin_memory, to(cuda)
  strataLoopPinned    strata.Loader(pin_memory=True): the batches' shared memory registered with CUDA,
                      to_tensors, to(cuda) straight from it (on a GPU only)
  strataDataLoader    DataLoader(StrataIterableDataset, num_workers=W, pin_memory=True)
  numpyLoop           a seeded permutation, one fancy-index gather per column of np.load(mmap_mode="r"),
                      from_numpy, pin_memory, to(cuda)
  numpyDataLoader     the same gather in an IterableDataset, DataLoader(num_workers=W, pin_memory=True)

plus torch's own pinned and pageable host-to-device copy of one batch's bytes (the link's peak
at that size). Strata's first batch is checked equal, on the device, to the memmap gather of the
same rows before anything is timed. Without CUDA (a CPU-only torch) it runs on the CPU with no
pinning, to test the script; its figures then say nothing about a GPU. One JSON object on stdout.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from peers import IterStep, rounds_rate, versions  # noqa: E402

FIXED = ("int8", "int16", "int32", "int64", "float", "double", "timestamp", "date32", "decimal")


def fixed_width_features(dataset):
    """The dataset's features that torch takes as one tensor each (no strings, lists or bools)."""
    import pyarrow.orc as orc

    manifest = json.load(open(os.path.join(dataset, "manifest.json")))
    schema = orc.ORCFile(os.path.join(dataset, manifest["files"][0]["path"])).schema
    return [f.name for f in schema if str(f.type).split("[")[0].split("(")[0] in FIXED and f.name != "sample_id"]


def prepare_npy(dataset, feats, work):
    """One .npy per feature (values, nulls as zero) and per nullable feature a .valid.npy (written once)."""
    import pyarrow as pa
    import pyarrow.orc as orc

    out = os.path.join(work, "npy")
    if os.path.exists(os.path.join(out, "done")):
        return out
    os.makedirs(out, exist_ok=True)
    manifest = json.load(open(os.path.join(dataset, "manifest.json")))
    table = pa.concat_tables([orc.read_table(os.path.join(dataset, p["path"]), columns=feats)
                              for p in manifest["files"]]).combine_chunks()
    for name in feats:
        col = table.column(name).combine_chunks()
        if col.null_count:
            np.save(os.path.join(out, name + ".valid.npy"), col.is_valid().to_numpy(zero_copy_only=False))
            col = col.fill_null(0)
        t = col.type
        if pa.types.is_decimal(t):
            arr = np.frombuffer(col.buffers()[1], dtype=np.int64, count=2 * len(col)).reshape(-1, 2)
        elif pa.types.is_timestamp(t) or pa.types.is_date(t):
            arr = np.frombuffer(col.buffers()[1], dtype=np.int64 if t.bit_width == 64 else np.int32, count=len(col))
        else:
            arr = col.to_numpy()
        np.save(os.path.join(out, name + ".npy"), arr)
    open(os.path.join(out, "done"), "w").close()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("ssd")
    ap.add_argument("work")
    ap.add_argument("--seconds", type=float, default=9.0)
    ap.add_argument("--batch-rows", type=int, default=65536)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--threads", type=int, default=4, help="assembly threads of the in-process Strata loader")
    ap.add_argument("--host-too", action="store_true", help="also time both loops without pinning or the device")
    a = ap.parse_args()

    import torch
    from torch.utils.data import DataLoader, IterableDataset, get_worker_info

    import strata
    from strata.torch import StrataIterableDataset, to_tensors

    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    pin = (lambda t: t.pin_memory()) if cuda else (lambda t: t)
    B = a.batch_rows
    feats = fixed_width_features(a.dataset)
    npy = prepare_npy(a.dataset, feats, a.work)
    mm = {c: np.load(os.path.join(npy, c + ".npy"), mmap_mode="r") for c in feats}
    for c in feats:
        if os.path.exists(os.path.join(npy, c + ".valid.npy")):
            mm[c + ".valid"] = np.load(os.path.join(npy, c + ".valid.npy"), mmap_mode="r")
    n = len(mm[feats[0]])
    row_bytes = sum(a_.dtype.itemsize * (a_.shape[1] if a_.ndim > 1 else 1) for a_ in mm.values())

    def gather(idx):
        return {c: torch.from_numpy(np.asarray(x[idx])) for c, x in mm.items()}

    class MemmapPermutation(IterableDataset):
        def __init__(self, seed):
            self.seed = seed

        def __iter__(self):
            info = get_worker_info()
            w, i = (1, 0) if info is None else (info.num_workers, info.id)
            epoch, k = 0, 0  # batches counted across epochs: every worker gets its turn
            while True:
                perm = np.random.default_rng(self.seed + epoch).permutation(n)
                for s in range(0, n - B + 1, B):
                    if k % w == i:
                        yield gather(perm[s:s + B])
                    k += 1
                epoch += 1

    sink = torch.zeros((), dtype=torch.float64, device=dev)

    def consume(host):
        """Ships one batch's tensors (already pinned where the pipeline pins) and reduces each on the device."""
        nonlocal sink
        for t in host.values():
            if isinstance(t, torch.Tensor):
                g = t.to(dev, non_blocking=True)
                sink = sink + g.view(-1)[:1].to(torch.float64).sum()
        return B

    # Equality on the device: Strata's first batches against the memmap gather of the same rows.
    checker = strata.Loader(a.dataset, features=feats, mode="rows", batch_rows=B, ssd=a.ssd, seed=7, units=True)
    checked = 0
    for b in checker:
        t = to_tensors(b)
        want = gather(checker.units)
        for c in feats:
            g, w = t[c].to(dev), want[c].to(dev)
            valid = t.get(c + ".valid")
            if valid is not None:
                v = valid.to(dev)
                if not torch.equal(v, want[c + ".valid"].to(dev)):
                    raise SystemExit("gpu_feed: Strata and numpy differ in the nulls of %s" % c)
                g, w = g[v], w[v]
            if not torch.equal(g.view(w.dtype) if g.dtype != w.dtype and g.element_size() == w.element_size() else g, w):
                raise SystemExit("gpu_feed: Strata and numpy differ in column %s on %s" % (c, dev))
        checked += 1
        if checked >= 3:
            break
    checker.close()

    steps = {}
    closing = []
    ld = strata.Loader(a.dataset, features=feats, mode="rows", batch_rows=B, ssd=a.ssd, seed=1, epochs=100000,
                       threads=a.threads)
    it = iter(ld)

    def strata_loop():
        return consume({k: pin(v) for k, v in to_tensors(next(it)).items() if isinstance(v, torch.Tensor)})

    steps["strataLoop"] = strata_loop
    if cuda:
        # The client's own way to the GPU: batches pinned where the service wrote them (slabs
        # registered with CUDA), copied with non_blocking=True, no pin_memory() copy.
        ld_pinned = strata.Loader(a.dataset, features=feats, mode="rows", batch_rows=B, ssd=a.ssd, seed=2,
                                  epochs=100000, threads=a.threads, pin_memory=True)
        closing.append(ld_pinned)
        it_pinned = iter(ld_pinned)

        def strata_pinned():
            return consume(to_tensors(next(it_pinned)))

        steps["strataLoopPinned"] = strata_pinned
    state = {"perm": np.random.default_rng(3).permutation(n), "at": 0, "epoch": 0}

    def numpy_loop():
        at = state["at"]
        if at + B > n:
            state["epoch"] += 1
            state["perm"] = np.random.default_rng(3 + state["epoch"]).permutation(n)
            at = 0
        state["at"] = at + B
        return consume({k: pin(v) for k, v in gather(state["perm"][at:at + B]).items()})

    steps["numpyLoop"] = numpy_loop
    if a.host_too:
        # The same two loops stopping at host tensors (no pinning, no device): where the time goes.
        def strata_host():
            to_tensors(next(it))
            return B

        def numpy_host():
            at = state["at"] if state["at"] + B <= n else 0
            state["at"] = at + B
            gather(state["perm"][at:at + B])
            return B

        steps["strataLoopHost"] = strata_host
        steps["numpyLoopHost"] = numpy_host

    class Keeping(IterStep):
        """An IterStep that keeps the batch it took."""

        def __call__(self):
            while True:
                if self.it is None:
                    self.it = self.make_iter()
                try:
                    self.last = next(self.it)
                    return 1
                except StopIteration:
                    self.it = None

    def dl_step(make):
        holder = Keeping(make, 2 * a.workers + 2)

        def step():
            holder()
            return consume(holder.last)
        step.skip = holder.skip
        step.close = holder.close
        return step

    steps["strataDataLoader"] = dl_step(lambda: iter(DataLoader(
        StrataIterableDataset(a.dataset, features=feats, mode="rows", batch_rows=B, ssd=a.ssd, seed=1, epochs=100000),
        batch_size=None, num_workers=a.workers, pin_memory=cuda)))
    steps["numpyDataLoader"] = dl_step(lambda: iter(DataLoader(
        MemmapPermutation(5), batch_size=None, num_workers=a.workers, pin_memory=cuda)))

    def timed(step):
        def run():
            r = step()
            if cuda:
                torch.cuda.synchronize()
            return r
        run.skip = getattr(step, "skip", 2)
        return run

    # Each figure includes the device copy and a synchronize per batch: what the step waits for.
    peers = rounds_rate({k: timed(v) for k, v in steps.items()}, a.seconds, keep_open=True)
    for v in steps.values():
        if hasattr(v, "close"):
            v.close()
    ld.close()
    for x in closing:
        x.close()
    batch_bytes = B * row_bytes
    for p in peers.values():
        p["GBps"] = p["batchesPerSecond"] * batch_bytes / 1e9
    res = {"scenario": "gpuFeed", "device": torch.cuda.get_device_name(0) if cuda else "cpu (no CUDA: not a GPU figure)",
           "batchRows": B, "features": feats, "rows": n, "batchBytes": batch_bytes, "workers": a.workers,
           "batchesChecked": checked, "peers": peers, "versions": versions()}
    if cuda:
        res["torchCopyGBps"] = copy_peak(torch, batch_bytes)
    best_strata = max(p["GBps"] for k, p in peers.items() if k.startswith("strata") and not k.endswith("Host"))
    best_numpy = max(peers["numpyLoop"]["GBps"], peers["numpyDataLoader"]["GBps"])
    res["ratios"] = {"strataVsNumpyMemmap": best_strata / best_numpy}
    if cuda:
        res["ratios"]["strataVsPinnedPeak"] = best_strata / res["torchCopyGBps"]["pinned"]
    print(json.dumps(res))


def copy_peak(torch, nbytes):
    """torch's host-to-device copy of nbytes: from pinned and from pageable memory, GB/s."""
    out = {}
    dst = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    for name, src in (("pinned", torch.ones(nbytes, dtype=torch.uint8).pin_memory()),
                      ("pageable", torch.ones(nbytes, dtype=torch.uint8))):
        for _ in range(5):
            dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize()
        k = 50
        t0 = time.perf_counter()
        for _ in range(k):
            dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize()
        out[name] = nbytes * k / 1e9 / (time.perf_counter() - t0)
    return out


if __name__ == "__main__":
    main()
