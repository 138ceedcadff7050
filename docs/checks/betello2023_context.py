"""Betello et al. 2023, removal at the end: does the NDCG@20 drop come from training or input?

Trains each model (the @betello2023 preset at the small scale of ``recaudit reproduce``) on
MovieLens-100k's leave-one-out training part, and again with the latest ``N`` training
interactions of every user removed (``remove-end-N``), then ranks the test queries twice: with
their original contexts and with the removed interactions dropped from the contexts too.
Prints NDCG@20 of the four (model, context) pairs and their FRBO@20 / Jaccard@20 against the
unperturbed model on the original contexts. The audit form of the "pert/short" case is the
perturbation ``remove-end-N+inputs`` (``recaudit reproduce run betello2023-removal-inputs``);
this script adds the unperturbed model on shortened contexts, which tells input from training.

    RECAUDIT_MIRROR=../shared/data .venv/bin/python docs/checks/betello2023_context.py
"""

import tempfile
import time
from pathlib import Path

import numpy as np

from recaudit.data import Queries
from recaudit.experiment import prepare
from recaudit.metrics import frbo_batch, jaccard_batch, ndcg_at_k_batch
from recaudit.models import create
from recaudit.perturb import remove_positions
from recaudit.reproduce._betello2023 import _config

N, K = 10, 20


def _keys(user, item, time_):
    return list(zip(user.tolist(), item.tolist(), time_.tolist()))


def main() -> None:
    cfg = _config(Path(tempfile.mkdtemp()), "small", (f"remove-end-{N}",))  # its data, models
    _, split = prepare(cfg.datasets[0], cfg.split)
    train, q = split.train, split.queries
    train_p, record = remove_positions(train, "end", N)  # what remove-end-N trains on
    removed = train.take(np.asarray(record.deleted))
    gone = set(_keys(removed.user, removed.item, removed.timestamp))
    lens = np.diff(q.context_indptr)
    ctx = np.array([k not in gone for k in
                    _keys(np.repeat(q.user, lens), q.context_item, q.context_time)], bool)
    kept = np.bincount(np.repeat(np.arange(len(lens)), lens)[ctx], minlength=len(lens))
    ptr = np.concatenate([[0], np.cumsum(kept)])
    short = Queries(q.user, ptr, q.context_item[ctx], q.context_time[ctx], q.target,
                    q.timestamp, q.n_items, q.n_users)
    print(f"training rows {len(train)} -> {len(train_p)}; "
          f"context items {len(q.context_item)} -> {len(short.context_item)}")
    for spec in cfg.models:
        name, t = spec.name.split("@")[0], time.time()
        base = create(spec.name, **spec.params).fit(train, seed=0)
        pert = create(spec.name, **spec.params).fit(train_p, seed=0)
        lists = {"base/full": base.rank(q, k=K).items, "base/short": base.rank(short, k=K).items,
                 "pert/full": pert.rank(q, k=K).items, "pert/short": pert.rank(short, k=K).items}
        ndcg = {k: float(ndcg_at_k_batch(v, q.target, K).mean()) for k, v in lists.items()}
        ref = ndcg["base/full"]
        print(f"{name} ({time.time() - t:.0f} s), NDCG@{K}: " + ", ".join(
            f"{k} {v:.4f} ({100 * (v - ref) / ref:+.1f} %)" for k, v in ndcg.items()))
        for k in ("base/short", "pert/full", "pert/short"):
            print(f"  {k} vs base/full: FRBO@{K} "
                  f"{frbo_batch(lists['base/full'], lists[k], K).mean():.3f}, Jaccard@{K} "
                  f"{jaccard_batch(lists['base/full'], lists[k]).mean():.3f}")


if __name__ == "__main__":
    main()
