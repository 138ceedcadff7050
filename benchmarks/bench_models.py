"""Training speed of the sequential models — this checkout against the previous implementation —
and the wall time of Oh et al. (2022)'s Table 3 audit at the paper's settings.

Part 1, seconds per epoch (Wikipedia after Oh et al.'s filter: 1,914 users, 1,000 items,
127,045 training rows) for every model x sample layout x device. ``window``: each window of up
to 50 items, every position a target (default for all but JODIE); ``prefix``: one sample per
training interaction with its previous 50 items and temporal batches (CASPER's released setup);
``t-batches``: JODIE. Each figure is the last of ``--epochs`` epochs, timed by the model, in a
fresh process with ``--threads`` torch threads.

Anchor: recaudit at commit ``d9d1fea`` (the tree before the speed work), extracted from this
repository's history with ``git archive`` into a temporary folder and run in the same session,
in its own processes, on the same data and settings (``--anchor REV``; ``--no-anchor`` skips
it). The ratio column is anchor / ours.

``--jodie-trajectory``: JODIE's loss per epoch on a small synthetic log (1,826 rows), the
previous implementation and ours on the same groups, side by side.

Part 2 (``--estimate CONFIG``): each model of an audit config trained for ``--epochs`` epochs on
the config's dataset with its parameters; the full audit's serial time is extrapolated as
``fits x (epochs_in_config x s/epoch + rank s)`` where a (model, seed) needs one baseline fit,
one fit per perturbation and one checkpointed baseline refit per TracIn perturbation; divided
by the executor's workers for the parallel estimate.

Part 3 (``--throughput``): trials per hour of an LSTM audit on Wikipedia through the process
executor with ``--workers`` (e.g. 1 4 8 16) sharing ``--device`` (e.g. ``cuda:0``).

    python benchmarks/bench_models.py [--devices cpu,cuda] [--threads 2] [--epochs 2]
        [--models jodie,latentcross] [--layouts window,prefix] [--no-anchor]
        [--estimate configs/oh2022_table3.toml configs/oh2022_table3_jodie.toml]
        [--throughput --workers 1 2 --device cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ANCHOR = "d9d1fea"
MODELS = ("jodie", "latentcross", "lstm", "gru4rec", "sasrec", "tisasrec", "bert4rec")
LAYOUTS = {"window": {"samples": "window"},
           "prefix": {"samples": "prefix", "batch_order": "temporal"},
           # LatentCross only: each user's state over the whole history, 1,024 interactions per
           # mini-batch (the latentcross@oh2022 preset)
           "history": {"samples": "history", "batch_size": 1024}}


def _layouts(model: str, wanted: list[str]) -> list[tuple[str, dict]]:
    if model == "jodie":
        return [("t-batches", {})]
    return [(lay, LAYOUTS[lay]) for lay in wanted
            if not (model == "bert4rec" and lay == "prefix")
            and (lay != "history" or model == "latentcross")]


def extract(rev: str, into: Path) -> Path:
    """``src/`` of ``rev`` (this repository's history) unpacked under ``into``."""
    archive = into / "src.tar"
    with open(archive, "wb") as f:
        subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], stdout=f, check=True)
    with tarfile.open(archive) as t:
        t.extractall(into, filter="data")
    return into / "src"


