"""The experiment registry, running one experiment, and its run record.

``run("oh2022-table3", scale="small", root="results/reproduce")`` runs (or resumes) the
experiment in ``<root>/<name>/<scale>/`` and writes ``record.json`` there: the command, start
and end, wall time of this invocation, the machine (CPUs, accelerator), library versions, our
measures, the comparison with the paper and the verdict. The report is built from these
records only, so it can be regenerated without re-running anything; it compares the recorded
measures with the experiment's current values and claims (:func:`evaluate`), so a corrected
comparison (a published value moved to the panel it belongs to) needs no new training.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import time
from pathlib import Path
from typing import Any

from recaudit._files import atomic_text
from recaudit._version import versions
from recaudit.errors import ConfigError, did_you_mean
from recaudit.reproduce._experiment import Experiment, Scope, compare_values, verdict

__all__ = ["register", "get", "available", "run", "load_record", "evaluate", "DEFAULT_ROOT"]

DEFAULT_ROOT = Path("results/reproduce")
#: The paper modules, in the order the report shows them; each declares ``EXPERIMENTS``.
PAPERS = ("_oh2022", "_betello2023", "_zhu2023", "_shriver2018")
_EXTRA: dict[str, Experiment] = {}


def register(exp: Experiment) -> Experiment:
    """Add an experiment of your own (shown after the papers' ones)."""
    if exp.name in _EXTRA:
        raise ValueError(f"experiment {exp.name!r} registered twice")
    _EXTRA[exp.name] = exp
    return exp


def available() -> list[Experiment]:
    """Every experiment: the papers' (:data:`PAPERS` order), then registered ones."""
    import importlib

    exps: list[Experiment] = []
    for mod in PAPERS:
        try:
            module = importlib.import_module(f"recaudit.reproduce.{mod}")
        except ModuleNotFoundError as e:  # a paper module not written yet
            if e.name != f"recaudit.reproduce.{mod}":
                raise
            continue
        exps.extend(getattr(module, "EXPERIMENTS", ()))
    exps += [e for e in _EXTRA.values() if e not in exps]
    names = [e.name for e in exps]
    if len(names) != len(set(names)):
        raise ValueError(f"experiment names must be unique: {sorted(names)}")
    return exps


def get(name: str) -> Experiment:
    exps = {e.name: e for e in available()}
    if name not in exps:
        raise ConfigError(f"unknown experiment {name!r}; `recaudit reproduce list` shows them."
                          + did_you_mean(name, exps))
    return exps[name]


def _machine() -> dict[str, Any]:
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"host": socket.gethostname(), "cpus": os.cpu_count(),
            "machine": platform.machine(), "gpu": gpu}


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (worker processes): unlike wall
    time, it does not grow when other programs share the machine."""
    import resource

    return sum(resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))


def record_path(root: Path, name: str, scale: str) -> Path:
    return Path(root) / name / scale / "record.json"


def load_record(root: Path, name: str, scale: str) -> dict[str, Any] | None:
    p = record_path(root, name, scale)
    return json.loads(p.read_text()) if p.exists() else None


def evaluate(exp: Experiment, measures: dict[str, float]) -> dict[str, Any]:
    """The comparison of ``measures`` with ``exp``'s published values and claims: the
    ``values``, ``claims`` and ``verdict`` entries of a record."""
    return {"values": compare_values(exp, measures),
            "claims": [{"text": c.text, "source": c.source, "holds": c.check(measures)}
                       for c in exp.claims],
            "verdict": verdict(exp, measures)}


def run(name: str, scale: str = "small", root: Path | str = DEFAULT_ROOT, *,
        workers: int = 1, scope: Scope | None = None) -> dict[str, Any]:
    """Run (or resume) experiment ``name`` at ``scale``; write and return its record.
    ``scope``: fewer seeds, draws or models than the scale's (recorded, and named in the
    record's scale note)."""
    exp = get(name)
    if exp.unavailable:
        raise ConfigError(f"experiment {name!r} cannot run here: {exp.unavailable}")
    if scale not in exp.scales:
        raise ConfigError(f"experiment {name!r} has no scale {scale!r}; choose one of "
                          f"{', '.join(exp.scales)}")
    workdir = Path(root) / name / scale
    started, load0, cpu0 = time.time(), os.getloadavg()[0], _cpu_seconds()
    scope = scope or Scope()
    measures = exp.run(workdir, scale, workers, scope)
    finished, cpu = time.time(), _cpu_seconds() - cpu0
    note = exp.scales[scale]
    flags = scope.flags()
    if flags:
        note += f"; part of the grid only, for time:{flags.replace(' --', ' ')}"
    record = {
        "experiment": name, "paper": exp.paper, "title": exp.title, "scale": scale,
        "scale_note": note,
        "scope": {"seeds": scope.seeds, "draws": scope.draws,
                  "models": None if scope.models is None else list(scope.models)},
        "command": f"recaudit reproduce run {name} --scale {scale}{flags}"
                   + (f" --workers {workers}" if workers > 1 else ""),
        "started": time.strftime("%Y-%m-%d %H:%M", time.localtime(started)),
        "wall_seconds": round(finished - started, 1), "workers": workers,
        "load_average": [round(load0, 2), round(os.getloadavg()[0], 2)],
        "cpu_seconds": round(cpu, 1),
        "machine": _machine(), "versions": versions(),
        "measures": {k: measures[k] for k in sorted(measures)},
        **evaluate(exp, measures),
    }
    atomic_text(record_path(Path(root), name, scale), json.dumps(record, indent=1, default=float))
    return record
