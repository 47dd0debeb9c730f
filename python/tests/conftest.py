"""Fixtures: a small generated dataset, its promoted segments, and the strata command (run the
same way the client runs its loader: $STRATA_CLASSPATH with java, or the launcher)."""

import json
import os
import subprocess

import pytest

from strata import _service


def strata_command():
    cmd, env = _service._serve_command()
    base = cmd[:-2]  # without "loader serve"
    return base, (env or None)


def run_strata(*args, check=True):
    base, env = strata_command()
    p = subprocess.run(base + [str(a) for a in args], capture_output=True, text=True, env=env, timeout=600)
    if check and p.returncode != 0:
        raise AssertionError("strata %s failed (%d): %s %s" % (" ".join(map(str, args)), p.returncode, p.stdout, p.stderr))
    return p


def last_json(text):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError("no JSON in: " + text)


@pytest.fixture(scope="session")
def cli():
    """Runs the strata command."""
    return run_strata


@pytest.fixture(scope="session")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("ds") / "events"
    run_strata("dataset", "generate", "--out", d, "--rows", 40000, "--features", 14, "--seed", 3,
               "--rows-per-chunk", 8192, "--chunks-per-file", 2, "--mean-sample-length", 120)
    return str(d)


@pytest.fixture(scope="session")
def ssd(dataset, tmp_path_factory):
    s = tmp_path_factory.mktemp("ssd")
    run_strata("promote", "--dataset", dataset, "--ssd", s, "--features", "amount,merchant_id,embedding")
    return str(s)
