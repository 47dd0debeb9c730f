#!/usr/bin/env python3
"""Trains a small PyTorch model on a Strata dataset, through a cache node when one is given.

    ./strata demo --stay            # in one terminal: a node and the demo dataset
    python examples/train_torch.py --dataset ~/.strata/demo/node/hdd/events --node http://127.0.0.1:PORT

Every row of a batch is one example: predict is_online from the amount, its shared derived
z-score (computed once by the node, read by every job), the quantity and the score (nulls
masked). The DataLoader's workers are shards of the epoch; the loss is printed per epoch.
"""

import argparse
import json
import sys
import time

import torch
from torch.utils.data import DataLoader

from strata.torch import StrataIterableDataset

DERIVED = "zscore(log1p(amount))"


def features_of(b):
    score = torch.nan_to_num(b["score"].float())
    if "score.valid" in b:
        score = torch.where(b["score.valid"], score, torch.zeros_like(score))
    x = torch.stack([
        torch.log1p(b["amount"].float().clamp(min=0)),
        b[DERIVED].float(),
        torch.log1p(b["quantity"].float()),
        score,
    ], dim=1)
    return torch.nan_to_num(x), b["is_online"].float()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", required=True, help="dataset directory")
    ap.add_argument("--node", help="cache node URL (default: read segments/ORC locally)")
    ap.add_argument("--job", default="torch-example", help="job name the node shows")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-samples", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print a JSON summary as the last line")
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    ds = StrataIterableDataset(args.dataset, features=["amount", DERIVED, "quantity", "score", "is_online"],
                               batch_samples=args.batch_samples, seed=args.seed, epochs=1, node=args.node,
                               job=args.job)
    started = time.time()
    batches = rows = 0
    epochs = []
    tiers = {"ssdBytes": 0, "hddBytes": 0, "derivedChunksComputed": 0}
    for epoch in range(args.epochs):
        ds.set_epoch(epoch)  # a new order each epoch (as DistributedSampler.set_epoch)
        total, n = 0.0, 0
        for b in DataLoader(ds, batch_size=None, num_workers=args.workers):
            x, y = features_of(b)
            loss = loss_fn(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(y)
            n += len(y)
            batches += 1
        rows += n
        epochs.append(total / max(1, n))
        if ds.stats:  # with --workers 0 the loader ran here and its figures are known
            for k in tiers:
                tiers[k] += ds.stats.get(k, 0)
        print("epoch %d: loss %.4f over %d rows" % (epoch, epochs[-1], n), file=sys.stderr if args.json else sys.stdout)
    summary = {"job": args.job, "batches": batches, "rows": rows, "loss": epochs, "seconds": time.time() - started}
    if args.workers == 0:
        summary.update(tiers)
    if args.json:
        print(json.dumps(summary))


if __name__ == "__main__":
    main()
