"""``recaudit slices | changes | exposure STORE``: who is affected by a perturbation.

Thin: each command calls :mod:`recaudit.audit` (:func:`~recaudit.audit.slices`,
:func:`~recaudit.audit.changes`, :func:`~recaudit.audit.most_changed`,
:func:`~recaudit.audit.exposure`) and renders the result as terminal tables, CSV or JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from recaudit.cli._common import console as _console
from recaudit.cli._tables import (add_columns, check_format, emit, mean_and_interval, p_header,
                                  result_table)
from recaudit.errors import ConfigError

__all__ = ["register"]

_STORE = typer.Argument(..., help="Audit store (.duckdb).")
#: ``--data``: the audit's file, moved (a store written before it kept a copy of its data).
_DATA = typer.Option(None, "--data", help="The audit's data file where it is now (moved or "
                     "renamed), checked against the data the trials ran on; only for a store "
                     "written before stores kept a copy of their data. Repeat for several "
                     "datasets.")
_MEASURES = (("rbo", "RBO"), ("jaccard", "Jaccard@k"), ("frbo", "FRBO@k"))


def _p(p: float) -> str:
    from recaudit.audit import p_text

    return p_text(p)


def _edges(text: str | None) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--edges {text!r} must be comma-separated numbers (e.g. "
                          "--edges 20,50,100)") from None


def slice_tables(frame: Any, title: str) -> list[Table]:
    """:func:`recaudit.audit.slices` as terminal tables, one per (dataset, model, kind,
    perturbation): per slice a block of rows, one per measure (its mean and 95 % interval),
    the p-values on the RBO row; the slice's users and queries under its label."""
    floors = [c for c in frame.columns if c.startswith("p_vs_") and c != "p_vs_rest"]
    tables = []
    keys = ["dataset", "model", "by", "perturbation"]
    for (dataset, model, by, pert), g in frame.groupby(keys, sort=False):
        shown = [c for c in floors if g[c].notna().any()]
        table = result_table(f"{title}: {model} on {dataset}, by {by}: {pert}", caption=(
            "[ ] = 95 % interval over seeds and the slice's test queries; "
            + ("p vs floor: paired test of RBO on the slice's queries, Holm over every "
               "perturbation and slice; " if shown else "")
            + "p vs rest: the slice against the other queries (Welch), Holm over the slices."))
        add_columns(table, "slice", "measure", "mean", "95 % interval",
                    *(p_header(c) for c in shown), "p vs\nrest", left=2)
        measures = list(_MEASURES)
        if "mrr_change" in g and g["mrr_change"].notna().any():  # a retrain's window slices
            measures.append(("mrr_change", "MRR stale − fresh"))
        for i, r in enumerate(g.itertuples()):
            labels = [str(r.slice), f"{r.users} users", f"{r.queries} queries", ""]
            for j, (m, name) in enumerate(measures):
                mean, interval = mean_and_interval(r._asdict(), m)
                ps = [_p(getattr(r, c)) for c in (*shown, "p_vs_rest")] if j == 0 \
                    else [""] * (len(shown) + 1)
                table.add_row(labels[j], name, mean, interval, *ps,
                              end_section=j == len(measures) - 1 and i < len(g) - 1)
        tables.append(table)
    return tables


def slices(store: Path = _STORE,
           by: str = typer.Option(..., "--by", help="activity (training interactions), "
                                  "popularity (mean training popularity of the user's items), "
                                  "accuracy (the baseline's reciprocal rank of the user's test "
                                  "items), recency (time from the user's last training "
                                  "interaction to the end of the training log), column:NAME "
                                  "(a user attribute) or window (a retrain's users active and "
                                  "inactive in its removed window, remove-last-<window>)."),
           bins: int = typer.Option(4, "--bins", min=1, help="Equal-count bins of the users "
                                    "with a test query (tied values share a bin)."),
           edges: str | None = typer.Option(None, "--edges", help="Cut points instead of "
                                            "equal-count bins, comma-separated (e.g. "
                                            "20,50,100)."),
           users: Path | None = typer.Option(None, "--users", help="For column:NAME: a table "
                                             "of users (CSV, TSV or Parquet) with a `user` "
                                             "column and the attribute (default: the "
                                             "dataset's own file)."),
           format: str = typer.Option("table", "--format", "-f", help="table, csv or json"),
           data: list[Path] | None = _DATA,
           ) -> None:
    """Stability by user slice: per perturbation and slice of users, RBO, Jaccard@k and FRBO@k
    with their 95 % intervals, the paired test against the noise floor and the test of whether
    the slice differs from the other users (the slices partition the test queries)."""
    from recaudit.audit import slices as compute

    fmt = check_format(format)
    frame = compute(store, by, bins=bins, edges=_edges(edges), users=users, data=data)
    if emit(frame, fmt):
        return
    console = _console()
    if frame.empty:
        console.print(f"{store}: no finished audit trial")
    for table in slice_tables(frame, str(store)):
        console.print(table)


