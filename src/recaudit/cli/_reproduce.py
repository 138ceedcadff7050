"""``recaudit reproduce list | run NAME [--scale small|paper] | report``."""

from __future__ import annotations

from pathlib import Path

import typer

from recaudit.cli._common import parse_duration, running

_DIR = typer.Option(Path("results/reproduce"), "--dir",
                    help="Where runs keep their stores (large; keep them out of a repository).")
_RECORDS = typer.Option(None, "--records",
                        help="Where the records (record.json, samples.parquet) are written "
                             "and read. Default: docs/reproduction/records of the recaudit "
                             "checkout that runs (wherever the command is started), else the "
                             "--dir folder.")


def _records(records: Path | None, root: Path) -> Path:
    from recaudit.reproduce import DEFAULT_RECORDS

    if records is not None:
        return records
    return DEFAULT_RECORDS if DEFAULT_RECORDS.parent.is_dir() else root


def list_cmd(root: Path = _DIR, records: Path | None = _RECORDS) -> None:
    """Every experiment with its paper, artefacts, scales and the verdict recorded so far."""
    from recaudit.cli._common import console
    from recaudit.cli._tables import add_columns, result_table
    from recaudit.reproduce import available, listed_verdict

    table = result_table("recaudit reproduce")
    add_columns(table, "experiment", "paper: artefacts", "recorded", left=3)
    where = _records(records, root)
    experiments = available()
    for i, e in enumerate(experiments):
        # the verdict of the current claims on the recorded samples, as the report gives it
        # (remembered per record, code and libraries: reproduce/_verdicts.py)
        recs = [(s, listed_verdict(where, e, s)) for s in e.scales]
        done = ", ".join(f"{s}: {v}" for s, v in recs if v) or \
            ("cannot run here" if e.unavailable else "–")
        table.add_row(e.name, f"{e.paper}: {e.artefacts} (scales: {', '.join(e.scales)})",
                      done.replace(", ", "\n"), end_section=i < len(experiments) - 1)
    console().print(table)


