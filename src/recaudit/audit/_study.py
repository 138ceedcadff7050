"""The audit as a study: its trials, how one runs, how it is stored.

:class:`AuditStudy` is the stability audit on the experiment layer
(:func:`recaudit.experiment.run_study`): a config expands into :class:`AuditJob` s (the trial
spec with its perturbation parsed once, the baseline key that groups the trials sharing a
baseline: a process pool trains it first (:func:`prime_baseline`) and then runs the whole
group at once — or, when no trial of the group reads the baseline before it compares
(:func:`~recaudit.audit._runner.baseline_last`: random deletions, reseeds, removals, CASPER's
edits), runs the group beside its priming, each trial taking the baseline after its own fit —
the in-process executor lets the group's first trial train it, Ray makes it as a task of its
own; a resumed run that finds it cached trains none), which any executor runs and whose
outcomes land in the audit's tables (:mod:`recaudit.audit._store`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from recaudit.audit._context import cache_key
from recaudit.audit._data import keep_data, kept_fingerprints
from recaudit.audit._baselines import Baseline, make_baseline, prime_baseline
from recaudit.audit._runner import TrialOutcome, baseline_last, run_trial
from recaudit.audit._stacking import run_stack
from recaudit.audit._spec import DEFAULT_DEPTH, AuditConfig, TrialSpec, build_model
from recaudit.audit._store import (DATASETS, PERTURBATIONS, QUERY_RESULTS, TRIALS, AuditStore,
                                   write_trial)
from recaudit.experiment import (ArrayCache, ExecutorSpec, Store, Table, Trial, canonical_json,
                                 data_summary, identity, prepare, run_study)
from recaudit.perturb import Perturbation

__all__ = ["AuditJob", "AuditStudy", "run_audit", "plan", "validate", "Progress"]

#: ``progress(event, trial, done, total)``: ``"baselines"`` (once, before a run with trials to
#: run, ``trial`` None: ``done`` of the ``total`` baselines those trials need are cached and
#: reused), ``"skip"`` (once: ``done`` trials of ``total`` already stored), ``"done"`` (after
#: each trial).
Progress = Callable[[str, TrialSpec | None, int, int], None]


def validate(config: AuditConfig) -> None:
    """Fail before the first fit: every model must build (raises
    :class:`~recaudit.errors.ConfigError`; model names and parameters, perturbations and seeds
    were checked when the config was built, without importing any model; :func:`plan` checks
    ``metrics.k`` against each catalogue before this, which imports what trains each model)."""
    warm = [p for p in config.perturbations if getattr(_parsed(p).needs, "warm", False)]
    for m in config.models:
        model = build_model(m)
        for p in warm:  # a warm start must be declared before the first fit
            from recaudit.audit._warm import check_warm

            check_warm(model, m.label, p if isinstance(p, str) else _parsed(p).name)


def _parsed(perturbation: Any) -> Any:
    from recaudit.perturb import parse

    return parse(perturbation)


def _check_k(config: AuditConfig, dataset, log) -> None:
    from recaudit.errors import ConfigError

    if config.metrics.k > log.n_items:
        raise ConfigError(f"k = {config.metrics.k} exceeds the {log.n_items} items of "
                          f"dataset {dataset.label!r}", key="metrics.k",
                          hint=f"choose k <= {log.n_items} (--k)")


@dataclass(frozen=True)
class AuditJob:
    """What a worker needs to run one trial: its spec, its perturbation (parsed once, by the
    driver), the audit's name, where baselines are cached, the key of its baseline and whether
    it counts that baseline's seconds in its timings (``charge``: the first pending trial of a
    baseline that no stored trial has counted)."""

    trial: TrialSpec
    perturbation: Perturbation
    audit: str
    cache: str | None
    baseline_key: str
    charge: bool
    baseline_last: bool = False


def _run(job: AuditJob, baseline: Baseline | None = None) -> TrialOutcome:
    return run_trial(job.trial, job.perturbation, audit=job.audit, cache_dir=job.cache,
                     baseline=baseline, charge_baseline=job.charge,
                     baseline_last=job.baseline_last)


def _run_stack(jobs: list[AuditJob], baseline: Baseline | None = None) -> list[TrialOutcome]:
    """A stack of trials of one baseline group (``executor.stack``), trained together."""
    first = jobs[0]
    return run_stack([j.trial for j in jobs], [j.perturbation for j in jobs], audit=first.audit,
                     cache_dir=first.cache, baseline=baseline, charges=[j.charge for j in jobs])


def _share(job: AuditJob) -> Baseline:
    """The shared product of a baseline group on Ray: its baseline, made once."""
    return make_baseline(job.trial, job.cache)


def _prime(job: AuditJob) -> None:
    """Before a baseline group in a process pool: its baseline, trained into the cache."""
    if job.cache is not None:
        prime_baseline(job.trial, job.cache)


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


def plan(config: AuditConfig) -> list[tuple[TrialSpec, str, str]]:
    """Every trial of ``config`` with its trial id and baseline key (loads the data; checks
    ``metrics.k`` and then the models before the first fit)."""
    out = []
    for trial in config.trials():
        log, _ = prepare(trial.dataset, trial.split)
        _check_k(config, trial.dataset, log)
        fp = log.fingerprint()
        out.append((trial, trial.trial_id(fp), trial.baseline_key(fp)))
    validate(config)  # last: building a model imports what trains it (torch)
    return out


def _warn_full_twins(config: AuditConfig, pending: list[TrialSpec], done: set[str]) -> None:
    """Warn when trials to run differ from stored ones only in comparing to ``metrics.depth``
    where those compared the whole catalogue (recaudit's default before the default depth):
    a config written then, resumed now, would otherwise add a second set of trials to its
    store without a word."""
    depth = config.metrics.depth
    if depth is None or not pending or not done:
        return
    full = dataclasses.replace(config.metrics, depth=None)
    twins = sum(dataclasses.replace(t, metrics=full).trial_id(
        prepare(t.dataset, t.split)[0].fingerprint()) in done for t in pending)
    if twins:
        import warnings

        from recaudit.errors import RecauditWarning

        warnings.warn(f"{twins} trial{'s' if twins != 1 else ''} of this audit differ from "
                      "trials the store holds only in their depth: those compared each whole "
                      "ranking (metrics.depth = \"full\", what recaudit compared unless told "
                      f"otherwise before its default depth of {DEFAULT_DEPTH}); these compare "
                      f"the first {depth} items and run beside them. Set metrics.depth = "
                      "\"full\" (--depth full) to resume the stored ones instead",
                      RecauditWarning, stacklevel=2)


class AuditStudy:
    """The stability audit of ``config`` as a :class:`~recaudit.experiment.Study`."""

    kind: ClassVar[str] = "audit"
    tables: ClassVar[tuple[Table, ...]] = (TRIALS, QUERY_RESULTS, PERTURBATIONS, DATASETS)
    run: ClassVar[Callable[..., Any]] = staticmethod(_run)
    run_stack: ClassVar[Callable[..., Any]] = staticmethod(_run_stack)
    share: ClassVar[Callable[..., Any] | None] = staticmethod(_share)
    prime: ClassVar[Callable[..., Any] | None] = staticmethod(_prime)

    def __init__(self, config: AuditConfig) -> None:
        from recaudit.audit._holds import check_store, held_config

        self._held = held_config(config.output)
        check_store(config, self._held)  # no audit of other data, split or metrics into it
        self.config = config
        self.output = Path(config.output)
        self.executor: ExecutorSpec = config.executor
        self._done: set[str] | None = None
        self._labels = self._stored_labels()
        self._kept: set[str] | None = None  # the logs the store keeps (read at first write)
        #: after :meth:`plan`: the baselines the pending trials need, and those of them
        #: cached (a resumed run reuses them: finished work)
        self.baselines: tuple[int, int] = (0, 0)

    def _stored_labels(self) -> dict[str, str]:
        """Datasets the store names as stores written before :attr:`DatasetSpec.label` named
        files by their name did (``name:path``, or ``synthetic`` for a file given by its path
        alone): new trials keep that label, so a resumed audit's tables do not split one
        dataset in two. Where the store keeps each trial's spec, only the label of trials of
        this very dataset spec is kept."""
        moved = {d.label: d for d in self.config.datasets if d.legacy_labels}
        if not moved or not self.output.exists():
            return {}
        with AuditStore(self.output, read_only=True) as store:
            if "trials" not in store.tables():
                return {}
            spec = ("CAST(json_extract(spec, '$.dataset') AS VARCHAR)"
                    if "spec" in store._present("trials") else "NULL")
            held = store.sql(f"SELECT DISTINCT dataset, {spec} AS spec FROM trials")
        out = {}
        for new, d in moved.items():
            mine = canonical_json(identity(d))
            labels = set(held.dataset[[not isinstance(s, str)
                                       or canonical_json(json.loads(s)) == mine
                                       for s in held.spec]])
            old = [x for x in d.legacy_labels if x in labels]
            if old and new not in set(held.dataset):
                out[new] = old[0]
        return out

    def plan(self) -> list[Trial]:
        from recaudit.perturb import parse

        cfg = self.config
        cache = _cache(cfg)
        pool = cfg.executor.kind == "process" and cfg.executor.workers > 1 \
            and cfg.executor.stack == 1
        done, counted = self._finished()
        parsed: dict[str, Perturbation] = {}
        charged: set[str] = set()
        cached: dict[str, bool] = {}
        needed: set[str] = set()
        out = []
        for trial, tid, key in plan(cfg):
            label = repr(trial.perturbation)
            if label not in parsed:
                parsed[label] = parse(trial.perturbation)
            pending = tid not in done
            first = pending and key not in charged and key not in counted
            if pending:
                charged.add(key)
            if key not in cached:
                cached[key] = cache is not None and ArrayCache(cache).has(cache_key(trial, key))
            if pending:
                needed.add(key)
            # in a pool of two workers or more, a trial whose perturbed fit does not read its
            # baseline starts beside the baseline's priming and takes the baseline last
            last = (pool and not cached[key]
                    and baseline_last(trial, parsed[label], cache))
            job = AuditJob(trial, parsed[label], cfg.name, cache, key, first, last)
            # a baseline already cached (a resumed run) holds nobody back: each trial is a
            # group of its own, so every worker starts at once instead of waiting for the
            # group's first trial to re-read the baseline
            out.append(Trial(tid, job, group=f"{key}/{tid}" if cached[key] else key,
                             datasets=(trial.dataset,), label=trial.label, early=last))
        self.baselines = (sum(cached[k] for k in needed), len(needed))
        _warn_full_twins(cfg, [t.job.trial for t in out if t.id not in done], done)
        return out

    def _finished(self) -> tuple[set[str], set[str]]:
        """Ids of the stored trials and the baseline keys whose seconds they count."""
        if not self.output.exists():
            return set(), set()
        with AuditStore(self.output, read_only=True) as store:
            return store.finished(), store.counted_baselines()

    def reidentify(self, row: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
        """A stored trial's id and baseline key under the current identity rules, from its
        row (its ``spec`` and ``data_fingerprint``): what a store written under older rules is
        migrated with (:func:`recaudit.experiment.migrate_ids`). The baseline's cached lists
        are copied to the new key, so nothing is trained again."""
        trial = TrialSpec.from_identity(json.loads(row["spec"]))
        fp = str(row["data_fingerprint"])
        key = trial.baseline_key(fp)
        cache = _cache(self.config)
        old = row.get("baseline_key")
        if cache is not None and old and old != key:
            store = ArrayCache(cache)
            new, was = cache_key(trial, key), cache_key(trial, str(old))
            if not store.has(new) and (hit := store.get(was)) is not None:
                store.put(new, compress=True, **hit)
        return trial.trial_id(fp), {"baseline_key": key,
                                    "spec": canonical_json(trial.to_dict())}

    def facts(self) -> Mapping[str, Any]:
        """The config of every call into the store (:func:`recaudit.audit._holds.merged`)
        and the data summary."""
        from recaudit.audit._holds import merged

        cfg = self.config
        return {"config": merged(cfg, self._held).to_dict(),
                "data": {self._labels.get(d.label, d.label): data_summary(*prepare(d, cfg.split))
                         for d in cfg.datasets}}

    def write(self, store: Store, outcome: TrialOutcome) -> str:
        """The trial's rows; with the first trial of a log, the log too (in the same
        transaction: :func:`recaudit.audit._data.keep_data`)."""
        row = outcome.row
        if row["dataset"] in self._labels:
            row = {**row, "dataset": self._labels[row["dataset"]]}
        write_trial(store, row, outcome.queries, outcome.record)
        if self._kept is None:
            self._kept = kept_fingerprints(store)
        if row["data_fingerprint"] not in self._kept:
            trial = TrialSpec.from_identity(json.loads(row["spec"]))
            data, _ = prepare(trial.dataset, trial.split)  # the driver's, memoised
            if data.fingerprint() == row["data_fingerprint"]:
                keep_data(store, str(row["dataset"]), trial.dataset, data)
                self._kept.add(row["data_fingerprint"])
        return str(outcome.row["trial_id"])


def run_audit(config: AuditConfig, *, progress: Progress | None = None) -> Path:
    """Run every trial of ``config`` not yet in its store; returns the store path.

    Re-running the same config resumes: finished trials (by id) are skipped, and the
    baselines cached for the others are read, not trained (``progress`` hears how many:
    :data:`Progress`). Results are written by this process only, one transaction per trial; a
    result whose id was not planned (a worker saw other data) is refused before anything is
    written.
    """
    study = AuditStudy(config)
    trials = study.plan()
    by_id = {t.id: t.job.trial for t in trials}
    if progress is not None and study.baselines[1]:
        progress("baselines", None, *study.baselines)

    def report(tid: str | None, done: int, total: int) -> None:
        if progress is not None:
            progress("skip" if tid is None else "done", by_id.get(tid or ""), done, total)

    return run_study(study, trials=trials, progress=report)
