"""``recaudit audit | run``: run audits and print their readings."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from recaudit.cli._common import as_flags, progress_bar, running
from recaudit.cli._tables import (add_columns, check_format, format_option, mean_and_interval,
                                  p_header, result_table)
from recaudit.cli._common import console as _console
from recaudit.cli._common import dataset_spec, parse_params

__all__ = ["register"]


# the audit (and torch with it) is imported when a command runs, not when the command line is
# parsed: `recaudit --help` and every command's usage errors answer at once
def _ci(*args, **kw):
    from recaudit.audit import interval_text

    return interval_text(*args, **kw)


def _p(*args, **kw):
    from recaudit.audit import p_text

    return p_text(*args, **kw)


def story(*args, **kw):
    from recaudit.audit import reading

    return reading(*args, **kw)


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

    with running(config.output), progress_bar(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn()) as bar:
        task = bar.add_task("trials", total=None)

        def progress(event, trial, done, total):
            bar.update(task, total=total, completed=done)
            if trial is not None:
                bar.update(task, description=f"{escape(trial.model.label)} · "
                                             f"{escape(str(trial.perturbation))} · "
                                             f"seed {trial.seed}")

        return run_audit(config, progress=progress)


_SHOWN = (("rbo", "RBO"), ("frbo", "FRBO@k"), ("jaccard", "Jaccard@k"),
          ("mrr_change", "ΔMRR"))


_LEVELS = {"seeds and queries": "over seeds and test queries",
           "queries only": "over test queries only: one seed measures no seed-to-seed "
                           "variation"}


def _counts(r) -> list[str]:
    """What a perturbation's numbers rest on, one short line each, under its name."""
    out = [f"{r.seeds} seed{'s' if r.seeds != 1 else ''}"]
    if getattr(r, "draws", 1) > 1:
        out.append(f"{r.draws} draws")
    return out + [f"{r.queries} queries"]


def decision_tables(frame, title: str) -> list[Table]:
    """:func:`recaudit.audit.summary` as terminal tables, one per (dataset, model): per
    perturbation a block of rows, one per measure: its mean, its 95 % interval, and on the
    RBO row the p-values against the floors (an 80-column terminal shows every number)."""
    floors = [c for c in frame.columns if c.startswith("p_vs_")]
    tables = []
    for (dataset, model), g in frame.groupby(["dataset", "model"], sort=False):
        level = str(g.levels.iloc[0])
        table = result_table(f"{title}: {model} on {dataset}", caption=(
            "[ ] = 95 % interval (" + _LEVELS.get(level, level) + "); p = paired test of "
            "RBO against the floor, Holm-adjusted; ΔMRR = perturbed − original."))
        shown = [c for c in floors if g[c].notna().any()]
        add_columns(table, "perturbation", "measure", "mean", "95 % interval",
                    *(p_header(c) for c in shown), left=2)
        for i, (_, r) in enumerate(g.iterrows()):
            labels = [str(r.perturbation), *_counts(r)]
            for j, (m, name) in enumerate(_SHOWN):
                mean, interval = mean_and_interval(r, m, m.endswith("_change"))
                ps = [_p(r[c]) if j == 0 else "" for c in shown]
                table.add_row(labels[j] if j < len(labels) else "", name, mean, interval, *ps,
                              end_section=j == len(_SHOWN) - 1 and i < len(g) - 1)
        tables.append(table)
    return tables


def model_tables(frame) -> list[Table]:
    """:func:`recaudit.audit.compare_models` as terminal tables, one per dataset: per
    perturbation and pair of models, each model's mean, the difference with its 95 %
    interval, the Holm-adjusted p and the more stable model (letters A, B, ... named in the
    caption; "–": not told apart)."""
    tables = []
    for dataset, g in frame.groupby("dataset", sort=False):
        models = list(dict.fromkeys([*g.a, *g.b]))
        letter = {m: chr(ord("A") + i) for i, m in enumerate(models)}
        metric = str(g.metric.iloc[0]).upper()
        table = result_table(
            f"Which model is more stable? {metric} on {dataset}, paired per test query",
            caption="; ".join(f"{letter[m]} = {m}" for m in models) + ". "
            + ("a, b: the pair's first and second model. " if len(models) > 2 else "")
            + "The difference: its mean and 95 % interval over seeds and test queries; p: paired "
            "test, Holm-adjusted over the comparisons; more stable: the model with the "
            "higher " + metric + " where p < 0.05 (–: not told apart).")
        pairs = len(models) > 2  # then a row per pair: a and b are its first and second
        a, b = ("a", "b") if pairs else ("A", "B")
        add_columns(table, "perturbation", *(("pair",) if pairs else ()), f"{metric} {a}",
                    f"{metric} {b}", f"{a} − {b}", "p", "more\nstable")
        for _, r in g.iterrows():
            low_high = f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]" if r.ci_low == r.ci_low else ""
            table.add_row(str(r.perturbation),
                          *((f"{letter[r.a]}, {letter[r.b]}",) if pairs else ()),
                          f"{r.mean_a:.4f}", f"{r.mean_b:.4f}",
                          f"{r.difference:+.4f}" + (f"\n{low_high}" if low_high else ""),
                          _p(r.p_holm), letter.get(r.more_stable, "–"))
        tables.append(table)
    return tables


