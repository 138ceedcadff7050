"""``recaudit properties``: Shriver 2018's Table 3.4 (and ``--evolving``: Table 3.6)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import typer

from recaudit.cli._common import console as _console
from recaudit.cli._common import dataset_spec, running, split_list
from recaudit.errors import ConfigError

log = logging.getLogger(__name__)


def _has_years(spec: Any) -> bool:
    """Whether release years of the dataset's items are known (a MovieLens movie file next
    to its ratings); without them the evolving study excludes no item by year."""
    from recaudit.errors import DataError, DatasetError
    from recaudit.experiment import load_dataset
    from recaudit.properties import release_years

    try:
        release_years(spec, load_dataset(spec))
    except (DataError, DatasetError) as exc:
        log.info("no release years for %s: %s", spec.label, exc)
        return False
    return True


def _fmt(v: Any) -> str:
    import numpy as np  # here: `recaudit --help` imports no numpy

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
    workers: int = typer.Option(1, "--workers", min=1, help="Parallel trial processes."),
    output: Path = typer.Option(Path("results/properties.duckdb"), "--output", "-o",
                                help="Results store (resumed if it holds these trials)."),
) -> None:
    """Property templates next to precision/recall for several recommenders (Shriver 2018)."""
    from recaudit.cli._tables import fitted

    from recaudit.errors import did_you_mean
    from recaudit.experiment import ModelSpec, Store
    from recaudit.models import available
    from recaudit.properties import (PropertyStudy, evolving_frames, property_frame,
                                     read_values)

    names = split_list(models, "--models")
    for n in names:
        if n not in available():
            raise ConfigError(f"unknown model {n!r} in --models.{did_you_mean(n, available())} "
                              f"Available: {', '.join(available())}")
    spec = dataset_spec(dataset, min_user_interactions=0)
    study = PropertyStudy(models=tuple(ModelSpec(n) for n in names), dataset=spec,
                          fractions=(0.5, 0.6, 0.7, 0.8, 0.9, 1.0) if evolving else (1.0,),
                          years=evolving and _has_years(spec), k=k, seed=seed, folds=folds, accuracy=accuracy,
                          workers=workers, output=str(output))
    console = _console()
    with running(output), console.status("properties") as status:
        study.run_all(progress=lambda done, total: status.update(
            f"properties: {done}/{total} trials"))
    with Store(output, read_only=True) as store:
        values = read_values(store, {t.id for t in study.plan()})
    if not evolving:
        table = property_frame(values)
        console.print(fitted(console, f"Precision, recall and instantiated properties "
                                      f"({dataset}, k={k})", ["Property", *names],
                             [[str(label), *(_fmt(row[n]) for n in names)]
                              for label, row in table.iterrows()]))
        console.print(f"results: {output}", markup=False, soft_wrap=True)
        return
    steps, summary = evolving_frames(values)
    robust = summary.attrs["robust"]
    console.print(fitted(console, f"Maximum absolute % change between consecutive steps "
                                  f"(earliest 50..100 % of {dataset}; * = under 5 %)",
                         ["Property", *names],
                         [[str(label), *(f"{row[n]:.2f}%{' *' if robust.loc[label, n] else ''}"
                                         for n in names)] for label, row in summary.iterrows()]))
    cols = [c for c in steps.columns if c not in ("model", "fraction")]
    for n in names:
        rows = steps[steps["model"] == n].sort_values("fraction")
        console.print(fitted(console, f"{n}: property values per step (earliest % of ratings)",
                             ["Property", *(f"{frac:.0%}" for frac in rows["fraction"])],
                             [[c, *(_fmt(v) for v in rows[c])] for c in cols]))
    console.print(f"results: {output}", markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("properties")(properties_cmd)
