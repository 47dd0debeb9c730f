"""A job's session with the loader service: one line of JSON a request, one a reply, over a Unix
socket; the shared-memory slab files the service announces, mapped read-only on first use; and the
leases that give a batch's number back once the job drops the batch.

Threads: a session is used from one thread (the loader's); a batch's lease may be dropped from any
thread, and only appends its number to a deque the session sends with its next request.
"""

import collections
import json
import mmap
import os
import shutil

from ._errors import StrataError, StrataUsageError
from ._service import _alive, _last_line, _log_size, _start_service


class _Lease:
    """Keeps one batch's shared memory alive; when the last buffer of the batch is gone, the
    batch's number goes back to the server, which then reuses its slab."""

    __slots__ = ("seq", "released", "slabs", "__weakref__")

    def __init__(self, seq, released):
        self.seq = seq
        self.released = released
        self.slabs = {}  # the slab buffers (mappings) this batch's buffers point into

    def __del__(self):
        self.released.append(self.seq)


class _Server:
    """One session with the loader service (a Java Loader there) and the slab files it shares with
    us. The session ends when the connection closes, however this process ends."""

    def __init__(self, request, pinning=None, numpy=False):
        self.pinning = pinning  # a _cuda._Pinning when the job wants batches pinned where they lie
        self.numpy = numpy  # slabs as numpy arrays (output="numpy": pyarrow never imported), else pyarrow buffers
        self.sock, self.path = _start_service()
        self.log_from = _log_size(self.path + ".log")
        try:
            self.pid = int(open(self.path + ".pid").read().strip())
        except (OSError, ValueError):
            self.pid = None
        self.out = self.sock.makefile("rb")
        self.released = collections.deque()
        self.slabs = {}
        self.unmapped = {}
        self.dir = None
        self.closed = False
        try:
            self._write(json.dumps(request) + "\n")
            ready = self._read()["ready"]
        except BaseException:
            self.close()
            raise
        self.dir = ready["dir"]
        self.ready = ready

    def _write(self, text):
        try:
            self.sock.sendall(text.encode())
        except OSError:
            raise self._died() from None

    def _died(self):
        """The error for a service that went away under this session: named, with what its log said
        since this session began; its shared memory is removed when it is gone."""
        gone = self.pid is not None and not _alive(self.pid)
        last = _last_line(self.path + ".log", self.log_from)
        who = "the loader service%s on %s" % ("" if self.pid is None else " (pid %d)" % self.pid, self.path)
        if gone:
            self._remove_slabs()
        return StrataError("strata: %s %s" % (who, "died" if gone else "closed the connection")
                           + (" (its log since this job began: %s)" % last if last else ""))

    def _remove_slabs(self):
        """The session's slab directory, once its service is dead (the next service would remove it too)."""
        d = self.dir
        if d and os.path.basename(d).startswith("strata-py-"):
            self.slabs.clear()
            shutil.rmtree(d, ignore_errors=True)

    def _read(self):
        try:
            line = self.out.readline()
        except OSError:
            raise self._died() from None
        if not line:
            raise self._died()
        try:
            msg = json.loads(line)
        except ValueError:
            raise StrataError("strata: the loader service sent a broken line: %r" % line[:200]) from None
        if "error" in msg:
            err = msg["error"]
            if not err.startswith("strata:"):
                err = "strata: " + err
            raise (StrataUsageError if msg.get("usage") else StrataError)(err)
        return msg

    def next(self):
        parts = []
        numbers = []
        while self.released:
            numbers.append(self.released.popleft())
        if self.pinning is not None:
            # A dropped batch's slab may still be read by a copy queued on the GPU: given back once done.
            if numbers:
                self.pinning.hold(numbers)
            numbers = self.pinning.ready()
        for n in numbers:
            parts.append("release %d\n" % n)
        parts.append("next\n")
        self._write("".join(parts))
        return self._read()

    def map_slabs(self, announced, retired):
        """Notes new slab files (mapped on first use) and forgets retired ones."""
        for sid, name, size in announced:
            self.unmapped[sid] = (name, size)
        for sid in retired:
            self.slabs.pop(sid, None)
            self.unmapped.pop(sid, None)

    def slab(self, sid):
        """The read-only mapping of slab `sid` as a pyarrow buffer (a uint8 numpy array for output="numpy")."""
        b = self.slabs.get(sid)
        if b is None:
            name, size = self.unmapped.pop(sid)
            with open(os.path.join(self.dir, name), "rb") as f:
                m = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)
            if self.numpy:
                import numpy as np

                self.slabs[sid] = b = np.frombuffer(m, dtype=np.uint8)
                return b
            import pyarrow as pa

            b = pa.py_buffer(m)
            if self.pinning is not None:
                from ._cuda import _PinnedSlab

                b = pa.foreign_buffer(b.address, b.size, base=_PinnedSlab(b, self.pinning))
            self.slabs[sid] = b
        return b

    def close(self):
        if self.closed:
            return
        self.closed = True
        if self.pinning is not None:
            try:
                self.pinning.finish()  # no copy may still read a slab once its mapping can go
            except Exception:
                pass
        try:
            self.sock.sendall(b"close\n")
        except OSError:
            pass
        try:
            self.out.close()
            self.sock.close()
        except OSError:
            pass
        self.slabs.clear()
