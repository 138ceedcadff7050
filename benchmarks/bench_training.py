"""Training and ranking speed of our SASRec and GRU4Rec on MovieLens-100k.

Architectures match RecBole 1.2.1's defaults (SASRec: d 64, 2 blocks, 2 heads, FFN 256,
dropout 0.5; GRU4Rec: embedding 64, GRU 128, 1 layer, dropout 0.3; max length 50, batch 2048,
full-softmax cross-entropy). Two sample layouts are timed: ``prefix`` = one sample per target
with up to 50 preceding items (exactly RecBole's 97k training samples of ML-100k) and
``window`` = windows of 50 positions, every position a target (SASRec's own scheme; the same
targets, each once). Split: each user's last interaction is the test query (943 queries); the
full-catalogue rank of every query is timed too.

Anchor: RecBole 1.2.1 itself, run in the same process tree when ``RECAUDIT_RECBOLE_PYTHON``
points to a Python with recbole and numpy<2 (see ``recaudit.models._adapters._recbole``). Otherwise the
figures measured on 2026-11-21 on this machine kind (DEPENDENCIES.md) are printed, labelled as
*not measured in this run*.

    python benchmarks/bench_training.py [--threads 2] [--epochs 1] [--device cpu]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from recaudit.models import create
from recaudit.models.testing import leave_last_out, next_item_mrr

RECBOLE_ANCHOR = {"sasrec": (143.0, 166.0), "gru4rec": (48.0, 50.0)}  # s/epoch, 2 cores

CONFIGS = {
    "sasrec": dict(embedding_dim=64, blocks=2, heads=2, inner_dim=256, dropout=0.5, max_len=50),
    "gru4rec": dict(embedding_dim=64, hidden_dim=128, layers=1, dropout=0.3, max_len=50),
}


def load_ml100k():
    from recaudit.data import datasets

    return datasets.load("ml-100k")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--models", default="gru4rec,sasrec")
    ap.add_argument("--layouts", default="window,prefix")
    args = ap.parse_args()

    log = load_ml100k()
    train, queries = leave_last_out(log)
    print(f"ML-100k: {len(log):,} interactions, {log.n_users} users, {log.n_items} items; "
          f"train {len(train):,}, {len(queries)} test queries; threads={args.threads}, "
          f"device={args.device}; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs", flush=True)
    print("wall = elapsed seconds; cpu = process CPU seconds (robust to a busy machine)")
    recbole_py = os.environ.get("RECAUDIT_RECBOLE_PYTHON")
    for name in args.models.split(","):
        ours = {}
        for layout in args.layouts.split(","):
            batch = {"prefix": 2048, "window": 64}[layout]
            model = create(name, **CONFIGS[name], samples=layout, batch_size=batch,
                           epochs=args.epochs, num_threads=args.threads, device=args.device)
            model.fit(train, seed=0)
            wall = float(np.mean([h["seconds"] for h in model.history_]))
            cpu = float(np.mean([h["cpu_seconds"] for h in model.history_]))
            tic, ctic = time.perf_counter(), time.process_time()
            lists = model.rank(queries)
            rank_wall, rank_cpu = time.perf_counter() - tic, time.process_time() - ctic
            mrr = next_item_mrr(lists, queries.target)
            ours[layout] = (wall, cpu)
            print(f"ours    {name:8} {layout:7} batch {batch:5d}: {wall:8.2f} s/epoch wall "
                  f"{cpu:8.2f} cpu | rank {len(queries)} queries x {log.n_items} items: "
                  f"{rank_wall:.3f} s wall {rank_cpu:.3f} cpu | MRR after {args.epochs} "
                  f"epoch(s) {mrr:.4f}", flush=True)
        if recbole_py:
            from recaudit.models._adapters._recbole import time_recbole_epoch

            rw, rc = time_recbole_epoch(name, train, epochs=args.epochs, threads=args.threads)
            print(f"RecBole {name:8} prefix  batch  2048: {rw:8.2f} s/epoch wall {rc:8.2f} cpu "
                  "(RecBole 1.2.1, measured in this run)", flush=True)
            for layout, (w, c) in ours.items():
                print(f"  ours/{layout}: {rw / w:6.1f}x faster (wall), {rc / c:6.1f}x (cpu)")
        else:
            lo, hi = RECBOLE_ANCHOR[name]
            for layout, (w, _cpu) in ours.items():
                print(f"  ours/{layout}: {lo / w:.1f}-{hi / w:.1f}x faster (wall) than RecBole "
                      f"1.2.1 measured 2026-11-21 ({lo:.0f}-{hi:.0f} s/epoch on 2 idle cores; "
                      "NOT measured in this run)")


if __name__ == "__main__":
    main()
