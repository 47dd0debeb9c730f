"""Python side of `strata bench python`: one measurement per run, one JSON line on stdout.

    python_bench.py SPEC.json MODE

MODE is one of
  strata        strata.Loader: pyarrow batches, rate after the first batch
  torch-strata  DataLoader(StrataIterableDataset, batch_size=None, num_workers=W)
  torch-memmap  DataLoader(map-style Dataset over numpy.memmap, per-row __getitem__, default collate,
                batch_size=B, shuffle=True, num_workers=W): the usual PyTorch tabular pipeline
  export        write each feature as .npy for the memmap peer (not timed)
  baseline      import torch, pyarrow and strata, then hold (the memory baseline)
  job           read one epoch with strata.Loader, then hold (memory of a job)
"""

import json
import os
import sys
import time

import numpy as np


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def hold():
    emit({"ready": os.getpid()})
    sys.stdin.readline()


def loader_kwargs(spec):
    return dict(features=spec["features"], mode="rows", batch_rows=spec["batchRows"], seed=spec["seed"],
                ssd=spec["ssd"], threads=spec.get("threads", 1), epochs=spec.get("epochs", 1))


def timed(iterable, limit, bytes_of, skip=1):
    """Rate over the batches after the first `skip` (start-up, and batches prepared ahead while
    it ran, excluded), up to `limit` batches."""
    n = 0
    nbytes = 0
    t0 = None
    seen = 0
    for b in iterable:
        seen += 1
        if seen < skip:
            continue
        if t0 is None:
            t0 = time.perf_counter()
        else:
            n += 1
            nbytes += bytes_of(b)
        if limit and n >= limit:
            break
    if n == 0:
        raise SystemExit("too few batches to time (%d seen, %d skipped): use more rows or smaller batches" % (seen, skip))
    seconds = time.perf_counter() - t0
    return {"batches": n, "bytes": nbytes, "seconds": seconds, "batchesPerSecond": n / seconds,
            "bytesPerSecond": nbytes / seconds}


def batch_bytes(b):
    return sum(buf.size for col in b.columns for buf in col.buffers() if buf is not None)


def dict_bytes(d):
    return sum(t.numel() * t.element_size() for t in d.values())


def main():
    spec = json.load(open(sys.argv[1]))
    mode = sys.argv[2]
    limit = spec.get("maxBatches", 0)
    if mode == "baseline":
        import pyarrow  # noqa: F401
        import torch  # noqa: F401
        import strata  # noqa: F401
        import strata.torch  # noqa: F401
        hold()
        return
    import strata
    if mode == "strata":
        loader = strata.Loader(spec["dataset"], **loader_kwargs(spec))
        emit(timed(loader, limit, batch_bytes))
    elif mode == "job":
        import torch  # noqa: F401  (a PyTorch job has it loaded)
        import strata.torch  # noqa: F401
        loader = strata.Loader(spec["dataset"], **dict(loader_kwargs(spec), epochs=2))
        n = 0
        for b in loader:  # measured mid-run: one epoch read, its loader process alive
            n += 1
            if n == loader.steps_per_epoch:
                del b
                emit({"batches": n})
                hold()
                break
        loader.close()
    elif mode == "export":
        loader = strata.Loader(spec["dataset"], features=spec["features"], mode="rows", batch_rows=1 << 20,
                               shuffle=False, ssd=spec["ssd"])
        parts = {f: [] for f in spec["features"]}
        for b in loader:
            for f, col in zip(b.schema.names, b.columns):
                parts[f].append(col.to_numpy(zero_copy_only=False).copy())
        for f, p in parts.items():
            np.save(os.path.join(spec["npyDir"], f + ".npy"), np.concatenate(p))
        emit({"rows": int(sum(len(x) for x in parts[spec["features"][0]]))})
    elif mode in ("torch-strata", "torch-memmap"):
        import torch
        from torch.utils.data import DataLoader, Dataset

        workers = spec["workers"]
        if mode == "torch-strata":
            from strata.torch import StrataIterableDataset

            ds = StrataIterableDataset(spec["dataset"], **loader_kwargs(spec))
            dl = DataLoader(ds, batch_size=None, num_workers=workers)
        else:
            class MemmapRows(Dataset):
                def __init__(self, directory, features):
                    self.features = features
                    self.directory = directory
                    self.cols = None
                    self.n = len(np.load(os.path.join(directory, features[0] + ".npy"), mmap_mode="r"))

                def __len__(self):
                    return self.n

                def __getitem__(self, i):
                    if self.cols is None:  # opened in each worker
                        self.cols = {f: np.load(os.path.join(self.directory, f + ".npy"), mmap_mode="r")
                                     for f in self.features}
                    return {f: c[i] for f, c in self.cols.items()}

            g = torch.Generator()
            g.manual_seed(spec["seed"])
            dl = DataLoader(MemmapRows(spec["npyDir"], spec["features"]), batch_size=spec["batchRows"], shuffle=True,
                            num_workers=workers, generator=g)
        # DataLoader workers prepare prefetch_factor (2) batches each while the first one is awaited.
        emit(timed(dl, limit, dict_bytes, skip=2 * workers + 1))
    else:
        raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    main()
