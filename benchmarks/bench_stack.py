"""The GPU check: what one GPU gives the sequential models, in one prepared run.

On a bare GPU machine (python3 with torch, numpy, pandas, scipy, numba; no duckdb, no data
files), from a checkout::

    PYTHONPATH=src python3 benchmarks/bench_stack.py --device cuda:0 --out out/gpu-check

It needs no data file (its logs are synthetic, of the shape of Oh et al. 2022's Wikipedia and
Foursquare data) and no store (no duckdb). Every part has a budget (``--budget`` seconds in
all, shared as in ``SHARES``), prints its figures as it measures them and writes
``<out>/figures.json`` after each part; a part that fails is reported (its error in the
figures) and the run goes on. Parts, in the order run (``--parts`` changes it):

1. **identity** — audit-like stacks (one seed, each member's log one interaction short): is
   member 0 of stacks of 2, 8 and 16 bit-identical to the same trial alone on ``--device``, for
   every model (and each recurrence of the recurrent ones)? On the CPU the tests assert it; on
   CUDA this is the check (``versions.stack`` and ``recaudit merge`` cover a difference).
2. **launches** — the CPU proxy of kernel launches: one epoch of 16 members trained as one
   stack against the same 16 one at a time, counting the aten operators dispatched (a
   ``TorchDispatchMode``, as ``FlopCounterMode`` sees them: forward, backward and optimiser),
   on the CPU with oneDNN off and ``recurrence = "batched"``: the ratio per model (goal: at
   most 0.2), and the ``fill_`` operators of the stack's epoch with torch's deterministic NaN
   fill of fresh tensors on and off (torch.profiler: the dispatch mode does not see them;
   the profiler keeps every event in memory, 16 GB for LatentCross over histories of 30
   users: keep ``--launch-users`` small, ``--models`` to count some models only).
3. **epochs** — seconds per epoch of the seven models at their Oh et al. 2022 presets (the
   others at their defaults) on the Wikipedia-shaped log: warm epochs (the training
   history's epochs after the first) on the device, against one CPU core (each model in a
   process of its own, one thread).
4. **stacks** — trials per hour of audit-like stacks of 1, 8, 16 and 32 for the four window
   models, from the warm epoch of each stack (``3600 K / (epochs x s per epoch)``); anchor:
   the stack of 1 (one trial at a time), measured in the same run.
5. **workers** — trials per hour with 1, 4 and 8 processes sharing the device, each training
   stacks of 1 or of 8 (LSTM@oh2022, audit-like logs, warm epochs).

``--tiny`` shrinks everything (logs, models, stacks, epochs) so the check runs on a CPU in
minutes (``--device cpu --tiny``: a rehearsal before a GPU is lent).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEVEN = ("gru4rec", "lstm", "sasrec", "tisasrec", "bert4rec", "latentcross", "jodie")
WINDOW = ("lstm", "gru4rec", "sasrec", "tisasrec")
PRESET = {"lstm": "lstm@oh2022", "tisasrec": "tisasrec@oh2022", "jodie": "jodie@oh2022",
          "latentcross": "latentcross@oh2022"}
TINY = {"gru4rec": {"hidden_dim": 16}, "lstm": {"hidden_dim": 16}, "sasrec": {"heads": 2},
        "tisasrec": {"time_span": 16}, "bert4rec": {"max_len": 10, "layers": 1},
        "latentcross": {"hidden_dim": 16, "samples": "history"}, "jodie": {}}
#: synthetic logs of the shape of Oh et al. 2022's data (users with >= 10 interactions):
#: users, items, median and mean length (lognormal), longest
SHAPES = {"wikipedia": dict(n_users=1914, n_items=1000, mean_length=35, sigma=1.37,
                            max_length=1603),
          "foursquare": dict(n_users=2106, n_items=5596, mean_length=54, sigma=1.11,
                             max_length=1265)}
SHARES = {"identity": 0.15, "launches": 0.2, "epochs": 0.25, "stacks": 0.25, "workers": 0.15}
FIGURES: dict = {}


def _say(section: str, key: str, value) -> None:
    FIGURES.setdefault(section, {})[key] = value
    print(f"[{section}] {key}: {value}", flush=True)


def _log(shape: str, users: int | None, seed: int = 0):
    """A synthetic log of ``shape`` (``users``: fewer users), split leave-last-out."""
    from recaudit.data import synthetic
    from recaudit.models.testing import leave_last_out

    params = dict(SHAPES[shape])
    if users:
        params["n_users"] = users
    return leave_last_out(synthetic(seed=seed, **params))


def _audit_logs(train, k: int, seed: int = 0) -> list:
    """``k`` logs of an audit-like stack: one seed, each the log minus one random row."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = np.arange(len(train))
    return [train.take(np.delete(rows, rng.integers(len(train)))) for _ in range(k)]


