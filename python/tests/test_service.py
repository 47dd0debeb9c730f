"""The loader service: one per socket, shared by every loader, gone when idle."""

import os
import random
import time

import strata


def test_loaders_share_one_service_which_exits_when_idle(dataset, tmp_path, monkeypatch):
    sock = tmp_path / "svc" / "loader.sock"
    monkeypatch.setenv("STRATA_LOADER_SOCKET", str(sock))
    monkeypatch.setenv("STRATA_LOADER_IDLE_EXIT", "2")
    a = strata.Loader(dataset, features=["amount"], batch_samples=8, seed=1)
    b = strata.Loader(dataset, features=["merchant_id"], batch_samples=8, seed=2)
    pid_file = str(sock) + ".pid"
    pid = int(open(pid_file).read())
    next(iter(a))
    next(iter(b))
    assert int(open(pid_file).read()) == pid, "the second loader started another service"
    a.close()
    b.close()
    deadline = time.time() + 30
    while os.path.exists(sock) and time.time() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(sock) and not os.path.exists(pid_file)
    # It removes its files first, then its JVM shuts down: give that a moment.
    deadline = time.time() + 15
    while not _gone(pid) and time.time() < deadline:
        time.sleep(0.1)
    assert _gone(pid), "the idle service is still running"
    # A new loader starts a new service on the same socket.
    c = strata.Loader(dataset, features=["amount"], batch_samples=8, seed=1)
    assert next(iter(c)).num_rows > 0
    assert int(open(pid_file).read()) != pid
    c.close()


def test_loaders_arriving_while_the_idle_service_leaves_get_a_service(dataset, tmp_path, monkeypatch):
    # The service exits 1 to 2 s after its last session; loaders come back around that moment, when
    # it may be taking its socket away or its JVM shutting down. Each must get a service (this one
    # or a new one) and its batches, never a reset connection or a wait for the start timeout.
    monkeypatch.setenv("STRATA_LOADER_SOCKET", str(tmp_path / "svc" / "loader.sock"))
    monkeypatch.setenv("STRATA_LOADER_IDLE_EXIT", "1")
    monkeypatch.setenv("STRATA_LOADER_START_TIMEOUT", "30")
    rnd = random.Random(7)
    for i in range(12):
        loader = strata.Loader(dataset, features=["amount"], batch_samples=8, seed=i)
        assert next(iter(loader)).num_rows > 0
        loader.close()
        time.sleep(rnd.uniform(0.2, 2.2))


def _gone(pid):
    """Whether process pid has exited (a zombie not yet reaped by its parent counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
            return False
        except ProcessLookupError:
            return True
