"""Strata batches for PyTorch: an IterableDataset whose DataLoader workers are shards.

    from torch.utils.data import DataLoader
    from strata.torch import StrataIterableDataset
    ds = StrataIterableDataset("/data/events", features=["amount", "merchant_id"], batch_samples=512, seed=1)
    for batch in DataLoader(ds, batch_size=None, num_workers=2, pin_memory=True):
        batch["amount"]  # a tensor

Each worker of each rank reads its own shard: rank ``rank * workers + worker_id`` of
``world * workers``, so the workers together read every sample once per epoch. Batches are
already batched: use ``batch_size=None``. Fixed-width columns become tensors over the batch's
shared memory (no copy; in a DataLoader worker one copy, into one shared storage a batch that torch
hands to the main process at once); a column with nulls also gives ``"NAME.valid"``
(bool); list columns give ``"NAME"`` (the flat elements) and ``"NAME.offsets"`` (int32);
strings and binaries stay pyarrow arrays.
"""

import numbers
import os
import types
import warnings

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

from ._errors import StrataUsageError
from ._loader import Loader

__all__ = ["StrataIterableDataset", "to_tensors"]


_NUMPY = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "float": np.float32,
          "double": np.float64}


def _tensor(arr):
    """A tensor over an Arrow array's values: no copy, except for bit-packed bools."""
    import pyarrow as pa

    typ = arr.type
    if pa.types.is_boolean(typ):
        values = _bits(arr.buffers()[1], arr.offset, len(arr))
        if arr.null_count > 0:
            values = values & _bits(arr.buffers()[0], arr.offset, len(arr))
        return torch.from_numpy(values)
    per = 1
    if pa.types.is_decimal(typ):
        dtype, per = np.int64, 2  # 128-bit little-endian two's complement: (low, high) words
    elif pa.types.is_date(typ) or pa.types.is_timestamp(typ):
        dtype = np.int32 if typ.bit_width == 32 else np.int64
    else:
        dtype = _NUMPY[str(typ)]
    values = np.frombuffer(arr.buffers()[1], dtype=dtype, count=(arr.offset + len(arr)) * per)[arr.offset * per:]
    if per > 1:
        values = values.reshape(len(arr), per)
    # Read-only shared memory: the tensor is read (or copied by pin_memory), never written (the
    # caller silences torch's warning about it).
    return torch.from_numpy(values)


def to_tensors(batch):
    """A dict of tensors from a Strata RecordBatch (see the module doc for each type)."""
    with warnings.catch_warnings():
        # Tensors over read-only shared memory: read (or copied by pin_memory), never written.
        warnings.simplefilter("ignore", UserWarning)
        return _to_tensors(batch)


def _to_tensors(batch):
    import pyarrow as pa

    out = {}
    for name, arr in zip(batch.schema.names, batch.columns):
        typ = arr.type
        if pa.types.is_list(typ):
            offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=arr.offset + len(arr) + 1)[arr.offset:]
            if offsets[0] != 0:
                offsets = offsets - offsets[0]
            out[name + ".offsets"] = torch.from_numpy(offsets)
            out[name] = _tensor(arr.flatten())
        elif pa.types.is_string(typ) or pa.types.is_binary(typ):
            out[name] = arr
        else:
            out[name] = _tensor(arr)
        if arr.null_count > 0:
            out[name + ".valid"] = torch.from_numpy(_bits(arr.buffers()[0], arr.offset, len(arr)))
    return out


def _one_storage(tensors):
    """The batch's tensors copied into one new shared-memory storage, as views of it, for the hand-over
    from a DataLoader worker: torch sends a worker's tensors to the main process storage by storage
    (a new shared-memory file, a copy and a file-descriptor hand-over each), so a batch of ten tensors
    costs ten of those and one storage costs one (about 2x the batches/s with 2 workers, BENCHMARKS.md).
    Entries that are not tensors (strings as pyarrow arrays) are passed as they are."""
    layout, total = [], 0
    for name, t in tensors.items():
        if isinstance(t, torch.Tensor):
            nbytes = t.numel() * t.element_size()
            layout.append((name, total, nbytes))
            total += (nbytes + 63) & ~63
    if not layout:
        return tensors
    storage = torch.empty(max(total, 1), dtype=torch.uint8).share_memory_()
    out = dict(tensors)
    for name, at, nbytes in layout:
        t = tensors[name]
        view = storage[at:at + nbytes].view(t.dtype).view(t.shape)
        view.copy_(t)
        out[name] = view
    return out


