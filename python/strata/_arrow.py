"""Arrow wrapping: Strata's type names as Arrow types, and a batch message's columns as Arrow arrays
over the session's slabs, without a copy (each buffer keeps its batch's lease alive).

The type cache is filled from one thread at a time in practice (the loader's); a race only parses
a type twice.
"""

import pyarrow as pa

from ._errors import StrataError


_SCALARS = {
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("ns"),
}


_TYPES = {}


def _arrow_type(text):
    """Strata's type text (FeatureType.toString) as an Arrow type (remembered: every batch names its types)."""
    typ = _TYPES.get(text)
    if typ is None:
        typ = _parse_type(text)
        if len(_TYPES) < 1024:
            _TYPES[text] = typ
    return typ


def _parse_type(text):
    t = text.strip()
    if t.startswith("list<") and t.endswith(">"):
        return pa.list_(_parse_type(t[5:-1]))
    if t.startswith("decimal(") and t.endswith(")"):
        p, s = t[8:-1].split(",")
        return pa.decimal128(int(p), int(s))
    try:
        return _SCALARS[t]
    except KeyError:
        raise StrataError("strata: the server sent an unknown type '%s' (client older than the server?)" % t)


def _buffer(server, lease, ref):
    """A buffer of the batch: a view of its slab, keeping the lease (and so the slab) alive."""
    if ref is None:
        return None
    sid, off, length = ref
    slab = lease.slabs.get(sid)
    if slab is None:
        slab = lease.slabs[sid] = server.slab(sid)
    return pa.foreign_buffer(slab.address + off, length, base=lease)


def _array(server, lease, c):
    """One column of a batch message as an Arrow array over the batch's slabs."""
    typ = _arrow_type(c["type"])
    validity, offsets, values = [_buffer(server, lease, r) for r in c["buffers"]]
    children = None
    if pa.types.is_list(typ):
        layout = [validity, offsets]
        children = [_array(server, lease, c["child"])]
    elif pa.types.is_string(typ) or pa.types.is_binary(typ):
        layout = [validity, offsets, values if values is not None else pa.py_buffer(b"")]
    else:
        layout = [validity, values if values is not None else pa.py_buffer(b"")]
    return pa.Array.from_buffers(typ, c["length"], layout, null_count=c["nullCount"], offset=c["offset"], children=children)