def run_cmd(name: str = typer.Argument(..., help="Experiment (see `recaudit reproduce list`), "
                                       "a paper prefix such as 'oh2022', or 'all'."),
            scale: str = typer.Option("small", help="small (2 CPU cores, ~1 h) or paper."),
            workers: int = typer.Option(1, min=1, help="Parallel trial processes."),
            seeds: int | None = typer.Option(None, min=1, help="Run only the first N seeds of "
                                             "the scale (recorded; for runs that cannot "
                                             "afford all)."),
            draws: int | None = typer.Option(None, min=1, help="Run only N perturbation "
                                             "draws per trained model (recorded)."),
            models: str | None = typer.Option(None, help="Run only these models, "
                                              "comma-separated (e.g. jodie,latentcross; "
                                              "recorded)."),
            perturbations: str | None = typer.Option(
                None, help="Run only these perturbations of the experiment, comma-separated "
                "(e.g. casper-delete,random-delete: the comparisons that decide a claim "
                "first; recorded). The rest can run later into the same store."),
            train: bool = typer.Option(True, "--train/--no-train",
                                       help="--no-train: record what the stores already hold "
                                            "(a run stopped part-way), train nothing."),
            device: str | None = typer.Option(None, help="Train the audits' neural models "
                                              "on this device, e.g. cuda:0 (every worker on "
                                              "it, so --workers trials share one GPU); trial "
                                              "ids do not change, so the store is read "
                                              "anywhere. Default: the CPU."),
            stack: int = typer.Option(1, min=1, help="Train up to this many trials of one "
                                      "trained baseline together as one stacked model (many "
                                      "trials per GPU from one process); numbers and trial "
                                      "ids do not change."),
            dry: bool = typer.Option(False, "--dry-run", help="Print what the run would "
                                     "train (planned, stored, left), the estimated wall time "
                                     "and the detectable RBO difference; train nothing. "
                                     "Stability-audit experiments only."),
            until_decided: bool = typer.Option(False, "--until-decided", help="Run in rounds "
                                               "of seeds or draws (modification sets), each "
                                               "given only to what undecided claims read, "
                                               "until they are decided, the cap or the budget "
                                               "is spent (sequential tests at the paper's "
                                               "alpha, valid under repeated looks)."),
            max_seeds: int | None = typer.Option(None, "--max-seeds", min=3, help="With "
                                                 "--until-decided: the most seeds (experiments "
                                                 "that grow seeds; default 32)."),
            max_draws: int | None = typer.Option(None, "--max-draws", min=3, help="With "
                                                 "--until-decided: the most draws or "
                                                 "modification sets per cell (experiments "
                                                 "that grow draws; default 128)."),
            budget: str | None = typer.Option(None, "--budget", help="With --until-decided: "
                                              "the time each experiment may take, e.g. 2h."),
            margin: float = typer.Option(0.0, "--margin", min=0.0, help="With "
                                         "--until-decided: a difference (in each comparison's "
                                         "units) below which a comparison counts as "
                                         "equivalent and stops (0: none)."),
            futility: str = typer.Option("on", "--futility", help="With --until-decided: 'on' "
                                         "stops a comparison that its cap would not decide "
                                         "(the default design's non-binding rule); 'off' runs "
                                         "every undecided comparison to the cap."),
            root: Path = _DIR, records: Path | None = _RECORDS) -> None:
    """Run (or resume) experiments and print their verdicts. A finished run resumed reads
    its stores (no training) and rewrites its record with the current claims and tests."""
    from recaudit.errors import ConfigError
    from recaudit.reproduce import Scope, available, get, run

    names = [e.name for e in available()]
    if name == "all":
        chosen = [n for n in names if not get(n).unavailable]
    elif name in names:
        chosen = [name]
    else:
        chosen = [n for n in names if n.startswith(name + "-")]
        if not chosen:
            get(name)  # raises with a closest-name hint
            raise ConfigError(f"no experiment matches {name!r}")
    scope = Scope(seeds, draws, _names(models), train, device, _names(perturbations), stack)
    if dry:
        if not train:
            raise ConfigError("--dry-run and --no-train do not go together: a dry run "
                              "trains nothing and records nothing", key="--dry-run")
        return _plan(chosen, scale, root, workers, scope)
    from recaudit.experiment import kept_fits

    for store in sorted(root.glob("*.duckdb")) if train and root.is_dir() else ():
        for fit in kept_fits(store):        # what a stopped run left in flight
            typer.echo(f"{store.name}: a {fit['model']} fit " + (
                f"finished after epoch {fit['epoch']} of {fit['epochs']}: taken by a trial "
                "that trains it again" if fit.get("finished") else
                f"kept after its epoch {fit['epoch']} of {fit['epochs']} by a stopped run: "
                "resumed there if this run trains it"), err=True)
    for n in chosen:
        if budget is not None and not until_decided:
            raise ConfigError("--budget goes with --until-decided", key="--budget")
        until = _until(get(n), until_decided, max_seeds, max_draws, margin, futility)
        with running(root):       # what an interruption reports as saved
            rec = run(n, scale, root, workers=workers, scope=scope,
                      records=_records(records, root), until=until,
                      budget=None if budget is None else parse_duration(budget),
                      progress=lambda m: typer.echo(m, err=True))
        typer.echo(f"{n} ({scale}): {rec['verdict']} in {rec['wall_seconds']:.0f} s")
        if "sequential" in rec:
            from recaudit.reproduce import STOPPED

            seq = rec["sequential"]
            typer.echo(f"  until decided: {len(seq['rounds'])} round(s) of {seq['grows']}; "
                       f"stopped: {STOPPED[seq['stopped']]}")
            for c in seq["claims"]:
                typer.echo(f"  - {c['state']} with {c['replicates']} {seq['grows']}: "
                           f"{c['text']}")


def _until(exp, on: bool, max_seeds: int | None, max_draws: int | None, margin: float,
           futility: str = "on"):
    """The sequential plan of ``--until-decided`` for ``exp`` (None when not asked)."""
    from recaudit.cli._until import futility_flag
    from recaudit.errors import ConfigError

    if not on:
        if max_seeds or max_draws or margin or futility != "on":
            raise ConfigError("--max-seeds, --max-draws, --margin and --futility go with "
                              "--until-decided", key="--until-decided")
        return None
    if exp.grows is None:
        raise ConfigError(f"experiment {exp.name!r} cannot run until decided: its values are "
                          "exact (nothing to repeat)", key="--until-decided")
    from recaudit.stats import SequentialPlan

    cap = (max_seeds or 32) if exp.grows == "seeds" else (max_draws or 128)
    return SequentialPlan(cap=cap, margin=margin, futility=futility_flag(futility))


def _names(value: str | None) -> tuple[str, ...] | None:
    """A comma-separated option's names (``None``: not given)."""
    return None if value is None else tuple(v.strip() for v in value.split(",") if v.strip())


