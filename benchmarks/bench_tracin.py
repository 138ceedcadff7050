"""TracIn's scores kept per baseline (``recaudit.audit._context``) against computing them in every
trial, on the two TracIn trials of Oh et al. 2022's Table 3 (``tracin-delete``,
``tracin-replace-random``) of one model and seed.

The anchor is the same two trials with the kept scores switched off, as every TracIn trial
worked before: each refits the checkpointed baseline and scores every training interaction.
Both runs start from an empty baseline cache (so each trains the baseline once), use one torch
thread, and must give the same edited rows and the same rank lists.

    python benchmarks/bench_tracin.py                          # LSTM, 300 Wikipedia users, ~6 min
    python benchmarks/bench_tracin.py --users 0 --epochs 50    # the paper's scale (hours)
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
import torch

import recaudit.audit._context as context_module
from recaudit.audit import AuditConfig, DatasetSpec, ModelSpec, SplitSpec
from recaudit.audit._runner import run_trial


def trials(dataset: str, users: int, model: str, epochs: int) -> list:
    cfg = AuditConfig(
        datasets=(DatasetSpec(dataset, min_user_interactions=10, sample_users=users or None),),
        split=SplitSpec("temporal-ratio", 0.9, floor="test"),
        models=(ModelSpec(f"{model}@oh2022", {"epochs": epochs, "checkpoint_every": 10}),),
        perturbations=("tracin-delete", "tracin-replace-random"), seeds=(0,))
    return cfg.trials()


def run(specs: list, keep: bool) -> tuple[float, list]:
    real = context_module._Memo.__call__
    if not keep:
        context_module._Memo.__call__ = lambda self, name, compute: np.asarray(compute())
    try:
        with tempfile.TemporaryDirectory() as cache:
            t0 = time.perf_counter()
            out = [run_trial(t, cache_dir=cache) for t in specs]
            return time.perf_counter() - t0, out
    finally:
        context_module._Memo.__call__ = real


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="wikipedia")
    ap.add_argument("--users", type=int, default=300, help="users sampled (0: all)")
    ap.add_argument("--model", default="lstm")
    ap.add_argument("--epochs", type=int, default=10)
    args = ap.parse_args()
    torch.set_num_threads(1)
    specs = trials(args.dataset, args.users, args.model, args.epochs)
    anchor_s, anchor = run(specs, keep=False)
    ours_s, ours = run(specs, keep=True)
    for a, b in zip(anchor, ours):
        if a.record["rows"] != b.record["rows"] or not a.queries.equals(b.queries):
            raise SystemExit("the two runs differ: keeping the scores must change no number")
    print(f"{args.model}@oh2022, {args.epochs} epochs, checkpoints every 10, {args.dataset} "
          f"({args.users or 'all'} users), tracin-delete + tracin-replace-random, 1 thread")
    for name, s, out in (("scores per trial (anchor)", anchor_s, anchor),
                         ("scores kept per baseline", ours_s, ours)):
        parts = ", ".join(f"{o.row['perturbation']}: fit {o.row['fit_seconds']:.1f} s, "
                          f"perturb {o.row['perturb_seconds']:.1f} s" for o in out)
        print(f"  {name:<26} {s:7.1f} s  ({parts})")
    print(f"  ratio anchor / ours: {anchor_s / ours_s:.2f}x (same rows {ours[0].record['rows']},"
          " same rank lists)")


if __name__ == "__main__":
    main()