def list_heading(c: Any) -> str:
    """What a :class:`recaudit.audit.ListChange` is about, in one line."""
    return (f"user {c.user} · {c.perturbation} · seed {c.seed}"
            + (f" · draw {c.draw}" if c.draw else "") + f" · query {c.query} (next item "
            f"{c.target}) · {c.model} on {c.dataset}: RBO {c.rbo:.4f}, Jaccard@k "
            f"{c.jaccard:.4f}")


def _list_table(c: Any) -> Table:
    """The two lists of a :class:`recaudit.audit.ListChange` side by side."""
    moved = {item: (a, b) for item, a, b in c.moves}
    entered, left = set(c.entered), set(c.left)
    table = result_table()
    add_columns(table, "rank", "baseline", "perturbed", left=0)
    for col in table.columns[1:]:
        col.justify, col.no_wrap, col.overflow = "left", False, "fold"
    for rank in range(max(len(c.baseline), len(c.perturbed))):
        cells = []
        for lst, gone in ((c.baseline, left), (c.perturbed, entered)):
            if rank >= len(lst):
                cells.append("")
                continue
            item = lst[rank]
            mark = ("- " if lst is c.baseline else "+ ") if item in gone else ""
            a, b = moved.get(item, (rank + 1, rank + 1))
            shift = "" if lst is c.baseline or a == b else \
                f" ↑{a - b}" if b < a else f" ↓{b - a}"
            cells.append(f"{mark}{item}{shift}")
        table.add_row(str(rank + 1), *cells)
    return table


def edit_text(c: Any) -> str:
    """The edit of a :class:`recaudit.audit.ListChange` in one paragraph."""
    e = c.edit
    if e.kind in ("seed-only", "none") or not e.count:
        return ("edit: none (the perturbed model was retrained with another seed)"
                if e.kind == "seed-only" else f"edit: {e.kind}, no interaction changed")
    if e.kind == "retrain":
        mine = len(e.interactions)
        own = ("this user's among them (active in the window): "
               + "; ".join(f"{x.get('item')} at {x.get('time', x.get('timestamp'))}"
                           for x in e.interactions[:5])
               + (" ..." if mine > 5 else "")) if mine else \
            "none of them this user's (inactive in the window)"
        return (f"edit: a retrain's window removed {e.count} interaction"
                f"{'s' if e.count != 1 else ''} of {len(e.users)} user"
                f"{'s' if len(e.users) != 1 else ''}, {own}.")
    shown = []
    for x in e.interactions[:5]:
        what = (f"{x['edit']} {x.get('user')}'s interaction with {x.get('item')} at "
                f"{x.get('time', x.get('timestamp'))}")
        shown.append(what + (f" (now {x['new_item']})" if "new_item" in x else ""))
    more = f" and {e.count - len(shown)} more" if e.count > len(shown) else ""
    text = f"edit: {'; '.join(shown)}{more} — " + (
        "this user's own data" if e.touches_user else "not this user's data")
    if e.descendants is not None:
        text += (f"; in the interaction graph it reaches {e.descendants} training "
                 f"interaction{'s' if e.descendants != 1 else ''}, {e.user_descendants} of "
                 "them this user's")
    return text + "."


