"""Errors are Python exceptions with Strata's one-line messages, never Java stack traces."""

import os

import pytest

import strata


def one_line(e):
    text = str(e.value)
    assert text.startswith("strata: ") and "\n" not in text and "Exception" not in text and "at io." not in text, text
    return text


def test_unknown_feature_is_a_usage_error(dataset):
    with pytest.raises(strata.StrataUsageError) as e:
        strata.Loader(dataset, features=["amount", "no_such_feature"])
    assert "no_such_feature" in one_line(e)


def test_bad_derived_spec_names_the_problem(dataset):
    with pytest.raises(strata.StrataError) as e:
        strata.Loader(dataset, features=["zscore(log1p(nothing))"])
    assert "nothing" in one_line(e)


def test_missing_dataset(tmp_path):
    with pytest.raises(strata.StrataError) as e:
        strata.Loader(tmp_path / "absent", features=["amount"])
    assert "absent" in one_line(e)


def test_a_dataset_uri_goes_to_java_as_given_and_an_unreachable_hdfs_is_one_line():
    from strata._loader import _local_path

    assert _local_path("hdfs://nn:8020/data/ev") == "hdfs://nn:8020/data/ev"
    assert _local_path("file:///data/ev") == "file:///data/ev"
    assert _local_path("rel/ev") == os.path.abspath("rel/ev")
    with pytest.raises(strata.StrataError) as e:
        strata.Loader("hdfs://localhost:1/data/ev", features=["amount"])
    assert "hdfs://localhost:1" in one_line(e)


def test_state_of_another_plan_is_refused(dataset):
    a = strata.Loader(dataset, features=["amount"], batch_samples=4, seed=1)
    next(iter(a))
    state = a.state_dict()
    a.close()
    b = strata.Loader(dataset, features=["amount"], batch_samples=4, seed=2)
    with pytest.raises(strata.StrataUsageError) as e:
        b.load_state_dict(state)
    assert "different plan" in one_line(e)
    with pytest.raises(strata.StrataUsageError):
        b.load_state_dict({"checkpoint": 3})


def test_bad_arguments_fail_before_starting_java(dataset):
    with pytest.raises(strata.StrataUsageError):
        strata.Loader(dataset, mode="sideways")
    with pytest.raises(strata.StrataUsageError):
        strata.Loader(dataset, rank=2, world=2)


def test_a_job_that_never_drops_batches_is_told_so(dataset):
    loader = strata.Loader(dataset, features=["amount"], mode="rows", batch_rows=100, seed=1)
    assert loader.steps_per_epoch > 260
    held = []
    with pytest.raises(strata.StrataError) as e:
        for b in loader:
            held.append(b)
    assert len(held) == 256
    assert "holds 256 batches" in one_line(e)
    held.clear()
    loader.close()


def test_a_loader_service_that_cannot_start_is_one_error(dataset, tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_LOADER_SOCKET", str(tmp_path / "svc" / "loader.sock"))
    monkeypatch.setenv("STRATA_JAVA", "/bin/false")
    monkeypatch.setenv("STRATA_CLASSPATH", "nothing.jar")
    with pytest.raises(strata.StrataError) as e:
        strata.Loader(dataset, features=["amount"])
    assert "failed to start" in one_line(e)


def test_a_socket_or_shared_memory_directory_others_control_is_refused(dataset, tmp_path, monkeypatch):
    """As ssh does: a directory that is a link, another user's or writable by others is never used."""
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    (target / "keep").write_text("theirs")
    link = tmp_path / "link"
    os.symlink(target, link)
    for d, why in ((open_dir, "writable by others"), (link, "a link")):
        monkeypatch.setenv("STRATA_LOADER_SOCKET", str(d / "loader.sock"))
        with pytest.raises(strata.StrataError) as e:
            strata.Loader(dataset, features=["amount"])
        assert "refusing %s" % d in one_line(e) and why in one_line(e), one_line(e)
        assert sorted(os.listdir(d)) == ([] if d == open_dir else ["keep"]), "nothing was written there"
    if os.getuid() == 0:
        theirs = tmp_path / "theirs"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 65534, 65534)
        monkeypatch.setenv("STRATA_LOADER_SOCKET", str(theirs / "loader.sock"))
        with pytest.raises(strata.StrataError) as e:
            strata.Loader(dataset, features=["amount"])
        assert "owned by user 65534" in one_line(e), one_line(e)
    # The service's slab directory, given by STRATA_SHM_ROOT, is held to the same rule.
    monkeypatch.setenv("STRATA_LOADER_SOCKET", str(tmp_path / "svc" / "loader.sock"))
    monkeypatch.setenv("STRATA_SHM_ROOT", str(open_dir))
    with pytest.raises(strata.StrataError) as e:
        strata.Loader(dataset, features=["amount"])
    assert "refusing %s" % open_dir in one_line(e) and "writable by others" in one_line(e), one_line(e)
    assert os.listdir(open_dir) == []


