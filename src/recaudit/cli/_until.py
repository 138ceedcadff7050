"""``--until-decided`` of ``recaudit audit | run``: the options, the rounds, the decisions."""

from __future__ import annotations

import sys
from typing import Any

import typer
from rich.markup import escape

from recaudit.stats import STOPPED

__all__ = ["options", "rounds", "show"]


def options() -> dict[str, Any]:
    """The options ``audit`` and ``run`` share (typer declarations by parameter name)."""
    return {
        "until_decided": typer.Option(
            False, "--until-decided", help="Run in rounds of seeds, each given only to the "
            "comparisons still undecided (tests valid under repeated looks), until all are "
            "decided or the cap or budget is spent."),
        "max_seeds": typer.Option(32, "--max-seeds", min=3, help="With --until-decided: the "
                                  "most seeds a comparison may receive."),
        "max_draws": typer.Option(None, "--max-draws", min=3, help="With --until-decided: "
                                  "grow each seed's perturbation draws instead of the seeds, "
                                  "up to this many."),
        "budget": typer.Option(None, "--budget", help="With --until-decided: the time it may "
                               "take, e.g. 2h or 90m (a round that would not finish in what is "
                               "left does not start)."),
        "margin": typer.Option(0.0, "--margin", min=0.0, help="With --until-decided: a "
                               "difference in mean RBO below which two conditions count as "
                               "equivalent (0: no equivalence decision)."),
        "futility": typer.Option("on", "--futility", help="With --until-decided: 'on' stops "
                                 "a comparison that its cap would not decide (judged against "
                                 "--detect, by default the difference the cap detects with "
                                 "80 % power); 'off' runs every undecided comparison to the "
                                 "cap. Either keeps alpha (the futility rule is non-binding)."),
    }


def futility_flag(value: str) -> bool:
    """``--futility on|off`` as a bool (a usage error for anything else)."""
    if value not in ("on", "off"):
        raise typer.BadParameter(f"expected 'on' or 'off', got {value!r}",
                                 param_hint="'--futility'")
    return value == "on"


def _plan(max_seeds: int, max_draws: int | None, margin: float, futility: bool = True,
          detect: float | None = None):
    from recaudit.stats import SequentialPlan

    return SequentialPlan(cap=max_draws or max_seeds, margin=margin, futility=futility,
                          detect=detect)


def rounds(config, runner, max_seeds: int, max_draws: int | None, budget: str | None,
           margin: float, futility: str = "on", detect: float | None = None):
    """The audit in rounds (:func:`recaudit.audit.run_until_decided`), each round run by
    ``runner`` (the command's progress bar); returns its :class:`~recaudit.audit.Rounds`.
    ``futility``: ``--futility`` (on, off); ``detect``: the difference futility is judged
    against (``--detect``; None: the cap's 80 %-power difference)."""
    from recaudit.audit import run_until_decided
    from recaudit.cli._common import parse_duration

    seconds = None if budget is None else parse_duration(budget)
    plan = _plan(max_seeds, max_draws, margin, futility_flag(futility), detect)
    return run_until_decided(config, plan,
                             grow="draws" if max_draws else "seeds", budget=seconds,
                             run=runner, progress=lambda m: print(m, file=sys.stderr,
                                                                  flush=True))


WHY = {**STOPPED, "budget": "the next round would not finish within the budget"}


def show(out, config, console, fmt: str, margin: float, grow: str = "seeds") -> None:
    """The decisions of an ``--until-decided`` run and why it stopped: a table (``fmt`` table)
    or one line per comparison on stderr beside CSV or JSON. ``grow``: seeds or draws."""
    from recaudit.cli._tables import add_columns, result_table

    lines = []
    for r in out.decisions.itertuples():
        name = f"{r.a} vs {r.b}" + ("" if len(config.models) == 1 else f" ({r.model})")
        interval = "–" if r.difference != r.difference else \
            f"{r.difference:+.4f} [{r.low:+.4f}, {r.high:+.4f}]"
        lines.append((name, r.decision, interval, str(r.look), r.reason))
    stopped = (f"stopped: {WHY[out.stopped]} ({len(out.rounds)} round(s) this time; "
               "greater/less: the first's mean RBO above/below the second's"
               + (f"; equivalent: within ±{margin:g}" if margin else "") + ").")
    if fmt != "table":
        for line in lines:
            typer.echo(" · ".join(line), err=True)
        typer.echo(stopped, err=True)
        return
    table = result_table(f"Decided in rounds (alpha 0.05 over {len(lines)} comparison(s), "
                         "valid under repeated looks)", None)
    add_columns(table, "comparison", "decision", "ΔRBO, interval", grow, left=2)
    for name, decision, interval, look, reason in lines:
        table.add_row(escape(name), decision, interval, look)
        table.add_row(f"  [dim]{escape(reason)}[/dim]", "", "", "")
    console.print(table)
    console.print(stopped, markup=False)
