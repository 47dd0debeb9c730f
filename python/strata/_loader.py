"""The loader: a Java loader process (``strata loader serve``) assembles each batch into
shared-memory files; this side maps them and wraps the buffers as Arrow arrays (or numpy arrays)
without a copy. The parts: ``_service`` finds or starts that process, ``_protocol`` is a session
with it (requests, replies, slabs, leases), ``_arrow`` wraps a batch's buffers as Arrow arrays and
``_numpy`` as numpy arrays (pyarrow imported only by the first); this module is the
``Loader`` a job uses (its arguments checked, its state for exact resume).

Threads: a Loader is used from one thread (the one iterating it). Batches may be dropped from
any thread: a batch's lease only appends its number to a deque, which the iterating thread
sends to the server with its next request.
"""

import base64
import numbers
import os
import re
import warnings

import numpy as np

from ._errors import StrataUsageError, StrataWarning
from ._protocol import _Lease, _Server

_STATE_FORMAT = 1


_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _local_path(location):
    """A dataset location as the Java side takes it: a path (made absolute), or a URI as given (file://, hdfs://;
    the Java side refuses other schemes by name)."""
    text = os.fspath(location)
    if isinstance(text, str) and _URI.match(text):
        return text
    return os.path.abspath(text)


class Loader:
    """Batches of a Strata dataset, exactly those the Java ``Loader`` returns for the same
    dataset, features, seed, shard and mode (the Java loader assembles them).

    Each batch is a ``pyarrow.RecordBatch`` whose buffers are the shared memory the Java loader
    wrote: fixed-width columns view as numpy without a copy (``batch.column(i).to_numpy()``).
    A batch's memory is recycled once nothing refers to it any more; its schema metadata has
    ``strata.epoch`` and ``strata.step``. With ``output="numpy"`` each batch is instead a dict of
    numpy arrays over the same memory (``batch.epoch``, ``batch.step``; lists and strings as flat
    values plus ``NAME.offsets``, nulls as ``NAME.valid``: the layout of ``strata.torch``), and
    pyarrow is never imported (a job then carries about 35 MiB less: pyarrow, and the pandas its
    ``to_numpy`` imports).

    dataset: the dataset directory (a path, a ``file://`` URI, or an ``hdfs://`` URI: read-only there). features: column names or derived specs such as
    ``"zscore(log1p(amount))"`` (default: every feature). node: a cache node's URL; the job
    declares its plan and reports its reads there, and shares the node's SSD tier. ssd: a local
    SSD tier directory instead (without node or ssd, everything comes from ORC). feature_store:
    the feature store derived features are read from. mode: ``"samples"`` (``batch_samples``
    samples with all their rows), ``"rows"`` (``batch_rows`` rows) or ``"windows"``
    (``batch_samples`` windows of ``window`` rows plus ``lookahead`` label rows, every ``stride``).
    substitutable: let the loader take, within an epoch, batches whose chunks are on the SSD tier
    first (every batch once; ``state_dict`` records it). start_epoch: begin at that epoch's first
    batch (of ``epochs`` in all, counted from 0). shuffle_chunks: shuffle within blocks of that many
    whole chunks, the chunks in a shuffled order (samples and rows; 0: across the whole epoch): each
    epoch reads every chunk once, for a dataset larger than memory on slow storage. units: after each batch, ``loader.units``
    is a numpy array of what its units are (the sample ids of a sample batch, the first row of
    each block of a row batch, each window's number), to ask another reader for the same rows.
    pin_memory: register the batches' shared memory with CUDA (torch's), so that tensors over them
    are pinned where they lie and ``.to("cuda", non_blocking=True)`` copies straight from them, no
    ``pin_memory()`` copy; a dropped batch is given back once the copies queued on the current
    stream before the next batch was asked for are done (not for DataLoader workers: their batches
    are copied into torch's shared memory anyway; there, DataLoader's ``pin_memory=True``).
    """

    def __init__(self, dataset, features=None, batch_samples=512, seed=0, epochs=1, rank=0, world=1, node=None, *,
                 mode="samples", batch_rows=4096, shuffle=True, shuffle_block=None, shuffle_chunks=0, window=32, lookahead=1, stride=1,
                 drop_last=False, ssd=None, feature_store=None, job=None, prefetch=4, threads=1, substitutable=False,
                 units=False, start_epoch=0, pin_memory=False, output="arrow"):
        if mode not in ("samples", "rows", "windows"):
            raise StrataUsageError("strata: mode must be samples, rows or windows, got %r" % (mode,))
        if output not in ("arrow", "numpy"):
            raise StrataUsageError("strata: output must be arrow or numpy, got %r" % (output,))
        if output == "numpy" and pin_memory:
            raise StrataUsageError("strata: pin_memory registers pyarrow buffers with CUDA; use output='arrow' with it")
        self._numpy = output == "numpy"
        if isinstance(features, (str, bytes)):
            features = [features.decode() if isinstance(features, bytes) else features]  # one feature, not its letters
        for name, value, low, high in (("seed", seed, -(1 << 63), 1 << 63), ("start_epoch", start_epoch, 0, 1 << 31),
                                       ("epochs", epochs, 1, 1 << 31)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not low <= value < high:
                raise StrataUsageError("strata: %s must be an integer in [%d, %d), got %r" % (name, low, high, value))
        if ssd is not None and not os.path.isdir(os.fspath(ssd)):
            raise StrataUsageError("strata: no SSD tier directory at %s (promote features there first: strata promote --ssd)"
                                   % os.fspath(ssd))
        if not (0 <= rank < world):
            raise StrataUsageError("strata: rank must be in 0..world-1, got rank %r of world %r" % (rank, world))
        self._request = {
            "dataset": _local_path(dataset),
            "features": None if features is None else [str(f) for f in features],
            "mode": mode,
            "batch": int(batch_rows if mode == "rows" else batch_samples),
            "seed": int(seed),
            "epochs": int(epochs),
            "rank": int(rank),
            "world": int(world),
            "shuffle": bool(shuffle),
            "shuffleBlock": shuffle_block,
            "shuffleChunks": int(shuffle_chunks),
            "window": int(window),
            "lookahead": int(lookahead),
            "stride": int(stride),
            "dropLast": bool(drop_last),
            "node": node,
            "ssd": None if ssd is None else os.path.abspath(os.fspath(ssd)),
            "featureStore": None if feature_store is None else os.path.abspath(os.fspath(feature_store)),
            "job": job,
            "prefetch": int(prefetch),
            "threads": int(threads),
            "substitutable": bool(substitutable),
            "units": bool(units),
            "startEpoch": int(start_epoch),
            "resume": None,
            "token": os.environ.get("STRATA_TOKEN") or None,
        }
        if os.environ.get("STRATA_SHM_ROOT"):
            self._request["shmRoot"] = os.environ["STRATA_SHM_ROOT"]
        self._pinning = None
        if pin_memory:
            from ._cuda import _Pinning

            self._pinning = _Pinning()
        self._server = None
        self._position = None
        self._steps = None
        self.stats = None
        self.units = None
        self._warned = False
        self._start()

    def _start(self):
        self._server = _Server(self._request, self._pinning, numpy=self._numpy)
        ready = self._server.ready
        self._position = ready["position"]
        self._steps = ready["stepsPerEpoch"]
        self.features = [f["name"] for f in ready["schema"]]
        if ready.get("warning") and not self._warned:
            self._warned = True
            warnings.warn(ready["warning"], StrataWarning, stacklevel=3)

    @property
    def steps_per_epoch(self):
        """Batches per epoch for this rank."""
        return self._steps

    def __iter__(self):
        if self._server is None:
            self._request["resume"] = self._position
            self._start()
        server = self._server
        while True:
            msg = server.next()
            if "end" in msg:
                self.stats = msg["end"]
                self._stop()
                return
            b = msg["batch"]
            server.map_slabs(b["slabs"], b["retired"])
            batch = self._build(server, b)
            if "units" in b:
                self.units = np.frombuffer(base64.b64decode(b["units"]), dtype="<i8")
            self._position = b["checkpoint"]
            yield batch

    def _build(self, server, b):
        # No closure here refers to itself (a recursive inner function is a reference cycle, which
        # would keep the lease, and so the batch's slab, until the cyclic collector ran).
        lease = _Lease(b["seq"], server.released)
        cols = b["columns"]
        if self._numpy:
            from ._numpy import columns

            return columns(server, lease, cols, int(b["epoch"]), int(b["step"]))
        import pyarrow as pa

        from ._arrow import _array

        arrays = [_array(server, lease, c) for c in cols]
        schema = pa.schema([pa.field(c["name"], a.type) for c, a in zip(cols, arrays)],
                           metadata={"strata.epoch": str(b["epoch"]), "strata.step": str(b["step"])})
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    def state_dict(self):
        """The position after the last batch returned: load it into a loader of the same
        settings (here or in a new process) and it continues with the next batch."""
        return {"format": _STATE_FORMAT, "checkpoint": self._position}

    def load_state_dict(self, state):
        """Continue from ``state`` (from :meth:`state_dict`); restarts the Java side."""
        if not isinstance(state, dict) or state.get("format") != _STATE_FORMAT or not isinstance(state.get("checkpoint"), str):
            raise StrataUsageError("strata: not a Strata loader state (expected the dict state_dict() returns)")
        self._stop()
        self._request["resume"] = state["checkpoint"]
        self._start()

    def _stop(self):
        if self._server is not None:
            self._server.close()
            self._server = None

    def close(self):
        """Stops the Java side; batches already returned stay readable while referenced."""
        self._stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
