"""``--until-decided`` of ``recaudit audit | run``: the options, the rounds, the decisions."""

from __future__ import annotations

import sys
from typing import Any

import typer
from rich.markup import escape

__all__ = ["MAX_SEEDS", "check", "futility_flag", "kept", "options", "planned", "rounds",
           "show"]


def options() -> dict[str, Any]:
    """The options ``audit`` and ``run`` share (typer declarations by parameter name)."""
    return {
        "until_decided": typer.Option(
            False, "--until-decided", help="Run in rounds of seeds, each given only to the "
            "comparisons still undecided (tests valid under repeated looks), until all are "
            "decided or the cap or budget is spent. The comparisons: each perturbation "
            "against each floor (else every pair of perturbations) and, with several "
            "--model, the models under each perturbation; an audit with none is refused."),
        "max_seeds": typer.Option(None, "--max-seeds", min=3, help="With --until-decided: "
                                  "the most seeds a comparison may receive (default 32)."),
        "max_draws": typer.Option(None, "--max-draws", min=3, help="With --until-decided: "
                                  "grow each seed's perturbation draws instead of the seeds, "
                                  "up to this many."),
        "budget": typer.Option(None, "--budget", help="With --until-decided: the time it may "
                               "take, e.g. 2h or 90m (a round that would not finish in what is "
                               "left does not start)."),
        "margin": typer.Option(None, "--margin", min=0.0, help="With --until-decided: a "
                               "difference in mean RBO below which two conditions count as "
                               "equivalent (default 0: no equivalence decision)."),
        "futility": typer.Option(None, "--futility", help="With --until-decided: 'on' (the "
                                 "default) stops a comparison that its cap would not decide, "
                                 "judged against --detect (by default the difference the cap "
                                 "detects with 80 % power); 'off' runs every undecided "
                                 "comparison to the cap. Either keeps alpha (the futility "
                                 "rule is non-binding)."),
    }


def futility_flag(value: str | None) -> bool:
    """``--futility on|off`` as a bool (None: on; a usage error for anything else)."""
    if value not in (None, "on", "off"):
        raise typer.BadParameter(f"expected 'on' or 'off', got {value!r}",
                                 param_hint="'--futility'")
    return value != "off"


#: The cap of ``--max-seeds`` when none is given.
MAX_SEEDS = 32


def check(dry: bool, until_decided: bool, *, like=None, detect=None, max_seeds=None,
          max_draws=None, budget=None, margin=None, futility=None) -> None:
    """Options that would do nothing are a usage error (exit 2), as ``reproduce run`` has
    them: ``--like`` plans (``--dry-run``); ``--detect`` plans, or names the difference
    ``--until-decided`` judges futility against; ``--max-seeds``, ``--max-draws``,
    ``--budget``, ``--margin`` and ``--futility`` shape the rounds of ``--until-decided``."""
    from recaudit.errors import ConfigError

    def given(**flags) -> list[str]:
        return [f"--{k.replace('_', '-')}" for k, v in flags.items() if v is not None]

    idle = given(like=like) if not dry else []
    idle += given(detect=detect) if not (dry or until_decided) else []
    if idle:
        raise ConfigError(f"{' and '.join(idle)} go{'es' if len(idle) == 1 else ''} with "
                          "--dry-run" + ("" if like is not None else " or --until-decided")
                          + ": they plan an audit, and without --dry-run it runs",
                          hint="add --dry-run to plan, or leave "
                               f"{'it' if len(idle) == 1 else 'them'} out")
    futility_flag(futility)
    idle = given(max_seeds=max_seeds, max_draws=max_draws, budget=budget,
                 margin=margin, futility=futility) if not until_decided else []
    if idle:
        raise ConfigError(f"{' and '.join(idle)} go{'es' if len(idle) == 1 else ''} with "
                          "--until-decided: without it the audit runs its --seeds once",
                          hint="add --until-decided to run in rounds until decided, or "
                               f"leave {'it' if len(idle) == 1 else 'them'} out")


def _plan(max_seeds: int | None, max_draws: int | None, margin: float | None,
          futility: str | None = None, detect: float | None = None):
    from recaudit.stats import SequentialPlan

    return SequentialPlan(cap=max_draws or max_seeds or MAX_SEEDS, margin=margin or 0.0,
                          futility=futility_flag(futility), detect=detect)


