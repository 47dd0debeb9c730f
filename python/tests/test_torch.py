"""DataLoader with workers: each worker is a shard, together they read every sample once."""

import numpy as np
import torch
from torch.utils.data import DataLoader

import strata
from strata.torch import StrataIterableDataset, to_tensors


def sample_ids_of(batches):
    return np.sort(np.concatenate([b["sample_id"].numpy() for b in batches]))


def test_dataloader_workers_read_every_sample_once(dataset):
    features = ["sample_id", "amount", "embedding", "balance", "is_online", "merchant_category"]
    ds = StrataIterableDataset(dataset, features=features, batch_samples=8, seed=1)
    batches = list(DataLoader(ds, batch_size=None, num_workers=2, pin_memory=True))
    single = [to_tensors(b) for b in strata.Loader(dataset, features=["sample_id"], batch_samples=8, seed=1)]
    assert np.array_equal(sample_ids_of(batches), sample_ids_of(single))
    b = batches[0]
    assert b["amount"].dtype == torch.float64
    assert b["embedding"].dtype == torch.float32 and b["embedding.offsets"].dtype == torch.int32
    assert b["embedding.offsets"][-1].item() == b["embedding"].shape[0]
    assert b["balance"].shape == (b["amount"].shape[0], 2)
    assert b["is_online"].dtype == torch.bool


def test_a_worker_hands_over_each_batch_in_one_storage_with_the_same_values(dataset):
    features = ["sample_id", "amount", "embedding", "balance", "is_online", "merchant_category", "quantity"]
    here = list(DataLoader(StrataIterableDataset(dataset, features=features, batch_samples=8, seed=3), batch_size=None,
                           num_workers=0))
    # One worker: shard 0 of 1, the same batches (a dataset of its own: a second pass would be the next epoch).
    there = list(DataLoader(StrataIterableDataset(dataset, features=features, batch_samples=8, seed=3), batch_size=None,
                            num_workers=1))
    assert len(here) == len(there) > 2
    for a, b in zip(here, there):
        assert a.keys() == b.keys()
        storages = set()
        for k, v in a.items():
            if isinstance(v, torch.Tensor):
                assert v.dtype == b[k].dtype and v.shape == b[k].shape and torch.equal(v, b[k]), k
                storages.add(b[k].untyped_storage().data_ptr())
            else:
                assert v.equals(b[k]), k  # strings stay pyarrow arrays
        assert len(storages) == 1, "every tensor of a worker's batch is a view of one shared storage"


