"""Lookups by sample id straight from the SSD tier, in this process alone: ``strata.Documents``.

A job that fetches documents (or any sample's values) one id at a time wants neither a batch
nor a second process: a lookup here is a binary search of the dataset's sample index (one read of
the window its id falls in) and two reads from the feature's segment (its offsets, then its bytes), with the standard library
alone — no loader service, no numpy, no pyarrow. The segments are Strata's Arrow IPC files
(docs/FORMAT.md §2): their footer and record-batch metadata are parsed here and every buffer is
bounds-checked against the file before use; the buffers' CRC32C are not recomputed (the node and
the Java loader verify segments when they write and first open them; stdlib Python has no
CRC32C), and the sample index's structure is checked but not its checksum, for the same reason.
Segments are read with ``pread`` through descriptors opened once (no mapping: a lookup leaves no
pages in the job's memory), so a segment the node evicts (unlinks) stays readable here.

Only rows on the SSD tier are served: a chunk of the feature that is not there is an error naming
it (the batch loader reads ORC for those; this path does not).

Threads: a Documents object may be shared by threads (``pread`` has no file position; the index
is read-only).
"""

import array
import bisect
import json
import os
import re
import struct

from ._errors import StrataError, StrataUsageError

_SEGMENT = re.compile(r"^c(\d{6})-([0-9a-f]{12})-([0-9a-f]{13})\.arrow$")
_FIXED = {"int8": "<b", "int16": "<h", "int32": "<i", "int64": "<q", "float32": "<f", "float64": "<d"}


class _Flat:
    """Reads a flatbuffer (bounds-checked: damage is a StrataError naming the file)."""

    def __init__(self, buf, where):
        self.b = buf
        self.where = where

    def _at(self, fmt, p):
        if p < 0 or p + struct.calcsize(fmt) > len(self.b):
            raise StrataError("strata: %s: damaged metadata (offset %d outside %d bytes)" % (self.where, p, len(self.b)))
        return struct.unpack_from(fmt, self.b, p)[0]

    def root(self):
        return self._at("<I", 0)

    def field(self, table, i):
        """The position of field ``i`` of the table at ``table``, or None when absent."""
        vt = table - self._at("<i", table)
        if 4 + 2 * i >= self._at("<H", vt):
            return None
        off = self._at("<H", vt + 4 + 2 * i)
        return table + off if off else None

    def ref(self, p):
        return p + self._at("<I", p)

    def vector(self, p):
        """(first element's position, count) of the vector the field at ``p`` refers to."""
        v = self.ref(p)
        return v + 4, self._at("<I", v)

    def string(self, p):
        v = self.ref(p)
        n = self._at("<I", v)
        if v + 4 + n > len(self.b):
            raise StrataError("strata: %s: damaged metadata (a string runs past the end)" % self.where)
        return bytes(self.b[v + 4:v + 4 + n]).decode("utf-8", "replace")

    def scalar(self, fmt, table, i, default=0):
        p = self.field(table, i)
        return default if p is None else self._at(fmt, p)


def _buffers_of(typ):
    if typ.startswith("list<") and typ.endswith(">"):
        return 2 + _buffers_of(typ[5:-1])
    return 3 if typ in ("string", "binary") else 2


def _nodes_of(typ):
    return 1 + _nodes_of(typ[5:-1]) if typ.startswith("list<") and typ.endswith(">") else 1


