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
                             "to read the variance between seeds and between queries from "
                             "(else a one-epoch calibration)."),
        "detect": typer.Option(None, "--detect", help="With --dry-run: a difference in mean "
                               "RBO to detect; the plan says how many seeds reach it."),
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


def _dry_run(config, console, like: Path | None = None, detect: float | None = None) -> None:
    """``--dry-run``: the fits, the estimated wall time and the detectable RBO difference
    from both levels of variation (``--like STORE``; ``--detect D``: the seeds for D); says
    on stderr what its calibration is timing."""
    import sys

    from recaudit.audit import dry_run
    from recaudit.cli._tables import fitted
    from recaudit.experiment import kept_fits

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    plan = dry_run(config, like=like, detect=detect, progress=say)
    stacked = plan.stack > 1
    asked = detect is not None
    columns = ["dataset", "model", "baselines", "perturbed", "stored", "to train", "s/epoch",
               "epochs", "s/fit", *(("stack ×",) if stacked else ()), "time",
               "detectable ΔRBO", *((f"seeds for {detect:g}",) if asked else ())]
    rows = [[f.dataset, f.model, str(f.baselines), str(f.perturbed),
             f"{f.stored_baselines} + {f.stored_trials}", str(f.remaining),
             _or_dash(f.s_per_epoch, "{:.2f}"), _or_dash(f.epochs, "{:.0f}"),
             _or_dash(f.s_per_fit, "{:.0f}") + f" ({f.time_basis})",
             *((_or_dash(f.stack_speedup, "{:.2f}"),) if stacked else ()),
             wall_time(f.hours),
             f"{_or_dash(d.rbo_difference, '{:.4f}')} at {d.replicates} ({d.basis})",
             *((("–" if d.seeds_for is None else str(d.seeds_for)),) if asked else ())]
            for f, d in zip(plan.fits.itertuples(), plan.detectable.itertuples())]
    console.print(fitted(console, f"{config.name}: what the audit would train", columns, rows,
                         left=2))
    stacks = (f" and stacks of up to {plan.stack} (stack ×: the calibrated speed-up of a "
              "stack's perturbed fits)") if stacked else ""
    console.print(f"estimated wall time: {wall_time(plan.hours)} with {plan.workers} "
                  f"worker{'s' if plan.workers != 1 else ''}"
                  f"{stacks}, about {_or_dash(plan.trials_per_hour, '{:.0f}')} trials/h "
                  "(s/fit: the median own time of the store's finished trials of the model, "
                  "else a one-epoch calibration on this machine).")
    for d in plan.detectable.itertuples():
        console.print(_power_line(d, detect), markup=False)
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


def _power_line(d, detect: float | None) -> str:
    """What the plan's detectable difference of one (dataset, model) means, and its basis."""
    if d.basis == "none":
        return (f"{d.model} on {d.dataset}: no detectable difference (one seed measures no "
                "seed-to-seed variation; give --like STORE, or let the dry run calibrate).")
    line = (f"{d.model} on {d.dataset}: detectable ΔRBO {d.rbo_difference:.4f} at "
            f"{d.replicates} replicate(s) — the smallest difference in mean RBO between two "
            "perturbations that the audit's paired test at 0.05 finds with 80 % power, over "
            f"seeds and test queries (the seeds make {d.replicate_share:.0%} of its variance). "
            f"Basis: {d.basis} ({d.source})")
    if d.basis == "calibration":
        line += ("; two one-epoch seeds give a rough figure, off by 2-3x either way: "
                 "--like STORE reads an earlier audit")
    if detect is not None:
        line += (f". --detect {detect:g}: about {d.seeds_for} seeds" if d.seeds_for is not None
                 else f". --detect {detect:g}: no number of seeds (the test queries' part "
                 "alone is larger)")
    return line + "."
