"""``recaudit fuzz``: Shriver 2018's influence-guided fuzzing study (Tables 4.5-4.9)."""

from __future__ import annotations

from typing import Any

import typer

from recaudit.cli._common import console as _console
from recaudit.cli._common import as_flags, dataset_spec, progress_bar, running, split_list
from recaudit.errors import ConfigError


def _print(console: Any, title: str, frame: Any) -> None:
    from recaudit.cli._tables import fitted

    if frame is None or frame.empty:
        return
    columns = ["Recommender,M" if frame.index.name == "config" else "",
               *(" ".join(str(c) for c in col) if isinstance(col, tuple) else str(col)
                 for col in frame.columns)]
    rows = [[str(idx), *(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row)]
            for idx, row in frame.iterrows()]
    console.print(fitted(console, title, columns, rows))


def fuzz_cmd(
    dataset: str = typer.Option("ml-latest-small", "--dataset",
                                help="Registered dataset name or a ratings file."),
    path: str | None = typer.Option(None, "--path", help="Read the ratings from this file "
                                    "instead of a registered dataset."),
    model: str = typer.Option("funksvd", "--model", "--models",
                              help="Comma-separated registered rating models."),
    heuristics: str = typer.Option("ZERO,ARAND,AMU,ALI,AMR,AMA", "--heuristics",
                                   help="Comma-separated heuristics (Table 4.4, APORTFOLIO)."),
    sizes: str = typer.Option("1,10,100", "--sizes", help="Modification set sizes M."),
    sets: int = typer.Option(20, "--sets", min=1, help="Modification sets per configuration."),
    portfolio: str = typer.Option("AMU,ALI,AMR,AMA", "--portfolio",
                                  help="APORTFOLIO's members (round robin)."),
    k: int = typer.Option(10, "--k", min=1, help="Length of the top-k lists."),
    seed: int = typer.Option(0, "--seed", help="Training and fuzzing seed."),
    f: str = typer.Option("avg", "--f", help="Aggregate over users: avg, min, max, median."),
    metric: str = typer.Option("topout", "--metric", help="Distance in the tables: topout, "
                               "aod or jaccard."),
    output: str = typer.Option("results/fuzz.duckdb", "--output", "-o",
                               help="DuckDB results file (re-running resumes)."),
    workers: int = typer.Option(1, "--workers", min=1, help="Worker processes."),
) -> None:
    """Fuzz the training ratings, retrain, and compare top-k lists (Shriver 2018 Chapter 4)."""
    from recaudit.experiment import ModelSpec
    from recaudit.fuzz import (
        DISTANCES,
        FuzzStudy,
        instability_table,
        load_results,
        portfolio_table,
        run_study,
        significance,
        time_table,
    )

    if metric not in DISTANCES:
        raise ConfigError(f"--metric {metric!r} is not one of {', '.join(DISTANCES)}")
    try:
        size_list = tuple(int(s) for s in split_list(sizes, "--sizes"))
    except ValueError:
        raise ConfigError(f"--sizes must be integers, got {sizes!r}") from None
    spec = dataset_spec(dataset if path is None else path, min_user_interactions=0)
    flags = {"name": f"--model {model}", "models": f"--model {model}",
             "heuristic": f"--heuristics {heuristics}", "heuristics": f"--heuristics {heuristics}",
             "portfolio": f"--portfolio {portfolio}", "sizes": f"--sizes {sizes}",
             "size": f"--sizes {sizes}", "sets": f"--sets {sets}", "k": f"--k {k}",
             "f": f"--f {f}", "seed": f"--seed {seed}", "dataset": "--dataset",
             "workers": f"--workers {workers}"}
    with as_flags(flags):
        study = FuzzStudy.from_dict({
            "models": tuple(ModelSpec(m) for m in split_list(model, "--model")),
            "heuristics": tuple(h.upper() for h in split_list(heuristics, "--heuristics")),
            "sizes": size_list, "sets": sets, "dataset": spec, "seed": seed, "k": k, "f": f,
            "portfolio": tuple(p.upper() for p in split_list(portfolio, "--portfolio")),
            "output": output, "workers": workers})
    console = _console()
    with progress_bar(transient=True) as bar:
        task = bar.add_task("fuzzing", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        with running(output):
            run_study(study, progress=progress)
    results = load_results(output, study)
    sig = significance(results, metric=metric)
    _print(console, "Table 4.5: time (s) to generate a modification set (add heuristics)",
           time_table(results))
    style = "rich" if console.is_terminal else "markdown"  # marks survive a pipe
    names = {"add": "4.6", "remove": "4.7", "change": "4.8"}
    for kind, num in names.items():
        _print(console, f"Table {num}: mean {metric} instability, {kind} modifications "
               "(bold: > random baseline, italic: <, Welch p < 0.05; *: >= δ = 100 M/|D|)",
               instability_table(sig, kind, style=style))
    _print(console, f"Table 4.9: mean {metric} instability of APORTFOLIO",
           portfolio_table(sig, style=style))
    console.print(f"results: {output} ({len(results)} trials)", markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("fuzz")(fuzz_cmd)
