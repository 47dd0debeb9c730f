"""The loader service: one ``strata loader serve`` JVM per user and build on a host, found by its
socket in the user's private directory, started (detached) when none answers, and the facts about
it a session needs (is it alive, what its log said last).

Stateless: every function looks at the file system and the process table afresh.
"""

import hashlib
import os
import re
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import time

from ._errors import StrataError


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
    # (Issue 58's fleet measured this service with NMT: the heap grows to its bound for a live set of about 40 MiB a
    # session, the readers' large arrays filling the old generation until a full collection. A 256 MiB bound did not
    # keep four jobs' service within a third of the dataset and made a concurrent bench job fail once: kept at 384.)
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


def _private_way(path):
    """The real path of ``path``'s parent joined with its name, once the way to it is one no other
    user can change (the Java side's SafePaths.privateWay): every directory on it owned by root or
    this user and writable by no one else unless sticky, every link on it owned by root or this user
    in such a directory. Otherwise StrataError naming the component: nothing is made or opened."""
    me = os.getuid()
    parts = [p for p in path.split("/") if p]
    name = parts.pop() if parts else ""
    cur, links = "/", 0
    while parts:
        part = parts.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            cur = os.path.dirname(cur)
            continue
        nxt = os.path.join(cur, part)
        try:
            st = os.lstat(nxt)
        except FileNotFoundError:
            return os.path.join(nxt, *parts, name)  # made below a directory checked here
        parent = os.lstat(cur)
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if st.st_uid not in (0, me) or parent.st_uid not in (0, me) or (
                    parent.st_mode & 0o022 and not parent.st_mode & stat.S_ISVTX) or links > 40:
                raise StrataError("strata: refusing %s: it leads through %s, a link owned by user %d in %s, which another user"
                                  " could have planted; give the real path" % (path, nxt, st.st_uid, cur))
            target = os.readlink(nxt)
            parts = [p for p in target.split("/") if p] + parts
            if target.startswith("/"):
                cur = "/"
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise StrataError("strata: refusing %s: %s is not a directory" % (path, nxt))
        if st.st_uid not in (0, me) or (st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX):
            raise StrataError("strata: refusing %s: it lies under %s (owner %d, mode %s), which another user could change"
                              % (path, nxt, st.st_uid, oct(st.st_mode & 0o7777)))
        cur = nxt
    return os.path.join(cur, name)


def _private_dir(path):
    """``path`` as a directory of this user's alone: created 0700 if missing; an existing one is
    used only when it is a real directory (not a link), owned by this user and writable by no one
    else, as ssh and tmux treat theirs. Otherwise StrataError naming the reason: nothing in it is
    read, written or deleted."""
    path = _private_way(os.path.abspath(path))
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
    # A Java stack trace's frames say where, not what: the line that says what is the one before them.
    said = [l for l in lines if not re.match(r"(at |\.\.\. \d+ (more|common frames omitted)|Caused by: |Suppressed: )", l)]
    return (strata_lines or said or [""])[-1]


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
