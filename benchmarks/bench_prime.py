"""A process pool's baseline made before its group (``AuditStudy.prime``) against the group's
first trial making it while the rest of the group waits for that whole trial; and the group
started beside its priming, each trial taking the baseline last (``baseline_last``: these
perturbations read nothing of the baseline before comparing), against the priming first.

The anchor is the same audit with ``prime`` switched off in the driver, as every pool worked
before: the group's first trial trains the baseline, then its own perturbed model, and only
then are the other trials of the group released. With ``prime``, the baseline is trained by a
job of its own and the whole group starts when it is cached. One model and seed, as many
perturbations as workers (the case of a GPU shared by many workers, where the saving is one
fit out of three); each run starts from an empty store and cache and must give the same rank
lists.

    python benchmarks/bench_prime.py                        # GRU4Rec, 500 Wikipedia users, ~3 min
    python benchmarks/bench_prime.py --workers 4 --epochs 20
    python benchmarks/bench_prime.py --trials 1             # one trial: its two fits side by side

The third row is the pool as it runs now; the second switches ``baseline_last`` off (the
priming first, then the group), the first ``prime`` too.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from recaudit.audit import (AuditConfig, DatasetSpec, ExecutorSpec, ModelSpec, SplitSpec,
                            run_audit, trial_summary)
from recaudit.audit._study import AuditStudy

PERTURBATIONS = ("random-delete", "earliest-random-delete", "latest-random-delete",
                 "random-replace-random", "earliest-random-replace-random",
                 "latest-random-replace-random", "random-insert-random",
                 "earliest-random-insert-random")


def config(folder: str, args: argparse.Namespace) -> AuditConfig:
    return AuditConfig(
        datasets=(DatasetSpec(args.dataset, min_user_interactions=10,
                              sample_users=args.users or None),),
        split=SplitSpec("temporal-ratio", 0.9, floor="test"),
        models=(ModelSpec(args.model, {"epochs": args.epochs}),),
        perturbations=PERTURBATIONS[:args.trials or args.workers], seeds=(0,),
        executor=ExecutorSpec("process", workers=args.workers, threads_per_worker=1),
        output=os.path.join(folder, "a.duckdb"))


def run(args: argparse.Namespace, prime: bool, last: bool = False):
    import recaudit.audit._study as study

    real = AuditStudy.__dict__["prime"]  # the staticmethod itself, to put back as it was
    real_last = study.baseline_last
    if not prime:
        AuditStudy.prime = None
    if not last:
        study.baseline_last = lambda *a: False
    try:
        with tempfile.TemporaryDirectory() as folder:
            cfg = config(folder, args)
            t0 = time.perf_counter()
            run_audit(cfg)
            wall = time.perf_counter() - t0
            return wall, trial_summary(cfg.output).sort_values("trial_id")
    finally:
        AuditStudy.prime = real
        study.baseline_last = real_last


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="wikipedia")
    ap.add_argument("--users", type=int, default=500, help="users sampled (0: all)")
    ap.add_argument("--model", default="gru4rec")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--trials", type=int, default=0, help="trials of the baseline (0: one "
                    "per worker)")
    args = ap.parse_args()
    if not 1 <= args.workers <= len(PERTURBATIONS):
        ap.error(f"--workers must be between 1 and {len(PERTURBATIONS)}")
    anchor_s, anchor = run(args, prime=False)
    primed_s, primed = run(args, prime=True)
    ours_s, ours = run(args, prime=True, last=True)
    same = all(list(anchor.trial_id) == list(o.trial_id)
               and np.array_equal(anchor.rbo.to_numpy(), o.rbo.to_numpy())
               for o in (primed, ours))
    trials = args.trials or args.workers
    print(f"{args.model}, {args.dataset} ({args.users or 'all'} users), {args.epochs} epochs, "
          f"{args.workers} workers, {trials} trial(s) of one baseline; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print("| scheduling | wall s | vs anchor |\n| --- | ---: | ---: |")
    print(f"| group released after its first trial (anchor) | {anchor_s:.1f} | 1.00x |")
    print(f"| baseline primed, group released at once | {primed_s:.1f} | "
          f"{anchor_s / primed_s:.2f}x |")
    print(f"| group started beside its priming, baseline last | {ours_s:.1f} | "
          f"{anchor_s / ours_s:.2f}x |")
    print(f"same trials and RBO: {same}")
    if not same:
        raise SystemExit("the two runs disagree")


if __name__ == "__main__":
    main()
