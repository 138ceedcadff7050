"""``--dry-run`` of ``recaudit audit | run | reproduce run``: the plan, as people read it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["options", "wall_time"]


def options() -> dict[str, Any]:
    """``--like`` and ``--detect``, the options of ``--dry-run``'s plan (typer declarations
    by parameter name, shared by ``audit`` and ``run``)."""
    import typer

    return {
        "like": typer.Option(None, "--like", help="With --dry-run: an earlier audit's store "
                             "to read the variance between seeds and between queries from, "
                             "and the time per fit where it holds the same model on the "
                             "same data (else a one-epoch calibration); a warning names "
                             "what differs."),
        "detect": typer.Option(None, "--detect", help="With --dry-run: a difference in mean "
                               "RBO to detect; the plan says, per comparison, how many seeds "
                               "reach it (with --until-decided: the expected seeds and the "
                               "power at the cap)."),
    }


def _or_dash(x: float, fmt: str) -> str:
    return "–" if x is None or x != x else fmt.format(x)


def wall_time(hours: float | None) -> str:
    """An estimated time in words a reader takes in at once: ``under a minute``, ``12 min``,
    ``3.4 h``, ``2.1 days`` (``–``: unknown)."""
    if hours is None or hours != hours:
        return "–"
    minutes = hours * 60
    if minutes < 1:
        return "under a minute"
    if minutes < 90:
        return f"{minutes:.0f} min"
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} days"


def _dry_run(config, console, like: Path | None = None, detect: float | None = None,
             until=None, grow: str = "seeds") -> None:
    """``--dry-run``: the fits, the estimated wall time and the detectable RBO difference
    from both levels of variation (``--like STORE``; ``--detect D``: the seeds for D), of
    every comparison the audit decides; with ``until`` (an ``--until-decided`` run's
    :class:`~recaudit.stats.SequentialPlan`) its first round, its cap and what the cap
    allows at most. Says on stderr what its calibration is timing."""
    import sys

    from recaudit.audit import dry_run
    from recaudit.cli._tables import fitted
    from recaudit.experiment import kept_fits

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    plan = dry_run(config, like=like, detect=detect, progress=say, until=until, grow=grow)
    stacked = plan.stack > 1
    columns = ["dataset", "model", "baselines", "perturbed", "stored", "to train", "s/epoch",
               "epochs", "s/fit", *(("stack ×",) if stacked else ()), "time"]
    rows = [[f.dataset, f.model, str(f.baselines), str(f.perturbed),
             f"{f.stored_baselines} + {f.stored_trials}", str(f.remaining),
             _or_dash(f.s_per_epoch, "{:.2f}"), _or_dash(f.epochs, "{:.0f}"),
             _or_dash(f.s_per_fit, "{:.0f}") + f" ({f.time_basis})",
             *((_or_dash(f.stack_speedup, "{:.2f}"),) if stacked else ()),
             wall_time(f.hours)]
            for f in plan.fits.itertuples()]
    console.print(fitted(console, f"{config.name}: what the audit would train", columns, rows,
                         left=2))
    stacks = (f" and stacks of up to {plan.stack} (stack ×: the calibrated speed-up of a "
              "stack's perturbed fits)") if stacked else ""
    rate = plan.trials_per_hour
    if not plan.fits["remaining"].sum():
        console.print("nothing to train: the store holds every trial of the plan.")
    else:
        console.print(f"estimated wall time: {wall_time(plan.hours)} with {plan.workers} "
                      f"worker{'s' if plan.workers != 1 else ''}{stacks}"
                      + (f", about {rate:.0f} trials/h" if rate == rate else "")
                      + " (s/fit: the median own time of the store's finished trials of the "
                      "model, else of the --like store's trials of the same model on the same "
                      "data, else a one-epoch calibration on this machine).")
    if plan.until is not None:
        console.print(_until_line(plan, grow), markup=False)
    _comparisons(plan, config, console, detect, grow)
    for fit in kept_fits(config.output):
        done = (f" ({wall_time(fit['seconds'] / 3600)} of training done)"
                if "seconds" in fit else "")
        what = (f"finished after epoch {fit['epoch']} of {fit['epochs']}{done}, which a trial "
                "that trains it takes instead of training" if fit.get("finished") else
                f"at epoch {fit['epoch']} of {fit['epochs']}{done}, which the run resumes "
                "there if it trains it")
        console.print(f"kept: a {fit['model']} fit {what} (the time above counts it whole).",
                      markup=False)
    console.print("Nothing was trained into the store.")


def _until_line(plan, grow: str) -> str:
    """What an ``--until-decided`` run trains: the first round, the cap, at most."""
    flag = "--max-draws" if grow == "draws" else "--max-seeds"
    at_most = int(plan.at_cap["remaining"].sum()) if plan.at_cap is not None else 0
    return (f"until decided: the table is the first round ({plan.first_round} {grow}); then "
            f"rounds of {grow} only for the comparisons still undecided, up to the cap of "
            f"{plan.until.cap} {grow} ({flag}): at most {at_most} fits to train, "
            f"{wall_time(plan.hours_at_cap)} if every comparison ran to the cap.")


def _comparisons(plan, config, console, detect: float | None, grow: str) -> None:
    """The comparisons the audit decides: each one's detectable difference (and, until
    decided, at the cap; with ``detect``, the seeds for it)."""
    from recaudit.audit import comparison_name, nothing_to_decide
    from recaudit.cli._tables import add_columns, result_table

    frame = plan.comparisons
    if frame.empty:
        why = nothing_to_decide(config, grow=grow)
        console.print(f"{why[0].upper()}{why[1:]}." if why else "Nothing to compare.",
                      markup=False)
        return
    until = plan.until
    n = int(frame.replicates.iloc[0])
    several = len(config.models) > 1
    both = until is not None and detect is not None
    columns = ["comparison", f"detectable\nat {n}",
               *((f"decided 80 %\n(cap {until.cap})", f"after about\n({grow})")
                 if until is not None else ()),
               *((f"{grow}\nfor {detect:g}",) if detect is not None and until is None else ()),
               *((f"{detect:g}\ndecided", f"after about\n({grow})") if both else ()),
               "basis"]
    rows = []
    for r in frame.itertuples():
        rows.append([comparison_name(r, several), _or_dash(r.rbo_difference, "{:.4f}"),
                     *((_or_dash(r.at_cap, "{:.4f}"), _or_dash(r.spent_at_cap, "{:.0f}"))
                       if until is not None else ()),
                     *((_count(r.seeds_for),) if detect is not None and until is None
                       else ()),
                     *((_or_dash(r.power_at_cap, "{:.0%}"),
                        _or_dash(r.expected_seeds, "{:.0f}")) if both else ()),
                     r.basis + ("*" if r.stand_in else "")])
    title = (f"What the run would decide ({len(frame)} comparison(s), one family)"
             if until is not None else f"What the audit would compare ({len(frame)})")
    table = result_table(title)
    add_columns(table, *columns, left=1)  # the names fold, the numbers stay whole
    for row in rows:
        table.add_row(*row)
    console.print(table)
    note = ("detectable: the smallest difference in mean RBO that the comparison's paired "
            "test at 0.05 finds with 80 % power at that many " + grow + ", from the "
            "variance between " + grow + " and between test queries. Basis: the audit's own "
            "store, the --like store, or the calibration pair (two one-epoch seeds: a rough "
            "figure, off by 2-3x either way)")
    if frame.stand_in.any():
        note += ("; *: no store holds the comparison's own pair, so a stand-in: for two "
                 "perturbations the model's least detectable pair, for two models each "
                 "model's variance added")
    if (frame.basis == "none").any():
        note += ("; none: one seed measures no seed-to-seed variation (give --like STORE, "
                 "or let the dry run calibrate)")
    if until is not None and until.calibrated:
        note += (f"; decided 80 %: with a cap of {until.cap}, the difference the run's "
                 f"sequential design decides in its direction 80 % of the time, after about "
                 f"that many {grow} on average (its looks, its spending and its futility "
                 "stop; each comparison at its share of the family's 0.05)")
        if both:
            note += (f"; {detect:g} decided: how often the design decides a difference of "
                     f"{detect:g}, and after about how many {grow}")
    elif until is not None:
        note += (f"; decided 80 %: the difference the fixed test at the cap of {until.cap} "
                 "finds with 80 % power (the store's rule has no design to read)")
    elif detect is not None and frame.seeds_for.isna().any():
        note += f"; {grow} for {detect:g}: –, no number (the test queries' part alone is larger)"
    console.print(note + ".", markup=False)


def _count(n, cap: int | None = None) -> str:
    """A number of replicates: ``–`` for none (no number reaches it), ``> cap`` beyond."""
    if n is None or n != n:
        return "–"
    return f"> {cap}" if cap is not None and n > cap else str(int(n))