def _model(name: str, device: str, tiny: bool, **extra):
    from recaudit.models import create

    params = dict(TINY[name], epochs=1, embedding_dim=16, batch_size=32) if tiny else {}
    return create(name if tiny else PRESET.get(name, name), device=device,
                  **{**params, **extra})


def _recurrences(name: str) -> list[str | None]:
    from recaudit.models import parameters

    has = any(p == "recurrence" for p, _, _ in parameters(name))
    return ["native", "batched"] if has else [None]


def _with(recurrence: str | None) -> dict:
    return {} if recurrence is None else {"recurrence": recurrence}


def _warm(model) -> float:
    """Seconds of a warm epoch: the fastest epoch after the first in the training history."""
    epochs = [h["seconds"] for h in model.history_]
    return min(epochs[1:]) if len(epochs) > 1 else epochs[0]


# ----------------------------------------------------------------------------- parts
def identity(args, end: float) -> None:
    import numpy as np

    from recaudit.models.sequential import fit_stack

    train, queries = _log("wikipedia", 40 if args.tiny else 120)
    logs = _audit_logs(train, 16)
    for name in SEVEN:
        for rec in _recurrences(name):
            label = name if rec is None else f"{name} ({rec})"
            if time.time() > end:
                _say("identity", label, "skipped (budget)")
                continue
            extra = dict(_with(rec), epochs=2)
            alone = _model(name, args.device, args.tiny, **extra).fit(logs[0], seed=0)
            want = alone.score(queries)
            for k in (2, 8, 16):
                if time.time() > end:
                    break
                stack = fit_stack([_model(name, args.device, args.tiny, **extra)
                                   for _ in range(k)], logs[:k], [0] * k)
                got = stack[0].score(queries)
                same = bool(np.array_equal(want, got))
                _say("identity", f"{label}: member 0 of {k} == alone",
                     same if same else f"no (max |diff| {float(np.abs(want - got).max()):.2e})")


def _count(fn) -> Counter:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.by: Counter = Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.by[str(func.overloadpacket.__name__)] += 1
            return func(*args, **(kwargs or {}))

    with torch.backends.mkldnn.flags(enabled=False), Count() as c:
        fn()
    return c.by


def launches(args, end: float) -> None:
    """The CPU proxy (see the module docstring); always on the CPU."""
    from recaudit.models.sequential import fit_stack

    k = 2 if args.tiny else 16
    train, _ = _log("wikipedia", 40 if args.tiny else args.launch_users)
    logs = _audit_logs(train, k)
    _say("launches", "log", f"{len(train)} training rows, {train.n_users} users, "
                            f"{train.n_items} items; {k} members, one epoch")
    for name in args.models:
        if time.time() > end:
            _say("launches", name, "skipped (budget)")
            continue
        extra = _with(_recurrences(name)[-1])

        def one(log, extra=extra, name=name):
            model = _model(name, "cpu", args.tiny, **extra, epochs=1)
            if name == "jodie":
                model._rnn_impl = "torch"      # the recurrence a GPU runs, not numba's
            return model

        one(logs[0]).fit(logs[0], seed=0)       # warm: numba, caches
        alone = _count(lambda: [one(log).fit(log, seed=0) for log in logs])
        stacked = _count(lambda: fit_stack([one(log) for log in logs], logs, [0] * k))
        ratio = sum(stacked.values()) / sum(alone.values())
        _say("launches", f"{name}: operators alone x{k} / stack of {k}",
             f"{sum(alone.values())} / {sum(stacked.values())} = ratio {ratio:.3f}")
        fills = {}
        for fill in (True, False):   # the deterministic NaN fill of fresh tensors on / off
            fills[fill] = _fills(lambda: fit_stack([one(log) for log in logs], logs, [0] * k),
                                 fill)
        _say("launches", f"{name}: fill_ operators in the stack's epoch (torch.profiler), "
                         "deterministic fill on / off (as trained)",
             f"{fills[True][0]} / {fills[False][0]} (operators {fills[True][1]} / "
             f"{fills[False][1]})")


