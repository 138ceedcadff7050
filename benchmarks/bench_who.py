"""Who is affected, at the papers' scale: `slices`, `most_changed` and `exposure` (issue 39).

Oh et al. 2022's Foursquare paper store (64 trials of 18,340 test queries) is not on this
machine, so this builds one of the same shape on the real Foursquare log
(`../shared/data/foursquare.tsv`, split as Oh et al. split it: temporal ratio 0.9 with the test
part rounded down, 18,340 queries): one model, 8 seeds x 8 perturbations (the seed-only floor
and seven edits), 64 trials. The rank lists are drawn, not trained: a seed's baseline ranks the
catalogue by item popularity plus Gumbel noise (depth 50), each perturbation adds noise of its
own strength to the scores of the baseline's 300 best items, more for users with few training
interactions; :func:`recaudit.audit.compare` then computes every per-query measure and both
top-10 lists, and :meth:`AuditStore.write_trial` writes each trial as an audit does (so the
store holds 1,173,760 query rows).

Then each question is timed twice, cold (the first call in the process: the data is read and
split again) and warm, in wall and CPU seconds:

    RECAUDIT_MIRROR=../shared/data python benchmarks/bench_who.py            # ~1 min to build
    RECAUDIT_MIRROR=../shared/data python benchmarks/bench_who.py --store results/who.duckdb
    RECAUDIT_MIRROR=../shared/data python benchmarks/bench_who.py --quick    # 2 x 2 trials

An existing ``--store`` is reused (not rebuilt).

Measured 2026-11-26 on the shared 2-core machine (64 trials, 1,173,760 query rows): at load
average 3.4, ``slices`` 4.3-6.0 s wall, ``most_changed`` 0.3 s, ``exposure`` 7.1-7.2 s; at
load 5-7 (another run sharing the cores) 12-18 s, 0.3-0.9 s and 15-17 s wall for 4.6-5.7 s,
0.3 s and 7.5 s of CPU. Building the store takes about 5 minutes.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from recaudit.audit import AuditStore, compare
from recaudit.data import RankLists
from recaudit.experiment import DatasetSpec, ModelSpec, SplitSpec, canonical_json, prepare
from recaudit.perturb import parse

PERTURBATIONS = {"seed-only": 2.0, "random-delete": 0.05, "earliest-random-delete": 0.04,
                 "latest-random-delete": 0.08, "casper-delete": 0.15, "random-replace-random":
                 0.07, "casper-replace-unpopular": 0.2, "casper-delete-k4": 0.3}
DATASET = DatasetSpec("foursquare")
SPLIT = SplitSpec("temporal-ratio", 0.9, floor="test")
MODEL = ModelSpec("gru4rec", title="drawn lists (bench_who)")  # no model is trained
DEPTH, POOL, CHUNK = 50, 300, 2048


def _lists(split, seed: int, strengths: dict[str, float]) -> tuple[np.ndarray, dict]:
    """The baseline's lists of ``seed`` and each perturbation's, ``int32 [queries, DEPTH]``."""
    train, queries = split.train, split.queries
    rng = np.random.default_rng([seed, 39])
    pop = np.log1p(np.bincount(train.item, minlength=train.n_items)).astype(np.float32)
    activity = np.bincount(train.user, minlength=train.n_users)
    shake = (1 + 10 / np.sqrt(np.maximum(activity, 1)))[queries.user].astype(np.float32)
    n = len(queries)
    base = np.empty((n, DEPTH), dtype=np.int32)
    pert = {p: np.empty((n, DEPTH), dtype=np.int32) for p in strengths}
    for lo in range(0, n, CHUNK):
        hi = min(n, lo + CHUNK)
        scores = pop + rng.gumbel(size=(hi - lo, train.n_items)).astype(np.float32)
        pool = np.argpartition(-scores, POOL, axis=1)[:, :POOL]
        s = np.take_along_axis(scores, pool, axis=1)
        order = np.argsort(-s, axis=1, kind="stable")[:, :DEPTH]
        base[lo:hi] = np.take_along_axis(pool, order, axis=1)
        for p, strength in strengths.items():
            noisy = s + strength * shake[lo:hi, None] * rng.gumbel(size=s.shape)
            order = np.argsort(-noisy, axis=1, kind="stable")[:, :DEPTH]
            pert[p][lo:hi] = np.take_along_axis(pool, order, axis=1)
    return base, pert


def build(path: Path, seeds: int, strengths: dict[str, float]) -> None:
    data, split = prepare(DATASET, SPLIT)
    fingerprint = data.fingerprint()
    with AuditStore(path) as store:
        store.ensure_audit()
        for seed in range(seeds):
            base, pert = _lists(split, seed, strengths)
            for p, items in pert.items():
                frame = compare(RankLists(base), RankLists(items), split, 10, 0.9)
                spec = {"dataset": DATASET.to_dict(), "split": SPLIT.to_dict(),
                        "model": MODEL.to_dict(), "seed": seed, "perturbation": p,
                        "metrics": {"k": 10, "p": 0.9, "depth": None}}
                row = {"trial_id": f"who-{seed}-{p}", "baseline_key": f"base-{seed}",
                       "audit": "bench-who", "dataset": DATASET.label, "model": MODEL.name,
                       "model_label": MODEL.label, "perturbation": p,
                       **parse(p).describe().to_dict(), "seed": seed, "draw": 0,
                       "spec": canonical_json(spec), "data_fingerprint": fingerprint,
                       "n_queries": len(frame), "status": "done"}
                store.write_trial(row, frame, None)
            print(f"  seed {seed}: {len(strengths)} trials written", flush=True)


def _time(label: str, call) -> None:
    """Wall and CPU seconds (this process, all its threads: DuckDB's too) of a cold and a warm
    call; on a shared machine the CPU figure is the steadier one."""
    for run in ("cold", "warm"):
        t0, c0 = time.perf_counter(), time.process_time()
        out = call()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        rows = len(out.summary) if hasattr(out, "summary") else len(out)
        print(f"{label:<30} {run}: {wall:6.2f} s wall, {cpu:6.2f} s CPU ({rows} rows)",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, default=None)
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--quick", action="store_true", help="2 seeds x 2 perturbations")
    args = ap.parse_args()
    strengths = dict(list(PERTURBATIONS.items())[:2]) if args.quick else PERTURBATIONS
    seeds = 2 if args.quick else args.seeds
    path = args.store or Path(tempfile.mkdtemp(prefix="bench-who-")) / "who.duckdb"
    if not path.exists():
        t0 = time.perf_counter()
        print(f"building {path}: {seeds} seeds x {len(strengths)} perturbations", flush=True)
        build(path, seeds, strengths)
        print(f"built in {time.perf_counter() - t0:.0f} s", flush=True)
    with AuditStore(path, read_only=True) as s:
        n = s.sql("SELECT count(DISTINCT trial_id) AS t, count(*) AS q FROM query_results")
    print(f"{path}: {int(n.t[0])} trials, {int(n.q[0]):,} query rows")

    from recaudit.audit import exposure, most_changed, slices

    _time("slices --by activity (4 bins)", lambda: slices(path, "activity"))
    _time("slices --by accuracy (4 bins)", lambda: slices(path, "accuracy"))
    _time("changes --worst 10", lambda: most_changed(path, 10))
    _time("exposure", lambda: exposure(path))


if __name__ == "__main__":
    main()
