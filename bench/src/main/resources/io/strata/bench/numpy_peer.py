"""Peer of 'strata bench sample': seed 003's approach, numpy.memmap with fancy indexing, over the
very same Arrow buffers of Strata's segment files (offsets given by the Java side).

Reads a JSON spec (features, their buffers per chunk, the batches as [start, length] samples),
then answers commands on stdin:
  run FIRST COUNT   gather COUNT batches starting at batch FIRST; prints the seconds taken
  crc BATCH NAME    prints the CRC-32 of feature NAME's gathered values in batch BATCH
  quit
"""
import json
import sys
import time
import zlib

import numpy as np

WIDTH_DTYPE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.dtype("V16")}


def mm(path, off_len, dtype):
    off, length = off_len
    itemsize = np.dtype(dtype).itemsize
    if length == 0:
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=off, shape=(length // itemsize,))


class Feature:
    def __init__(self, spec):
        self.name = spec["name"]
        self.kind = spec["kind"]
        self.width = spec["width"]
        self.child_width = spec.get("childWidth", 0)
        self.firsts = np.array([c["first"] for c in spec["chunks"]], dtype=np.int64)
        self.chunks = []
        for c in spec["chunks"]:
            b = {"validity": mm(c["file"], c["validity"], np.uint8) if c["validity"][1] else None}
            if self.kind == "bool":
                b["values"] = mm(c["file"], c["values"], np.uint8)
            elif self.width > 0:
                b["values"] = mm(c["file"], c["values"], WIDTH_DTYPE[self.width])
            else:
                b["offsets"] = mm(c["file"], c["offsets"], np.int32)
                w = 1 if self.kind in ("string", "binary") else self.child_width
                b["data"] = mm(c["file"], c["data"], WIDTH_DTYPE[w])
            self.chunks.append(b)

    def gather(self, groups, values_only=False):
        """Values of the rows of a batch, given as (chunk, chunk-local rows) groups; returns the arrays gathered."""
        out = []
        for c, local in groups:
            b = self.chunks[c]
            if b["validity"] is not None and not values_only:
                out.append((b["validity"][local >> 3] >> (local & 7).astype(np.uint8)) & 1)
            if self.kind == "bool":
                out.append((b["values"][local >> 3] >> (local & 7).astype(np.uint8)) & 1)
            elif self.width > 0:
                out.append(b["values"][local])
            else:
                o0 = b["offsets"][local].astype(np.int64)
                o1 = b["offsets"][local + 1].astype(np.int64)
                lengths = o1 - o0
                out.append(lengths)
                total = int(lengths.sum())
                if total:
                    base = np.repeat(o0 - (np.cumsum(lengths) - lengths), lengths)
                    out.append(b["data"][base + np.arange(total, dtype=np.int64)])
        return out


def rows_of(batch):
    starts = batch[:, 0]
    lens = batch[:, 1]
    total = int(lens.sum())
    return np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(total, dtype=np.int64)


def split(idx, firsts):
    """The rows of a batch grouped by chunk (all features share the chunking), batch order within a chunk."""
    chunk = np.searchsorted(firsts, idx, side="right") - 1
    if chunk[0] == chunk[-1] and (chunk == chunk[0]).all():
        return [(int(chunk[0]), idx - firsts[chunk[0]])]
    order = np.argsort(chunk, kind="stable")
    sc = chunk[order]
    cuts = np.flatnonzero(np.diff(sc)) + 1
    return [(int(sc[a]), idx[order[a:b]] - firsts[sc[a]])
            for a, b in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [len(sc)])))]


def main():
    spec = json.load(open(sys.argv[1]))
    features = [Feature(f) for f in spec["features"]]
    batches = [rows_of(np.array(b, dtype=np.int64)) for b in spec["batches"]]
    print("ready", flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        if cmd[0] == "run":
            first, count = int(cmd[1]), int(cmd[2])
            t = time.perf_counter()
            nbytes = 0
            for i in range(count):
                groups = split(batches[(first + i) % len(batches)], features[0].firsts)
                for f in features:
                    for a in f.gather(groups):
                        nbytes += a.nbytes
            print("%.9f %d" % (time.perf_counter() - t, nbytes), flush=True)
        elif cmd[0] == "crc":
            f = next(f for f in features if f.name == cmd[2])
            vals = f.gather(split(batches[int(cmd[1])], f.firsts), values_only=True)
            print(zlib.crc32(np.concatenate(vals).tobytes()), flush=True)


if __name__ == "__main__":
    main()