def _fills(fn, fill: bool) -> tuple[int, int]:
    """``fill_`` events and all operator events of ``fn`` under torch.profiler, with the
    deterministic fill of fresh tensors forced to ``fill`` (a TorchDispatchMode does not see
    those fills: they run inside the allocating operator, below the dispatcher)."""
    import contextlib

    import torch
    from torch.profiler import ProfilerActivity, profile

    from recaudit.models.sequential import _train

    real = _train.deterministic_torch

    @contextlib.contextmanager
    def forced(num_threads=1, device="cpu", fill_uninitialized=True):
        with real(num_threads, device, fill_uninitialized=fill):
            yield

    _train.deterministic_torch = forced
    try:
        with torch.backends.mkldnn.flags(enabled=False), \
                profile(activities=[ProfilerActivity.CPU]) as prof:
            fn()
    finally:
        _train.deterministic_torch = real
    events = [e for e in prof.key_averages() if e.key.startswith("aten::")]
    return (sum(e.count for e in events if e.key == "aten::fill_"),
            sum(e.count for e in events))


def _epoch_seconds(name: str, device: str, tiny: bool, users: int | None) -> float:
    """A warm epoch of one model alone (its second), in this process."""
    import torch

    torch.set_num_threads(1)
    train, _ = _log("wikipedia", users)
    model = _model(name, device, tiny, epochs=2).fit(train, seed=0)
    return _warm(model)


def epochs(args, end: float) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cpu = {name: subprocess.Popen(
        [sys.executable, __file__, "--_epoch", name, *(["--tiny"] if args.tiny else []),
         *(["--users", str(args.users)] if args.users else [])],
        stdout=subprocess.PIPE, text=True, env=env) for name in SEVEN}
    if args.device != "cpu":
        for name in SEVEN:
            if time.time() > end:
                _say("s/epoch", f"{name} {args.device}", "skipped (budget)")
                continue
            _say("s/epoch", f"{name} {args.device} (warm)",
                 round(_epoch_seconds(name, args.device, args.tiny, args.users), 3))
    for name, proc in cpu.items():
        try:
            out, _ = proc.communicate(timeout=max(1.0, end - time.time()))
            core = json.loads(out.strip().splitlines()[-1])
            _say("s/epoch", f"{name} cpu (1 thread, warm)", round(core, 3))
            gpu = FIGURES["s/epoch"].get(f"{name} {args.device} (warm)")
            if isinstance(gpu, float) and gpu > 0:
                _say("s/epoch", f"{name} {args.device} vs 1 core", round(core / gpu, 2))
        except subprocess.TimeoutExpired:
            proc.kill()
            _say("s/epoch", f"{name} cpu (1 thread)", "not finished within the budget")


def stacks(args, end: float) -> None:
    from recaudit.models.sequential import fit_stack

    train, _ = _log("wikipedia", args.users)
    sizes = [1, 2] if args.tiny else args.stacks
    for name in WINDOW:
        paper_epochs = _model(name, args.device, False).config.epochs
        logs = _audit_logs(train, max(sizes))
        base = None
        for k in sizes:
            if time.time() > end:
                _say("stacks", f"{name} stack {k}", "skipped (budget)")
                continue
            models = fit_stack([_model(name, args.device, args.tiny, epochs=2)
                                for _ in range(k)], logs[:k], [0] * k)
            per_epoch = _warm(models[0])
            rate = 3600 * k / (paper_epochs * per_epoch)
            base = base or rate
            _say("stacks", f"{name} stack {k}: s per warm epoch", round(per_epoch, 3))
            _say("stacks", f"{name} stack {k}: trials/h (fits, {paper_epochs} epochs)",
                 round(rate))
            _say("stacks", f"{name} stack {k}: x stack 1", round(rate / base, 2))


