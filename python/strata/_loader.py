"""The loader: a Java loader process (``strata loader serve``) assembles each batch into
shared-memory files; this side maps them and wraps the buffers as Arrow arrays without a copy.

Threads: a Loader is used from one thread (the one iterating it). Batches may be dropped from
any thread: a batch's lease only appends its number to a deque, which the iterating thread
sends to the server with its next request.
"""

import base64
import collections
import hashlib
import json
import numbers
import mmap
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import time
import warnings

import numpy as np
import pyarrow as pa

_STATE_FORMAT = 1


class StrataError(RuntimeError):
    """A failure Strata reports: one line naming the problem, as the ``strata`` command says it."""


class StrataUsageError(StrataError, ValueError):
    """Bad arguments: an unknown feature, a dataset without a sample index, a bad state."""


class StrataWarning(UserWarning):
    """Strata carries on in a degraded way (an unreachable node: reading from ORC)."""


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


def _find_launcher():
    """The ``strata`` launcher: $STRATA_LAUNCHER, on $PATH, or in a checkout above here or the cwd."""
    env = os.environ.get("STRATA_LAUNCHER")
    if env:
        return env
    found = shutil.which("strata")
    if found:
        return found
    for start in (os.getcwd(), os.path.dirname(os.path.abspath(__file__))):
        d = start
        while True:
            candidate = os.path.join(d, "strata")
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK) and os.path.isdir(os.path.join(d, "ops")):
                return candidate
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
    return None


def _serve_command():
    """The command that starts a loader server.

    With $STRATA_CLASSPATH set, java ($STRATA_JAVA, else java on $PATH) runs it from that class
    path; otherwise the ``strata`` launcher does (it finds a JDK 25 and builds what is missing).
    """
    # A bounded heap that gives memory back: the service's batches live off the heap (shared memory), and
    # without a bound the JVM grows its heap with garbage it has no reason to collect (150-180 MiB a round
    # of jobs was measured); an ORC stripe decoded on the heap is the largest thing it holds. A small young
    # generation: each batch leaves a few hundred KiB of short-lived arrays, and a young generation sized by
    # default keeps ~100 MiB of pages touched by them resident for nothing (127 vs 202 MiB anonymous, one job).
    opts = os.environ.get("STRATA_PY_JAVA_OPTS",
                          "-XX:+UseSerialGC -Xss512k -Xmx384m -Xmn16m -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30").split()
    cp = os.environ.get("STRATA_CLASSPATH")
    if cp:
        java = os.environ.get("STRATA_JAVA") or shutil.which("java")
        if not java:
            raise StrataError("strata: no java to run the loader (set STRATA_JAVA to a JDK 25's bin/java)")
        return [java, "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow", *opts,
                "-cp", cp, "io.strata.ops.Main", "loader", "serve"], {}
    launcher = _find_launcher()
    if not launcher:
        raise StrataError("strata: cannot find the strata launcher (put it on PATH, or set STRATA_LAUNCHER "
                          "to the checkout's ./strata)")
    env = dict(os.environ)
    env["STRATA_JAVA_OPTS"] = " ".join(opts + [env.get("STRATA_JAVA_OPTS", "")]).strip()
    return [launcher, "loader", "serve"], env


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


def _private_dir(path):
    """``path`` as a directory of this user's alone: created 0700 if missing; an existing one is
    used only when it is a real directory (not a link), owned by this user and writable by no one
    else, as ssh and tmux treat theirs. Otherwise StrataError naming the reason: nothing in it is
    read, written or deleted."""
    path = os.path.abspath(path)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise StrataError("strata: cannot make %s: %s" % (path, e.strerror)) from None
    st = os.lstat(path)
    fix = "; remove it, or give a directory only you can write (it is created 0700)"
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise StrataError("strata: refusing %s: it is %s%s" % (path, "a link" if stat.S_ISLNK(st.st_mode) else "not a directory", fix))
    if st.st_uid != os.getuid():
        raise StrataError("strata: refusing %s: it is owned by user %d, not by this user (%d)%s" % (path, st.st_uid, os.getuid(), fix))
    if st.st_mode & 0o022:
        raise StrataError("strata: refusing %s: it is writable by %s (%s); chmod 700 it%s"
                          % (path, "others" if st.st_mode & 0o002 else "its group", oct(st.st_mode & 0o777), fix[fix.index(","):]))
    return path


