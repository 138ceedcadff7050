"""``recaudit audit | run``: run audits and print their readings."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import typer
from rich.markup import escape

from recaudit.cli._common import as_flags, progress_bar, running
from recaudit.cli._common import console as _console
from recaudit.cli._common import dataset_spec, parse_params
from recaudit.cli import _until as until
from recaudit.cli._plan import _dry_run
from recaudit.cli._plan import options as plan_options
from recaudit.cli._readings import readings
from recaudit.cli._tables import check_format, format_option

_UNTIL = until.options()
_PLAN = plan_options()

__all__ = ["register"]


def _progress_runner(config) -> Path:
    """Run ``config``; a progress bar on stderr while it is a terminal (never on stdout,
    where the tables go, and nothing in a log file or a pipe)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from recaudit.audit import run_audit
    from recaudit.experiment import kept_fits

    with running(config.output), progress_bar(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn()) as bar:
        task = bar.add_task("trials", total=None)

        def progress(event, trial, done, total):
            if event == "baselines":
                if done:  # finished work from an earlier run: say that it is not redone
                    print(f"reusing {done} cached baseline{'s' if done != 1 else ''}; "
                          f"{total - done} to train", file=sys.stderr)
                for fit in kept_fits(config.output):   # and the fits it stopped in
                    print(f"a {fit['model']} fit finished after epoch {fit['epoch']} of "
                          f"{fit['epochs']} is kept: a trial that trains it again takes it"
                          if fit.get("finished") else
                          f"a {fit['model']} fit kept after its epoch {fit['epoch']} of "
                          f"{fit['epochs']} by a stopped run: this run resumes it there if it "
                          "trains it", file=sys.stderr)
                return
            bar.update(task, total=total, completed=done)
            if trial is not None:
                bar.update(task, description=f"{escape(trial.model.label)} · "
                                             f"{escape(str(trial.perturbation))} · "
                                             f"seed {trial.seed}")

        return run_audit(config, progress=progress)


def _data_fields(min_interactions: int, sample_users: int | None, sep: str | None,
                 columns: list[str]) -> dict:
    """The dataset fields of ``recaudit audit``'s data options (reader options: ``sep``,
    ``columns``)."""
    from recaudit.errors import ConfigError

    options: dict = {}
    if sep is not None:
        options["sep"] = sep.encode().decode("unicode_escape")  # --sep '\t'
    roles = ("user", "item", "timestamp", "rating")
    for item in columns:
        role, _, name = item.partition("=")
        if role not in roles or not name:
            raise ConfigError(f"--column {item!r} must look like ROLE=NAME with ROLE one of "
                              f"{', '.join(roles)} (e.g. --column user=userId)")
        options.setdefault("columns", {})[role] = name
    return {"min_user_interactions": min_interactions, "sample_users": sample_users,
            **({"options": options} if options else {})}


def _once(names: list[str]) -> tuple[str, ...]:
    """``-p`` names, each once: a name given again (``-p X -p X``, or ``random-delete`` and
    ``random-delete-k1``) is dropped with a warning."""
    import warnings

    from recaudit.errors import ConfigError, RecauditWarning
    from recaudit.perturb import parse

    seen: dict[str, str] = {}
    for name in names:
        try:
            key = parse(name).name
        except ConfigError:
            key = name  # the config names the bad one
        if key in seen:
            warnings.warn(f"-p {name} repeats -p {seen[key]}: it runs once", RecauditWarning,
                          stacklevel=2)
        else:
            seen[key] = name
    return tuple(seen.values())


def _executor(workers: int, config, stack: int = 1, keep_fits: bool = False):
    """``--workers``, at most one per trial of ``config`` (a warning says so); ``--stack``;
    ``--keep-fits``."""
    import warnings

    from recaudit.audit import ExecutorSpec
    from recaudit.errors import RecauditWarning

    trials = len(config.trials())
    if workers > trials:
        warnings.warn(f"--workers {workers}: the audit has {trials} trial"
                      f"{'s' if trials != 1 else ''}, so {trials} worker"
                      f"{'s' if trials != 1 else ''} at most", RecauditWarning, stacklevel=2)
        workers = trials
    return ExecutorSpec("process" if workers > 1 else "inprocess", workers, stack=stack,
                        keep_fits=keep_fits)


