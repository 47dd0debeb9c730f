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
