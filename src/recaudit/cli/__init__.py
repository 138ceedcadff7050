"""The ``recaudit`` command line (typer). Thin: parses, calls the library, renders.

Sub-commands live in their own modules (``_datasets.py``, ``_models.py``, ``_audit.py`` …)
and are attached to :data:`app` here. Every error a user can cause — a bad option, an unknown
command, a bad config or data file, a model of theirs that fails in a trial, a full disk or a
folder they cannot write — ends as one line ``error: ...`` on stderr and exit code 2 (a
traceback only with ``--debug``, which may stand anywhere on the line); one during a run says
how many finished trials are saved. Anything else (a bug) is one line too, with exit code 1.
Ctrl-C and SIGTERM stop a run at once: one line saying what is saved and how many running
trials were abandoned, exit code 130 (SIGINT) or 143 (SIGTERM). ``-v`` shows progress logs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import typer

from recaudit.errors import (Interrupted, ModelError, RecauditError, RecauditWarning,
                             StorageError, TrialError, did_you_mean, storage_error)

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Audit recommender systems: stability, manipulation, properties.")

_STATE: dict[str, Any] = {"debug": False, "signal": None}

#: The base class of typer's usage errors: typer >= 0.29 vendors click as ``typer._click``,
#: so ``click.ClickException`` is another class; find it from what typer itself raises.
_USAGE_ERROR: type[Exception] = next(c for c in typer.BadParameter.__mro__
                                     if c.__name__ == "ClickException")


def _version(value: bool) -> None:
    if value:
        from recaudit import __version__

        typer.echo(f"recaudit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
          verbose: bool = typer.Option(False, "--verbose", "-v",
                                       help="Log progress (loading, trials) to stderr."),
          version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print recaudit's version and exit.")
          ) -> None:
    _STATE["debug"] = debug
    if verbose:
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
        logging.getLogger("recaudit").setLevel(logging.INFO)


def _attach() -> None:
    from recaudit.cli import (_audit, _compare, _datasets, _fuzz, _models, _perturbations,
                              _properties, _report, _reproduce, _schema, _simulate, _stores,
                              _who)

    for module in (_datasets, _models, _perturbations, _audit, _stores, _report, _simulate,
                   _properties, _fuzz, _reproduce, _compare, _schema, _who):
        module.register(app)
    typers = [app]
    while typers:  # every command, those of groups (`recaudit models list`) too
        t = typers.pop()
        typers += [g.typer_instance for g in t.registered_groups if g.typer_instance]
        for info in t.registered_commands:
            if info.short_help is None and info.callback is not None:
                info.short_help = short_help(info.callback.__doc__ or "")


def short_help(doc: str) -> str:
    """A command's line in ``recaudit --help``: the first sentence of its docstring, its
    lines joined (the list would keep the docstring's line breaks and cut the sentence),
    ````code```` as ```code```."""
    import re

    first = " ".join(doc.strip().split("\n\n")[0].split()).replace("``", "`")
    end = re.search(r"[.!?](\s|$)", first)
    return first[:end.end()].strip() if end else first


_attach()


def _usage_message(exc: Exception) -> str:
    """A usage error on one line, with the closest command and where to find help."""
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    message = " ".join(message.split())
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and message.startswith("No such command"):
        name = message.split("'")[1] if "'" in message else ""
        if "Did you mean" not in message:  # newer click says it itself
            message += did_you_mean(name, ctx.command.list_commands(ctx))
    path = ctx.command_path if ctx is not None else "recaudit"
    return f"{message} (see `{path} --help`)"


def _show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
          file: Any = None, line: str | None = None) -> None:
    """Soft problems (:class:`RecauditWarning`) as one line ``warning: ...``; others as usual."""
    if issubclass(category, RecauditWarning):
        print(f"warning: {' '.join(str(message).split())}", file=sys.stderr)
    else:
        _SHOW(message, category, filename, lineno, file, line)


_SHOW = warnings.showwarning


def main(argv: list[str] | None = None) -> int:
    """Console entry point: the exit code (0 success, 1 an unexpected error, 2 any user error,
    130 interrupted by Ctrl-C, 143 stopped by SIGTERM)."""
    with warnings.catch_warnings(), _signals():
        warnings.showwarning = _show
        return _main(argv)


#: Seconds after a Ctrl-C or SIGTERM during which another one is dropped: stopping a run takes
#: a few seconds (its workers get ``_stopping.GRACE`` to unwind), and a second Ctrl-C must not
#: cut that short and leave workers behind.
_STOPPING = 10.0


def _on_signal(signum: int, frame: Any) -> None:
    """Ctrl-C or SIGTERM: stop the command (see :data:`_STOPPING`)."""
    import time

    now = time.monotonic()
    if _STATE.get("since") is not None and now - _STATE["since"] < _STOPPING:
        return
    _STATE.update(signal=signum, since=now)
    raise Interrupted(signum)


@contextlib.contextmanager
def _signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`~recaudit.errors.Interrupted` while the command runs
    (main thread only; a signal the caller ignores, as a shell does for a background job's
    SIGINT, stays ignored)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if handler not in (signal.SIG_IGN, None):
            previous[sig] = signal.signal(sig, _on_signal)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _saved(store: Any, then: str = "run the same command again to resume",
           baselines: bool = False) -> str:
    """What a stopped command leaves in ``store`` (a store, or a folder of stores such as
    ``reproduce run --dir``): its finished trials (with ``baselines``, an audit's trained
    baselines cached beside it too: an interrupted run's finished work, which a resume
    reuses; the state of the fits in flight, :func:`recaudit._resume.resumable`), and
    ``then``, what to do next."""
    from pathlib import Path

    from recaudit.experiment import Store, fits_dir
    from recaudit.studies import present

    if store is None or not Path(store).exists():
        return "nothing was saved"
    stores = sorted(Path(store).glob("*.duckdb")) if Path(store).is_dir() else [Path(store)]
    n = 0
    for path in stores:
        try:
            with Store(path, read_only=True) as s:  # every study's trials (fuzz_trials...)
                n += sum(s.count(info.trials) for info in present(s))
        except RecauditError as exc:  # e.g. still held by a worker that has not exited yet
            return f"{path} could not be read ({exc.one_line()})"
    where = f"the stores under {store}" if Path(store).is_dir() else str(store)
    cache = Path(store).with_name(Path(store).name + ".baselines")  # an audit's baselines
    m = len(list(cache.glob("*.npz"))) if baselines and cache.is_dir() else 0
    kept = f" and {m} trained baseline{'s' if m != 1 else ''}" if m else ""
    f = sum(len(list(fits_dir(path).glob("*.pt"))) for path in stores)
    fits = (f", with the state of {f} fit{'s' if f != 1 else ''} in flight at "
            f"{'their' if f != 1 else 'its'} last kept epoch") if f else ""
    return f"{n} finished trial{'s' if n != 1 else ''}{kept} saved in {where}{fits}; {then}"


def _interrupted() -> int:
    """Ctrl-C or SIGTERM: one line, what is saved and what was abandoned; 130 or 143."""
    from recaudit.cli._common import RUNNING

    stop = RUNNING.pop("interrupt", None)
    # the signal the handler saw first: an interrupt that a library swallowed and this module
    # rebuilt (Interrupted.swallowed) cannot know it
    signum = _STATE["signal"] or getattr(stop, "signum", None) or signal.SIGINT
    stop = Interrupted(signum, getattr(stop, "abandoned", None))
    then = "run the same command again to resume"
    if stop.abandoned:
        n = stop.abandoned
        then = f"{n} running trial{'s' if n != 1 else ''} abandoned; {then}"
    saved = _saved(RUNNING.pop("store", None), then, baselines=True)
    print(f"error: interrupted ({stop.signal_name}) — {saved}", file=sys.stderr)
    return stop.exit_code


_DEBUG = "run with --debug for the traceback"

#: Where a command writes, when not to -o/--output: what a user chooses instead of a full or
#: read-only place.
_ELSEWHERE = {"export": "another DIRECTORY", "reproduce": "another --dir",
              "merge": "a STORE in a folder you can write to"}


def _failed(exc: BaseException) -> str:
    """An error that stopped a command as one line: for one raised during a run, what is
    saved; for one a traceback would explain (a model's bug, a bug here), how to see it."""
    from recaudit.cli._common import RUNNING

    store = RUNNING.pop("store", None)
    if isinstance(exc, StorageError):
        return _refused(exc, store)
    if isinstance(exc, RecauditError):
        text = exc.one_line()
        if isinstance(exc, TrialError) and store is not None:
            text += " — " + _saved(store, "fix it and run the same command again to resume")
        if (isinstance(exc, TrialError) and not exc.expected) or (
                isinstance(exc, ModelError) and exc.__cause__ is not None):
            text += f" ({_DEBUG})"  # the user's code raised: its traceback shows where
        return text
    text = f"unexpected {type(exc).__name__}: {' '.join(str(exc).split())}"
    if store is not None:
        text += " — " + _saved(store)
    return f"{text} (a bug: please report it; {_DEBUG})"


def _refused(exc: StorageError, store: Any) -> str:
    """A write the file system refused: what, where, what is saved, what to do."""
    from pathlib import Path

    elsewhere = "choose " + _ELSEWHERE.get(_STATE.get("command") or "", "another -o/--output")
    if store is None or not Path(store).exists():  # nothing was written: write elsewhere
        fix = (f"free space there, or {elsewhere}" if exc.full
               else f"{elsewhere}, in a folder you can write to")
        return f"{exc.what}; {fix}"
    then = ("free space there and run the same command again to resume" if exc.full else
            "make it writable and run the same command again to resume")
    return f"{exc.what} — {_saved(store, then)} (or {elsewhere} to start afresh)"


def _main(argv: list[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    _STATE.update(debug=False, signal=None, since=None,
                  command=next((a for a in args if not a.startswith("-")), None))
    if "--debug" in args[:args.index("--") if "--" in args else len(args)]:
        args.remove("--debug")  # accepted after the command too: the same everywhere
        args.insert(0, "--debug")
    try:
        # typer >= 0.29 turns Ctrl-C inside a command into a returned exit code 130
        rv = app(args=args, standalone_mode=False, prog_name="recaudit")
        if isinstance(rv, int) and not isinstance(rv, bool) and rv == 130:
            return _interrupted()
    except RecauditError as exc:
        if Interrupted.swallowed(exc) is not None:  # e.g. a trial's error caused by one
            return _interrupted()
        if _STATE["debug"]:
            raise
        print(f"error: {_failed(exc)}", file=sys.stderr)
        return 2
    except (typer.Exit, SystemExit) as exc:  # --help, explicit exits
        code = getattr(exc, "exit_code", getattr(exc, "code", 0))
        return int(code or 0)
    except (typer.Abort, KeyboardInterrupt):
        return _interrupted()
    except _USAGE_ERROR as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # `recaudit` alone: show the help
            print(exc.ctx.get_help())  # type: ignore[attr-defined]
            return 0
        if _STATE["debug"]:
            raise
        print(f"error: {_usage_message(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:
        if Interrupted.swallowed(exc) is not None:  # a signal during a store query
            return _interrupted()
        if _STATE["debug"]:
            raise
        # a write the file system refused, outside the places known to write
        disk = storage_error(exc, writing=False)
        print(f"error: {_failed(disk or exc)}", file=sys.stderr)
        return 2 if disk is not None else 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


def _entry() -> None:  # pragma: no cover - console script wrapper
    # a model named `module:Class` is found in the working folder, as `python -m` finds
    # modules (process-pool workers inherit the path)
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    from recaudit._memory import keep_freed_memory

    keep_freed_memory()  # the recaudit command's own process: reuse freed blocks
    sys.exit(main())
