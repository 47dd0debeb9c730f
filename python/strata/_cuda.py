"""Batches pinned where they are written: the session's shared-memory slabs registered with CUDA
(``cudaHostRegister``, read-only), so that tensors over a batch are page-locked already and
``.to("cuda", non_blocking=True)`` is one DMA straight from the slab, with no ``pin_memory()``
copy (which also allocates pinned memory for every call).

An asynchronous copy reads the slab after ``.to()`` returns, so a batch's slab must not go back
to the service before the copies queued from it are done: a batch dropped by the job is given back
only once a CUDA event, recorded on the current stream of the iterating thread when the loader
next asks for a batch, has completed (copies queued on that stream before then are done). Copies
queued on another stream must be waited for by the job before it drops the batch.

Threads: used from the loader's one thread; a slab's registration is undone when its mapping is
collected (any thread), before it is unmapped.
"""

import collections

from ._errors import StrataUsageError, StrataWarning

_READ_ONLY = 0x08  # cudaHostRegisterReadOnly: the slabs are mapped read-only here
_PORTABLE = 0x01  # cudaHostRegisterPortable: pinned for every CUDA context of this process
_MAX_GROUPS = 8  # releases waiting on events beyond this many batches: wait on the oldest


class _Pinning:
    """Registers slabs and holds releases behind events, for one session."""

    def __init__(self):
        try:
            import torch
        except ImportError:
            raise StrataUsageError("strata: pin_memory=True needs torch with CUDA (torch is not installed)") from None
        if not torch.cuda.is_available():
            raise StrataUsageError("strata: pin_memory=True needs CUDA, and torch.cuda.is_available() is False")
        self._torch = torch
        self._cudart = torch.cuda.cudart()
        self._pending = collections.deque()  # (event, [batch numbers])
        self.registered = 0
        self.failed = None  # why a registration failed (then batches are ordinary memory)

    def register(self, address, size):
        """Page-locks [address, address + size); True when done. A failure is warned once and
        leaves the slab as ordinary memory (a copy from it is then synchronous, and correct)."""
        if self.failed is not None:
            return False
        rc = self._cudart.cudaHostRegister(address, size, _READ_ONLY | _PORTABLE)
        if int(rc) != 0:
            self.failed = "cudaHostRegister(%d bytes) failed: %s" % (size, rc)
            import warnings

            warnings.warn("strata: batches are not pinned (%s); copies to the GPU take pageable memory" % self.failed,
                          StrataWarning, stacklevel=4)
            return False
        self.registered += 1
        return True

    def unregister(self, address):
        self._cudart.cudaHostUnregister(address)

    def hold(self, numbers):
        """Numbers of batches just dropped: held until the copies queued so far are done."""
        event = self._torch.cuda.Event()
        event.record()
        self._pending.append((event, numbers))

    def finish(self):
        """Waits for every copy queued on the current stream (before the slabs are unmapped)."""
        event = self._torch.cuda.Event()
        event.record()
        event.synchronize()
        self._pending.clear()

    def ready(self):
        """The held numbers whose copies are done, oldest first (waits for the oldest groups
        beyond the bound, so that slabs cannot pile up behind a stalled stream)."""
        out = []
        while self._pending:
            event, numbers = self._pending[0]
            if len(self._pending) > _MAX_GROUPS:
                event.synchronize()
            elif not event.query():
                break
            self._pending.popleft()
            out.extend(numbers)
        return out


class _PinnedSlab:
    """Owns a registered slab mapping: unregisters it before the mapping goes (this object's
    attributes, the mapping among them, are released after ``__del__``)."""

    __slots__ = ("buffer", "address", "pinning", "__weakref__")

    def __init__(self, buffer, pinning):
        self.buffer = buffer
        self.address = buffer.address
        self.pinning = pinning if pinning.register(buffer.address, buffer.size) else None

    def __del__(self):
        if self.pinning is not None:
            try:
                self.pinning.unregister(self.address)
            except Exception:  # interpreter shutdown: CUDA may be gone already, and the process with it
                pass
