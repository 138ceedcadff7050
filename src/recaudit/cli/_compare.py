"""``recaudit compare RUN_A RUN_B [RUN_C ...]``: rank-list similarity of exported runs."""

from __future__ import annotations

from pathlib import Path

import typer

from recaudit.cli._common import console as _console

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
    format: str = typer.Option("auto", "--format",
                               help="auto | trec | csv | parquet | recbole (for every run)."),
    missing: str = typer.Option("error", "--missing",
                                help="error | skip: queries present in one run only."),
    output: Path = typer.Option(None, "--output", "-o",
                                help="Write per-query rows (CSV, or Parquet by extension)."),
) -> None:
    """Compare exported rank lists: mean RBO (ext), average overlap, FRBO@k, Jaccard@k.

    Two runs print one table; three or more print the pairwise matrix of each measure.
    Formats: TREC runs (ordered as trec_eval orders them), CSV/Parquet tables (query, item,
    rank or score), RecBole top-k files (user_id:token, item_id_list:token_seq).
    """
    from rich.table import Table

    from recaudit.errors import ConfigError
    from recaudit.runs import METRICS, compare_many, compare_pairs, pairwise_matrix, summarize

    if len(runs) < 2:
        raise ConfigError("compare needs at least two run files")
    per_query = compare_many(runs, k=k, p=p, missing=missing, format=format)
    console = _console(120)
    means = summarize(per_query)
    if len(runs) == 2:
        per_query = per_query.drop(columns=["run_a", "run_b"])
        row = means.iloc[0]
        table = Table(title=f"{row['run_a']} vs {row['run_b']}: {row['queries']} queries")
        table.add_column("measure")
        table.add_column("mean", justify="right")
        table.add_column("95 % interval", justify="right")
        table.add_column("p (identical)", justify="right")
        for m in METRICS:
            table.add_row(_LABELS[m].format(k=k), f"{row[m]:.4f}",
                          f"[{row[m + '_ci_low']:.4f}, {row[m + '_ci_high']:.4f}]",
                          _p(row[m + "_p_identical"]))
        console.print(table)
        console.print("interval over queries; p: the lists are the same on average "
                      "(Shapiro-Wilk, then t or Wilcoxon; Betello et al. 2023's protocol)")
    else:
        for m in METRICS:
            matrix = pairwise_matrix(per_query, m)
            table = Table(title=f"mean {_LABELS[m].format(k=k)}")
            table.add_column("")
            for name in matrix.columns:
                table.add_column(str(name), justify="right")
            for name, values in matrix.iterrows():
                table.add_row(str(name), *(f"{v:.4f}" for v in values))
            console.print(table)
        pairs = compare_pairs(per_query, "rbo")
        table = Table(title=f"is {pairs['reference'].iloc[0]} closer to one run than to "
                            "another? (RBO per query, paired)")
        for col in ("run b", "run c", "RBO(b) - RBO(c)", "95 % interval", "test", "p (Holm)"):
            table.add_column(col, justify="left" if col.startswith("run") else "right")
        for _, r in pairs.iterrows():
            table.add_row(str(r.run_b), str(r.run_c), f"{r.difference:+.4f}",
                          f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]", r.test, _p(r.p))
        console.print(table)
    short = means[means["frbo_queries"] < means["queries"]]
    for _, row in short.iterrows():
        console.print(f"note: FRBO@{k} is undefined for {row['queries'] - row['frbo_queries']} "
                      f"queries of {row['run_a']} vs {row['run_b']} (a list shorter than {k}); "
                      "its mean covers the others")
    console.print(f"p = {p}, k = {k} (RBO: Webber et al. 2010; FRBO: Betello et al. 2023)")
    if output is not None:
        _write(per_query, output)
        console.print(f"per-query rows: {output}")


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_cmd)
