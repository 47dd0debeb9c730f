"""Numpy wrapping: a batch message's columns as numpy arrays over the session's slabs, without a copy
(bit-packed bools and validity bitmaps are unpacked), and without importing pyarrow.

A job that wants numpy (or torch tensors made from numpy) need not carry pyarrow: importing it
costs a job about 6 MiB of private memory and 22 MiB of shared libraries, and its ``to_numpy``
imports pandas, about 30 MiB more (measured in issue 58's fleet, four jobs a host).

Each array keeps its batch's lease alive: its base is a small holder of the lease, so the batch's
slab goes back to the service only once every array of the batch (and every view of one) is gone.

The layout, the same as ``strata.torch.to_tensors``: a fixed-width column is one array (dates as
int32 days, timestamps as int64 nanoseconds since the epoch, decimals as (n, 2) int64 words, low
first); a bool column a bool array; a column with nulls also gives ``NAME.valid`` (bool); a list
of fixed-width values gives ``NAME`` (the flat elements) and ``NAME.offsets`` (int32, from 0);
strings and binaries give ``NAME`` (uint8, their bytes) and ``NAME.offsets``.
"""

import numpy as np

from ._errors import StrataError, StrataUsageError

_DTYPES = {"int8": "<i1", "int16": "<i2", "int32": "<i4", "int64": "<i8", "float32": "<f4", "float64": "<f8",
           "date": "<i4", "timestamp": "<i8"}


class Batch(dict):
    """One batch as numpy arrays by name (see the module doc for each type), with its ``epoch`` and
    ``step`` and each feature's Strata type text in ``types``."""

    __slots__ = ("epoch", "step", "types")


class _Held:
    """What a batch's array views: its address, shape and type, and the batch's lease."""

    __slots__ = ("__array_interface__", "lease")

    def __init__(self, address, count, typestr, lease):
        self.__array_interface__ = {"data": (address, True), "shape": (count,), "typestr": typestr, "version": 3}
        self.lease = lease


def _view(server, lease, ref, typestr, count):
    """``count`` values of ``typestr`` at the start of buffer ``ref`` of the batch, read-only."""
    if count == 0 or ref is None:
        return np.zeros(count, dtype=typestr)  # no buffer: no rows, or rows that are all null
    sid, off, length = ref
    item = np.dtype(typestr).itemsize
    if count * item > length:
        raise StrataError("strata: the loader service sent a buffer of %d bytes for %d values of %s"
                          % (length, count, typestr))
    slab = lease.slabs.get(sid)
    if slab is None:
        slab = lease.slabs[sid] = server.slab(sid)
    if off < 0 or off + length > slab.nbytes:
        raise StrataError("strata: the loader service sent a buffer outside its slab %d" % sid)
    return np.asarray(_Held(slab.ctypes.data + off, count, typestr, lease))


def _bits(server, lease, ref, offset, n):
    """Bits [offset, offset + n) of a bitmap buffer as a bool array (a copy: numpy has no bit arrays)."""
    packed = _view(server, lease, ref, "|u1", (offset + n + 7) // 8)
    return np.unpackbits(packed, count=offset + n, bitorder="little")[offset:].view(np.bool_)


def _offsets(server, lease, c):
    """A list's or string's offsets, from 0, and where its elements begin and end."""
    offsets = _view(server, lease, c["buffers"][1], "<i4", c["offset"] + c["length"] + 1)[c["offset"]:]
    first, last = int(offsets[0]), int(offsets[-1])
    return (offsets - first if first else offsets), first, last


def _fixed(server, lease, c, typ, name):
    """A fixed-width column's values (bools unpacked)."""
    n, offset = c["length"], c["offset"]
    if typ == "bool":
        if c["buffers"][2] is None or n == 0:
            return np.zeros(n, dtype=np.bool_)
        return _bits(server, lease, c["buffers"][2], offset, n)
    if typ.startswith("decimal("):
        return _view(server, lease, c["buffers"][2], "<i8", 2 * (offset + n))[2 * offset:].reshape(n, 2)
    dtype = _DTYPES.get(typ)
    if dtype is None:
        raise StrataError("strata: the server sent an unknown type '%s' for %s (client older than the server?)"
                          % (typ, name))
    return _view(server, lease, c["buffers"][2], dtype, offset + n)[offset:]


def columns(server, lease, cols, epoch, step):
    """The batch message's columns as a :class:`Batch`."""
    out = Batch()
    out.epoch, out.step, out.types = epoch, step, {}
    for c in cols:
        name, typ = c["name"], c["type"].strip()
        out.types[name] = typ
        if typ.startswith("list<") and typ.endswith(">"):
            child = c["child"]
            element = child["type"].strip()
            if element.startswith("list<") or element in ("string", "binary") or child["nullCount"] > 0:
                raise StrataUsageError("strata: output='numpy' takes lists of fixed-width values without nulls "
                                       "inside; %s is %s (use output='arrow')" % (name, typ))
            offsets, first, last = _offsets(server, lease, c)
            out[name] = _fixed(server, lease, child, element, name)[first:last]
            out[name + ".offsets"] = offsets
        elif typ in ("string", "binary"):
            offsets, first, last = _offsets(server, lease, c)
            out[name] = _view(server, lease, c["buffers"][2], "|u1", last)[first:last]
            out[name + ".offsets"] = offsets
        else:
            out[name] = _fixed(server, lease, c, typ, name)
        if c["nullCount"] > 0:
            out[name + ".valid"] = _bits(server, lease, c["buffers"][0], c["offset"], c["length"])
    return out