def _worker(args_json: str) -> None:
    """One worker process: train its stacks; print its warm seconds per trial-epoch."""
    from recaudit.models.sequential import fit_stack

    a = json.loads(args_json)
    train, _ = _log("wikipedia", a["users"])
    logs = _audit_logs(train, a["trials"], seed=a["worker"])
    seconds = 0.0
    for lo in range(0, a["trials"], a["stack"]):
        part = logs[lo:lo + a["stack"]]
        models = fit_stack([_model("lstm", a["device"], a["tiny"], epochs=2) for _ in part],
                           part, [0] * len(part))
        seconds += _warm(models[0])
    print(json.dumps(seconds))


def workers(args, end: float) -> None:
    counts = [1, 2] if args.tiny else args.workers
    paper_epochs = _model("lstm", args.device, False).config.epochs
    for stack in (1, 2 if args.tiny else 8):
        for n in counts:
            if time.time() > end:
                _say("workers", f"{n} workers, stacks of {stack}", "skipped (budget)")
                continue
            trials = stack * (1 if args.tiny else 2)
            job = {"device": args.device, "tiny": args.tiny, "users": args.users,
                   "trials": trials, "stack": stack}
            procs = [subprocess.Popen(
                [sys.executable, __file__, "--_worker", json.dumps({**job, "worker": w})],
                stdout=subprocess.PIPE, text=True) for w in range(n)]
            try:
                per_worker = [json.loads(p.communicate(timeout=max(1.0, end - time.time()))[0]
                                         .strip().splitlines()[-1]) for p in procs]
            except subprocess.TimeoutExpired:
                for p in procs:
                    p.kill()
                _say("workers", f"{n} workers, stacks of {stack}", "not finished (budget)")
                continue
            # each worker trains `trials` trials in `seconds` warm seconds per epoch
            rate = sum(3600 * trials / (paper_epochs * s) for s in per_worker)
            _say("workers", f"{n} workers, stacks of {stack}: trials/h (lstm@oh2022 fits)",
                 round(rate))


PARTS = {"identity": identity, "launches": launches, "epochs": epochs, "stacks": stacks,
         "workers": workers}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("out/gpu-check"))
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--users", type=int, default=None,
                    help="users of the Wikipedia-shaped log (default: its 1,914)")
    ap.add_argument("--launch-users", type=int, default=240,
                    help="users of the log whose epoch the launches part counts")
    ap.add_argument("--budget", type=float, default=450.0, help="seconds for the whole run")
    ap.add_argument("--stacks", type=int, nargs="+", default=[1, 8, 16, 32])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--parts", default=",".join(PARTS))
    ap.add_argument("--models", nargs="+", default=list(SEVEN), choices=SEVEN,
                    help="the models the launches part counts (default: all seven)")
    ap.add_argument("--tiny", action="store_true", help="everything small (a CPU test)")
    ap.add_argument("--_epoch", help=argparse.SUPPRESS)
    ap.add_argument("--_worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._epoch:
        print(json.dumps(_epoch_seconds(args._epoch, "cpu", args.tiny, args.users)))
        return
    if args._worker:
        _worker(args._worker)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    for part in args.parts.split(","):
        left = args.budget - (time.time() - start)
        if left <= 1:
            _say("run", part, "skipped (budget)")
            continue
        t0 = time.time()
        try:
            PARTS[part](args, t0 + min(left, args.budget * SHARES[part]))
        except Exception as exc:  # a failed part is reported, the others run
            _say("run", f"{part} failed", f"{type(exc).__name__}: {exc}")
            traceback.print_exc()
        _say("run", f"{part} seconds", round(time.time() - t0, 1))
        (args.out / "figures.json").write_text(json.dumps(FIGURES, indent=1))
    _say("run", "total seconds", round(time.time() - start, 1))
    (args.out / "figures.json").write_text(json.dumps(FIGURES, indent=1))


if __name__ == "__main__":
    main()
