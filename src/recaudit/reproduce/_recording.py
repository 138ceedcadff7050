"""The experiment registry, running one experiment, and its run record.

``run("oh2022-table3", scale="small", root="results/reproduce")`` runs (or resumes) the
experiment in ``<root>/<name>/<scale>/`` (its stores: large, kept out of the repository) and
writes its *record* to ``<records>/<name>/<scale>/`` (default: the same folder; the repository
keeps them under ``docs/reproduction/records``): ``record.json`` — the command, every
invocation's start, wall and CPU time, the machine (CPUs, accelerator), library versions, our
measures, the comparison with the paper and the verdict — and ``samples.parquet``, the
per-(replicate, unit) values behind the measures that the claims and values read, in a compact
form (:mod:`recaudit.reproduce._samples`: a column per key, float32 where exactness does not
matter; :func:`compact_records` migrates older records). A resumed run adds its invocation to
the list (the total wall time is their sum). The report is built from records only, so it can
be regenerated without re-running anything; it compares the recorded measures with the
experiment's current values and claims (:func:`evaluate`), so a corrected comparison needs no
new training.
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
from recaudit.reproduce._experiment import (Experiment, Measures, compare_values,
                                            evaluate_claims, verdict)
from recaudit.reproduce._samples import (SAMPLES, keys_read, read_samples, sample_files,
                                        write_samples)
from recaudit.reproduce._scope import Scope

__all__ = ["DEFAULT_RECORDS", "DEFAULT_ROOT", "available", "compact_records", "evaluate", "get",
           "judge", "load_measures", "load_record", "plan", "refresh", "register", "run"]

DEFAULT_ROOT = Path("results/reproduce")
#: Where the repository keeps the records (``recaudit reproduce run`` writes there when run
#: from a checkout; ``recaudit reproduce report`` reads there by default):
#: ``docs/reproduction/records`` of the checkout the package runs from, found from the
#: package's own location, never from the working directory; an installed package has none
#: (the command then keeps the records beside the stores).
DEFAULT_RECORDS = Path(__file__).resolve().parents[3] / "docs" / "reproduction" / "records"
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


def load_measures(root: Path, record: dict[str, Any]) -> Measures:
    """A record's measures with the samples stored beside it (none for older records)."""
    path = record_path(root, record["experiment"], record["scale"]).with_name(SAMPLES)
    means = record["measures"]
    if not path.exists():
        return Measures(means)
    return Measures(means, read_samples(path))


def sequential_plan(record: dict[str, Any] | None) -> Any:
    """The :class:`~recaudit.stats.SequentialPlan` a record was decided by (its
    ``sequential`` entry: a run with ``--until-decided``), else None. An entry that names no
    spending ``rule`` was written before rules were named: it spent by
    :data:`~recaudit.stats.LEGACY_RULE`."""
    seq = (record or {}).get("sequential")
    if not seq:
        return None
    from recaudit.stats import LEGACY_RULE, SequentialPlan

    return SequentialPlan(alpha=seq["alpha"], cap=seq["cap"], margin=seq.get("margin", 0.0),
                          design=seq.get("design"), rule=seq.get("rule", LEGACY_RULE),
                          futility=seq.get("futility", True), detect=seq.get("detect"))


def evaluate(exp: Experiment, measures: dict[str, float], scale: str | None = None,
             plan: Any = None) -> dict[str, Any]:
    """The comparison of ``measures`` (with their samples, where a :class:`Measures`) with
    ``exp``'s published values and claims at ``scale`` (which says whether the claims were
    tested on other data than the paper's): the ``values``, ``claims``, ``alpha`` and
    ``verdict`` entries of a record. ``plan``: read the claims sequentially
    (:func:`sequential_plan` of the record)."""
    claims = evaluate_claims(exp, measures, scale, plan)
    return {"values": compare_values(exp, measures), "claims": claims, "alpha": exp.alpha,
            "verdict": verdict(exp, measures, claims, scale)}


def plan(name: str, scale: str = "small", root: Path | str = DEFAULT_ROOT, *,
         workers: int = 1, scope: Scope | None = None) -> list[Any]:
    """The audit configs experiment ``name`` would run at ``scale`` (with ``workers`` and
    ``scope``), in order, with their stores under ``root``: its runner called in a
    :func:`~recaudit.reproduce._audit.planning` block, which trains, reads and writes nothing.
    Give each to :func:`recaudit.audit.dry_run` for fits, time and power."""
    from recaudit.reproduce._audit import on_device, planning, stacked

    exp = get(name)
    if not exp.plannable:
        raise ConfigError(f"experiment {name!r} is not a stability audit, so --dry-run cannot "
                          "plan it", hint="run it (its small scale takes minutes) or plan "
                          "the Oh et al. 2022 and Betello et al. 2023 experiments")
    with planning() as configs, on_device((scope or Scope()).device), \
            stacked((scope or Scope()).stack):
        exp.call(Path(root) / name / scale, scale, workers, scope)
    return configs