def test_a_socket_through_another_users_link_higher_up_is_refused(dataset, tmp_path, monkeypatch):
    """Issue 51: a link planted above the socket's directory, in a shared scratch directory, is
    never followed: nothing is made, deleted or written behind it."""
    if os.getuid() != 0:
        pytest.skip("needs root to plant a link owned by another user")
    victim = tmp_path / "victim" / "keep"
    victim.mkdir(parents=True, mode=0o700)
    (victim / "x.sock").write_text("the victim's")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    os.chmod(scratch, 0o1777)
    team = scratch / "team"
    os.symlink(victim.parent, team)
    os.lchown(team, 65534, 65534)
    monkeypatch.setenv("STRATA_LOADER_SOCKET", str(team / "keep" / "x.sock"))
    with pytest.raises(strata.StrataError) as e:
        strata.Loader(dataset, features=["amount"])
    assert "a link owned by user 65534" in one_line(e), one_line(e)
    assert sorted(os.listdir(victim)) == ["x.sock"] and (victim / "x.sock").read_text() == "the victim's"


def test_a_dead_services_stack_trace_is_told_by_what_happened_not_a_frame(tmp_path):
    from strata._service import _last_line

    log = tmp_path / "svc.log"
    log.write_text("strata: loader service on /x (pid 1)\n"
                   "Exception in thread \"strata-py-session-3\" java.lang.OutOfMemoryError: unable to create native thread\n"
                   "\tat java.base/java.lang.Thread.start0(Native Method)\n"
                   "\tat java.base/java.lang.Thread.start(Thread.java:1553)\n"
                   "\t... 4 more\n")
    assert _last_line(str(log)).startswith("Exception in thread"), _last_line(str(log))


def test_seeds_epochs_and_a_missing_ssd_are_refused_by_name(dataset, tmp_path):
    for kwargs, words in (({"seed": 1.5}, "seed"), ({"seed": 1 << 64}, "seed"), ({"seed": True}, "seed"),
                          ({"epochs": 0}, "epochs"), ({"ssd": str(tmp_path / "no-such-tier")}, "no SSD tier directory")):
        with pytest.raises(strata.StrataUsageError) as e:
            strata.Loader(dataset, features=["amount"], **kwargs)
        assert words in one_line(e), one_line(e)
    assert not os.path.exists(tmp_path / "no-such-tier"), "nothing created"


def test_a_dead_loader_service_is_named_and_its_memory_removed(dataset, tmp_path, monkeypatch):
    import signal
    import time

    monkeypatch.setenv("STRATA_LOADER_SOCKET", str(tmp_path / "svc" / "loader.sock"))
    ld = strata.Loader(dataset, features=["amount"], batch_samples=4, epochs=50)
    it = iter(ld)
    next(it)
    slab_dir = ld._server.dir
    pid = ld._server.pid
    assert os.path.isdir(slab_dir)
    os.kill(pid, signal.SIGKILL)
    deadline = time.time() + 10
    while time.time() < deadline and os.path.exists("/proc/%d" % pid) and open("/proc/%d/stat" % pid).read().split()[2] != "Z":
        time.sleep(0.05)
    with pytest.raises(strata.StrataError) as e:
        for _ in range(1000):
            next(it)
    text = one_line(e)
    assert "the loader service (pid %d)" % pid in text and ("died" in text or "closed the connection" in text), text
    assert "loader service on" not in text, "an old start notice is not the cause: " + text
    ld.close()
    assert not os.path.exists(slab_dir), "the dead service's shared memory is removed by the job that saw it die"