def test_a_tiny_model_trains(dataset):
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    ds = StrataIterableDataset(dataset, features=["amount", "quantity"], batch_samples=16, seed=2)
    losses = []
    for b in DataLoader(ds, batch_size=None, num_workers=1):
        x = torch.stack([b["amount"].float() / 100, b["quantity"].float()], dim=1)
        loss = ((model(x).squeeze(1) - x[:, 0]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert len(losses) > 3 and all(np.isfinite(losses))


def order_of(loader_batches):
    return np.concatenate([b["sample_id"].numpy() for b in loader_batches])


def test_a_new_order_every_epoch_with_persistent_workers_and_set_epoch(dataset):
    ds = StrataIterableDataset(dataset, features=["sample_id"], batch_samples=16, seed=4)
    dl = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)
    first = order_of(list(dl))
    second = order_of(list(dl))
    assert np.array_equal(np.sort(first), np.sort(second)), "every sample once per epoch"
    assert not np.array_equal(first, second), "persistent workers read a new order in the second epoch"
    # set_epoch, as DistributedSampler: epoch 1 is the same order whoever asks for it.
    ds0 = StrataIterableDataset(dataset, features=["sample_id"], batch_samples=16, seed=4)
    ds0.set_epoch(1)
    again = order_of(list(DataLoader(ds0, batch_size=None, num_workers=0)))
    plain = order_of([to_tensors(b) for b in strata.Loader(dataset, features=["sample_id"], batch_samples=16, seed=4,
                                                           epochs=2, start_epoch=1)])
    assert np.array_equal(again, plain)
    ds0.set_epoch(1)
    assert np.array_equal(order_of(list(DataLoader(ds0, batch_size=None))), plain), "set_epoch again: the same epoch"
    # The settings are fixed: changing them is an error, not silently ignored by running workers.
    try:
        ds.args["seed"] = 9
        raise AssertionError("args changed")
    except TypeError:
        pass


def test_len_is_the_batches_of_an_epoch(dataset):
    ds = StrataIterableDataset(dataset, features=["sample_id"], batch_samples=16, seed=4)
    assert len(ds) == len(list(DataLoader(ds, batch_size=None, num_workers=0)))
    assert len(DataLoader(ds, batch_size=None)) == len(ds)


def test_stateful_dataloader_resumes_every_worker_with_its_next_batch(dataset):
    from torchdata.stateful_dataloader import StatefulDataLoader

    def make():
        return StatefulDataLoader(StrataIterableDataset(dataset, features=["sample_id"], batch_samples=8, seed=6),
                                  batch_size=None, num_workers=2)

    whole = [b["sample_id"].numpy() for b in make()]
    dl = make()
    it = iter(dl)
    head = [next(it)["sample_id"].numpy() for _ in range(5)]
    state = dl.state_dict()
    del it, dl
    resumed = make()
    resumed.load_state_dict(state)
    tail = [b["sample_id"].numpy() for b in resumed]
    got = head + tail
    assert len(got) == len(whole)
    assert all(np.array_equal(a, b) for a, b in zip(got, whole)), "the resumed run continues exactly"


def test_a_feature_given_as_a_string_is_one_feature(dataset):
    b = next(iter(strata.Loader(dataset, features="amount", batch_samples=4)))
    assert b.schema.names == ["amount"]
    t = next(iter(DataLoader(StrataIterableDataset(dataset, features="amount", batch_samples=4), batch_size=None)))
    assert list(t) == ["amount"]


def test_pin_memory_belongs_to_the_dataloader_for_the_dataset(dataset):
    try:
        StrataIterableDataset(dataset, features=["amount"], pin_memory=True)
    except strata.StrataUsageError as e:
        assert "DataLoader(..., pin_memory=True)" in str(e)
    else:
        raise AssertionError("pin_memory was passed on to every worker's loader")


def test_pinned_batches_need_cuda(dataset):
    if torch.cuda.is_available():
        import pytest

        pytest.skip("CUDA is here: the GPU test below covers pin_memory")
    try:
        strata.Loader(dataset, features=["amount"], pin_memory=True)
    except strata.StrataUsageError as e:
        assert "pin_memory=True needs" in str(e)
    else:
        raise AssertionError("pin_memory=True without CUDA was accepted")


def test_pinned_batches_go_to_the_gpu_without_a_copy_and_equal_unpinned_ones(dataset):
    """On a GPU host: batches over registered slabs are pinned where they lie; each is copied with
    non_blocking=True and dropped at once (its slab goes back only after the copy), over epochs
    enough for slabs to be reused; the device holds what an unpinned loader gives."""
    import pytest

    if not torch.cuda.is_available():
        pytest.skip("no CUDA here: pin_memory needs a GPU")
    features = ["amount", "merchant_id", "quantity", "score", "embedding"]
    kw = dict(features=features, mode="rows", batch_rows=512, seed=4, epochs=3)
    on_gpu = []
    ld = strata.Loader(dataset, pin_memory=True, **kw)
    for b in ld:
        t = to_tensors(b)
        assert all(t[c].is_pinned() for c in ("amount", "merchant_id", "score", "embedding")), "not pinned where it lies"
        on_gpu.append({k: v.to("cuda", non_blocking=True) for k, v in t.items()})
        del t, b  # the host batch is dropped while its copy may still run
    assert ld._pinning.registered > 0 and ld._pinning.failed is None
    want = [to_tensors(b) for b in strata.Loader(dataset, **kw)]
    assert len(want) == len(on_gpu) > 3
    for w, g in zip(want, on_gpu):
        assert set(w) == set(g)
        for k in w:
            a, b = w[k], g[k].cpu()
            # bit for bit (torch.equal calls NaN unequal to itself, and the scores have NaNs)
            assert a.dtype == b.dtype and a.shape == b.shape, k
            assert torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8)), k
