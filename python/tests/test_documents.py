"""strata.Documents: lookups by sample id from the SSD tier in this process, equal to the Java
loader's values for the same samples; errors named; no numpy or pyarrow imported."""

import os
import shutil
import subprocess
import sys

import pytest

import strata

from conftest import run_strata


@pytest.fixture(scope="module")
def docs_ssd(dataset, tmp_path_factory):
    s = tmp_path_factory.mktemp("docs-ssd")
    run_strata("promote", "--dataset", dataset, "--ssd", s, "--features", "merchant_category,amount,merchant_id")
    return str(s)


def loader_values(dataset, features):
    """Per sample id, the rows' values of each feature as the Java loader assembles them."""
    out = {}
    for b in strata.Loader(dataset, features=["sample_id"] + features, batch_samples=16, seed=2):
        cols = {f: b.column(f).to_pylist() for f in ["sample_id"] + features}
        for k, sid in enumerate(cols["sample_id"]):
            for f in features:
                out.setdefault((sid, f), []).append(cols[f][k])
    return out


def test_every_sample_equals_the_loaders_rows(dataset, docs_ssd):
    features = ["merchant_category", "amount", "merchant_id"]
    want = loader_values(dataset, features)
    sids = sorted({sid for sid, _ in want})
    assert len(sids) > 100
    for f in features:
        with strata.Documents(dataset, f, ssd=docs_ssd) as docs:
            assert len(docs) == len(sids)
            for sid in sids:
                got = docs.rows(sid)
                exp = want[(sid, f)]
                assert len(got) == len(exp), (f, sid)
                # floats compared bit for bit (NaN equals itself here)
                assert [repr(x) for x in got] == [repr(x) for x in exp], (f, sid)


def test_one_row_lookup_missing_ids_and_features_are_named(dataset, docs_ssd):
    with strata.Documents(dataset, "merchant_category", ssd=docs_ssd) as docs:
        sid = next(iter(loader_values(dataset, ["amount"])))[0]
        assert sid in docs and -12345 not in docs
        with pytest.raises(KeyError):
            docs.rows(-12345)
        with pytest.raises(strata.StrataUsageError, match="rows: use rows"):
            docs[sid]  # a sample of many rows
    with pytest.raises(strata.StrataUsageError, match="no feature 'nope'"):
        strata.Documents(dataset, "nope", ssd=docs_ssd)
    with pytest.raises(strata.StrataUsageError, match="not on the SSD tier"):
        strata.Documents(dataset, "score", ssd=docs_ssd)  # not promoted there
    with pytest.raises(strata.StrataUsageError, match="list"):
        strata.Documents(dataset, "embedding", ssd=docs_ssd)


def test_a_damaged_segment_is_named_and_an_evicted_chunk_is_an_error(dataset, docs_ssd, tmp_path):
    ssd = tmp_path / "ssd"
    shutil.copytree(docs_ssd, ssd)
    files = sorted(p for p in ssd.rglob("*.arrow"))
    assert len(files) >= 2
    # an evicted chunk: its rows are an error naming them; the others still read
    os.chmod(files[0], 0o644)
    os.remove(files[0])
    want = loader_values(dataset, ["merchant_category"])
    with strata.Documents(dataset, "merchant_category", ssd=ssd) as docs:
        errors, readable = 0, []
        for (sid, _), exp in want.items():
            try:
                assert docs.rows(sid) == exp
                readable.append(sid)
            except strata.StrataError as e:
                assert "is not on the SSD tier" in str(e)
                errors += 1
        assert errors > 0 and readable
        # segments unlinked after opening (the node evicting them) stay readable through their descriptors
        for p in files[1:]:
            os.chmod(p, 0o644)
            os.remove(p)
        for sid in readable:
            assert docs.rows(sid) == want[(sid, "merchant_category")]
    # a truncated segment: the file named
    shutil.rmtree(ssd)
    shutil.copytree(docs_ssd, ssd)
    victim = sorted(ssd.rglob("*.arrow"))[0]
    os.chmod(victim, 0o644)
    with open(victim, "r+b") as f:
        f.truncate(os.path.getsize(victim) // 2)
    with pytest.raises(strata.StrataError, match=victim.name):
        strata.Documents(dataset, "merchant_category", ssd=ssd)


def test_importing_strata_for_documents_loads_neither_numpy_nor_pyarrow():
    code = "import sys, strata; strata.Documents; print('numpy' in sys.modules, 'pyarrow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(strata.__file__)))))
    assert out.stdout.split() == ["False", "False"]
