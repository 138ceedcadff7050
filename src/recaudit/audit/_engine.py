"""The audit engine: expand a config into trials, skip finished ones, run, store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from recaudit.audit._runner import TrialOutcome, run_trial
from recaudit.audit._spec import AuditConfig, TrialSpec
from recaudit.experiment import Store, data_summary, prepare, run_pending

__all__ = ["run_audit", "plan", "validate", "Progress"]

#: ``progress(event, trial, done, total)`` with event in {"skip", "done"}.
Progress = Callable[[str, TrialSpec | None, int, int], None]


def validate(config: AuditConfig) -> None:
    """Fail fast, before any data is loaded: every model name and parameter, every
    perturbation must be valid (raises :class:`~recaudit.errors.ConfigError`)."""
    from recaudit.models import create
    from recaudit.perturb import parse

    for m in config.models:
        create(m.name, **m.params)
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


def _run_job(trial: TrialSpec, perturbation: Any, audit: str, cache_dir: str,
             baseline_key: str) -> TrialOutcome:
    """One executor job (``baseline_key`` groups the jobs that share a baseline)."""
    return run_trial(trial, perturbation, audit=audit, cache_dir=cache_dir)


def _write(store: Store, outcome: TrialOutcome) -> str:
    store.write_trial(outcome.row, outcome.queries, outcome.record)
    return str(outcome.row["trial_id"])


def run_audit(config: AuditConfig, *, progress: Progress | None = None) -> Path:
    """Run every trial of ``config`` not yet in its store; returns the store path.

    Re-running the same config resumes: finished trials (by id) are skipped. Results are
    written by this process only, one transaction per trial.
    """
    from recaudit.perturb import parse

    output = Path(config.output)
    planned = plan(config)
    cache = str(output.with_name(output.name + ".baselines"))
    jobs = [(tid, (t, parse(t.perturbation), config.name, cache, key))
            for t, tid, key in planned]
    by_id = {tid: t for t, tid, _ in planned}
    with Store(output) as store:
        store.set_meta("config", config.to_dict())
        store.set_meta("data", {d.label: data_summary(*prepare(d, config.split))
                                for d in config.datasets})

        def report(tid: str | None, done: int, total: int) -> None:
            if progress is not None:
                progress("skip" if tid is None else "done", by_id.get(tid or ""), done, total)

        run_pending(store, store.finished(), jobs, _run_job, config.executor, _write,
                    group=lambda job: job[4], progress=report)
    return output