def _bits(buf, offset, n):
    """An Arrow bitmap's bits [offset, offset + n) as a bool array (numpy only: pyarrow's compute
    functions would import pandas into every job, about 40 MiB each)."""
    packed = np.frombuffer(buf, dtype=np.uint8, count=(offset + n + 7) // 8)
    return np.unpackbits(packed, count=offset + n, bitorder="little")[offset:].view(np.bool_)


class StrataIterableDataset(IterableDataset):
    """A :class:`strata.Loader` per DataLoader worker, each a shard; yields dicts of tensors
    (``as_tensors=False``: the pyarrow RecordBatches themselves).

    Each pass (each ``iter()``, as a DataLoader starts an epoch) reads the next ``epochs`` epochs
    in a new order: pass ``p`` reads epochs ``[p * epochs, (p + 1) * epochs)``, ``p`` counted
    from :meth:`set_epoch` (as ``DistributedSampler``) or, when nothing sets it, by the passes
    this object has begun. With ``persistent_workers=True`` each worker keeps its copy and counts
    its own passes, so the order still changes every epoch; ``set_epoch`` reaches workers made
    after it was called (a new worker copies the dataset), not persistent ones already running.
    The loader's settings (``args``) are fixed at construction: a read-only mapping.

    ``len()`` is the batches per epoch of this rank read by one reader (with several workers
    each reads its shard, and their batches add up to at most ``workers - 1`` more).
    ``state_dict()`` / ``load_state_dict()`` follow torchdata's ``StatefulDataLoader``: called in
    each worker, they save and restore that worker's position (its pass and its loader's
    checkpoint), so a resumed job continues with the next batch of every worker.
    """

    def __init__(self, dataset, features=None, batch_samples=512, seed=0, epochs=1, rank=0, world=1, node=None,
                 as_tensors=True, **options):
        super().__init__()
        if "pin_memory" in options:
            # Each worker's loader would register its slabs with CUDA in a forked process; and the
            # worker's batches are copied into torch's shared memory anyway.
            raise StrataUsageError("strata: pin_memory is the DataLoader's here (DataLoader(..., pin_memory=True)); "
                                   "strata.Loader(pin_memory=True) is for a loop in the main process")
        if isinstance(features, (str, bytes)):
            features = [features.decode() if isinstance(features, bytes) else features]
        self._args = dict(dataset=dataset, features=features, batch_samples=batch_samples, seed=seed, epochs=epochs,
                          node=node, **options)
        self.rank = rank
        self.world = world
        self.as_tensors = as_tensors
        self.stats = None
        self._epoch = 0
        self._passes = 0
        self._resume = None
        self._current = None  # (pass, loader) of the pass under way in this process
        self._length = None

    @property
    def args(self):
        """The loader's settings (read-only: a pass of another worker could not see a change)."""
        return types.MappingProxyType(self._args)

    def set_epoch(self, epoch):
        """The epoch the next pass reads (as ``DistributedSampler.set_epoch``)."""
        if isinstance(epoch, bool) or not isinstance(epoch, numbers.Integral) or epoch < 0:
            raise ValueError("strata: the epoch must be a non-negative integer, got %r" % (epoch,))
        self._epoch = int(epoch)
        self._passes = 0

    def _shard(self):
        info = get_worker_info()
        workers, wid = (1, 0) if info is None else (info.num_workers, info.id)
        return self.rank * workers + wid, self.world * workers

    def __len__(self):
        if self._length is None:
            args = dict(self._args, epochs=1)
            with Loader(rank=self.rank, world=self.world, **args) as probe:
                self._length = probe.steps_per_epoch
        return self._length

    def __iter__(self):
        rank, world = self._shard()
        per = int(self._args.get("epochs", 1))
        if self._resume is not None:
            p, checkpoint = self._resume["pass"], self._resume["checkpoint"]
            self._resume = None
        else:
            p, checkpoint = self._epoch + self._passes, None
        self._passes = p - self._epoch + 1
        args = dict(self._args, epochs=(p + 1) * per)
        if "threads" not in args:
            # Each worker's loader assembles on its share of the cores (workers x threads beyond them only contend).
            args["threads"] = max(1, (os.cpu_count() or 1) // max(1, world // max(1, self.world)))
        loader = Loader(rank=rank, world=world, start_epoch=p * per, **args)
        if checkpoint is not None:
            loader.load_state_dict({"format": 1, "checkpoint": checkpoint})
        self._current = (p, loader)
        # In a worker, a batch's tensors go to the main process in one storage (see _one_storage).
        shared = self.as_tensors and get_worker_info() is not None
        try:
            for batch in loader:
                if not self.as_tensors:
                    yield batch
                elif shared:
                    yield _one_storage(to_tensors(batch))
                else:
                    yield to_tensors(batch)
            # Bytes per tier of the finished pass (seen here with num_workers=0; each worker has its own).
            self.stats = loader.stats
        finally:
            loader.close()

    def state_dict(self):
        """This process's position: the pass under way and its loader's checkpoint (torchdata's
        convention: each worker's own)."""
        if self._current is None:
            return {"format": 1, "pass": self._epoch + self._passes, "checkpoint": None}
        p, loader = self._current
        return {"format": 1, "pass": p, "checkpoint": loader.state_dict()["checkpoint"]}

    def load_state_dict(self, state):
        """Continue from ``state`` (from :meth:`state_dict` of the same worker): the next pass resumes there."""
        if not isinstance(state, dict) or state.get("format") != 1 or not isinstance(state.get("pass"), int):
            raise ValueError("strata: not a StrataIterableDataset state (expected the dict state_dict() returns)")
        if state["checkpoint"] is None:
            self._epoch, self._passes, self._resume = state["pass"], 0, None
        else:
            self._resume = {"pass": state["pass"], "checkpoint": state["checkpoint"]}