def planned(until_decided: bool, max_seeds: int | None, max_draws: int | None,
            margin: float | None, futility: str | None = None,
            detect: float | None = None) -> tuple[Any, str]:
    """``(plan, grow)`` of the dry run: the run's :class:`~recaudit.stats.SequentialPlan`
    with ``--until-decided`` (else None) and what it grows."""
    grow = "draws" if max_draws else "seeds"
    plan = _plan(max_seeds, max_draws, margin, futility, detect) if until_decided else None
    return plan, grow


def rounds(config, runner, max_seeds: int | None, max_draws: int | None, budget: str | None,
           margin: float | None, futility: str | None = None, detect: float | None = None):
    """The audit in rounds (:func:`recaudit.audit.run_until_decided`), each round run by
    ``runner`` (the command's progress bar); returns its :class:`~recaudit.audit.Rounds`.
    ``futility``: ``--futility`` (on, off; None: on); ``detect``: the difference futility
    is judged against (``--detect``; None: the cap's 80 %-power difference)."""
    from recaudit.audit import run_until_decided
    from recaudit.cli._common import parse_duration

    seconds = None if budget is None else parse_duration(budget)
    return run_until_decided(config, _plan(max_seeds, max_draws, margin, futility, detect),
                             grow="draws" if max_draws else "seeds", budget=seconds,
                             run=runner, progress=lambda m: print(m, file=sys.stderr,
                                                                  flush=True))


def why(stopped: str) -> str:
    """Why a run stopped, in words (:data:`recaudit.stats.STOPPED`, and the budget)."""
    from recaudit.stats import STOPPED  # here: the command's start imports no scipy

    return {**STOPPED, "budget": "the next round would not finish within the budget"}[stopped]


def _lines(frame, several: bool) -> list[tuple[str, str, str, str, str]]:
    """(name, decision, interval, replicates, reason) of each decision in ``frame``."""
    from recaudit.audit import comparison_name

    lines = []
    for r in frame.itertuples():
        interval = "–" if r.difference != r.difference else \
            f"{r.difference:+.4f} [{r.low:+.4f}, {r.high:+.4f}]"
        lines.append((comparison_name(r, several), r.decision, interval, str(r.look), r.reason))
    return lines


def _table(lines, grow: str, alpha: float = 0.05):
    from recaudit.cli._tables import add_columns, result_table

    table = result_table(f"Decided in rounds (alpha {alpha:g} over {len(lines)} "
                         "comparison(s), valid under repeated looks)", None)
    add_columns(table, "comparison", "decision", "ΔRBO, interval", grow, left=2)
    for name, decision, interval, look, reason in lines:
        table.add_row(escape(name), decision, interval, look)
        table.add_row(f"  [dim]{escape(reason)}[/dim]", "", "", "")
    return table


def _meaning(margin: float | None) -> str:
    return ("greater/less: the first's mean RBO above/below the second's"
            + (f"; equivalent: within ±{margin:g}" if margin else ""))


def show(out, config, console, fmt: str, margin: float | None, grow: str = "seeds") -> None:
    """The decisions of an ``--until-decided`` run and why it stopped: a table (``fmt`` table)
    or one line per comparison on stderr beside CSV or JSON. ``grow``: seeds or draws."""
    lines = _lines(out.decisions, len(config.models) > 1)
    stopped = (f"stopped: {why(out.stopped)} ({len(out.rounds)} round(s) this time; "
               f"{_meaning(margin)}). These are the run's decisions; the tables' p-values "
               "read the store once, as if its seeds had been fixed in advance.")
    if fmt != "table":
        for line in lines:
            typer.echo(" · ".join(line), err=True)
        typer.echo(stopped, err=True)
        return
    console.print(_table(lines, grow))
    console.print(stopped, markup=False)


def kept(store, console) -> bool:
    """The decisions of the store's last ``--until-decided`` call, read back
    (:func:`recaudit.audit.decisions_of_rounds`), as the run printed them; False when the
    store was not run until decided."""
    from recaudit.audit import AuditConfig, decisions_of_rounds

    found = decisions_of_rounds(store, AuditConfig.from_dict)
    if found is None:
        return False
    frame, plan, rounds = found
    several = frame.kind.eq("models").any() or frame.model.nunique() > 1
    grow = rounds[-1]["plan"].get("grow", "seeds") if rounds else "seeds"
    console.print(_table(_lines(frame, several), grow, plan.alpha))
    console.print(f"From the store's last --until-decided call ({len(rounds)} round(s), cap "
                  f"{plan.cap}; {_meaning(plan.margin)}).", markup=False)
    return True
