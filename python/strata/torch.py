"""Strata batches for PyTorch: an IterableDataset whose DataLoader workers are shards.

    from torch.utils.data import DataLoader
    from strata.torch import StrataIterableDataset
    ds = StrataIterableDataset("/data/events", features=["amount", "merchant_id"], batch_samples=512, seed=1)
    for batch in DataLoader(ds, batch_size=None, num_workers=2, pin_memory=True):
        batch["amount"]  # a tensor

Each worker of each rank reads its own shard: rank ``rank * workers + worker_id`` of
``world * workers``, so the workers together read every sample once per epoch. Batches are
already batched: use ``batch_size=None``. Fixed-width columns become tensors over the batch's
shared memory (no copy in the worker); a column with nulls also gives ``"NAME.valid"``
(bool); list columns give ``"NAME"`` (the flat elements) and ``"NAME.offsets"`` (int32);
strings and binaries stay pyarrow arrays.
"""

import warnings

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

from ._loader import Loader

__all__ = ["StrataIterableDataset", "to_tensors"]


_NUMPY = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "float": np.float32,
          "double": np.float64}


def _tensor(arr):
    """A tensor over an Arrow array's values: no copy, except for bit-packed bools."""
    import pyarrow as pa

    typ = arr.type
    if pa.types.is_boolean(typ):
        return torch.from_numpy(arr.fill_null(False).to_numpy(zero_copy_only=False))
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
    with warnings.catch_warnings():
        # Read-only shared memory: the tensor is read (or copied by pin_memory), never written.
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(values)


def to_tensors(batch):
    """A dict of tensors from a Strata RecordBatch (see the module doc for each type)."""
    import pyarrow as pa

    out = {}
    for name, arr in zip(batch.schema.names, batch.columns):
        typ = arr.type
        if pa.types.is_list(typ):
            offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=arr.offset + len(arr) + 1)[arr.offset:]
            if offsets[0] != 0:
                offsets = offsets - offsets[0]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                out[name + ".offsets"] = torch.from_numpy(offsets)
            out[name] = _tensor(arr.flatten())
        elif pa.types.is_string(typ) or pa.types.is_binary(typ):
            out[name] = arr
        else:
            out[name] = _tensor(arr)
        if arr.null_count > 0:
            valid = arr.is_valid().to_numpy(zero_copy_only=False)
            out[name + ".valid"] = torch.from_numpy(valid)
    return out


class StrataIterableDataset(IterableDataset):
    """A :class:`strata.Loader` per DataLoader worker, each a shard; yields dicts of tensors
    (``as_tensors=False``: the pyarrow RecordBatches themselves)."""

    def __init__(self, dataset, features=None, batch_samples=512, seed=0, epochs=1, rank=0, world=1, node=None,
                 as_tensors=True, **options):
        super().__init__()
        self.args = dict(dataset=dataset, features=features, batch_samples=batch_samples, seed=seed, epochs=epochs,
                         node=node, **options)
        self.rank = rank
        self.world = world
        self.as_tensors = as_tensors
        self.stats = None

    def __iter__(self):
        info = get_worker_info()
        workers, wid = (1, 0) if info is None else (info.num_workers, info.id)
        loader = Loader(rank=self.rank * workers + wid, world=self.world * workers, **self.args)
        try:
            for batch in loader:
                yield to_tensors(batch) if self.as_tensors else batch
            # Bytes per tier of the finished pass (seen here with num_workers=0; each worker has its own).
            self.stats = loader.stats
        finally:
            loader.close()