def _user_root():
    """This user's private directory for the loader service's socket and shared memory:
    /dev/shm/strata-UID, or the same in the temporary directory without a writable /dev/shm (the
    Java side's PrivateDirs.userRoot, by the same rule)."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
    return _private_dir(os.path.join(base, "strata-%d" % os.getuid()))


def _service_socket(cmd):
    """Where this user's loader service listens: $STRATA_LOADER_SOCKET, else a path in this
    user's private directory named after the command that starts it (another build, another
    service)."""
    env = os.environ.get("STRATA_LOADER_SOCKET")
    if env:
        return env
    root = _user_root()
    h = hashlib.sha256("\0".join(cmd).encode())
    # A rebuild gets a new service: the build's files' times go into the name.
    cp = os.environ.get("STRATA_CLASSPATH")
    built = cp.split(os.pathsep) if cp else [os.path.join(os.path.dirname(cmd[0]), "ops", "target", ".strata-built")]
    for f in built:
        try:
            h.update(str(os.stat(f).st_mtime_ns).encode())
        except OSError:
            pass
    tag = h.hexdigest()[:12]
    return os.path.join(root, tag + ".sock")


def _connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return s
    except OSError:
        s.close()
        return None


def _start_service():
    """A connection to the loader service, started (detached, one per user and build) when none
    answers. It serves every Python job of the user on this host from one JVM and exits after a
    minute without jobs."""
    cmd, env = _serve_command()
    path = _service_socket(cmd)
    s = _connect(path)
    if s is not None:
        return s, path
    _private_dir(os.path.dirname(path))
    log_path = path + ".log"
    log_from = _log_size(log_path)
    proc = _spawn_service(cmd, env, path, log_path)
    spawned = time.monotonic()
    deadline = spawned + float(os.environ.get("STRATA_LOADER_START_TIMEOUT", "300"))
    while time.monotonic() < deadline:
        s = _connect(path)
        if s is not None:
            # Reap it when it exits: it outlives this loader (started only now, as it would keep
            # poll() below from seeing a failed start).
            threading.Thread(target=proc.wait, name="strata-loader-service-reaper", daemon=True).start()
            return s, path
        code = proc.poll()
        if code is not None and code != 0:
            raise StrataError(_last_line(log_path, log_from) or "strata: the loader service failed to start (exit code %d)" % code)
        if code == 0 and time.monotonic() - spawned >= 1.0:
            # Exit 0: another service held the lock. It is starting (its socket will answer), or it
            # is an idle one on its way out (it took its socket away first): start ours again, at
            # most once a second, until one answers.
            proc = _spawn_service(cmd, env, path, log_path)
            spawned = time.monotonic()
        time.sleep(0.05)
    raise StrataError("strata: the loader service did not answer on %s (log: %s)" % (path, log_path))


def _spawn_service(cmd, env, path, log_path):
    with open(log_path, "ab") as log:
        try:
            idle = os.environ.get("STRATA_LOADER_IDLE_EXIT", "60")
            return subprocess.Popen(cmd + ["--socket", path, "--idle-exit", idle], stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=log, start_new_session=True, env=env or None)
        except OSError as e:
            raise StrataError("strata: cannot start the loader service (%s): %s" % (cmd[0], e)) from None


def _log_size(log_path):
    try:
        return os.path.getsize(log_path)
    except OSError:
        return 0


def _last_line(log_path, since=0):
    """The last error line the service wrote to its log after byte `since` (the log is shared by
    every service started on the socket: what came before is another service's); its own start
    notice is not an error."""
    try:
        with open(log_path, "rb") as f:
            f.seek(since)
            lines = [l.strip() for l in f.read().decode(errors="replace").splitlines() if l.strip()]
    except OSError:
        return ""
    lines = [l for l in lines if not l.startswith("strata: loader service on ")]
    strata_lines = [l for l in lines if l.startswith("strata:")]
    return (strata_lines or lines or [""])[-1]


def _alive(pid):
    """Whether process `pid` runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


class _Server:
    """One session with the loader service (a Java Loader there) and the slab files it shares with
    us. The session ends when the connection closes, however this process ends."""

    def __init__(self, request):
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
        while self.released:
            parts.append("release %d\n" % self.released.popleft())
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
        """The read-only mapping of slab `sid` as a pyarrow buffer."""
        b = self.slabs.get(sid)
        if b is None:
            name, size = self.unmapped.pop(sid)
            with open(os.path.join(self.dir, name), "rb") as f:
                b = self.slabs[sid] = pa.py_buffer(mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ))
        return b

    def close(self):
        if self.closed:
            return
        self.closed = True
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


def _local_path(location):
    """A dataset location as the Java side takes it: a path, or a file:// URI (other schemes are refused there)."""
    text = os.fspath(location)
    if isinstance(text, str) and text.startswith("file:"):
        return text
    return os.path.abspath(text)


class Loader:
    """Batches of a Strata dataset, exactly those the Java ``Loader`` returns for the same
    dataset, features, seed, shard and mode (the Java loader assembles them).

    Each batch is a ``pyarrow.RecordBatch`` whose buffers are the shared memory the Java loader
    wrote: fixed-width columns view as numpy without a copy (``batch.column(i).to_numpy()``).
    A batch's memory is recycled once nothing refers to it any more; its schema metadata has
    ``strata.epoch`` and ``strata.step``.

    dataset: the dataset directory (a path or a ``file://`` URI). features: column names or derived specs such as
    ``"zscore(log1p(amount))"`` (default: every feature). node: a cache node's URL; the job
    declares its plan and reports its reads there, and shares the node's SSD tier. ssd: a local
    SSD tier directory instead (without node or ssd, everything comes from ORC). feature_store:
    the feature store derived features are read from. mode: ``"samples"`` (``batch_samples``
    samples with all their rows), ``"rows"`` (``batch_rows`` rows) or ``"windows"``
    (``batch_samples`` windows of ``window`` rows plus ``lookahead`` label rows, every ``stride``).
    substitutable: let the loader take, within an epoch, batches whose chunks are on the SSD tier
    first (every batch once; ``state_dict`` records it). start_epoch: begin at that epoch's first
    batch (of ``epochs`` in all, counted from 0). units: after each batch, ``loader.units``
    is a numpy array of what its units are (the sample ids of a sample batch, the first row of
    each block of a row batch, each window's number), to ask another reader for the same rows.
    """

    def __init__(self, dataset, features=None, batch_samples=512, seed=0, epochs=1, rank=0, world=1, node=None, *,
                 mode="samples", batch_rows=4096, shuffle=True, shuffle_block=None, window=32, lookahead=1, stride=1,
                 drop_last=False, ssd=None, feature_store=None, job=None, prefetch=4, threads=1, substitutable=False,
                 units=False, start_epoch=0):
        if mode not in ("samples", "rows", "windows"):
            raise StrataUsageError("strata: mode must be samples, rows or windows, got %r" % (mode,))
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
        self._server = None
        self._position = None
        self._steps = None
        self.stats = None
        self.units = None
        self._warned = False
        self._start()

    def _start(self):
        self._server = _Server(self._request)
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
