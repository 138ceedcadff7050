"""``recaudit audit | run``: run audits and print their readings."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from recaudit.cli._common import progress_bar, running
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


def decision_tables(frame, title: str) -> list[Table]:
    """:func:`recaudit.audit.summary` as terminal tables, one per (dataset, model): each
    measure as its mean over its 95 % interval, the p-values against the floors."""
    floors = [c for c in frame.columns if c.startswith("p_vs_")]
    tables = []
    for (dataset, model), g in frame.groupby(["dataset", "model"], sort=False):
        table = Table(title=f"{title}: {model} on {dataset}", title_justify="left",
                      caption="[ ] = 95 % interval ("
                              + _LEVELS.get(str(g.levels.iloc[0]), str(g.levels.iloc[0]))
                              + "); p = paired test against the floor, Holm-adjusted.",
                      caption_justify="left")
        shown = [c for c in floors if g[c].notna().any()]
        for col in ("perturbation", "seeds", "queries", *(n for _, n in _SHOWN),
                    *(f"p vs {c[5:].replace('_', '-')}" for c in shown)):
            first = col == "perturbation"
            table.add_column(col, justify="left" if first else "right", no_wrap=True,
                             min_width=max(map(len, g.perturbation.astype(str))) if first
                             else None)
        for _, r in g.iterrows():
            table.add_row(str(r.perturbation), str(r.seeds), str(r.queries),
                          *(_ci(r, m, m.endswith("_change"), "\n") for m, _ in _SHOWN),
                          *(_p(r[c]) for c in shown))
        tables.append(table)
    return tables


def trial_table(store: Path, title: str) -> Table:
    """One row per trial (``recaudit results STORE``): its seed, draw and the means over its
    test queries."""
    from recaudit.audit import trial_summary

    table = Table(title=title, title_justify="left")
    cols = ("rbo", "frbo", "jaccard", "mrr_base", "mrr_pert")
    for col in ("dataset", "model", "perturbation", "seed", "draw", *cols):
        table.add_column(col, justify="right" if col in ("seed", "draw", *cols) else "left",
                         no_wrap=True)
    for _, r in trial_summary(store).iterrows():
        table.add_row(str(r.dataset), str(r.model_label), str(r.perturbation), str(r.seed),
                      str(r.draw), *(f"{r[c]:.4f}" for c in cols))
    return table


def _readings(store: Path, title: str, console) -> None:
    import warnings

    from recaudit.audit import FEW_QUERIES, most_destabilising, summary
    from recaudit.errors import RecauditWarning

    frame = summary(store)
    for table in decision_tables(frame, title):
        console.print(table)
    for line in story(frame, most_destabilising(store)):
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


def _dry_run(config, console, like: Path | None = None, detect: float | None = None) -> None:
    """``--dry-run``: the fits, the estimated wall time and the detectable RBO difference
    (from both levels of variation; ``--like STORE``, ``--detect D``)."""
    import sys

    from recaudit.audit import dry_run

    def say(message: str) -> None:  # what the calibration is timing, as it goes (stderr)
        print(message, file=sys.stderr, flush=True)

    plan = dry_run(config, like=like, detect=detect, progress=say)
    table = Table(title=f"{config.name}: what the audit would train", title_justify="left")
    stacked = plan.stack > 1
    asked = detect is not None
    for col in ("dataset", "model", "baselines", "perturbed", "stored", "to train", "s/epoch",
                "epochs", "s/fit", *(("stack ×",) if stacked else ()), "hours",
                "detectable ΔRBO", *((f"seeds for {detect:g}",) if asked else ())):
        table.add_column(col, justify="left" if col in ("dataset", "model") else "right")
    for f, d in zip(plan.fits.itertuples(), plan.detectable.itertuples()):
        table.add_row(f.dataset, f.model, str(f.baselines), str(f.perturbed),
                      f"{f.stored_baselines} + {f.stored_trials}", str(f.remaining),
                      _or_dash(f.s_per_epoch, "{:.2f}"), _or_dash(f.epochs, "{:.0f}"),
                      _or_dash(f.s_per_fit, "{:.0f}") + f" ({f.time_basis})",
                      *((_or_dash(f.stack_speedup, "{:.2f}"),) if stacked else ()),
                      _or_dash(f.hours, "{:.2f}"),
                      f"{_or_dash(d.rbo_difference, '{:.4f}')} at {d.replicates} ({d.basis})",
                      *((("–" if d.seeds_for is None else str(d.seeds_for)),) if asked else ()))
    console.print(table)
    stacks = (f" and stacks of up to {plan.stack} (stack ×: the calibrated speed-up of a "
              "stack's perturbed fits)") if stacked else ""
    console.print(f"estimated wall time: {plan.hours:.2f} h with {plan.workers} worker(s)"
                  f"{stacks}, about {_or_dash(plan.trials_per_hour, '{:.0f}')} trials/h "
                  "(s/fit: the median own time of the store's finished trials of the model, "
                  "else a one-epoch calibration on this machine).")
    for d in plan.detectable.itertuples():
        if d.basis == "none":
            console.print(f"{d.model} on {d.dataset}: no detectable difference (one seed "
                          "measures no seed-to-seed variation; give --like STORE or let the "
                          "dry run calibrate).")
            continue
        console.print(f"{d.model} on {d.dataset}: detectable ΔRBO {d.rbo_difference:.4f} at "
                      f"{d.replicates} replicate(s): the smallest difference in mean RBO "
                      "between two perturbations that the audit's paired test at 0.05 finds "
                      "with 80 % power, over seeds and test queries; the seeds make "
                      f"{d.replicate_share:.0%} of its variance. Basis: {d.basis} ({d.source})"
                      + (" — two one-epoch seeds: a rough figure, off by 2-3x either way; "
                         "--like STORE reads an earlier audit" if d.basis == "calibration"
                         else "") + ".")
        if asked:
            console.print("  " + (f"--detect {detect:g}: about {d.seeds_for} seeds"
                                  if d.seeds_for is not None else
                                  f"--detect {detect:g}: no number of seeds (the test "
                                  "queries' part alone is larger)"))
    console.print("Nothing was trained into the store.")


def _plan(max_seeds: int, max_draws: int | None, margin: float):
    from recaudit.stats import SequentialPlan

    return SequentialPlan(cap=max_draws or max_seeds, margin=margin)


def _rounds(config, console, max_seeds: int, max_draws: int | None, budget: str | None,
            margin: float) -> Path:
    """``--until-decided``: the audit in rounds (:func:`recaudit.audit.run_until_decided`),
    each round a run with its progress bar; says why it stopped."""
    import sys

    from recaudit.audit import run_until_decided
    from recaudit.cli._common import parse_duration

    seconds = None if budget is None else parse_duration(budget)
    out = run_until_decided(config, _plan(max_seeds, max_draws, margin),
                            grow="draws" if max_draws else "seeds", budget=seconds,
                            run=_progress_runner,
                            progress=lambda m: print(m, file=sys.stderr, flush=True))
    _STOPPED["last"] = out
    return out.store


#: the last run's rounds, for :func:`_decisions` (the readings come between them)
_STOPPED: dict = {}

_WHY = {"decided": "every comparison is decided",
        "beyond cap": "the undecided comparisons would need more replicates than the cap",
        "cap": "the cap is spent",
        "budget": "the next round would not finish within the budget"}


def _decisions(config, console, max_seeds: int, max_draws: int | None, margin: float) -> None:
    """The sequential decisions of an ``--until-decided`` run and why it stopped."""
    out = _STOPPED.pop("last")
    grow = "draws" if max_draws else "seeds"
    table = Table(title=f"Decided in rounds (alpha 0.05 over {len(out.decisions)} "
                        f"comparison(s), valid under repeated looks)", title_justify="left")
    for col in ("comparison", "decision", "ΔRBO, interval", grow, "why"):
        table.add_column(col, justify="right" if col == grow else "left")
    for r in out.decisions.itertuples():
        interval = "–" if r.difference != r.difference else \
            f"{r.difference:+.4f}\n[{r.low:+.4f}, {r.high:+.4f}]"
        table.add_row(escape(f"{r.a} vs {r.b}") + ("" if len(config.models) == 1 else
                                                    f"\n{escape(r.model)}"),
                      r.decision, interval, str(r.look), escape(r.reason))
    console.print(table)
    equivalent = f"; equivalent: inside ±{margin:g}" if margin else ""
    console.print(f"stopped: {_WHY[out.stopped]} ({len(out.rounds)} round(s) this time; "
                  f"greater/less: the first's mean RBO above/below the second's{equivalent}).")


def audit(
    dataset: str = typer.Option("synthetic", help="Registered dataset name or a file path."),
    model: str = typer.Option("gru4rec", help="Model name (see `recaudit models list`)."),
    label: str | None = typer.Option(None, "--label", help="The model's name in tables and "
                                     "figures (default: name and parameters)."),
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
    param: list[str] = typer.Option([], "--param", help="Model parameter KEY=VALUE (JSON)."),
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
    like: Path | None = typer.Option(None, "--like", help="With --dry-run: an earlier "
                                     "audit's store to read the variance between seeds and "
                                     "between queries from (else a one-epoch calibration)."),
    detect: float | None = typer.Option(None, "--detect", help="With --dry-run: a difference "
                                        "in mean RBO to detect; the plan says how many seeds "
                                        "reach it."),
    until_decided: bool = typer.Option(False, "--until-decided", help="Run in rounds of "
                                       "seeds, each given only to comparisons still undecided "
                                       "(sequential tests valid under repeated looks), until "
                                       "all are decided, the cap or the budget is spent."),
    max_seeds: int = typer.Option(32, "--max-seeds", min=3, help="With --until-decided: the "
                                  "most seeds a comparison may receive."),
    max_draws: int | None = typer.Option(None, "--max-draws", min=3, help="With "
                                         "--until-decided: grow the perturbation draws of each "
                                         "seed instead of the seeds, up to this many."),
    budget: str | None = typer.Option(None, "--budget", help="With --until-decided: the time "
                                      "it may take, e.g. 2h or 90m (a round that would not "
                                      "finish in what is left does not start)."),
    margin: float = typer.Option(0.0, "--margin", min=0.0, help="With --until-decided: a "
                                 "difference in mean RBO below which two conditions count as "
                                 "equivalent (0: no equivalence decision)."),
) -> None:
    """Quick audit: one dataset and model, perturbations x seeds, printed as a table."""
    from dataclasses import replace

    from recaudit.audit import AuditConfig, MetricSpec, ModelSpec

    config = AuditConfig(models=(ModelSpec(model, parse_params(param), title=label),),
                         perturbations=_once(perturbation), seeds=tuple(range(seeds)),
                         datasets=(dataset_spec(dataset, **_data_fields(
                             min_interactions, sample_users, sep, column)),),
                         metrics=MetricSpec(k=k, p=p),
                         output=str(output or "results/audit.duckdb"), name="quick-audit")
    config = replace(config, executor=_executor(workers, config, stack))
    if output is None:
        config = replace(config, output=str(default_output(config)))
    console = _console(120)
    if dry:
        return _dry_run(config, console, like, detect)
    if until_decided:
        store = _rounds(config, console, max_seeds, max_draws, budget, margin)
    else:
        store = _progress_runner(config)
    _readings(store, f"Rank-list sensitivity (k={k}, p={p})", console)
    if until_decided:
        _decisions(config, console, max_seeds, max_draws, margin)
    console.print(f"results: {store}")


def run(config: Path = typer.Argument(..., help="Audit config (TOML)."),
        dry: bool = typer.Option(False, "--dry-run", help="Print the fits, the estimated "
                                 "wall time and the detectable difference; train nothing."),
        output: Path | None = typer.Option(None, "--output", "-o", help="DuckDB store "
                                           "(resumed if it exists); overrides the config's "
                                           "`output` key."),
        stack: int | None = typer.Option(None, min=1, help="Train up to this many trials of "
                                         "one baseline together as one stacked model; "
                                         "overrides the config's `executor.stack`."),
        like: Path | None = typer.Option(None, "--like", help="With --dry-run: an earlier "
                                         "audit's store to read the variance between seeds "
                                         "and between queries from."),
        detect: float | None = typer.Option(None, "--detect", help="With --dry-run: a "
                                            "difference in mean RBO to detect; the plan says "
                                            "how many seeds reach it."),
        until_decided: bool = typer.Option(False, "--until-decided", help="Run in rounds "
                                           "until the comparisons are decided (see `recaudit "
                                           "audit --help`)."),
        max_seeds: int = typer.Option(32, "--max-seeds", min=3, help="With --until-decided: "
                                      "the most seeds a comparison may receive."),
        max_draws: int | None = typer.Option(None, "--max-draws", min=3, help="With "
                                             "--until-decided: grow draws instead of seeds, "
                                             "up to this many."),
        budget: str | None = typer.Option(None, "--budget", help="With --until-decided: the "
                                          "time it may take, e.g. 2h or 90m."),
        margin: float = typer.Option(0.0, "--margin", min=0.0, help="With --until-decided: "
                                     "the equivalence margin in mean RBO (0: none)."),
        ) -> None:
    """Run (or resume) the audit described by a TOML config."""
    from recaudit.audit import load_config

    cfg = load_config(config)
    if output is not None:
        cfg = dataclasses.replace(cfg, output=str(output))
    if stack is not None:
        cfg = dataclasses.replace(cfg, executor=dataclasses.replace(cfg.executor, stack=stack))
    console = _console(120)
    if dry:
        return _dry_run(cfg, console, like, detect)
    if until_decided:
        store = _rounds(cfg, console, max_seeds, max_draws, budget, margin)
    else:
        store = _progress_runner(cfg)
    _readings(store, cfg.name, console)
    if until_decided:
        _decisions(cfg, console, max_seeds, max_draws, margin)
    console.print(f"results: {store}")


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)
    app.command("run")(run)