def _check_device(scope: Scope) -> None:
    """A run that trains on CUDA needs CUDA here (recording with ``--no-train`` does not)."""
    import torch

    if (scope.train and scope.device is not None and scope.device.startswith("cuda")
            and not torch.cuda.is_available()):
        raise ConfigError(f"--device {scope.device}: no CUDA device is available here",
                          key="device", hint="train on a machine with a GPU, record here with "
                          "--no-train from a copy of its store, or leave --device out to train "
                          "on the CPU")


def run(name: str, scale: str = "small", root: Path | str = DEFAULT_ROOT, *,
        workers: int = 1, scope: Scope | None = None,
        records: Path | str | None = None, until: Any = None, budget: float | None = None,
        progress: Any = None) -> dict[str, Any]:
    """Run (or resume) experiment ``name`` at ``scale``; write and return its record.
    ``scope``: fewer seeds, draws, models or perturbations than the scale's (recorded, and
    named in the record's scale note). ``records``: where the record goes (default: beside
    the stores). ``until`` (a :class:`~recaudit.stats.SequentialPlan` with the cap and
    margin; its alpha is replaced by the paper's): run in rounds until the claims are decided
    (:func:`_rounds`), ``budget`` seconds at most; ``progress(message)`` says what each round
    does."""
    from recaudit.reproduce._audit import on_device, stacked, trained_on

    exp = get(name)
    if exp.unavailable:
        raise ConfigError(f"experiment {name!r} cannot run here: {exp.unavailable}")
    if scale not in exp.scales:
        raise ConfigError(f"experiment {name!r} has no scale {scale!r}; choose one of "
                          f"{', '.join(exp.scales)}")
    workdir = Path(root) / name / scale
    records = Path(records) if records is not None else Path(root)
    scope = scope or Scope()
    _check_device(scope)
    started, load0, cpu0 = time.time(), os.getloadavg()[0], _cpu_seconds()
    sequential = None
    with on_device(scope.device), stacked(scope.stack), trained_on() as devices:
        if until is None:
            measures = exp.run(workdir, scale, workers, scope)
        else:
            measures, sequential, scope = _rounds(exp, workdir, scale, workers, scope, until,
                                                  budget, progress, records)
    finished, cpu = time.time(), _cpu_seconds() - cpu0
    note = exp.scales[scale]
    flags = scope.flags()
    grid = scope.grid.flags()
    if grid and sequential is None:  # a run until decided says its rounds instead
        note += f"; part of the grid only, for time:{grid.replace(' --', ' ')}"
    # the samples first, in the compact form; the verdict is that of what the page will read
    path = record_path(records, name, scale)
    write_samples(path.with_name(SAMPLES), getattr(measures, "samples", {}), keys_read(exp))
    plan_used = None if sequential is None else sequential_plan({"sequential": sequential})
    judged = evaluate(exp, Measures(measures, read_samples(path.with_name(SAMPLES))), scale,
                      plan_used)
    if sequential is not None:
        sequential["claims"] = _sequential_claims(judged["claims"])
    if not scope.train:
        missing = any(c["state"] == "not measured" for c in judged["claims"])
        note += ("; recorded from the trials the stores held (--no-train): "
                 + ("a run stopped part-way, whose unfinished claims are not measured"
                    if missing else "every claim's trials were there (trained by this or "
                    "another experiment's run on the same store)"))
    if sequential is not None:
        flags = "".join(f" --{k} {v}" for k, v in (("models", None if scope.models is None
                                                    else ",".join(scope.models)),
                                                   ("device", scope.device)) if v)
        flags += (f" --until-decided --max-{sequential['grows']} {sequential['cap']}"
                  + (f" --margin {sequential['margin']:g}" if sequential["margin"] else ""))
        last = sequential["rounds"][-1][sequential["grows"]] if sequential["rounds"] else 0
        note += (f"; run until decided: {len(sequential['rounds'])} round(s) of "
                 f"{sequential['grows']}, up to {last}, stopped: {STOPPED[sequential['stopped']]}")
    command = (f"recaudit reproduce run {name} --scale {scale}{flags}"
               + (f" --workers {workers}" if workers > 1 else ""))
    this = {"command": command, "started": time.strftime("%Y-%m-%d %H:%M",
                                                         time.localtime(started)),
            "wall_seconds": round(finished - started, 1), "cpu_seconds": round(cpu, 1),
            "workers": workers, "load_average": [round(load0, 2), round(os.getloadavg()[0], 2)],
            "machine": _machine()}
    # the runs so far: the record here, else one the stores' folder holds (a record written
    # beside the stores, e.g. by an earlier version, before the records moved)
    earlier = load_record(records, name, scale) or load_record(Path(root), name, scale) or {}
    same = earlier.get("scope") == scope.to_dict()
    before = earlier.get("invocations") or ([{
        k: earlier.get(k) for k in ("command", "started", "wall_seconds", "cpu_seconds",
                                    "workers", "load_average", "machine")}]
        if earlier.get("wall_seconds") is not None else [])
    invocations = (before if same else []) + [this]
    record = {
        "experiment": name, "paper": exp.paper, "title": exp.title, "scale": scale,
        "scale_note": note,
        "scope": scope.to_dict(),
        "command": command, "started": invocations[0]["started"],
        "wall_seconds": round(sum(i["wall_seconds"] for i in invocations), 1),
        "cpu_seconds": round(sum(i.get("cpu_seconds") or 0.0 for i in invocations), 1),
        "workers": workers, "load_average": this["load_average"],
        "invocations": invocations, "machine": this["machine"], "versions": versions(),
        "trained_on": {m: devices[m] for m in sorted(devices)},
        "measures": {k: measures[k] for k in sorted(measures)},
        **judged,
        **({"sequential": sequential} if sequential is not None else {}),
    }
    _save(path, record)
    return record


