"""``recaudit compare RUN_A RUN_B [RUN_C ...]``: rank-list similarity of exported runs."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from recaudit.cli._common import console as _console
from recaudit.cli._tables import (FORMATS, add_columns, emit, fits, format_option, records,
                                  result_table)

_LABELS = {"rbo": "RBO (ext)", "average_overlap": "average overlap", "frbo": "FRBO@{k}",
           "jaccard": "Jaccard@{k}"}


def _write(per_query, path: Path) -> None:
    from recaudit._files import atomic_write

    if path.suffix.lower() in (".parquet", ".pq"):
        atomic_write(path, lambda tmp: per_query.to_parquet(tmp, index=False))
    else:
        atomic_write(path, lambda tmp: per_query.to_csv(tmp, index=False))


def _p(p: float) -> str:
    return "–" if p != p else (f"{p:.2g}" if p < 0.001 else f"{p:.3f}")


def compare_cmd(
    runs: list[Path] = typer.Argument(..., help="Two or more run files of the same queries."),
    k: int = typer.Option(10, "--k", help="Cut-off of FRBO@k and Jaccard@k."),
    p: float = typer.Option(0.9, "--p", help="RBO persistence."),
    label: list[str] = typer.Option([], "--label", help="A run's name in the tables, one per "
                                    "run in order (default: the short, distinct part of "
                                    "its path)."),
    run_format: str = typer.Option("auto", "--run-format",
                                   help="auto | trec | csv | parquet | recbole: how the run "
                                        "files are written (for every run)."),
    missing: str = typer.Option("error", "--missing",
                                help="error | skip: queries present in one run only."),
    output: Path = typer.Option(None, "--output", "-o",
                                help="Write per-query rows (CSV, or Parquet by extension)."),
    format: str = format_option(),
) -> None:
    """Compare exported rank lists: mean RBO (ext), average overlap, FRBO@k, Jaccard@k.

    Two runs print one table; three or more print the pairwise matrix of each measure.
    Run files: TREC runs (ordered as trec_eval orders them), CSV/Parquet tables (query,
    item, rank or score), RecBole top-k files (user_id:token, item_id_list:token_seq).
    """
    from recaudit.errors import ConfigError
    from recaudit.runs import compare_many, compare_pairs, summarize

    if format not in FORMATS:
        raise ConfigError(f"--format must be table, csv or json, got {format!r}",
                          hint="--format is what compare prints; the run files' own format "
                               "is --run-format")
    if len(runs) < 2:
        raise ConfigError("compare needs at least two run files")
    per_query = compare_many(runs, k=k, p=p, missing=missing, format=run_format,
                             labels=label or None)
    means = summarize(per_query)
    pairs = compare_pairs(per_query, "rbo") if len(runs) > 2 else None
    if format == "json":
        typer.echo(json.dumps({"summary": records(means),
                               "pairs": records(pairs) if pairs is not None else []},
                              indent=2, allow_nan=False))
    elif not emit(means, format):
        _tables(per_query, means, pairs, k, p)
    if output is not None:
        if len(runs) == 2:
            per_query = per_query.drop(columns=["run_a", "run_b"])
        _write(per_query, output)
        message = f"per-query rows: {output}"
        if format == "table":
            _console().print(message, markup=False, soft_wrap=True)
        else:
            typer.echo(message, err=True)


def _tables(per_query, means, pairs, k: int, p: float) -> None:
    from recaudit.runs import METRICS, pairwise_matrix

    console = _console()
    if pairs is None:
        row = means.iloc[0]
        table = result_table(f"{row['run_a']} vs {row['run_b']}: {row['queries']} queries",
                             caption="interval over queries; p: the lists are the same on "
                                     "average (Shapiro-Wilk, then t or Wilcoxon; Betello et "
                                     "al. 2023's protocol)")
        add_columns(table, "measure", "mean", "95 % interval", "p\n(identical)")
        for m in METRICS:
            table.add_row(_LABELS[m].format(k=k), f"{row[m]:.4f}",
                          f"[{row[m + '_ci_low']:.4f}, {row[m + '_ci_high']:.4f}]",
                          _p(row[m + "_p_identical"]))
        console.print(table)
    else:
        for m in METRICS:
            console.print(_matrix(pairwise_matrix(per_query, m), means, m, k, console))
        table = result_table(f"is {pairs['reference'].iloc[0]} closer to one run than to "
                             "another? (RBO per query, paired)")
        table.caption = ("RBO(b) − RBO(c): the mean difference per query and its 95 % "
                         "interval; p: paired test, Holm-adjusted over the table")
        table.caption_justify = "left"
        add_columns(table, "run b", "run c", "RBO(b) − RBO(c)", "test", "p", left=2)
        for _, r in pairs.iterrows():
            table.add_row(str(r.run_b), str(r.run_c), f"{r.difference:+.4f}\n"
                          f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]", r.test, _p(r.p))
        console.print(table)
    short = means[means["frbo_queries"] < means["queries"]]
    for _, row in short.iterrows():
        console.print(f"note: FRBO@{k} is undefined for {row['queries'] - row['frbo_queries']} "
                      f"queries of {row['run_a']} vs {row['run_b']} (a list shorter than {k}); "
                      "its mean covers the others", markup=False)
    console.print(f"p = {p}, k = {k} (RBO: Webber et al. 2010; FRBO: Betello et al. 2023)")


def _matrix(matrix, means, m: str, k: int, console):
    """The pairwise matrix of measure ``m`` where it fits the console, else one row per pair
    of runs (so that no number is cut)."""
    title = f"mean {_LABELS[m].format(k=k)}"
    table = result_table(title)
    add_columns(table, "", *map(str, matrix.columns))
    for name, values in matrix.iterrows():
        table.add_row(str(name), *(f"{v:.4f}" for v in values))
    if fits(console, table):
        return table
    table = result_table(title)
    add_columns(table, "run a", "run b", "mean", left=2)
    for _, r in means.iterrows():
        table.add_row(str(r.run_a), str(r.run_b), f"{r[m]:.4f}")
    return table


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_cmd)