def _plan(names: list[str], scale: str, root: Path, workers: int, scope) -> None:
    """``--dry-run``: each experiment's audit configs, planned as ``recaudit run CONFIG
    --dry-run`` plans one (stores shared by several experiments show what they hold)."""
    from recaudit.cli._plan import _dry_run
    from recaudit.cli._common import console
    from recaudit.reproduce import get, plan

    out = console()
    plannable = [n for n in names if get(n).plannable]
    if len(names) > 1 and plannable != names:
        out.print(f"not planned (not stability audits): "
                  f"{', '.join(n for n in names if n not in plannable)}")
    for n in plannable if len(names) > 1 else names:
        configs = plan(n, scale, root, workers=workers, scope=scope)
        if not configs:
            out.print(f"\n[bold]{n}[/bold] ({scale}): nothing to train — "
                      f"{scope.grid.flags().strip()} leaves none of its trials")
        for config in configs:
            out.print(f"\n[bold]{n}[/bold] ({scale}) → {config.output}")
            _dry_run(config, out)


def queue_cmd(minutes: float = typer.Option(..., "--minutes", help="The time the queue may "
                                           "take (a GPU machine's lease): it stops 30 s "
                                           "before, with the stores closed."),
              out: Path = typer.Option(..., "--dir", help="Where the queue's stores and "
                                       "records go (a folder brought back from the machine; "
                                       "given again, the queue goes on)."),
              device: str | None = typer.Option(None, help="Train on this device, e.g. "
                                                "cuda:0."),
              stack: int = typer.Option(1, min=1, help="Trials of one baseline trained "
                                        "together as one stacked model."),
              workers: int = typer.Option(1, min=1, help="Parallel trial processes.")
              ) -> None:
    """Train the next missing paper-scale trials in priority order within --minutes (Oh et
    al. 2022 Table 3's second and third seeds for LSTM and TiSASRec, Table 4's draws,
    Betello et al. 2023 at their settings), then write DIR/queue.json: what each item holds
    and the `recaudit merge` and `reproduce run --no-train` commands that bring it home."""
    from recaudit.reproduce import run_queue

    summary = run_queue(out, minutes, device=device, stack=stack, workers=workers,
                        progress=lambda m: typer.echo(m, err=True))
    for item in summary["items"]:
        typer.echo(f"{item['experiment']} ({item['scale']}): {item['state']}")
    for fit in summary["kept"]:
        typer.echo(f"kept: a {fit['model']} fit "
                   + ("finished, " if fit.get("finished") else "")
                   + f"at epoch {fit['epoch']} of {fit['epochs']} in {fit['store']}.fits.d "
                   + ("(for the trials that train it again)" if fit.get("finished") else
                      "(the same command with this --dir resumes it)"))
    typer.echo(f"wrote {out / 'queue.json'}; merge with:")
    for line in summary["merge"]:
        typer.echo(f"  {line}")


def report_cmd(root: Path = _DIR, records: Path | None = _RECORDS,
               output: Path = typer.Option(
                   Path("docs/reproduction.md"), "-o", "--output",
                   help="The page to write (Markdown; the documentation site includes it).")
               ) -> None:
    """Write the reproduction page (our numbers beside the papers') from the run records:
    the claims are tested anew on the recorded samples, nothing is trained. A record whose
    stored verdict or claim states are no longer today's is brought up to date (its measures
    and samples are not touched), so every record.json says what the page says."""
    from recaudit.reproduce import write_report

    page, *refreshed = write_report(_records(records, root), output)
    typer.echo(f"wrote {page}")
    for path in refreshed:
        typer.echo(f"brought up to date (verdict or claim states had changed): {path}")


def compact_cmd(root: Path = _DIR, records: Path | None = _RECORDS) -> None:
    """Rewrite the records' samples in the compact form (float32, only the measures the
    claims and values read, no file over 7.5 MB): a one-off migration of records written
    before it; records written since are compact already. Nothing is trained."""
    from recaudit.reproduce import compact_records

    done = compact_records(_records(records, root))
    for path, before, after in done:
        typer.echo(f"{path}: {before / 1e6:.2f} MB -> {after / 1e6:.2f} MB")
    total = sum(b for _, b, _ in done), sum(a for _, _, a in done)
    typer.echo(f"{len(done)} record(s): {total[0] / 1e6:.2f} MB -> {total[1] / 1e6:.2f} MB")


def register(app: typer.Typer) -> None:
    sub = typer.Typer(no_args_is_help=True,
                      help="Reproduce the papers' tables and figures, with verdicts.")
    sub.command("list")(list_cmd)
    sub.command("run")(run_cmd)
    sub.command("report")(report_cmd)
    sub.command("queue")(queue_cmd)
    sub.command("compact")(compact_cmd)
    app.add_typer(sub, name="reproduce")
