"""The audit engine: expand a config into trials, skip finished ones, run, store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from recaudit.audit._config import config_to_dict
from recaudit.audit._executors import execute
from recaudit.audit._runner import prepare
from recaudit.audit._spec import AuditConfig, TrialSpec
from recaudit.audit._store import Store

__all__ = ["run_audit", "plan", "validate", "Progress"]

#: ``progress(event, trial, done, total)`` with event in {"start", "skip", "done"}.
Progress = Callable[[str, TrialSpec | None, int, int], None]


def validate(config: AuditConfig) -> None:
    """Fail fast, before any data is loaded: every model name and parameter, every
    perturbation must be valid (raises :class:`~recaudit.errors.ConfigError`)."""
    from recaudit.audit._runner import perturbation_spec
    from recaudit.models import create

    for m in config.models:
        create(m.name, **m.params)
    for p in config.perturbations:
        perturbation_spec(p)


def plan(config: AuditConfig) -> list[tuple[TrialSpec, str, str]]:
    """Every trial of ``config`` with its trial id and baseline key (loads the data)."""
    validate(config)
    out = []
    for trial in config.trials():
        log, _ = prepare(trial.dataset, trial.split)
        fp = log.fingerprint()
        out.append((trial, trial.trial_id(fp), trial.baseline_key(fp)))
    return out


def run_audit(config: AuditConfig, *, progress: Progress | None = None) -> Path:
    """Run every trial of ``config`` not yet in its store; returns the store path.

    Re-running the same config resumes: finished trials (by id) are skipped. Results are
    written by this process only, one transaction per trial.
    """
    output = Path(config.output)
    planned = plan(config)
    with Store(output) as store:
        store.set_meta("config", config_to_dict(config))
        summaries = {}
        for d in config.datasets:
            log, split = prepare(d, config.split)
            summaries[d.label] = {"interactions": len(log), "users": log.n_users,
                                  "items": log.n_items, "fingerprint": log.fingerprint(),
                                  **split.summary()}
        store.set_meta("data", summaries)
        done_ids = store.finished()
        total = len(planned)
        n_done = sum(tid in done_ids for _, tid, _ in planned)
        if progress:
            progress("skip", None, n_done, total)
        jobs = [(t, key) for t, tid, key in planned if tid not in done_ids]
        cache = output.with_name(output.name + ".baselines")
        for outcome in execute(jobs, config.executor, audit=config.name, cache_dir=str(cache)):
            store.write_trial(outcome.row, outcome.queries, outcome.record)
            n_done += 1
            if progress:
                progress("done", _trial_of(planned, outcome.row["trial_id"]), n_done, total)
    return output


def _trial_of(planned: list[tuple[TrialSpec, str, str]], trial_id: str) -> TrialSpec | None:
    return next((t for t, tid, _ in planned if tid == trial_id), None)