def trial_table(store: Path, title: str) -> list[Table]:
    """One row per trial (``recaudit results STORE``), one table per (dataset, model): its
    seed, draw (when any is not 0) and the means over its test queries."""
    from recaudit.audit import trial_summary

    frame = trial_summary(store)
    cols = (("rbo", "RBO"), ("frbo", "FRBO@k"), ("jaccard", "Jaccard@k"),
            ("mrr_base", "MRR\nbase"), ("mrr_pert", "MRR\npert."))
    tables = []
    for (dataset, model), g in frame.groupby(["dataset", "model_label"], sort=False):
        draws = bool((g.draw != 0).any())
        table = result_table(f"{title}: {model} on {dataset}")
        add_columns(table, "perturbation", "seed", *(("draw",) if draws else ()),
                    *(n for _, n in cols))
        for r in g.itertuples():
            table.add_row(str(r.perturbation), str(r.seed), *((str(r.draw),) if draws else ()),
                          *(f"{getattr(r, c):.4f}" for c, _ in cols))
        tables.append(table)
    return tables


def _readings(store: Path, title: str, console, fmt: str = "table") -> None:
    """The audit's summary (:func:`recaudit.audit.summary`) as tables and its reading in
    words; with several models, which is more stable (:func:`recaudit.audit.compare_models`).
    ``fmt`` csv: the summary; json: ``{"summary", "models", "reading"}``."""
    import json
    import warnings

    from recaudit.audit import (FEW_QUERIES, compare_models, model_reading,
                                most_destabilising, summary)
    from recaudit.cli._tables import emit, records
    from recaudit.errors import RecauditWarning

    frame = summary(store)
    several = frame.groupby("dataset").model.nunique().gt(1).any() if len(frame) else False
    models = compare_models(store) if several else None
    lines = story(frame, most_destabilising(store)) + model_reading(models)
    if fmt == "json":
        typer.echo(json.dumps({"summary": records(frame),
                               "models": records(models) if models is not None else [],
                               "reading": lines}, indent=2, allow_nan=False))
    elif not emit(frame, fmt):
        for table in decision_tables(frame, title):
            console.print(table)
        for table in model_tables(models) if models is not None else []:
            console.print(table)
        for line in lines:
            console.print(line, markup=False)
    for (dataset, model), g in frame.groupby(["dataset", "model"], sort=False):
        if len(g) and g.queries.min() < FEW_QUERIES:
            warnings.warn(f"{model} on {dataset}: only {g.queries.min()} test queries: too "
                          f"few (under {FEW_QUERIES}) to trust its intervals and p-values; "
                          "audit more users (a lower --min-interactions, no --sample-users, "
                          "a larger dataset)", RecauditWarning, stacklevel=2)


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


def _executor(workers: int, config, stack: int = 1):
    """``--workers``, at most one per trial of ``config`` (a warning says so); ``--stack``."""
    import warnings

    from recaudit.audit import ExecutorSpec
    from recaudit.errors import RecauditWarning

    trials = len(config.trials())
    if workers > trials:
        warnings.warn(f"--workers {workers}: the audit has {trials} trial"
                      f"{'s' if trials != 1 else ''}, so {trials} worker"
                      f"{'s' if trials != 1 else ''} at most", RecauditWarning, stacklevel=2)
        workers = trials
    return ExecutorSpec("process" if workers > 1 else "inprocess", workers, stack=stack)


def default_output(config) -> Path:
    """``results/audit-<id>.duckdb``: ``id`` hashes what makes two audits' trials comparable
    (datasets, split, models, metrics); more seeds or perturbations extend the same store."""
    import hashlib

    from recaudit.experiment import canonical_json

    d = config.to_dict()
    key = canonical_json({k: d.get(k) for k in ("datasets", "split", "models", "metrics")})
    return Path("results") / f"audit-{hashlib.sha256(key.encode()).hexdigest()[:10]}.duckdb"


def _or_dash(x: float, fmt: str) -> str:
    return "–" if x is None or x != x else fmt.format(x)


def wall_time(hours: float | None) -> str:
    """An estimated time in words a reader takes in at once: ``under a minute``, ``12 min``,
    ``3.4 h``, ``2.1 days`` (``–``: unknown)."""
    if hours is None or hours != hours:
        return "–"
    minutes = hours * 60
    if minutes < 1:
        return "under a minute"
    if minutes < 90:
        return f"{minutes:.0f} min"
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} days"