def default_output(config) -> Path:
    """``results/audit-<id>.duckdb``: ``id`` hashes what makes two audits' trials comparable
    (datasets, split, models, metrics); more seeds or perturbations extend the same store."""
    import hashlib

    from recaudit.experiment import canonical_json

    d = config.to_dict()
    key = canonical_json({k: d.get(k) for k in ("datasets", "split", "models", "metrics")})
    return Path("results") / f"audit-{hashlib.sha256(key.encode()).hexdigest()[:10]}.duckdb"


def _models(names: list[str], labels: list[str], params: list[str]) -> tuple:
    """The model specs of ``--model`` (repeated: every one is audited), ``--label`` (one per
    ``--model``, in order) and ``--param``: ``KEY=VALUE`` for every model, ``MODEL.KEY=VALUE``
    for the model given as ``--model MODEL`` alone."""
    from recaudit.audit import ModelSpec
    from recaudit.errors import ConfigError, did_you_mean

    again = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if again is not None:
        raise ConfigError(f"--model {again} is given twice: its trials would be the same "
                          "trials", hint="give each model once; two settings of one model "
                          "need a config with two [[models]] tables (recaudit run)")
    if labels and len(labels) != len(names):
        raise ConfigError(f"{len(labels)} --label for {len(names)} --model: give one --label "
                          "per --model, in the same order (or none)")
    shared: dict = {}
    own: dict[str, dict] = {name: {} for name in names}
    for item in params:
        key, eq, value = item.partition("=")
        target, dot, name = key.rpartition(".")
        if not dot:
            shared.update(parse_params([item]))
        elif target in own:
            own[target].update(parse_params([f"{name}{eq}{value}"]))
        else:
            raise ConfigError(f"--param {item!r}: {target!r} is not a --model of this audit."
                              + did_you_mean(target, names) + " Give KEY=VALUE for every "
                              "model, or MODEL.KEY=VALUE for one")
    specs = []
    for i, name in enumerate(names):
        try:
            specs.append(ModelSpec(name, {**shared, **own[name]},
                                   title=labels[i] if labels else None))
        except ConfigError as exc:
            raise _flag_error(exc, name, {**shared, **own[name]}) from None
    return tuple(specs)


def _flag_error(exc, model: str, params: dict):
    """A model spec's error worded as the flags that gave it (``--model NAME``,
    ``--param KEY=VALUE``), not as the keys of a config table."""
    from recaudit.errors import ConfigError

    key = exc.key or ""
    if key.startswith("params.") and key[7:] in params:
        where = f"--param {key[7:]}={params[key[7:]]}"
    elif key.startswith("params"):
        where = "--param"
    else:
        where = f"--model {model}"
    return ConfigError(f"{where}: {exc.message}", hint=exc.hint)


