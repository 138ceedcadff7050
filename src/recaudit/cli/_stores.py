"""``recaudit status | results | export | merge STORE``: any study's store, read from its declarations."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from recaudit.cli._common import as_flags
from recaudit.cli._common import console as _console
from recaudit.cli._tables import (add_columns, check_format, emit, fits, format_option,
                                  result_table)

__all__ = ["register"]

_STORE = typer.Argument(..., help="Results store (.duckdb).")


def _span(seconds: float) -> str:
    s = max(0, int(seconds))
    if s < 120:
        return f"{s} s"
    return f"{s // 60} min" if s < 7200 else f"{s // 3600} h {s % 3600 // 60} min"


def _ago(ts: float) -> str:
    return f"{_span(time.time() - ts)} ago"


def _in_flight(beat: dict) -> str:
    """One running trial: ``label: phase, epoch 23/50 for 31 min, about 36 min left``; with
    early stopping ``..., about 12 min left if it stops at epoch 30 (no better validation),
    at most 36 min``; a resumed fit says where it was taken up."""
    what = beat.get("label") or beat.get("trial_id", "?")
    epoch = (f", epoch {beat['epoch']}/{beat['epochs']}" if "epoch" in beat else "")
    if beat.get("resumed_at"):
        epoch += f" (resumed after epoch {beat['resumed_at']})"
    left = ""
    if "remaining_if_stopped" in beat:
        left = (f", about {_span(beat['remaining_if_stopped'])} left if it stops at epoch "
                f"{beat['stop_by']} (no better validation), at most "
                f"{_span(beat['remaining'])}")
    elif "remaining" in beat:
        left = f", about {_span(beat['remaining'])} left"
    return f"{what}: {beat.get('phase', '?')}{epoch} for {_span(beat['elapsed'])}{left}"


def _running(beats: list[dict]) -> list[str]:
    """One line per running trial; the trials of a stack (``executor.stack``) as one line
    that names them: ``stack of 3 · perturbed fit, epoch 4/50 ...: label; label; label``."""
    out: list[str] = []
    stacks: dict[str, list[dict]] = {}
    for beat in beats:
        stack = beat.get("stack")
        if isinstance(stack, dict) and stack.get("size", 1) > 1:
            stacks.setdefault(str(stack.get("first")), []).append(beat)
        else:
            out.append(_in_flight(beat))
    for members in stacks.values():
        members.sort(key=lambda b: b["stack"].get("index", 0))
        lead = dict(members[0], label=f"stack of {members[0]['stack']['size']}")
        labels = "; ".join(str(b.get("label") or b.get("trial_id", "?")) for b in members)
        out.append(f"{_in_flight(lead)}: {labels}")
    return out


def _kept(console: Console, store: Path) -> None:
    """The fits a stopped run on ``store`` kept, which its next run resumes, and the finished
    fits it keeps (``[executor] keep_fits``), which a trial that trains one again takes."""
    from recaudit.experiment import kept_fits

    for fit in kept_fits(store):
        seeds = ("seeds " if len(fit["seeds"]) > 1 else "seed ") \
            + ", ".join(map(str, fit["seeds"]))
        trained = f" ({_span(fit['seconds'])} of training)" if "seconds" in fit else ""
        if fit.get("finished"):
            console.print(f"  kept: a {fit['model']} fit ({seeds}), finished after epoch "
                          f"{fit['epoch']} of {fit['epochs']}{trained}, {_ago(fit['kept'])}: "
                          "a trial that trains it again takes it instead", markup=False)
        else:
            console.print(f"  kept: a {fit['model']} fit ({seeds}) at epoch {fit['epoch']} "
                          f"of {fit['epochs']}{trained}, {_ago(fit['kept'])}: the next run "
                          "resumes it there", markup=False)


def status(store: Path = typer.Argument(..., help="Results store (.duckdb), or a folder of "
                                         "stores (`reproduce run --dir`).")) -> None:
    """How many trials of each study the store holds, and what each trial a run is running
    does now: its phase, epoch and time left (readable while the run writes to the store);
    after a stopped run, the fits it kept to resume. Given a folder, every store in it."""
    from recaudit.errors import ConfigError

    console = _console()
    if not store.is_dir():
        _status(console, store)
        return
    stores = sorted(store.glob("*.duckdb"))
    if not stores:
        raise ConfigError(f"{store} is a folder without a results store (*.duckdb)",
                          hint="give a store, or the folder a run wrote its stores to (--dir)")
    for path in stores:
        _status(console, path)


def _status(console: Console, store: Path) -> None:
    """``recaudit status`` of one store."""
    from recaudit.experiment import heartbeats
    from recaudit.studies import status as study_status

    found = study_status(store)
    if not found:
        console.print(f"{store}: no finished trial yet", markup=False)
        if not heartbeats(store):     # no run is running
            _kept(console, store)
        return
    for s in found:
        trials = f"trial{'' if s.done == 1 else 's'}"
        done = (f"{s.done} of the {s.planned} planned trials done" if s.planned is not None
                else f"{s.done} {trials} done")
        console.print(f"{store}: {s.study.title}: {done}", markup=False)
        if s.progress is not None:
            p = s.progress
            state = "running" if p.get("running") else p.get("state", "stopped")
            run = "run" if p.get("running") else "last run"
            console.print(f"  {run} {state} (pid {p.get('pid')}), started "
                          f"{_ago(p['started'])}, last update {_ago(p['updated'])}: "
                          f"{p['done']} of its {p['planned']} trials done", markup=False)
            beats = heartbeats(store) if p.get("running") else []
            for line in _running(beats):
                console.print(f"  running {line}", markup=False)
            if not p.get("running"):
                _kept(console, store)
        if len(s.breakdown):
            table = result_table()
            add_columns(table, *map(str, s.study.breakdown), "done",
                        left=len(s.study.breakdown))
            for row in s.breakdown.itertuples(index=False):
                table.add_row(*(str(v) for v in row))
            console.print(table)


def results(store: Path = _STORE,
            format: str = format_option(),
            study: str | None = typer.Option(None, "--study", help="audit, properties, fuzz "
                                             "or mirror (needed when the store holds "
                                             "several)."),
            decisions: bool = typer.Option(False, "--summary", help="One row per condition "
                                           "(dataset, model, perturbation for an audit): "
                                           "each measure with its 95 % interval over seeds "
                                           "and queries, and p-values against the noise "
                                           "floors present."),
            variance: bool = typer.Option(False, "--variance", help="Audit stores: where each "
                                          "perturbation's variation comes from — the shares "
                                          "of seed, draw, test query and seed × query, of "
                                          "one per-query value and of the mean's "
                                          "uncertainty."),
            models: bool = typer.Option(False, "--models", help="Audit stores with several "
                                        "models: which is more stable under each "
                                        "perturbation (the paired test per seed and test "
                                        "query, Holm-adjusted; the table --summary prints "
                                        "after the summary)."),
            ) -> None:
    """Per-trial results of a study in the store, as a table, CSV or JSON (``--summary``:
    per condition, with intervals and tests; with several models, which is more stable;
    run until decided, the decisions of its rounds)."""
    from recaudit.studies import summary

    fmt = check_format(format)
    if variance:
        return _variance(store, fmt)
    if models:
        return _models(store, fmt)
    if fmt == "table" and study in (None, "audit") and not decisions:
        from recaudit.cli._readings import trial_table
        from recaudit.experiment import Store
        from recaudit.studies import present

        with Store(store, read_only=True) as s:
            kinds = [i.kind for i in present(s)]
        if kinds == ["audit"] or study == "audit":
            console = _console()
            for table in trial_table(store, str(store)):
                console.print(table)
            return
    with as_flags({"study": f"--study {study}"}):
        info, frame = summary(store, study, decisions=decisions)
    if emit(frame, fmt):
        return
    console = _console()
    if decisions and info.kind == "audit":
        from recaudit.cli._readings import decision_tables

        for t in decision_tables(frame, str(store)):
            console.print(t)
        _later(store, frame, console)
        return
    console.print(frame_table(frame, f"{info.title}: {store}", console))


def _later(store: Path, frame, console) -> None:
    """After an audit's summary tables: with several models, which is more stable
    (:func:`recaudit.audit.compare_models`, as the audit printed it); run until decided, the
    decisions of its rounds."""
    from recaudit.cli import _until
    from recaudit.cli._readings import model_tables

    if len(frame) and frame.groupby("dataset").model.nunique().gt(1).any():
        from recaudit.audit import compare_models, model_reading

        models = compare_models(store)
        for table in model_tables(models):
            console.print(table)
        for line in model_reading(models):
            console.print(line, markup=False)
    _until.kept(store, console)


def _models(store: Path, fmt: str) -> None:
    """``results --models``: :func:`recaudit.audit.compare_models` of an audit store."""
    from recaudit.audit import compare_models
    from recaudit.cli._readings import model_tables

    frame = compare_models(store)
    if emit(frame, fmt):
        return
    if frame.empty:
        from recaudit.errors import ConfigError

        raise ConfigError(f"{store}: no two models of one dataset share a perturbation, so "
                          "there is no model to compare", hint="audit a second --model on "
                          "the same data into the store")
    console = _console()
    for table in model_tables(frame):
        console.print(table)


def frame_table(frame, title: str, console) -> Table:
    """Any study's frame for people: a column per column where that fits the console whole;
    else one block per row, one line per column (``column | value``), so that nothing is cut
    at 80 terminal columns."""
    wide = result_table(title)
    add_columns(wide, *map(str, frame.columns), left=0)
    for row in frame.itertuples(index=False):
        wide.add_row(*(_cell(v) for v in row))
    if fits(console, wide):
        return wide
    table = result_table(title)
    add_columns(table, "row", "column", "value", left=3)
    for i, row in enumerate(frame.itertuples(index=False)):
        for j, (col, v) in enumerate(zip(frame.columns, row)):
            table.add_row(str(i + 1) if j == 0 else "", str(col), _cell(v),
                          end_section=j == len(frame.columns) - 1 and i < len(frame) - 1)
    return table


#: What the cells of ``results --variance`` (and the report's table) are shares of, in words
#: a reader checks against the docs (docs/concepts/statistics.md).
VARIANCE_CAPTION = (
    "Each cell: its share of the variance of one per-query RBO (one query in one trial) / "
    "its share of the variance of the mean RBO the tables report, at these seeds, draws and "
    "queries (what more seeds or draws would shrink). seed: a seed moving every query's RBO "
    "alike; query: a query's RBO whatever the seed; seed × query: a query's own response to "
    "the seed (or draw), and noise. Both seed columns are the seed's doing: a seed-only "
    "floor at seed 0 % and seed × query 100 % has another seed change which queries' lists "
    "agree, not their average.")


def _variance(store: Path, format: str) -> None:
    """``results --variance``: :func:`recaudit.audit.variance_shares` of an audit store."""
    from recaudit.audit import variance_shares

    frame = variance_shares(store)
    if format == "csv":
        typer.echo(frame.to_csv(index=False), nl=False)
        return
    if format == "json":
        typer.echo(frame.to_json(orient="records", indent=2))
        return
    from recaudit.cli._tables import add_columns, result_table

    console = _console()
    for (dataset, model), g in frame.groupby(["dataset", "model"], sort=False):
        table = result_table(f"Where the RBO's variation comes from: {model} on {dataset}")
        add_columns(table, "perturbation", "seeds", "seed", "draw", "query", "seed ×\nquery")
        for r in g.itertuples():
            table.add_row(str(r.perturbation), f"{r.seeds}×{r.draws}",
                          *(f"{getattr(r, f'share_{k}'):.0%} / "
                            f"{getattr(r, f'mean_share_{k}'):.0%}"
                            for k in ("seed", "draw", "query", "residual")))
        console.print(table)
    if len(frame):
        console.print(VARIANCE_CAPTION, markup=False)


def _cell(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if v != 0 and abs(v) < 1e-3 else f"{v:.4f}"
    return str(v)


def export(store: Path = _STORE,
           directory: Path = typer.Argument(..., help="Output directory."),
           format: str = typer.Option(None, "--format", "-f", help="parquet or csv (default: "
                                      "parquet for tables, csv for --rank-lists)."),
           rank_lists: bool = typer.Option(False, "--rank-lists", help="Write the audit's "
                                           "top-k lists instead, one run file per model, seed "
                                           "and perturbation in the data's own ids "
                                           "(DIRECTORY/rank-lists/, with an index.csv), as "
                                           "`recaudit compare` reads them.")) -> None:
    """Export every table of a store (every study's) to Parquet or CSV files, or with
    ``--rank-lists`` the audit's rank lists as run files."""
    from recaudit.experiment import Store

    if rank_lists:
        from recaudit.audit import export_rank_lists

        paths = export_rank_lists(store, directory, format or "csv")
        for path in paths:
            typer.echo(str(path))
        return
    with Store(store, read_only=True) as s:
        for path in s.export(directory, format or "parquet"):
            typer.echo(str(path))


def merge(store: Path = typer.Argument(..., help="The store to add to (.duckdb; created "
                                        "if missing)."),
          others: list[Path] = typer.Argument(..., help="Stores whose trials to add (only "
                                              "read).")) -> None:
    """Add to a store the trials other stores hold and it lacks: stores filled on several
    machines (a GPU box, a CPU box) become one that `results`, `report` and a resumed run
    read. A trial both hold keeps the first store's row (the same id is the same trial); the
    command says whether the two stores' per-query results of those trials are identical, and
    names the trials where they are not (machines that compute differently)."""
    import recaudit.studies  # noqa: F401 - declares every study's tables
    from recaudit.experiment import Store, merge_stores, shared_trials

    with Store(store) as s:
        for other in others:
            agreement = shared_trials(s, other)
            added = merge_stores(s, other)
            rows = ", ".join(f"{n} {k}" for n, k in added.items() if k) or "nothing new"
            typer.echo(f"{other} -> {store}: {rows}")
            for a in agreement:
                line = (f"  {a.shared} trial(s) in both: {a.table} identical in {a.same}")
                if a.differing:
                    shown = ", ".join(a.differing[:5]) + (" ..." if len(a.differing) > 5 else "")
                    line += (f", different in {len(a.differing)} ({shown}); kept {store}'s "
                             "rows")
                typer.echo(line, err=bool(a.differing))


def register(app: typer.Typer) -> None:
    app.command("status")(status)
    app.command("results")(results)
    app.command("export")(export)
    app.command("merge")(merge)
