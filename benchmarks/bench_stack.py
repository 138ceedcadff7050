"""The GPU check: what one GPU gives per minute, in one prepared run (at most ``--budget`` s).

Run it first whenever a GPU is available (and on a CPU machine to see the anchors)::

    RECAUDIT_MIRROR=data python benchmarks/bench_stack.py --out out/gpu --device cuda:0

Every figure is printed as it is measured and written to ``<out>/figures.json``; the audits
of part 4 write their stores into ``<out>``. Parts, run in the order 1, 3, 2, 5, 4 (what a
short lease wants most first; ``--parts`` changes it), each skipped when the budget is spent:

1. **identity**: every sequential model (small configurations, synthetic data) trained alone
   and as member 2 of a stack of 3 on ``--device``: are the member's scores bit-identical to
   the model alone? (On the CPU the tests assert it; on CUDA this is the check.)
2. **s/epoch, CPU against the device**: the seven models at their Oh et al. 2022 presets (the
   others: window samples, defaults) on ``--dataset``, one epoch each; on the device a first
   call (CUDA context, numba compilation, caches) and a second, steady one, reported apart;
   on the device the steady call only when the first took under 30 s (the budget);
   on the CPU one thread per model, the seven in parallel processes (a 16-core GPU machine
   runs them beside part 2's device work). Anchor: one CPU core.
3. **stacks**: one epoch of stacks of 1, 8, 16 and 32 models (seeds 0..K-1, the same data) of
   LSTM@oh2022, GRU4Rec, SASRec and TiSASRec on the device: trials per hour of the fits alone,
   ``3600 K / (epochs x s per stacked epoch)``; anchor: the stack of 1 (one trial at a time).
4. **workers**: an audit of ``--workers`` (1 8 16) processes sharing the device, one epoch
   per fit, LSTM@oh2022, 16 trials: trials per hour, with and without ``--stack 8``.
5. **launches**: one epoch of JODIE@oh2022 and LatentCross@oh2022 (``--profile-users``
   sampled users, 300 by default) under ``torch.profiler`` on the device: kernels
   launched, host-device copies and synchronisations, the top operators by device time:
   what holds the cascade models back on a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEVEN = ("gru4rec", "lstm", "sasrec", "tisasrec", "bert4rec", "latentcross", "jodie")
PRESET = {"lstm": "lstm@oh2022", "tisasrec": "tisasrec@oh2022", "jodie": "jodie@oh2022",
          "latentcross": "latentcross@oh2022"}
SMALL = {"gru4rec": {"hidden_dim": 16}, "lstm": {"hidden_dim": 16}, "sasrec": {"heads": 2},
         "tisasrec": {"time_span": 16}, "bert4rec": {"max_len": 10, "layers": 1},
         "latentcross": {"hidden_dim": 16, "samples": "history"}, "jodie": {}}
FIGURES: dict = {}


def _say(section: str, key: str, value) -> None:
    FIGURES.setdefault(section, {})[key] = value
    print(f"[{section}] {key}: {value}", flush=True)


def _data(dataset: str, users: int | None):
    from recaudit.experiment import DatasetSpec, SplitSpec, prepare

    spec = DatasetSpec(dataset, min_user_interactions=10, sample_users=users)
    return prepare(spec, SplitSpec())[1]


def _model(name: str, device: str, **extra):
    from recaudit.models import create

    return create(PRESET.get(name, name), device=device, **extra)


def identity(device: str) -> None:
    import numpy as np

    from recaudit.data import synthetic
    from recaudit.models import create
    from recaudit.models.sequential import fit_stack
    from recaudit.models.testing import leave_last_out

    train, queries = leave_last_out(synthetic(seed=5, n_users=60, n_items=80))
    logs = [train, train.take(np.arange(1, len(train))), train.take(np.arange(len(train) - 1))]
    for name in SEVEN:
        params = dict(epochs=2, embedding_dim=16, batch_size=16, device=device, **SMALL[name])
        alone = create(name, **params).fit(logs[1], seed=3).score(queries)
        stack = fit_stack([create(name, **params) for _ in logs], logs, [4, 3, 5])
        got = stack[1].score(queries)
        _say("identity", f"{name} stack 3 == alone", bool(np.array_equal(alone, got)))
        if not np.array_equal(alone, got):
            _say("identity", f"{name} max |diff|", float(np.abs(alone - got).max()))


def _epoch_seconds(name: str, device: str, dataset: str, users: int | None, threads: int,
                   steady_below: float = float("inf")) -> list[float]:
    """Seconds of one epoch, twice in this process (first call, steady); the steady call
    only when the first took less than ``steady_below`` seconds (a GPU run's budget)."""
    import torch

    torch.set_num_threads(threads)
    split = _data(dataset, users)
    out: list[float] = []
    for _ in range(2):
        if out and out[0] >= steady_below:
            break
        t0 = time.perf_counter()
        model = _model(name, device, epochs=1, num_threads=threads).fit(split.train, seed=0)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        out.append(time.perf_counter() - t0)
        del model
    return out


def epochs(device: str, dataset: str, users: int | None, budget: float) -> None:
    cpu = {name: subprocess.Popen(
        [sys.executable, __file__, "--_epoch", name, "--dataset", dataset,
         *(["--users", str(users)] if users else [])],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        for name in SEVEN}
    if device != "cpu":
        for name in SEVEN:
            got = _epoch_seconds(name, device, dataset, users, 1, steady_below=30.0)
            _say("s/epoch", f"{name} {device} first call", round(got[0], 2))
            _say("s/epoch", f"{name} {device} steady",
                 round(got[1], 2) if len(got) > 1 else "not measured (first call >= 30 s)")
    deadline = time.time() + budget
    for name, proc in cpu.items():
        try:
            out, _ = proc.communicate(timeout=max(1.0, deadline - time.time()))
            steady = json.loads(out.strip().splitlines()[-1])[1]
            _say("s/epoch", f"{name} cpu (1 thread)", round(steady, 2))
            gpu = FIGURES["s/epoch"].get(f"{name} {device} steady")
            if not isinstance(gpu, float):
                gpu = FIGURES["s/epoch"].get(f"{name} {device} first call")
            if gpu:
                _say("s/epoch", f"{name} speed-up {device} vs 1 core", round(steady / gpu, 1))
        except subprocess.TimeoutExpired:
            proc.kill()
            _say("s/epoch", f"{name} cpu (1 thread)", "not finished within the budget")


def stacks(device: str, dataset: str, users: int | None, sizes: list[int], budget: float
           ) -> None:
    import torch

    from recaudit.models.sequential import fit_stack

    split = _data(dataset, users)
    end = time.time() + budget
    for name in ("lstm", "gru4rec", "sasrec", "tisasrec"):
        epochs_per_fit = _model(name, device).get_params()["epochs"]
        base = None
        for k in sizes:
            if time.time() > end:
                _say("stacks", f"{name} stack {k}", "skipped (budget)")
                continue
            models = [_model(name, device, epochs=1) for _ in range(k)]
            t0 = time.perf_counter()
            fit_stack(models, [split.train] * k, list(range(k)))
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            per_epoch = time.perf_counter() - t0
            rate = 3600 * k / (epochs_per_fit * per_epoch)
            base = base or rate
            _say("stacks", f"{name} stack {k}: s per stacked epoch", round(per_epoch, 2))
            _say("stacks", f"{name} stack {k}: trials/h (fits)", round(rate))
            _say("stacks", f"{name} stack {k}: x stack 1", round(rate / base, 2))
            del models


def workers(device: str, dataset: str, users: int | None, counts: list[int], out: Path,
            budget: float) -> None:
    from recaudit.audit import AuditConfig, DatasetSpec, ExecutorSpec, ModelSpec, run_audit

    end = time.time() + budget
    for stack in (1, 8):
        for n in counts:
            if time.time() > end:
                _say("workers", f"{n} workers stack {stack}", "skipped (budget)")
                continue
            cfg = AuditConfig(
                models=(ModelSpec("lstm@oh2022", {"epochs": 1, "device": "auto"}),),
                datasets=(DatasetSpec(dataset, min_user_interactions=10, sample_users=users),),
                perturbations=("random-delete",), seeds=(0,), draws=16,
                executor=ExecutorSpec("process" if n > 1 else "inprocess", n,
                                      devices=(device,) if device != "cpu" else (),
                                      stack=stack),
                output=str(out / f"workers{n}-stack{stack}.duckdb"))
            t0 = time.perf_counter()
            run_audit(cfg)
            wall = time.perf_counter() - t0
            _say("workers", f"{n} workers stack {stack}: 16 trials (1 epoch) in s", round(wall, 1))
            _say("workers", f"{n} workers stack {stack}: trials/h", round(16 * 3600 / wall))


def launches(device: str, dataset: str, users: int | None) -> None:
    from torch.profiler import ProfilerActivity, profile

    split = _data(dataset, users)
    for name in ("jodie", "latentcross"):
        _model(name, device, epochs=1).fit(split.train, seed=0)     # warm up
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device != "cpu" else [])
        model = _model(name, device, epochs=1)
        if name == "jodie":     # on the CPU too, the recurrence a GPU runs (not numba's)
            model._rnn_impl = "torch"
        with profile(activities=acts) as prof:
            model.fit(split.train, seed=0)
        _say("launches", f"{name}: groups (optimiser steps) per epoch",
             model.plan_stats_ if name == "jodie" else None)
        events = prof.key_averages()
        count = {e.key: e.count for e in events}
        _say("launches", f"{name}: cudaLaunchKernel calls",
             sum(v for k, v in count.items() if "LaunchKernel" in k))
        _say("launches", f"{name}: cudaMemcpy(Async) calls",
             sum(v for k, v in count.items() if "Memcpy" in k))
        _say("launches", f"{name}: synchronisations",
             sum(v for k, v in count.items() if "Synchronize" in k))
        _say("launches", f"{name}: aten operator calls",
             sum(v for k, v in count.items() if k.startswith("aten::")))
        key = "self_device_time_total" if device != "cpu" else "self_cpu_time_total"
        top = sorted(events, key=lambda e: getattr(e, key, 0), reverse=True)[:8]
        _say("launches", f"{name}: top operators ({key}, ms)",
             {e.key: round(getattr(e, key, 0) / 1000, 1) for e in top})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("out/gpu-check"))
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--dataset", default="wikipedia")
    ap.add_argument("--users", type=int, default=None, help="sample this many users (quick)")
    ap.add_argument("--budget", type=float, default=480.0, help="seconds for the whole run")
    ap.add_argument("--profile-users", type=int, default=300,
                    help="users sampled for part 5's profiled epochs (0: all)")
    ap.add_argument("--stacks", type=int, nargs="+", default=[1, 8, 16, 32])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 8, 16])
    ap.add_argument("--parts", default="identity,stacks,epochs,launches,workers")
    ap.add_argument("--_epoch", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._epoch:
        print(json.dumps(_epoch_seconds(args._epoch, "cpu", args.dataset, args.users, 1)))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    parts = args.parts.split(",")
    share = {"identity": 0.1, "epochs": 0.3, "stacks": 0.3, "workers": 0.2, "launches": 0.1}
    for part in parts:
        left = args.budget - (time.time() - start)
        if left <= 5:
            _say("run", part, "skipped (budget)")
            continue
        t0 = time.time()
        cap = min(left, args.budget * share[part] * 1.5)
        if part == "identity":
            identity(args.device)
        elif part == "epochs":
            epochs(args.device, args.dataset, args.users, cap)
        elif part == "stacks":
            stacks(args.device, args.dataset, args.users, args.stacks, cap)
        elif part == "workers":
            workers(args.device, args.dataset, args.users, args.workers, args.out, cap)
        elif part == "launches":
            launches(args.device, args.dataset, args.profile_users or args.users)
        _say("run", f"{part} seconds", round(time.time() - t0, 1))
        (args.out / "figures.json").write_text(json.dumps(FIGURES, indent=1))
    _say("run", "total seconds", round(time.time() - start, 1))
    (args.out / "figures.json").write_text(json.dumps(FIGURES, indent=1))


if __name__ == "__main__":
    main()