def audit(
    dataset: str = typer.Option("synthetic", help="Registered dataset name or a file path."),
    model: list[str] = typer.Option(["gru4rec"], "--model", help="Model name (see `recaudit "
                                    "models list`); repeat to audit several on the same data "
                                    "and seeds: the table then says which is more stable."),
    label: list[str] = typer.Option([], "--label", help="The model's name in tables and "
                                    "figures (default: name and parameters); one per "
                                    "--model."),
    perturbation: list[str] = typer.Option(["random-delete", "seed-only"], "--perturbation",
                                           "-p", help="Perturbation name; repeat for several "
                                           "(`recaudit perturbations list`). Default: "
                                           "random-delete and the seed-only noise floor; "
                                           "a repeated name runs once."),
    seeds: int = typer.Option(3, min=1, help="Number of seeds (0..n-1)."),
    min_interactions: int = typer.Option(10, "--min-interactions", min=0,
                                         help="Drop users with fewer interactions (Oh et al. "
                                              "2022 and Betello et al. 2023 use 10)."),
    sample_users: int | None = typer.Option(None, "--sample-users", min=1,
                                            help="Keep a seeded sample of this many users "
                                                 "(more than the data has: all, with a "
                                                 "warning)."),
    sep: str | None = typer.Option(None, "--sep", help="Field separator of a text file "
                                   "(default: detected)."),
    column: list[str] = typer.Option([], "--column", help="ROLE=NAME: the file's column for "
                                     "user, item, timestamp or rating; repeat."),
    param: list[str] = typer.Option([], "--param", help="Model parameter KEY=VALUE (JSON), "
                                    "for every model; MODEL.KEY=VALUE for one of several."),
    k: int = typer.Option(10, min=1, help="Cut-off for Jaccard@k, FRBO@k and accuracy."),
    p: float = typer.Option(0.9, help="RBO persistence, in (0, 1)."),
    depth: str | None = typer.Option(None, help="Items of each ranking kept and compared "
                                     "(RBO, average overlap, MRR), at least --k; 'full': the "
                                     "whole catalogue, as Oh et al. 2022. Default: 100, or "
                                     "--k when larger."),
    workers: int = typer.Option(1, min=1, help="Worker processes (1 = in-process); at most "
                                "one per trial to run (more: lowered, with a warning)."),
    stack: int = typer.Option(1, min=1, help="Train up to this many trials of one baseline "
                              "together as one stacked model (many trials per GPU from one "
                              "process); numbers and trial ids do not change."),
    keep_fits: bool = typer.Option(False, "--keep-fits", help="Keep each finished fit of a "
                                   "sequential model beside the store (<store>.fits.d), so "
                                   "that a later trial training the same model, seed and log "
                                   "(e.g. a perturbation's +inputs twin) takes it instead of "
                                   "training."),
    output: Path | None = typer.Option(None, "--output", "-o",
                                       help="DuckDB store (resumed if it exists). Default: "
                                            "results/audit-<id>.duckdb, one per dataset, "
                                            "model, split and metrics, so unrelated audits "
                                            "never share a store."),
    dry: bool = typer.Option(False, "--dry-run", help="Print the fits, the estimated wall "
                             "time and the detectable difference; train nothing."),
    like: Path | None = _PLAN["like"],
    detect: float | None = _PLAN["detect"],
    until_decided: bool = _UNTIL["until_decided"],
    max_seeds: int | None = _UNTIL["max_seeds"],
    max_draws: int | None = _UNTIL["max_draws"],
    budget: str | None = _UNTIL["budget"],
    margin: float | None = _UNTIL["margin"],
    futility: str | None = _UNTIL["futility"],
    format: str = format_option(),
) -> None:
    """Quick audit: one dataset, one model or several, perturbations x seeds, printed as
    tables (with several models: which one is more stable)."""
    from dataclasses import replace

    from recaudit.audit import AuditConfig, MetricSpec, default_name

    fmt = check_format(format)
    until.check(dry, until_decided, like=like, detect=detect, max_seeds=max_seeds,
                max_draws=max_draws, budget=budget, margin=margin, futility=futility)
    perturbations = _once(perturbation)
    flags = {"models": "--model", "seeds": f"--seeds {seeds}", "metrics.k": f"--k {k}",
             "metrics.p": f"--p {p}", "metrics.depth": f"--depth {depth}",
             "metrics": "--k/--p/--depth", "executor.stack": f"--stack {stack}",
             "executor.keep_fits": "--keep-fits",
             "executor.workers": f"--workers {workers}", "executor": "--workers",
             "datasets[0].min_user_interactions": f"--min-interactions {min_interactions}",
             "datasets[0].sample_users": f"--sample-users {sample_users}",
             "datasets[0].options": "--sep/--column", "datasets": f"--dataset {dataset}",
             **{f"perturbations[{i}]": f"-p {name}" for i, name in enumerate(perturbations)},
             **{f"models[{i}]": f"--model {name}" for i, name in enumerate(model)}}
    with as_flags(flags):
        config = AuditConfig(models=_models(model, label, param), perturbations=perturbations,
                             seeds=tuple(range(seeds)),
                             datasets=(dataset_spec(dataset, **_data_fields(
                                 min_interactions, sample_users, sep, column)),),
                             metrics=MetricSpec.from_dict(
                                 {"k": k, "p": p, **({} if depth is None else
                                                     {"depth": _depth(depth)})},
                                 key="metrics"),
                             output=str(output or "results/audit.duckdb"))
        config = replace(config, executor=_executor(workers, config, stack, keep_fits),
                         name=default_name(config))
        if output is None:
            config = replace(config, output=str(default_output(config)))
        console = _console()
        if dry:
            return _dry_run(config, console, like, detect, *until.planned(
                until_decided, max_seeds, max_draws, margin, futility, detect))
        done = _go(config, until_decided, max_seeds, max_draws, budget, margin, futility,
                   detect)
    _read(done, config, f"Rank-list sensitivity (k={k}, p={p})", console, fmt, margin,
          max_draws)


