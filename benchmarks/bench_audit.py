"""Wall time of the default audit with 1 and 2 workers (issue 6, goal: < 15 min on 2 cores).

The audit: one model (GRU4Rec), six perturbation methods (seed-only, random, earliest-random,
latest-random, CASPER deletion, CASPER replacement by an unpopular item), three seeds, on a
synthetic log of ML-100k's size (943 users, 1,682 items, ~100k interactions). Anchor: the
in-process run (1 worker) measured in the same run; the 2-worker figure is printed as a ratio
against it, and both are checked to give identical numbers.

    .venv/bin/python benchmarks/bench_audit.py [--epochs 10] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import pandas as pd

from recaudit.audit import (
    AuditConfig,
    DatasetSpec,
    ExecutorSpec,
    ModelSpec,
    run_audit,
    trial_summary,
)

PERTURBATIONS = ("seed-only", "random-delete", "earliest-random-delete", "latest-random-delete",
                 "casper-delete", "casper-replace-unpopular")
ML100K_SIZED = {"n_users": 943, "n_items": 1682, "n_clusters": 18, "mean_length": 106,
                "min_length": 20, "max_length": 737, "seed": 100}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    model = ModelSpec("gru4rec", {"epochs": args.epochs, "samples": "window"})
    out = Path(tempfile.mkdtemp(prefix="bench-audit-"))
    times, numbers = {}, {}
    for w in args.workers:
        cfg = AuditConfig(models=(model,), perturbations=PERTURBATIONS,
                          seeds=tuple(range(args.seeds)),
                          datasets=(DatasetSpec("synthetic", options=ML100K_SIZED),),
                          executor=ExecutorSpec("process" if w > 1 else "inprocess", workers=w),
                          output=str(out / f"w{w}.duckdb"))
        t0 = time.perf_counter()
        run_audit(cfg)
        times[w] = time.perf_counter() - t0
        s = trial_summary(cfg.output)
        numbers[w] = s.drop(columns=["fit_seconds", "total_seconds"]).sort_values("trial_id") \
            .reset_index(drop=True)
        print(f"workers={w}: {times[w]:.1f} s wall for {len(s)} trials "
              f"({len(s) // len(PERTURBATIONS)} baselines shared)", flush=True)
    anchor = args.workers[0]
    for w in args.workers[1:]:
        same = numbers[w].equals(numbers[anchor])
        print(f"workers={w} vs workers={anchor}: speed-up x{times[anchor] / times[w]:.2f}, "
              f"identical numbers: {same}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of the driver: {peak:.0f} MiB; goal: < 900 s wall")
    print(pd.concat(numbers.values()).groupby("perturbation")[["rbo", "jaccard"]].mean())


if __name__ == "__main__":
    main()
