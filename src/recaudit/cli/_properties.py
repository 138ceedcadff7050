"""``recaudit properties``: Shriver 2018's Table 3.4 (and ``--evolving``: Table 3.6)."""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import typer

from recaudit.cli._common import console as _console
from recaudit.cli._common import dataset_spec, split_list
from recaudit.errors import ConfigError, DatasetError, RecauditWarning

log = logging.getLogger(__name__)


def _release_years(spec: Any, log_: Any) -> np.ndarray | None:
    """Release year per item code from a MovieLens ``movies.csv`` next to the ratings file
    (``None`` when there is none: then no item is excluded by year)."""
    import pandas as pd

    from recaudit.data import datasets

    try:
        source = Path(spec.path) if spec.path is not None else Path(datasets.fetch(spec.name))
    except DatasetError as exc:
        log.info("no release years for %s: %s", spec.label, exc)
        return None
    path = (source if source.is_dir() else source.parent) / "movies.csv"
    if not path.exists():
        return None
    movies = pd.read_csv(path)
    if "title" not in movies or "movieId" not in movies:
        warnings.warn(f"{path} has no title/movieId columns; release years are not used",
                      RecauditWarning, stacklevel=2)
        return None
    year_of = {mid: float(m.group(1)) if (m := re.search(r"\((\d{4})\)\s*$", str(t).strip()))
               else np.nan for mid, t in zip(movies["movieId"], movies["title"], strict=True)}
    return np.array([year_of.get(i, np.nan) for i in log_.item_ids.tolist()], dtype=np.float64)


def _fmt(v: Any) -> str:
    if isinstance(v, (frozenset, set)):
        return "{" + ", ".join(sorted(v)) + "}" if v else "∅"
    if isinstance(v, tuple):
        return ", ".join(v[:3]) + (", ..." if len(v) > 3 else "")
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if np.isnan(v):
            return "-"
        if abs(v) < 1e-2 and v != 0:
            return f"{v:.2e}"
        return str(int(v)) if float(v).is_integer() else f"{v:.3f}"
    return str(v)


def properties_cmd(
    dataset: str = typer.Option("ml-latest-small", "--dataset",
                                help="Registered dataset name or a ratings file."),
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
    """Property templates next to precision/recall for several recommenders (Shriver 2018)."""
    from rich.table import Table

    from recaudit.errors import DataError, did_you_mean
    from recaudit.experiment import read_dataset
    from recaudit.models import available, create
    from recaudit.properties import evolving_study, property_table, to_jsonable

    names = split_list(models, "--models")
    for n in names:
        if n not in available():
            raise ConfigError(f"unknown model {n!r} in --models.{did_you_mean(n, available())} "
                              f"Available: {', '.join(available())}")
    spec = dataset_spec(dataset, min_user_interactions=0)
    log = read_dataset(spec)
    if log.rating is None:
        raise DataError("property templates need ratings; this dataset has none",
                        source=spec.label, column="rating", hint="use a ratings dataset")
    factories: dict[str, Callable[[], Any]] = {n: partial(create, n) for n in names}
    console = _console(160)
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
    years = _release_years(spec, log)
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
    from recaudit.properties import save_results

    save_results(path, entries)
    typer.echo(f"saved {', '.join(entries)} to {path}")


def register(app: typer.Typer) -> None:
    app.command("properties")(properties_cmd)