def _depth(text: str) -> int | str:
    """``--depth``: an integer, or ``full`` (refused by the metrics spec otherwise)."""
    text = text.strip()
    return int(text) if text.lstrip("-").isdigit() else text


def _said(line: str, fmt: str, console) -> None:
    """A line for people: on stdout beside a table, on stderr beside CSV or JSON (which a
    program reads whole)."""
    if fmt == "table":
        console.print(line, markup=False, soft_wrap=True)  # a path stays whole
    else:
        typer.echo(line, err=True)


def _run(config) -> Path:
    """Run ``config``, saying first when its store's folder does not exist (a mistyped
    ``-o`` would otherwise create a whole tree unseen)."""
    folder = Path(config.output).parent
    missing = next((p for p in reversed([folder, *folder.parents]) if not p.exists()), None)
    store = _progress_runner(config)
    if missing is not None:
        typer.echo(f"note: created the folder {missing}{os.sep} for the store", err=True)
    return store


def _go(config, until_decided: bool, max_seeds: int | None, max_draws: int | None,
        budget: str | None, margin: float | None, futility: str | None = None,
        detect: float | None = None):
    """Run ``config``: in rounds with ``--until-decided`` (its :class:`~recaudit.audit.Rounds`),
    else at once (its store's path)."""
    if until_decided:
        return until.rounds(config, _run, max_seeds, max_draws, budget, margin, futility,
                            detect)
    return _run(config)


def _read(done, config, title: str, console, fmt: str, margin: float | None,
          max_draws: int | None) -> None:
    """The readings of what :func:`_go` did, the decisions of its rounds, where it is."""
    store = done if isinstance(done, Path) else done.store
    readings(store, title, console, fmt)
    if not isinstance(done, Path):
        until.show(done, config, console, fmt, margin, "draws" if max_draws else "seeds")
    _said(f"results: {store}", fmt, console)


def run(config: Path = typer.Argument(..., help="Audit config (TOML)."),
        dry: bool = typer.Option(False, "--dry-run", help="Print the fits, the estimated "
                                 "wall time and the detectable difference; train nothing."),
        output: Path | None = typer.Option(None, "--output", "-o", help="DuckDB store "
                                           "(resumed if it exists); overrides the config's "
                                           "`output` key."),
        stack: int | None = typer.Option(None, min=1, help="Train up to this many trials of "
                                         "one baseline together as one stacked model; "
                                         "overrides the config's `executor.stack`."),
        like: Path | None = _PLAN["like"],
        detect: float | None = _PLAN["detect"],
        until_decided: bool = _UNTIL["until_decided"],
        max_seeds: int | None = _UNTIL["max_seeds"],
        max_draws: int | None = _UNTIL["max_draws"],
        budget: str | None = _UNTIL["budget"],
        margin: float | None = _UNTIL["margin"],
        futility: str | None = _UNTIL["futility"],
        format: str = format_option(),
        ) -> None:
    """Run (or resume) the audit described by a TOML config."""
    from recaudit.audit import load_config

    fmt = check_format(format)
    until.check(dry, until_decided, like=like, detect=detect, max_seeds=max_seeds,
                max_draws=max_draws, budget=budget, margin=margin, futility=futility)
    cfg = load_config(config)
    if output is not None:
        cfg = dataclasses.replace(cfg, output=str(output))
    if stack is not None:
        cfg = dataclasses.replace(cfg, executor=dataclasses.replace(cfg.executor, stack=stack))
    console = _console()
    if dry:
        return _dry_run(cfg, console, like, detect, *until.planned(
            until_decided, max_seeds, max_draws, margin, futility, detect))
    done = _go(cfg, until_decided, max_seeds, max_draws, budget, margin, futility, detect)
    _read(done, cfg, cfg.name, console, fmt, margin, max_draws)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)
    app.command("run")(run)