def _value(v: Any) -> str:
    """A slice value: a duration as one (``20.4 d``), a number to four digits."""
    from recaudit.data import duration_text

    if hasattr(v, "total_seconds"):
        return duration_text(v.total_seconds())
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def worst_tables(frame: Any, title: str) -> list[Table]:
    """:func:`recaudit.audit.most_changed` as terminal tables, one per (dataset, model,
    perturbation): per user the mean similarities, the list that moved most and the user's
    slice values, one per line."""
    tables = []
    fixed = {"dataset", "model", "perturbation", "user", "queries", "rbo", "jaccard", "frbo",
             "seed", "draw", "query"}
    for (dataset, model, pert), g in frame.groupby(["dataset", "model", "perturbation"],
                                                   sort=False):
        kinds = [c for c in g.columns if c not in fixed]
        table = result_table(f"{title}: {model} on {dataset}: {pert}", caption=(
            "The users with the lowest mean RBO over their test queries and the "
            "perturbation's trials; moved most: their list that moved most; then the "
            "users' slice values."))
        add_columns(table, "user", "queries", "RBO", "Jaccard@k", "FRBO@k", "moved most",
                    *(("slice values",) if kinds else ()), left=1)
        for col in table.columns[5:]:  # text: the list, the slice values
            col.justify = "left"
        for i, r in enumerate(g.itertuples(index=False)):
            row = r._asdict()
            where = f"seed {r.seed}" + (f", draw {r.draw}" if r.draw else "") + \
                f"\nquery {r.query}"
            table.add_row(str(r.user), str(r.queries), *(f"{row[m]:.4f}" for m in
                                                          ("rbo", "jaccard", "frbo")),
                          where, *(("\n".join(f"{k} {_value(row[k])}" for k in kinds),)
                                   if kinds else ()),
                          end_section=i < len(g) - 1)
        tables.append(table)
    return tables


def changes(store: Path = _STORE,
            user: str | None = typer.Option(None, "--user", help="The user's id, as the data "
                                            "writes it."),
            perturbation: str | None = typer.Option(None, "--perturbation", "-p",
                                                    help="Only this perturbation (default: "
                                                         "every one)."),
            seed: int | None = typer.Option(None, "--seed", help="The trial's seed (default: "
                                            "the lowest)."),
            draw: int | None = typer.Option(None, "--draw", help="The perturbation's draw "
                                            "(default: the first)."),
            model: str | None = typer.Option(None, "--model", help="Only this model label "
                                             "(default: every one)."),
            worst: int | None = typer.Option(None, "--worst", min=1, help="Instead of one "
                                             "user: the N users whose lists moved most per "
                                             "perturbation, with their slice values."),
            format: str = typer.Option("table", "--format", "-f",
                                       help="table or json (csv too with --worst)"),
            data: list[Path] | None = _DATA,
            ) -> None:
    """One user's change: the baseline's and the perturbed model's top-k lists side by side in
    the data's own ids, what entered and left, rank moves, RBO and Jaccard@k, and the edit
    that made the perturbed data; or, with --worst N, the users whose lists moved most."""
    from recaudit.audit import changes as compute
    from recaudit.audit import most_changed

    if (user is None) == (worst is None):
        raise ConfigError("give either --user ID (one user's lists) or --worst N (the users "
                          "whose lists moved most)")
    if worst is not None:
        fmt = check_format(format)
        frame = most_changed(store, worst, perturbation=perturbation, data=data)
        if not emit(frame, fmt):
            console = _console()
            for table in worst_tables(frame, f"{store}: the {worst} most-changed users"):
                console.print(table)
        return
    fmt = check_format(format, ("table", "json"))
    found = compute(store, user, perturbation=perturbation, seed=seed, draw=draw, model=model,
                    data=data)
    if fmt == "json":
        typer.echo(json.dumps([c.to_dict() for c in found], indent=2))
        return
    console = _console()
    for c in found:
        console.print(list_heading(c), markup=False)
        console.print(_list_table(c))
        console.print(edit_text(c), markup=False)
        console.print()
    if found:
        console.print("+ entered, - left, ↑/↓ moved up/down by that many ranks")


def _pop(row: Any, m: str, signed: bool = False) -> tuple[str, str]:
    """A popularity mean and its interval, one decimal (``"–"``, ``""`` when missing)."""
    mean, low, high = row[m], row[f"{m}_ci_low"], row[f"{m}_ci_high"]
    fmt = "{:+.1f}" if signed else "{:.1f}"
    if mean != mean:
        return "–", ""
    return fmt.format(mean), ("" if low != low else
                              f"[{fmt.format(low)}, {fmt.format(high)}]")