def _save(path: Path, record: dict[str, Any]) -> None:
    atomic_text(path, json.dumps(record, indent=1, default=float))


def _sequential_claims(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A sequential record's claims: each one's state and the replicates of its last look."""
    return [{"text": c["text"], "state": c["state"],
             "replicates": max((t.get("look", 0) for t in c["tests"]), default=0)}
            for c in claims]


def _decisions(record: dict[str, Any]) -> tuple[Any, ...]:
    """What a record decides: its verdict and each claim's state."""
    return record.get("verdict"), [(c.get("text"), c.get("state"))
                                   for c in record.get("claims", ())]


def judge(root: Path | str, exp: Experiment, scale: str
          ) -> tuple[dict[str, Any], Measures, bool] | None:
    """``exp``'s record at ``scale`` under ``root`` (None if there is none) with its
    comparison made anew: the recorded measures and samples are the data, the values,
    claims and verdict are today's (:func:`evaluate`, read sequentially where the record was
    run until decided). Returns that record, its measures and whether the stored comparison
    was stale: its verdict or a claim's state differs from today's (the experiment's claims
    or their tests changed since it was written). p-values that move in their last digits
    between machines do not make a record stale, so refreshing it is no churn."""
    rec = load_record(Path(root), exp.name, scale)
    if rec is None:
        return None
    measures = load_measures(Path(root), rec)
    now = {**rec, **evaluate(exp, measures, scale, sequential_plan(rec))}
    if now.get("sequential"):
        now["sequential"] = {**now["sequential"], "claims": _sequential_claims(now["claims"])}
    return now, measures, _decisions(now) != _decisions(rec)


def refresh(root: Path | str, record: dict[str, Any]) -> Path:
    """Rewrite ``record`` (one :func:`judge` found stale, with today's comparison) in place,
    atomically; its measures, samples and invocations are as they were."""
    path = record_path(Path(root), record["experiment"], record["scale"])
    _save(path, record)
    return path


#: why a run that went on until decided stopped
STOPPED = {"decided": "every claim is decided",
           "beyond cap": "the undecided comparisons would need more replicates than the cap",
           "futility": "the undecided comparisons stopped for futility: the cap would not "
           "decide the differences their intervals still allow",
           "cap": "the cap is spent", "budget": "the next round would not finish within the "
           "budget"}


def _rounds(exp: Experiment, workdir: Path, scale: str, workers: int, scope: Scope, until: Any,
            budget: float | None, progress: Any, records: Path | None = None
            ) -> tuple[Measures, dict[str, Any], Scope]:
    """Run ``exp`` in rounds until its claims are decided (``reproduce run
    --until-decided``): each round grows ``exp.grows`` (seeds or draws) to the next rung the
    undecided comparisons ask for (:mod:`recaudit.reproduce._sequential`), and only for the
    models they read where the experiment takes ``--models`` (the first part of their keys);
    the others keep their measures. Returns the measures, the record's ``sequential`` entry
    and the final scope."""
    import dataclasses

    from recaudit.reproduce._sequential import decide_sequential

    if exp.grows is None:
        raise ConfigError(f"experiment {exp.name!r} cannot run until decided: its values are "
                          "exact (nothing to repeat)")
    plan = dataclasses.replace(until, alpha=exp.alpha)
    earlier = load_record(records, exp.name, scale) if records is not None else None
    if earlier and earlier.get("sequential", {}).get("design"):  # a run continued: its design
        plan = dataclasses.replace(plan, design=earlier["sequential"]["design"],  # and rule
                                   rule=sequential_plan(earlier).rule)
    elif plan.design is None:
        plan = dataclasses.replace(plan, design=plan.cap)
    say = progress or (lambda message: None)
    if plan.calibrated and plan.cap > plan.design:
        say(f"the design of {exp.name}'s first run ends at {plan.design} {exp.grows} (its "
            f"alpha is spent there): the cap stays {plan.design}")
        plan = dataclasses.replace(plan, cap=plan.design)
    started = time.perf_counter()
    n = plan.first(getattr(scope, exp.grows) or 0)
    models = scope.models
    measures = Measures()
    rounds: list[dict[str, Any]] = []
    stopped = "decided"
    while True:
        part = _grown(dataclasses.replace(scope, models=models), exp.grows, n)
        say(f"round {len(rounds) + 1}: {exp.name} to {n} {exp.grows}"
            + (f" ({', '.join(models)})" if models else ""))
        t0 = time.perf_counter()
        measures.merge(exp.run(workdir, scale, workers, part))
        rules = [c.rule for c in exp.claims if any(k in measures for k in c.keys)]
        _, found = decide_sequential(rules, measures.samples, measures, plan)
        leaves = {id(leaf): leaf for r in rules for leaf in r.leaves()}
        open_ = [(found[i], leaves[i]) for i in found if found[i].truth is None
                 and found[i].next is not None]
        rounds.append({"round": len(rounds) + 1, exp.grows: n, "models": list(models or []),
                       "seconds": round(time.perf_counter() - t0, 1),
                       "open": len(open_)})
        if not open_:
            why = {f.stop for f in found.values() if f.truth is None and not f.equivalent
                   and f.test == "sequential"}
            stopped = next((w for w in ("cap", "futility", "beyond cap") if w in why),
                           "decided")
            break
        nxt = max(int(f.next or 0) for f, _ in open_)
        if budget is not None:
            before = int(rounds[-2][exp.grows]) if len(rounds) > 1 else 0
            per = float(rounds[-1]["seconds"]) / max(1, n - before)
            if time.perf_counter() - started + per * (nxt - n) > budget:
                stopped = "budget"
                break
        wanted = sorted({leaf._keys()[0].split("/", 1)[0] for _, leaf in open_}
                        | {k.split("/", 1)[0] for _, leaf in open_ for k in leaf._keys()})
        models = tuple(wanted) if scope.models is None and exp.models and \
            set(wanted) <= set(exp.models) else scope.models
        n = nxt
    final = _grown(scope, exp.grows, n)
    return measures, {"alpha": plan.alpha, "cap": plan.cap, "design": plan.design,
                      "rule": plan.rule, "margin": plan.margin, "futility": plan.futility,
                      "detect": plan.detect, "grows": exp.grows, "rounds": rounds,
                      "stopped": stopped}, final


def _grown(scope: Scope, grows: str, n: int) -> Scope:
    """``scope`` extended to ``n`` seeds or draws."""
    import dataclasses

    if grows == "seeds":
        return dataclasses.replace(scope, extend=True, seeds=n)
    return dataclasses.replace(scope, extend=True, draws=n)


def compact_records(root: Path | str) -> list[tuple[Path, int, int]]:
    """Rewrite every ``<root>/<experiment>/<scale>/samples.parquet`` in the compact form,
    keeping the keys the experiment's claims and values read; ``(path, bytes before, bytes
    after)`` per file (all its parts). Idempotent. The kept keys are all the evaluation
    reads and the values come back exact or within float32's precision, so no claim's state
    and no verdict changes (:mod:`recaudit.reproduce._samples`: a rank test's p-value may move
    in its second significant digit). A folder of an experiment no longer registered is left alone."""
    exps = {e.name: e for e in available()}
    done = []
    for path in sorted(Path(root).glob(f"*/*/{SAMPLES}")):
        exp = exps.get(path.parent.parent.name)
        if exp is None:
            continue
        before = sum(f.stat().st_size for f in sample_files(path))
        files = write_samples(path, read_samples(path), keys_read(exp))
        done.append((path, before, sum(f.stat().st_size for f in files)))
    return done