def measure(src: Path, job: dict, budget: float) -> dict | None:
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONUNBUFFERED="1")
    try:
        out = subprocess.run([sys.executable, str(HERE / "_epoch_worker.py"), json.dumps(job)],
                             env=env, capture_output=True, text=True, timeout=budget)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        raise RuntimeError(f"{job['model']} failed:\n{out.stderr[-2000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    secs = [s for s in res["epoch_seconds"] if s is not None]
    res["per_epoch"] = secs[-1] if secs else res["fit"] / job["epochs"]
    return res


def part1(args, anchor_src: Path | None) -> None:
    print(f"\n## Seconds per epoch on {args.dataset} ({args.threads} threads)")
    print("| model | layout | device | ours s/epoch | anchor s/epoch | anchor / ours |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for model in args.models:
        for layout, params in _layouts(model, args.layouts):
            for device in args.devices:
                job = {"dataset": args.dataset, "min_user_interactions": 10, "ratio": 0.9,
                       "model": model, "params": params, "epochs": args.epochs,
                       "threads": args.threads, "device": device}
                ours = measure(ROOT / "src", job, args.budget)
                old = None
                if anchor_src is not None:
                    old = measure(anchor_src, dict(job, epochs=args.anchor_epochs), args.budget)
                o = f"{ours['per_epoch']:.2f}" if ours else f"> {args.budget:.0f}"
                a = "–" if anchor_src is None else (f"{old['per_epoch']:.2f}" if old
                                                      else f"> {args.budget:.0f}")
                if ours and old:
                    r = f"{old['per_epoch'] / ours['per_epoch']:.1f}x"
                elif ours and anchor_src is not None:
                    r = f"> {args.budget / ours['per_epoch']:.0f}x"
                else:
                    r = "–"
                print(f"| {model} | {layout} | {device} | {o} | {a} | {r} |", flush=True)


def jodie_trajectory(anchor_src: Path) -> None:
    print("\n## JODIE loss per epoch, same log, seed and groups")
    out = {}
    for label, src in (("previous", anchor_src), ("ours", ROOT / "src")):
        env = dict(os.environ, PYTHONPATH=str(src))
        res = subprocess.run([sys.executable, str(HERE / "_jodie_trajectory.py")], env=env,
                             capture_output=True, text=True, check=True)
        out[label] = json.loads(res.stdout.strip().splitlines()[-1])
    print("| epoch | previous | ours | relative difference |")
    print("| ---: | ---: | ---: | ---: |")
    for e, (a, b) in enumerate(zip(out["previous"], out["ours"]), 1):
        print(f"| {e} | {a:.9f} | {b:.9f} | {abs(a - b) / abs(a):.1e} |")


def part2(args, config: str) -> None:
    from recaudit.audit import load_config

    cfg = load_config(config)
    ds = cfg.datasets[0]
    split_opts = dict(cfg.split.options())
    tracin = sum(1 for p in cfg.perturbations if "tracin" in str(p))
    print(f"\n## Estimated wall time of {config} ({ds.name}, {len(cfg.seeds)} seeds, "
          f"{len(cfg.perturbations)} perturbations, {tracin} with TracIn)")
    for device in args.devices:
        print(f"\n{device}, {args.threads} threads per fit:")
        print("| model | s/epoch | rank s | epochs | fits | hours (serial) |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        total = 0.0
        for m in cfg.models:
            params = {k: v for k, v in m.params.items()
                      if k not in ("epochs", "num_threads", "device")}
            job = {"dataset": ds.name, "min_user_interactions": ds.min_user_interactions,
                   "ratio": split_opts.get("ratio", 0.9), "floor": split_opts.get("floor", "train"),
                   "model": m.name, "params": params, "epochs": args.epochs,
                   "threads": args.threads, "device": device, "rank": True}
            res = measure(ROOT / "src", job, args.budget)
            if res is None:
                print(f"| {m.name} | > {args.budget:.0f} s | | | | |")
                continue
            epochs = int(m.params.get("epochs", 50))
            refits = 0 if m.name.split("@")[0] == "jodie" else tracin  # JODIE has no TracIn gradients
            fits = len(cfg.seeds) * (1 + len(cfg.perturbations) + refits)
            hours = fits * (epochs * res["per_epoch"] + res["rank"]) / 3600
            total += hours
            print(f"| {m.name} | {res['per_epoch']:.2f} | {res['rank']:.1f} | {epochs} | {fits} "
                  f"| {hours:.1f} |", flush=True)
        w = cfg.executor.workers
        print(f"| all | | | | | **{total:.1f}** (÷ {w} workers: {total / w:.1f} h) |")


def part3(args) -> None:
    from recaudit.audit import (AuditConfig, DatasetSpec, ExecutorSpec, ModelSpec, run_audit)

    perts = ("random-delete", "earliest-random-delete", "latest-random-delete", "casper-delete")
    print(f"\n## Trials per hour: LSTM on {args.dataset}, {args.throughput_epochs} epochs, "
          f"{args.throughput_seeds} seeds x {len(perts)} perturbations, device {args.device}")
    print("| workers | trials | wall s | trials / hour |")
    print("| ---: | ---: | ---: | ---: |")
    for w in args.workers:
        with tempfile.TemporaryDirectory() as tmp:
            cfg = AuditConfig(
                datasets=(DatasetSpec(args.dataset, min_user_interactions=10),),
                models=(ModelSpec("lstm", {"epochs": args.throughput_epochs,
                                           "device": "auto"}),),
                perturbations=perts, seeds=tuple(range(args.throughput_seeds)),
                executor=ExecutorSpec("process" if w > 1 else "inprocess", w,
                                      threads_per_worker=args.threads,
                                      devices=(args.device,)),
                output=str(Path(tmp) / "t.duckdb"))
            t0 = time.perf_counter()
            run_audit(cfg)
            wall = time.perf_counter() - t0
        n = args.throughput_seeds * len(perts)
        print(f"| {w} | {n} | {wall:.0f} | {n / wall * 3600:.0f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="wikipedia")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--layouts", default="window,prefix")
    ap.add_argument("--devices", default="cpu", help="comma-separated: cpu,cuda")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=2, help="epochs per measurement (ours)")
    ap.add_argument("--anchor", default=ANCHOR)
    ap.add_argument("--anchor-epochs", type=int, default=1)
    ap.add_argument("--no-anchor", action="store_true")
    ap.add_argument("--budget", type=float, default=1800.0, help="seconds per measurement")
    ap.add_argument("--skip-epochs", action="store_true", help="skip part 1")
    ap.add_argument("--jodie-trajectory", action="store_true")
    ap.add_argument("--estimate", nargs="+", help="audit configs whose wall time to estimate (part 2)")
    ap.add_argument("--throughput", action="store_true", help="part 3")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--throughput-epochs", type=int, default=2)
    ap.add_argument("--throughput-seeds", type=int, default=2)
    args = ap.parse_args()
    args.models = args.models.split(",")
    args.layouts = args.layouts.split(",")
    args.devices = args.devices.split(",")
    shared = ROOT.parent / "shared" / "data"
    if "RECAUDIT_MIRROR" not in os.environ and shared.is_dir():
        os.environ["RECAUDIT_MIRROR"] = str(shared)
    import torch

    if "cuda" in args.devices and not torch.cuda.is_available():
        print("no CUDA device here: the cuda rows are not measured")
        args.devices = [d for d in args.devices if d != "cuda"]
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; torch "
          f"{torch.__version__}; {time.strftime('%Y-%m-%d %H:%M')}")
    with tempfile.TemporaryDirectory() as tmp:
        anchor_src = None
        if not args.no_anchor and (not args.skip_epochs or args.jodie_trajectory):
            anchor_src = extract(args.anchor, Path(tmp))
            print(f"anchor: recaudit at {args.anchor} (git archive)")
        if args.jodie_trajectory and anchor_src is not None:
            jodie_trajectory(anchor_src)
        if not args.skip_epochs:
            part1(args, anchor_src)
    for config in args.estimate or ():
        part2(args, config)
    if args.throughput:
        part3(args)


if __name__ == "__main__":
    main()
