"""Through a cache node: the job declares its plan and reports its reads; an unreachable node
gives one warning and the batches come from ORC."""

import json
import os
import time
import urllib.request
import warnings

import pytest

import strata
from batches import same_batch
from conftest import last_json


def test_unreachable_node_warns_once_and_falls_back_to_orc(dataset):
    kw = dict(features=["amount", "merchant_id"], batch_samples=16, seed=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        via = list(strata.Loader(dataset, node="http://127.0.0.1:9", **kw))
    ours = [w for w in caught if issubclass(w.category, strata.StrataWarning)]
    assert len(ours) == 1, [str(w.message) for w in caught]
    assert "unreachable" in str(ours[0].message) and "\n" not in str(ours[0].message)
    direct = list(strata.Loader(dataset, **kw))
    assert len(via) == len(direct)
    for a, b in zip(via, direct):
        same_batch(a, b)


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def test_job_reads_through_a_real_node(cli, dataset, tmp_path):
    home = tmp_path / "node"
    started = last_json(cli("node", "start", "--home", home, "--port", 0, "--hdd-root",
                               os.path.dirname(dataset), "--json").stdout)
    url = started["url"]
    try:
        cli("dataset", "register", dataset, "--node", url)
        loader = strata.Loader(dataset, features=["amount", "embedding"], batch_samples=8, seed=6, epochs=2, node=url,
                               job="py-job")
        seen_job = False
        n = 0
        for b in loader:
            n += 1
            if n == 2:
                jobs = [j["job"] for j in get(url + "/v1/tiers")["jobs"]]
                seen_job = "py-job" in jobs
        assert seen_job, "the node did not list the Python job while it read"
        assert loader.stats["hddBytes"] + loader.stats["ssdBytes"] > 0
        # The job's reads reach the node (reported in the background, the last ones when it closes).
        deadline = time.time() + 20
        while True:
            traffic = get(url + "/v1/tiers")["traffic"]
            if traffic["ssdBytes"] + traffic["hddBytes"] > 0 or time.time() > deadline:
                break
            time.sleep(0.2)
        assert traffic["ssdBytes"] + traffic["hddBytes"] > 0, traffic
    finally:
        cli("node", "stop", "--home", home, check=False)