class _Segment:
    """One segment file: its rows, and the buffers (absolute offset, length) of one column."""

    def __init__(self, path, types, feature):
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            try:
                self._parse(types, feature)
            except (struct.error, KeyError, ValueError, TypeError) as e:
                raise StrataError("strata: %s: damaged metadata (%s)" % (path, e)) from None
        except BaseException:
            os.close(self.fd)
            raise

    def _read(self, offset, length):
        data = os.pread(self.fd, length, offset)
        if len(data) != length:
            raise StrataError("strata: %s: truncated (read %d of %d bytes at %d)" % (self.path, len(data), length, offset))
        return data

    def _parse(self, types, feature):
        size = os.fstat(self.fd).st_size
        if size < 8 + 10 or self._read(0, 6) != b"ARROW1" or self._read(size - 6, 6) != b"ARROW1":
            raise StrataError("strata: %s: not a Strata segment (no Arrow file magic)" % self.path)
        flen = struct.unpack("<i", self._read(size - 10, 4))[0]
        if flen <= 0 or flen > size - 18:
            raise StrataError("strata: %s: damaged footer length %d" % (self.path, flen))
        fb = _Flat(self._read(size - 10 - flen, flen), self.path)
        footer = fb.root()
        schema = fb.ref(fb.field(footer, 1) or _missing(self.path, "schema"))
        meta = {}
        p = fb.field(schema, 2)
        if p is not None:
            first, n = fb.vector(p)
            for k in range(n):
                kv = fb.ref(first + 4 * k)
                meta[fb.string(fb.field(kv, 0))] = fb.string(fb.field(kv, 1))
        if meta.get("strata.format") != "strata-segment" or meta.get("strata.format.version") != "1":
            raise StrataError("strata: %s: not a version-1 Strata segment" % self.path)
        self.columns = json.loads(meta["strata.columns"])
        self.start, self.end = int(meta["strata.rows.start"]), int(meta["strata.rows.end"])
        blocks, nblocks = fb.vector(fb.field(footer, 3) or _missing(self.path, "record batches"))
        if nblocks != 1:
            raise StrataError("strata: %s: %d record batches, a segment has one" % (self.path, nblocks))
        offset, meta_len, body_len = struct.unpack_from("<qi4xq", fb.b, blocks)
        if offset < 8 or meta_len < 8 or body_len < 0 or offset + meta_len + body_len > size:
            raise StrataError("strata: %s: its record batch lies outside the file" % self.path)
        head = self._read(offset, meta_len)
        if struct.unpack_from("<Ii", head, 0) != (0xFFFFFFFF, meta_len - 8):
            raise StrataError("strata: %s: damaged record batch message" % self.path)
        mb = _Flat(memoryview(head)[8:], self.path)
        msg = mb.root()
        if mb.scalar("<B", msg, 1) != 3:
            raise StrataError("strata: %s: the block is not a record batch" % self.path)
        rb = mb.ref(mb.field(msg, 2) or _missing(self.path, "record batch"))
        if mb.field(rb, 3) is not None:
            raise StrataError("strata: %s: compressed buffers (Strata writes none)" % self.path)
        rows = mb.scalar("<q", rb, 0)
        if rows != self.end - self.start:
            raise StrataError("strata: %s: %d rows, its metadata says %d" % (self.path, rows, self.end - self.start))
        bufs, nbufs = mb.vector(mb.field(rb, 2) or _missing(self.path, "buffers"))
        nodes, nnodes = mb.vector(mb.field(rb, 1) or _missing(self.path, "nodes"))
        body = offset + meta_len
        b = n = 0
        self.buffers = None
        for name in self.columns:
            typ = types.get(name)
            if typ is None:
                raise StrataError("strata: %s: column %r is not a feature of the dataset" % (self.path, name))
            if name == feature:
                self.buffers = []
                for k in range(b, b + _buffers_of(typ)):
                    if k >= nbufs:
                        raise StrataError("strata: %s: fewer buffers than its columns need" % self.path)
                    off, length = struct.unpack_from("<qq", mb.b, bufs + 16 * k)
                    if off < 0 or length < 0 or off + length > body_len:
                        raise StrataError("strata: %s: buffer %d lies outside the body" % (self.path, k))
                    self.buffers.append((body + off, length))
                if n >= nnodes or struct.unpack_from("<q", mb.b, nodes + 16 * n)[0] != rows:
                    raise StrataError("strata: %s: column %r has another row count" % (self.path, name))
            b += _buffers_of(typ)
            n += _nodes_of(typ)

    def value(self, row, typ):
        """The value of the column at global row ``row`` (None when null)."""
        r = row - self.start
        validity = self.buffers[0]
        if validity[1] > 0:
            if r // 8 >= validity[1]:
                raise StrataError("strata: %s: validity shorter than its rows" % self.path)
            if not (self._read(validity[0] + r // 8, 1)[0] >> (r % 8)) & 1:
                return None
        if typ in ("string", "binary"):
            offsets, data = self.buffers[1], self.buffers[2]
            if 4 * (r + 2) > offsets[1]:
                raise StrataError("strata: %s: offsets shorter than its rows" % self.path)
            a, e = struct.unpack("<ii", self._read(offsets[0] + 4 * r, 8))
            if not 0 <= a <= e <= data[1]:
                raise StrataError("strata: %s: offsets %d..%d outside its %d data bytes" % (self.path, a, e, data[1]))
            raw = self._read(data[0] + a, e - a)
            return raw.decode("utf-8") if typ == "string" else raw
        fmt = _FIXED[typ]
        width = struct.calcsize(fmt)
        values = self.buffers[1]
        if width * (r + 1) > values[1]:
            raise StrataError("strata: %s: values shorter than its rows" % self.path)
        return struct.unpack(fmt, self._read(values[0] + width * r, width))[0]

    def close(self):
        os.close(self.fd)


def _missing(path, what):
    raise StrataError("strata: %s: damaged metadata (no %s)" % (path, what))


class _SampleIndex:
    """``samples.idx`` read with ``pread``, not mapped (a lookup leaves no pages in the job's
    memory): every 256th id is kept in memory (8 bytes each), and a lookup reads the one window of
    256 entries its id falls in (6 KiB) and searches it."""

    WINDOW = 256

    def __init__(self, path):
        self.path = path
        try:
            self.fd = os.open(path, os.O_RDONLY)
        except OSError as e:
            raise StrataError("strata: cannot read the sample index %s: %s" % (path, e.strerror)) from None
        try:
            size = os.fstat(self.fd).st_size
            head = os.pread(self.fd, 24, 0)
            n = struct.unpack_from("<q", head, 16)[0] if len(head) == 24 else -1
            if len(head) < 24 or head[:8] != b"STRATAIX" or struct.unpack_from("<i", head, 8)[0] != 1 or n < 0 \
                    or size != 32 + 24 * n or os.pread(self.fd, 4, size - 4) != b"IEND":
                raise StrataError("strata: %s: not a version-1 sample index, or truncated" % path)
            self.n = n
            self.top = array.array("q", (struct.unpack("<q", os.pread(self.fd, 8, 24 + 24 * k))[0]
                                         for k in range(0, n, self.WINDOW)))
            if any(self.top[k] >= self.top[k + 1] for k in range(len(self.top) - 1)):
                raise StrataError("strata: %s: sample ids not in increasing order" % path)
        except BaseException:
            os.close(self.fd)
            raise

    def __len__(self):
        return self.n

    def close(self):
        os.close(self.fd)

    def rows(self, sample_id):
        """(start, end) rows of the sample, or None when the index has no such id."""
        w = bisect.bisect_right(self.top, sample_id) - 1
        if w < 0:
            return None
        first = w * self.WINDOW
        count = min(self.WINDOW, self.n - first)
        data = os.pread(self.fd, 24 * count, 24 + 24 * first)
        if len(data) != 24 * count:
            raise StrataError("strata: %s: truncated while read" % self.path)
        ids = memoryview(data).cast("q")[0::3]
        i = bisect.bisect_left(ids, sample_id)
        if i == count or ids[i] != sample_id:
            return None
        return struct.unpack_from("<qq", data, 24 * i + 8)


class Documents:
    """One feature's values by sample id, from the SSD tier's segments, in this process.

        docs = strata.Documents("/data/docs", "text", ssd="/ssd")
        docs[1007]          # the text of the sample whose id is 1007 (a sample of one row)
        docs.rows(1007)     # the values of every row of that sample, as a list

    ``feature``: a string, binary, integer or floating-point feature of the dataset, promoted to
    ``ssd`` (``strata promote --ssd``). An id that is not in the sample index is a KeyError; a
    row whose chunk is not on the SSD tier is a StrataError naming the chunk.
    """

    def __init__(self, dataset, feature, ssd):
        dataset, ssd = os.fspath(dataset), os.fspath(ssd)
        try:
            with open(os.path.join(dataset, "manifest.json")) as f:
                manifest = json.load(f)
        except (OSError, ValueError) as e:
            raise StrataUsageError("strata: %s is not a Strata dataset (manifest.json: %s)" % (dataset, e)) from None
        types = {f["name"]: f["type"] for f in manifest.get("features", [])}
        typ = types.get(feature)
        if typ is None:
            raise StrataUsageError("strata: no feature %r in %s (it has %s)" % (feature, dataset, ", ".join(sorted(types))))
        if typ not in _FIXED and typ not in ("string", "binary"):
            raise StrataUsageError("strata: Documents reads string, binary, integer and float features; %r is %s"
                                   % (feature, typ))
        index = manifest.get("sampleIndex")
        if not index:
            raise StrataUsageError("strata: %s has no sample index (import it with --sample-column)" % dataset)
        self.feature, self.type = feature, typ
        self._segments = []
        self._index = _SampleIndex(os.path.join(dataset, index["path"]))
        try:
            self._open_segments(os.path.join(ssd, manifest["name"], manifest["version"]), types)
        except BaseException:
            self.close()  # nothing left open behind an error
            raise
        if not self._segments:
            self.close()
            raise StrataUsageError("strata: %r of %s is not on the SSD tier %s: promote it first (strata promote --features %s)"
                                   % (feature, dataset, ssd, feature))
        self._segments.sort(key=lambda s: s.start)
        self._starts = [s.start for s in self._segments]

    def _open_segments(self, where, types):
        """Opens the latest segment of each chunk and column set under ``where`` that holds the feature."""
        if not os.path.isdir(where):
            raise StrataUsageError("strata: no segments of this dataset version under %s: promote it first "
                                   "(strata promote --ssd)" % where)
        latest = {}
        for name in os.listdir(where):
            m = _SEGMENT.match(name)
            if m and latest.get(m.group(1, 2), ("",))[0] < m.group(3):
                latest[m.group(1, 2)] = (m.group(3), name)
        for _, name in latest.values():
            try:
                s = _Segment(os.path.join(where, name), types, self.feature)
            except FileNotFoundError:
                continue  # evicted since it was listed
            if s.buffers is None:
                s.close()
            else:
                self._segments.append(s)

    def rows(self, sample_id):
        """The feature's values for every row of the sample, in row order."""
        rng = self._index.rows(int(sample_id))
        if rng is None:
            raise KeyError(sample_id)
        out = []
        for row in range(rng[0], rng[1]):
            k = bisect.bisect_right(self._starts, row) - 1
            if k < 0 or row >= self._segments[k].end:
                raise StrataError("strata: row %d of %r (sample %d) is not on the SSD tier (its chunk was evicted or never "
                                  "promoted)" % (row, self.feature, sample_id))
            out.append(self._segments[k].value(row, self.type))
        return out

    def __getitem__(self, sample_id):
        values = self.rows(sample_id)
        if len(values) != 1:
            raise StrataUsageError("strata: sample %d has %d rows: use rows(id)" % (sample_id, len(values)))
        return values[0]

    def __len__(self):
        return len(self._index)

    def __contains__(self, sample_id):
        return self._index.rows(int(sample_id)) is not None

    def close(self):
        for s in getattr(self, "_segments", []):
            s.close()
        self._segments = []
        if getattr(self, "_index", None) is not None:
            self._index.close()
            self._index = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
