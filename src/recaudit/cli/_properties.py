"""``recaudit properties``: seed 004's Table 3.4 (and ``--evolving``: Table 3.6)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import typer

from recaudit.errors import ConfigError


def _console():
    from rich.console import Console

    console = Console(highlight=False)
    return console if console.is_terminal else Console(highlight=False, width=160)


def _release_years(dataset: str, log: Any) -> np.ndarray | None:
    """Release year per item code from a MovieLens ``movies.csv`` next to the ratings file."""
    import pandas as pd

    from recaudit.data import datasets

    try:
        path = Path(datasets.fetch(dataset)).with_name("movies.csv")
    except Exception:  # noqa: BLE001 - years are optional: no file, no restriction
        return None
    if not path.exists():
        return None
    movies = pd.read_csv(path)
    if "title" not in movies or "movieId" not in movies:
        return None
    year_of = {mid: float(m.group(1)) if (m := re.search(r"\((\d{4})\)\s*$", str(t).strip()))
               else np.nan for mid, t in zip(movies["movieId"], movies["title"], strict=True)}
    return np.array([year_of.get(i, np.nan) for i in log.item_ids.tolist()], dtype=np.float64)


def _fmt(v: Any) -> str:
    if isinstance(v, (frozenset, set)):
        return "{" + ", ".join(sorted(v)) + "}" if v else "∅"
    if isinstance(v, tuple):
        return ", ".join(v[:3]) + (", ..." if len(v) > 3 else "")
    if isinstance(v, (float, np.floating)):
        if np.isnan(v):
            return "-"
        if abs(v) < 1e-2 and v != 0:
            return f"{v:.2e}"
        return str(int(v)) if float(v).is_integer() else f"{v:.3f}"
    return str(v)


def properties_cmd(
    dataset: str = typer.Option("ml-latest-small", "--dataset", help="Registered dataset name."),
    models: str = typer.Option("user-user,item-item,funksvd,slope-one", "--models",
                               help="Comma-separated registered model names."),
    k: int = typer.Option(10, "--k", min=1, help="Length of the top-k lists."),
    seed: int = typer.Option(0, "--seed", help="Seed of the models and the CV folds."),
    folds: int = typer.Option(5, "--folds", min=2, help="Cross-validation folds."),
    accuracy: bool = typer.Option(True, "--accuracy/--no-accuracy",
                                  help="Compute precision/recall by cross-validation."),
    evolving: bool = typer.Option(False, "--evolving",
                                  help="Run the evolving-dataset study (Table 3.6)."),
    store: Path | None = typer.Option(None, "--store",
                                      help="Also save the tables in this DuckDB results store "
                                           "(meta keys properties.*)."),
) -> None:
    """Property templates next to precision/recall for several recommenders (seed 004)."""
    from rich.table import Table

    from recaudit.data import datasets
    from recaudit.models import available, create
    from recaudit.properties import evolving_study, property_table, to_jsonable

    names = [m.strip() for m in models.split(",") if m.strip()]
    if not names:
        raise ConfigError("--models is empty; give e.g. --models user-user,funksvd")
    for n in names:
        if n not in available():
            raise ConfigError(f"unknown model {n!r} in --models; available: "
                              f"{', '.join(available())}")
    log = datasets.load(dataset)
    if log.rating is None:
        raise ConfigError(f"dataset {dataset!r} has no ratings; property templates need them")
    factories = {n: (lambda n=n: create(n)) for n in names}
    console = _console()
    noun = "movies" if dataset.startswith("ml-") else "items"
    if not evolving:
        table = property_table(factories, log, k=k, seed=seed, accuracy=accuracy, folds=folds,
                               item_noun=noun)
        out = Table(title=f"Precision, recall and instantiated properties ({dataset}, k={k})")
        out.add_column("Property", no_wrap=True)
        for n in names:
            out.add_column(n, justify="right")
        for label, row in table.iterrows():
            out.add_row(str(label), *(_fmt(row[n]) for n in names))
        console.print(out)
        _save(store, {"properties.table": {"dataset": dataset, "k": k, "seed": seed,
                                            "values": to_jsonable(table)}})
        return
    years = _release_years(dataset, log)
    steps, summary = evolving_study(factories, log, k=k, seed=seed, item_years=years,
                                    accuracy=accuracy, folds=folds)
    robust = summary.attrs["robust"]
    out = Table(title=f"Maximum absolute % change between consecutive steps "
                      f"(earliest 50..100 % of {dataset}; * = under 5 %)")
    out.add_column("Property", no_wrap=True)
    for n in names:
        out.add_column(n, justify="right")
    for label, row in summary.iterrows():
        out.add_row(str(label), *(f"{row[n]:.2f}%{' *' if robust.loc[label, n] else ''}"
                                  for n in names))
    console.print(out)
    cols = [c for c in steps.columns if c not in ("model", "fraction")]
    for n in names:
        rows = steps[steps["model"] == n].sort_values("fraction")
        per = Table(title=f"{n}: property values per step (earliest % of ratings)")
        per.add_column("Property", no_wrap=True)
        for frac in rows["fraction"]:
            per.add_column(f"{frac:.0%}", justify="right")
        for c in cols:
            per.add_row(c, *(_fmt(v) for v in rows[c]))
        console.print(per)
    _save(store, {"properties.evolving": {
        "dataset": dataset, "k": k, "seed": seed, "max_abs_percent_change": to_jsonable(summary),
        "steps": [{key: (None if isinstance(v, float) and not np.isfinite(v) else v)
                   for key, v in row.items()} for row in steps.to_dict(orient="records")]}})


def _save(path: Path | None, entries: dict[str, Any]) -> None:
    if path is None:
        return
    from recaudit.audit._store import Store

    with Store(path) as st:
        for key, value in entries.items():
            st.set_meta(key, value)
    typer.echo(f"saved {', '.join(entries)} to {path}")


def register(app: typer.Typer) -> None:
    app.command("properties")(properties_cmd)