def _dry_run(config, console) -> None:
    """``--dry-run``: the fits, the estimated wall time and the detectable RBO difference."""
    from recaudit.audit import dry_run

    from recaudit.cli._tables import fitted

    plan = dry_run(config)
    stacked = plan.stack > 1
    columns = ["dataset", "model", "baselines", "perturbed", "stored", "to train", "s/epoch",
               "epochs", "s/fit", *(("stack ×",) if stacked else ()), "time",
               "detectable ΔRBO"]
    rows = [[f.dataset, f.model, str(f.baselines), str(f.perturbed),
             f"{f.stored_baselines} + {f.stored_trials}", str(f.remaining),
             _or_dash(f.s_per_epoch, "{:.2f}"), _or_dash(f.epochs, "{:.0f}"),
             _or_dash(f.s_per_fit, "{:.0f}") + f" ({f.time_basis})",
             *((_or_dash(f.stack_speedup, "{:.2f}"),) if stacked else ()),
             wall_time(f.hours), f"{d.rbo_difference:.4f} ({d.basis})"]
            for f, d in zip(plan.fits.itertuples(), plan.detectable.itertuples())]
    console.print(fitted(console, f"{config.name}: what the audit would train", columns, rows,
                         left=2))
    stacks = (f" and stacks of up to {plan.stack} (stack ×: the calibrated speed-up of a "
              "stack's perturbed fits)") if stacked else ""
    console.print(f"estimated wall time: {wall_time(plan.hours)} with {plan.workers} "
                  f"worker{'s' if plan.workers != 1 else ''}"
                  f"{stacks}, about {_or_dash(plan.trials_per_hour, '{:.0f}')} trials/h "
                  "(s/fit: the median own time of the store's finished trials of the model, "
                  "else a one-epoch calibration on this machine); detectable ΔRBO: the smallest "
                  "difference in mean RBO between two perturbations that a paired test at 0.05 "
                  "finds with 80 % power over the test queries (basis: the store's results, or "
                  "a pessimistic one-epoch calibration). Nothing was trained into the store.")


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
    workers: int = typer.Option(1, min=1, help="Worker processes (1 = in-process); at most "
                                "one per trial to run (more: lowered, with a warning)."),
    stack: int = typer.Option(1, min=1, help="Train up to this many trials of one baseline "
                              "together as one stacked model (many trials per GPU from one "
                              "process); numbers and trial ids do not change."),
    output: Path | None = typer.Option(None, "--output", "-o",
                                       help="DuckDB store (resumed if it exists). Default: "
                                            "results/audit-<id>.duckdb, one per dataset, "
                                            "model, split and metrics, so unrelated audits "
                                            "never share a store."),
    dry: bool = typer.Option(False, "--dry-run", help="Print the fits, the estimated wall "
                             "time and the detectable difference; train nothing."),
    format: str = format_option(),
) -> None:
    """Quick audit: one dataset, one model or several, perturbations x seeds, printed as
    tables (with several models: which one is more stable)."""
    from dataclasses import replace

    from recaudit.audit import AuditConfig, MetricSpec

    fmt = check_format(format)
    perturbations = _once(perturbation)
    flags = {"models": "--model", "seeds": f"--seeds {seeds}", "metrics.k": f"--k {k}",
             "metrics.p": f"--p {p}", "metrics": "--k/--p", "executor.stack": f"--stack {stack}",
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
                             metrics=MetricSpec(k=k, p=p),
                             output=str(output or "results/audit.duckdb"))
        config = replace(config, executor=_executor(workers, config, stack),
                         name=audit_name(config))
        if output is None:
            config = replace(config, output=str(default_output(config)))
        console = _console()
        if dry:
            return _dry_run(config, console)
        store = _run(config)
    _readings(store, f"Rank-list sensitivity (k={k}, p={p})", console, fmt)
    _said(f"results: {store}", fmt, console)


def audit_name(config) -> str:
    """A quick audit's name (the report's title): what it audits, ``gru4rec and sasrec on
    ratings.csv`` (a model's ``--label`` where given)."""
    models = [m.title or m.name for m in config.models]
    names = models[0] if len(models) == 1 else ", ".join(models[:-1]) + " and " + models[-1]
    return f"{names} on {', '.join(d.label for d in config.datasets)}"


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


def run(config: Path = typer.Argument(..., help="Audit config (TOML)."),
        dry: bool = typer.Option(False, "--dry-run", help="Print the fits, the estimated "
                                 "wall time and the detectable difference; train nothing."),
        output: Path | None = typer.Option(None, "--output", "-o", help="DuckDB store "
                                           "(resumed if it exists); overrides the config's "
                                           "`output` key."),
        stack: int | None = typer.Option(None, min=1, help="Train up to this many trials of "
                                         "one baseline together as one stacked model; "
                                         "overrides the config's `executor.stack`."),
        format: str = format_option(),
        ) -> None:
    """Run (or resume) the audit described by a TOML config."""
    from recaudit.audit import load_config

    fmt = check_format(format)
    cfg = load_config(config)
    if output is not None:
        cfg = dataclasses.replace(cfg, output=str(output))
    if stack is not None:
        cfg = dataclasses.replace(cfg, executor=dataclasses.replace(cfg.executor, stack=stack))
    console = _console()
    if dry:
        return _dry_run(cfg, console)
    store = _run(cfg)
    _readings(store, cfg.name, console, fmt)
    _said(f"results: {store}", fmt, console)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)
    app.command("run")(run)
