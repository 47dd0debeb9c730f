"""Exact resume: a job SIGKILLed mid-epoch continues from its saved state with the next batch,
and its loader process and shared memory go with it."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import strata
from batches import same_batch

CHILD = textwrap.dedent("""
    import hashlib, json, os, sys
    import strata
    dataset, state_file = sys.argv[1], sys.argv[2]
    log = []
    loader = strata.Loader(dataset, features=["sample_id", "amount", "embedding", "merchant_category"],
                           batch_samples=6, seed=3, epochs=2)
    if os.path.exists(state_file):
        saved = json.load(open(state_file))
        log = saved["log"]
        loader.load_state_dict(saved["state"])
    for b in loader:
        digest = hashlib.sha256(repr(b.to_pydict()).encode()).hexdigest()[:16]
        log.append([b.schema.metadata[b"strata.epoch"].decode(), b.schema.metadata[b"strata.step"].decode(), digest])
        tmp = state_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"state": loader.state_dict(), "log": log}, f)
        os.replace(tmp, state_file)
    print("done", len(log))
""")


def run_child(script, dataset, state, env):
    return subprocess.Popen([sys.executable, str(script), dataset, str(state)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_sigkill_mid_epoch_then_resume_gives_every_batch_once(dataset, tmp_path):
    script = tmp_path / "job.py"
    script.write_text(CHILD)
    shm = tmp_path / "shm"
    shm.mkdir()
    env = dict(os.environ, STRATA_SHM_ROOT=str(shm))

    full = tmp_path / "full.json"
    p = run_child(script, dataset, full, env)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    expected = json.load(open(full))["log"]
    assert len(expected) > 12

    state = tmp_path / "state.json"
    p = run_child(script, dataset, state, env)
    deadline = time.time() + 120
    while time.time() < deadline:
        if state.exists() and len(json.load(open(state))["log"]) >= 7:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    killed_at = len(json.load(open(state))["log"])
    assert killed_at < len(expected), "the job finished before it was killed"

    # The loader process sees its job gone and removes the shared memory.
    deadline = time.time() + 30
    while os.listdir(shm) and time.time() < deadline:
        time.sleep(0.1)
    assert os.listdir(shm) == [], "shared memory left behind: %s" % os.listdir(shm)

    p = run_child(script, dataset, state, env)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert json.load(open(state))["log"] == expected


def test_state_dict_round_trip_in_process(dataset):
    kw = dict(features=["amount", "tokens"], batch_samples=5, seed=9)
    a = strata.Loader(dataset, **kw)
    it = iter(a)
    for _ in range(3):
        next(it)
    state = a.state_dict()
    fourth = next(it)
    b = strata.Loader(dataset, **kw)
    b.load_state_dict(state)
    same_batch(next(iter(b)), fourth, "the batch after the state")
    a.close()
    b.close()


def test_substitutable_loader_gives_every_step_once_and_resumes(dataset, ssd):
    kw = dict(features=["amount", "merchant_id", "tokens"], batch_samples=7, seed=4, epochs=2, ssd=ssd)
    plain = {}
    with strata.Loader(dataset, **kw) as a:
        for b in a:
            plain[(b.schema.metadata[b"strata.epoch"], b.schema.metadata[b"strata.step"])] = b
    seen = []
    sub = strata.Loader("file://" + os.path.abspath(dataset), substitutable=True, **kw)
    it = iter(sub)
    for _ in range(5):
        b = next(it)
        key = (b.schema.metadata[b"strata.epoch"], b.schema.metadata[b"strata.step"])
        same_batch(b, plain[key], "substitutable %r" % (key,))
        seen.append(key)
    state = sub.state_dict()
    sub.close()
    rest = strata.Loader(dataset, substitutable=True, **kw)
    rest.load_state_dict(state)
    for b in rest:
        key = (b.schema.metadata[b"strata.epoch"], b.schema.metadata[b"strata.step"])
        same_batch(b, plain[key], "resumed %r" % (key,))
        seen.append(key)
    rest.close()
    assert sorted(seen) == sorted(plain.keys()), "every step of both epochs once"
