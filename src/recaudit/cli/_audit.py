"""``recaudit audit | run``: run audits and print their readings."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from recaudit.cli._common import console as _console
from recaudit.cli._common import dataset_spec, parse_params

__all__ = ["register"]


def _progress_runner(config, console) -> Path:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from recaudit.audit import run_audit

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                  console=console, transient=False) as bar:
        task = bar.add_task("trials", total=None)

        def progress(event, trial, done, total):
            bar.update(task, total=total, completed=done)
            if trial is not None:
                bar.update(task, description=f"{trial.model.name} · {trial.perturbation} · "
                                             f"seed {trial.seed}")

        return run_audit(config, progress=progress)


def story(agg) -> list[str]:
    """Plain-language reading of a seed summary: each data perturbation's effect on the rank
    lists against its effect on MRR, next to the seed-only noise floor when it was measured.

    ``agg`` is :func:`recaudit.audit.seed_summary` output (with ``average_overlap``).
    """
    lines = []
    for (dataset, model), g in agg.groupby(["dataset", "model_label"], sort=False):
        rows = {r.perturbation: r for r in g.itertuples()}
        floor = rows.get("seed-only")
        for pert, r in rows.items():
            if pert in ("seed-only", "none"):
                continue
            d_mrr = abs(r.mrr_pert_mean - r.mrr_base_mean)
            text = (f"{model} on {dataset}: {pert} left the rank lists at RBO "
                    f"{r.rbo_mean:.3f} and Jaccard@k {r.jaccard_mean:.3f} (1 = unchanged) "
                    f"while MRR moved by {d_mrr:.4f}")
            if floor is not None:
                text += (f"; retraining with another seed alone gives RBO "
                         f"{floor.rbo_mean:.3f}, the noise floor")
            lines.append(text + ".")
    return lines


def summary_tables(store: Path, title: str) -> list[Table]:
    """One table per (dataset, model): a row per perturbation and seed, then mean ± std."""
    from recaudit.audit import seed_summary, trial_summary

    summary = trial_summary(store)
    agg = seed_summary(summary)
    tables = []
    for (dataset, model), g in summary.groupby(["dataset", "model_label"], sort=False):
        table = Table(title=f"{title}: {model} on {dataset}", title_justify="left")
        for col in ("perturbation", "seed", "RBO", "FRBO@k", "Jaccard@k", "MRR base",
                    "MRR pert"):
            table.add_column(col, justify="left" if col == "perturbation" else "right",
                             no_wrap=True)
        for pert, rows in g.groupby("perturbation", sort=False):
            for _, r in rows.iterrows():
                table.add_row(pert, str(r.seed), f"{r.rbo:.4f}", f"{r.frbo:.4f}",
                              f"{r.jaccard:.4f}", f"{r.mrr_base:.4f}", f"{r.mrr_pert:.4f}")
            a = agg[(agg.dataset == dataset) & (agg.model_label == model)
                    & (agg.perturbation == pert)].iloc[0]

            def pm(m: str, a=a) -> str:
                std = a[f"{m}_std"]
                return f"{a[f'{m}_mean']:.4f}" + ("" if std != std else f" ± {std:.4f}")

            table.add_row(pert, "mean", pm("rbo"), pm("frbo"), pm("jaccard"), pm("mrr_base"),
                          pm("mrr_pert"), style="bold", end_section=True)
        tables.append(table)
    return tables


def audit(
    dataset: str = typer.Option("synthetic", help="Registered dataset name or a file path."),
    model: str = typer.Option("gru4rec", help="Model name (see `recaudit models list`)."),
    perturbation: list[str] = typer.Option(["random-delete"], "--perturbation", "-p",
                                           help="Perturbation name; repeat for several."),
    seeds: int = typer.Option(3, min=1, help="Number of seeds (0..n-1)."),
    param: list[str] = typer.Option([], "--param", help="Model parameter KEY=VALUE (JSON)."),
    k: int = typer.Option(10, min=1, help="Cut-off for Jaccard@k, FRBO@k and accuracy."),
    p: float = typer.Option(0.9, help="RBO persistence, in (0, 1)."),
    workers: int = typer.Option(1, min=1, help="Worker processes (1 = in-process)."),
    output: Path = typer.Option(Path("results/audit.duckdb"), "--output", "-o",
                                help="DuckDB store (resumed if it exists)."),
) -> None:
    """Quick audit: one dataset and model, perturbations x seeds, printed as a table."""
    from recaudit.audit import AuditConfig, ExecutorSpec, MetricSpec, ModelSpec

    config = AuditConfig(models=(ModelSpec(model, parse_params(param)),),
                         perturbations=tuple(perturbation), seeds=tuple(range(seeds)),
                         datasets=(dataset_spec(dataset),), metrics=MetricSpec(k=k, p=p),
                         executor=ExecutorSpec("process" if workers > 1 else "inprocess",
                                               workers),
                         output=str(output), name="quick-audit")
    console = _console(120)
    store = _progress_runner(config, console)
    for table in summary_tables(store, f"Rank-list sensitivity (k={k}, p={p})"):
        console.print(table)
    from recaudit.audit import seed_summary, trial_summary

    for line in story(seed_summary(trial_summary(store))):
        console.print(line)
    console.print(f"results: {store}")


def run(config: Path = typer.Argument(..., help="Audit config (TOML).")) -> None:
    """Run (or resume) the audit described by a TOML config."""
    from recaudit.audit import load_config

    cfg = load_config(config)
    console = _console(120)
    store = _progress_runner(cfg, console)
    for table in summary_tables(store, cfg.name):
        console.print(table)
    console.print(f"results: {store}")


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)
    app.command("run")(run)
