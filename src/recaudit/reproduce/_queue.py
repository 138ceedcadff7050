"""The queue for a GPU: the next missing paper-scale trials, in priority order, within a time.

A GPU is lent to this project only now and then, for minutes. ``recaudit reproduce queue
--minutes N --dir OUT`` spends them on what the records still lack, in the order of
:data:`QUEUE`:

1. Oh et al. 2022 Table 3's second and third seeds for LSTM and TiSASRec (the paper's 3
   seeds; the CPU cannot train these at paper scale: about an hour a fit);
2. Table 4's perturbation draws (the paper's 10);
3. Betello et al. 2023's ML-100k runs at their settings (up to 300 epochs, patience 50,
   prefix samples); the removal experiment's ``+inputs`` twin trains nothing of its own (its
   fits are the removal's, kept finished: ``[executor] keep_fits``);
4. Oh et al. 2022 Figure 3 at the paper's 3 seeds (the record has seed 0 of all four models,
   trained on two CPU cores on 2026-11-29: JODIE, LatentCross, LSTM and TiSASRec fits of 50
   epochs took 3-22 min on Wikipedia and 15-58 min on Foursquare, one core each; the queue's
   run trains seed 0 again unless its stores start from the record's).

Each item is an ordinary ``reproduce run`` (stacked with ``--stack``, on ``--device``) into
the stores of ``OUT``, resumable trial by trial. A timer stops the run ``margin`` seconds
before the time is up — as Ctrl-C would: the finished trials are in the stores, the running
ones are abandoned, their fits' state kept at their last kept epoch in ``<store>.fits.d``
(:func:`recaudit._resume.resumable`) — so that the stores are closed and complete when the
machine is given back. ``OUT/queue.json`` then says what each item holds and the commands that bring it home:
``recaudit merge`` of each store into the stores the records come from, and the
``reproduce run ... --no-train`` that records an item whose trials are all there. A later
call with the same ``OUT`` (the folder carried back to a GPU machine, ``fits.d`` folders
included) goes on where this one stopped, the abandoned fits from their kept epochs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recaudit._files import atomic_text
from recaudit.reproduce._scope import Scope

__all__ = ["QUEUE", "QueueItem", "run_queue"]


@dataclass(frozen=True)
class QueueItem:
    """One entry of the queue: an experiment at a scale and the part of its grid to train."""

    experiment: str
    scale: str
    scope: Scope
    why: str


#: What the GPU trains, most wanted first (module docstring).
QUEUE: tuple[QueueItem, ...] = (
    QueueItem("oh2022-table3", "paper", Scope(seeds=3, models=("lstm", "tisasrec")),
              "Oh et al. 2022 Table 3: LSTM and TiSASRec with the paper's 3 seeds (the "
              "record has 1)"),
    QueueItem("oh2022-table4", "paper", Scope(draws=10),
              "Oh et al. 2022 Table 4: the paper's 10 perturbation draws (the record has 2)"),
    QueueItem("betello2023-table2", "paper", Scope(),
              "Betello et al. 2023 Table 2 on ML-100k at the paper's settings"),
    QueueItem("betello2023-removal", "paper", Scope(),
              "Betello et al. 2023 removal (Table 3, Figures 1-2) on ML-100k at the paper's "
              "settings"),
    QueueItem("betello2023-removal-inputs", "paper", Scope(),
              "Betello et al. 2023 removal with the test inputs cut too (Table 3's setting): "
              "the removal item's fits, kept finished in fits.d, so ranking only"),
    QueueItem("oh2022-figure3", "paper", Scope(seeds=3),
              "Oh et al. 2022 Figure 3: the paper's 3 seeds on Foursquare and Wikipedia (the "
              "record has 1, all four models, trained on the CPU)"),
)


@contextlib.contextmanager
def _timer(seconds: float) -> Iterator[None]:
    """Interrupt the main thread as Ctrl-C would after ``seconds`` (SIGALRM)."""
    def ring(signum, frame):  # noqa: ARG001 - a signal handler's signature
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(0.001, seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _scope(d: dict[str, Any]) -> Scope:
    """A :class:`Scope` from its ``to_dict``."""
    models = d.get("models")
    perts = d.get("perturbations")
    return Scope(d.get("seeds"), d.get("draws"), None if models is None else tuple(models),
                 perturbations=None if perts is None else tuple(perts))


def _stores(root: Path) -> list[str]:
    return sorted(str(p) for p in root.glob("*.duckdb"))


def run_queue(root: Path | str, minutes: float, *, device: str | None = None, stack: int = 1,
              workers: int = 1, margin: float = 30.0, items: tuple[QueueItem, ...] = QUEUE,
              progress: Callable[[str], None] | None = None,
              runner: Callable[..., dict[str, Any]] | None = None) -> dict[str, Any]:
    """Train the queue's items in order into ``root`` for at most ``minutes`` (module
    docstring); returns (and writes to ``root/queue.json``) what each item holds."""
    from recaudit.errors import ConfigError
    from recaudit.experiment import kept_fits
    from recaudit.reproduce._recording import run

    if minutes <= 0:
        raise ConfigError(f"--minutes must be positive, got {minutes:g}", key="minutes")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda message: None)
    go = runner or run
    end = time.monotonic() + 60.0 * minutes - margin
    done: list[dict[str, Any]] = []
    for item in items:
        left = end - time.monotonic()
        entry: dict[str, Any] = {"experiment": item.experiment, "scale": item.scale,
                                 "scope": item.scope.to_dict(), "why": item.why}
        if left <= 0:
            entry["state"] = "not started (time up)"
            done.append(entry)
            continue
        scope = dataclasses.replace(item.scope, device=device, stack=stack)
        say(f"{item.experiment} ({item.scale}{scope.grid.flags()}): {left / 60:.1f} min left")
        t0 = time.monotonic()
        try:
            with _timer(left):
                rec = go(item.experiment, item.scale, root, workers=workers, scope=scope,
                         records=root / "records")
            entry.update(state="complete", verdict=rec.get("verdict"))
        except KeyboardInterrupt:
            entry["state"] = ("stopped (time up): the finished trials are in the stores, the "
                              "fits in flight kept in their <store>.fits.d")
        entry["seconds"] = round(time.monotonic() - t0, 1)
        done.append(entry)
        if entry["state"] != "complete":
            for rest in items[items.index(item) + 1:]:
                done.append({"experiment": rest.experiment, "scale": rest.scale,
                             "scope": rest.scope.to_dict(), "why": rest.why,
                             "state": "not started (time up)"})
            break
    stores = _stores(root)
    summary = {"minutes": minutes, "device": device, "stack": stack, "items": done,
               "stores": stores,
               # the fits a stopped item kept: the next call with this folder resumes them
               # (and the finished fits the Betello et al. 2023 items keep for their twins)
               "kept": [{"store": s, **fit} for s in stores for fit in kept_fits(s)],
               "merge": [f"recaudit merge results/reproduce/{Path(s).name} {s}" for s in stores],
               "record": [f"recaudit reproduce run {d['experiment']} --scale {d['scale']}"
                          + _scope(d["scope"]).flags() + " --no-train"
                          for d in done if d["state"] != "not started (time up)"]}
    atomic_text(root / "queue.json", json.dumps(summary, indent=1))
    return summary
