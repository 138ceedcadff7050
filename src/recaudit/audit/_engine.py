"""The audit engine: expand a config into trials, skip finished ones, run, store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from recaudit.audit._runner import Baseline, TrialOutcome, make_baseline, run_trial
from recaudit.audit._spec import AuditConfig, TrialSpec
from recaudit.errors import RecauditError
from recaudit.experiment import Store, data_summary, prepare, run_pending

__all__ = ["run_audit", "plan", "validate", "Progress"]

#: ``progress(event, trial, done, total)`` with event in {"skip", "done"}.
Progress = Callable[[str, TrialSpec | None, int, int], None]


def validate(config: AuditConfig) -> None:
    """Fail fast, before any data is loaded: every model name and parameter, every
    perturbation must be valid (raises :class:`~recaudit.errors.ConfigError`)."""
    from recaudit.perturb import parse

    for m in config.models:
        m.create()
    for p in config.perturbations:
        parse(p)


def plan(config: AuditConfig) -> list[tuple[TrialSpec, str, str]]:
    """Every trial of ``config`` with its trial id and baseline key (loads the data)."""
    validate(config)
    out = []
    for trial in config.trials():
        log, _ = prepare(trial.dataset, trial.split)
        fp = log.fingerprint()
        out.append((trial, trial.trial_id(fp), trial.baseline_key(fp)))
    return out


def _run_job(trial: TrialSpec, perturbation: Any, audit: str, cache: str | None,
             baseline_key: str, charge: bool, baseline: Baseline | None = None) -> TrialOutcome:
    """One executor job (``baseline_key`` groups the jobs that share a baseline; ``charge``:
    the first pending job of its group, which counts a baseline made elsewhere in its
    timings; ``baseline``: that baseline, on Ray)."""
    return run_trial(trial, perturbation, audit=audit, cache_dir=cache, baseline=baseline,
                     charge_baseline=charge)


def _baseline_job(trial: TrialSpec, perturbation: Any, audit: str, cache: str | None,
                  baseline_key: str, charge: bool) -> Baseline:
    """The shared product of a baseline group on Ray: its baseline, made once."""
    return make_baseline(trial, cache)


def _cache(config: AuditConfig) -> str | None:
    """Where baselines are cached: ``executor.cache_uri``, else next to the store (one
    machine), else nowhere (Ray: they travel as object references)."""
    ex = config.executor
    if ex.cache_uri is not None:
        return ex.cache_uri
    if ex.kind == "ray":
        return None
    output = Path(config.output)
    return str(output.with_name(output.name + ".baselines"))


def run_audit(config: AuditConfig, *, progress: Progress | None = None) -> Path:
    """Run every trial of ``config`` not yet in its store; returns the store path.

    Re-running the same config resumes: finished trials (by id) are skipped. Results are
    written by this process only, one transaction per trial; a result whose id was not planned
    (a worker saw other data) is refused before anything is written.
    """
    from recaudit.perturb import parse

    output = Path(config.output)
    planned = plan(config)
    cache = _cache(config)
    by_id = {tid: t for t, tid, _ in planned}
    with Store(output) as store:
        done = store.finished()
        charged: set[str] = set()
        jobs = []
        for t, tid, key in planned:
            first = tid not in done and key not in charged
            if first:
                charged.add(key)
            jobs.append((tid, (t, parse(t.perturbation), config.name, cache, key, first)))
        store.set_meta("config", config.to_dict())
        store.set_meta("data", {d.label: data_summary(*prepare(d, config.split))
                                for d in config.datasets})

        def write(store: Store, outcome: TrialOutcome) -> str:
            tid = str(outcome.row["trial_id"])
            if tid not in by_id:
                raise RecauditError(f"a worker returned trial {tid}, which this audit did not "
                                    f"plan: its data (fingerprint "
                                    f"{outcome.row['data_fingerprint'][:12]}) differ from the "
                                    "driver's; run the same recaudit and data on every node")
            store.write_trial(outcome.row, outcome.queries, outcome.record)
            return tid

        def report(tid: str | None, done: int, total: int) -> None:
            if progress is not None:
                progress("skip" if tid is None else "done", by_id.get(tid or ""), done, total)

        run_pending(store, done, jobs, _run_job, config.executor, write,
                    group=lambda job: job[4], share=_baseline_job,
                    data=lambda job: (job[0].dataset,), progress=report)
    return output