#: The exposure summary's rows: (label, how a row of the summary gives its mean and interval).
_EXPOSURE = (
    ("lists changed", lambda r: (f"{r.changed:.3f}", "")),
    ("items entered per list", lambda r: (f"{r.moved:.2f}", "")),
    ("popularity entered", lambda r: _pop(r, "popularity_entered")),
    ("popularity left", lambda r: _pop(r, "popularity_left")),
    ("popularity shift", lambda r: _pop(r, "popularity_shift", True)),
    ("Gini base", lambda r: (f"{r.gini_base:.4f}", "")),
    ("Gini perturbed", lambda r: (f"{r.gini_pert:.4f}", "")),
    ("ΔGini", lambda r: mean_and_interval(r, "gini_change", True)),
)


def exposure_tables(result: Any, title: str, top: int) -> list[tuple[str, Table]]:
    """:func:`recaudit.audit.exposure` as (heading, terminal table) pairs: the summary per
    (dataset, model), a block of rows per perturbation, one per measure; then the ``top``
    most-moved items of each perturbation."""
    tables = []
    for (dataset, model), g in result.summary.groupby(["dataset", "model"], sort=False):
        table = result_table(caption=(
            "lists changed: share of top-k lists that changed; items entered: per list; "
            "popularity: mean training interactions of the items that entered / left a "
            "list (shift > 0: toward popular items); Gini of top-k appearances over the "
            "catalogue; [ ] = 95 % interval over seeds and lists (ΔGini: and users), "
            "inside the possible range."))
        add_columns(table, "perturbation", "measure", "mean", "95 % interval", left=2)
        for i, (_, r) in enumerate(g.iterrows()):
            for j, (name, cell) in enumerate(_EXPOSURE):
                table.add_row(str(r.perturbation) if j == 0 else "", name, *cell(r),
                              end_section=j == len(_EXPOSURE) - 1 and i < len(g) - 1)
        tables.append((f"{title}: item exposure, {model} on {dataset}", table))
    for (dataset, model, pert), g in result.items.groupby(["dataset", "model", "perturbation"],
                                                          sort=False):
        table = result_table()
        add_columns(table, "item", "popularity", "entered", "left", "net")
        for r in g.head(top).itertuples(index=False):
            table.add_row(str(r.item), str(int(r.popularity)), f"{r.entered:.2f}",
                          f"{r.left:.2f}", f"{r.net:+.2f}")
        tables.append((f"{pert}: the {min(top, len(g))} items whose exposure moved most "
                       f"({model} on {dataset})", table))
    return tables


def exposure(store: Path = _STORE,
             top: int = typer.Option(10, "--top", min=0, help="Items shown per perturbation "
                                     "(0: all)."),
             items: bool = typer.Option(False, "--items", help="With --format csv or json: "
                                        "the per-item table instead of the summary."),
             format: str = typer.Option("table", "--format", "-f", help="table, csv or json"),
             data: list[Path] | None = _DATA,
             ) -> None:
    """Item exposure: per item, how many users' top-k it entered and left under each
    perturbation; the mean training popularity of entered against left items; the change in
    the Gini coefficient of top-k appearances, with 95 % intervals over seeds and users that
    stay inside the possible range."""
    from recaudit.audit import exposure as compute

    fmt = check_format(format)
    result = compute(store, data=data)
    shown = result.items if not top else result.items.groupby(
        ["dataset", "model", "perturbation"], sort=False).head(top)
    if emit(shown if items else result.summary, fmt):
        return
    console = _console()
    if result.summary.empty:
        console.print(f"{store}: no finished audit trial")
    for heading, table in exposure_tables(result, str(store), top or len(result.items)):
        console.print(heading, markup=False)
        console.print(table)
    if len(result.items):
        console.print("entered / left: users whose top-k the item entered / left, mean over "
                      "trials; popularity: training interactions", markup=False)


def register(app: typer.Typer) -> None:
    app.command("slices")(slices)
    app.command("changes")(changes)
    app.command("exposure")(exposure)
