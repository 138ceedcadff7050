"""The ``recaudit`` command line (typer). Thin: parses, calls the library, renders.

Sub-commands live in their own modules (``_datasets.py``, ``_models.py``, ``_audit.py`` …)
and are attached to :data:`app` here. Every error a user can cause — a bad option, an unknown
command, a bad config or data file — ends as one line ``error: ...`` on stderr and exit code 2
(a traceback only with ``--debug``); ``-v`` shows progress logs.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from typing import Any

import typer

from recaudit.errors import RecauditError, RecauditWarning, did_you_mean

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Audit recommender systems: stability, manipulation, properties.")

_STATE = {"debug": False}

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


_attach()


def _usage_message(exc: Exception) -> str:
    """A usage error on one line, with the closest command and where to find help."""
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    message = " ".join(message.split())
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and message.startswith("No such command"):
        name = message.split("'")[1] if "'" in message else ""
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
    """Console entry point: the exit code (0 success, 2 any user error, 130 interrupted)."""
    with warnings.catch_warnings():
        warnings.showwarning = _show
        return _main(argv)


def _saved(store: Any) -> str:
    """What an interrupted command leaves in ``store`` (a store, or a folder of stores such as
    ``reproduce run --dir``): its finished trials, and how to resume."""
    from pathlib import Path

    from recaudit.experiment import Store

    if store is None or not Path(store).exists():
        return "nothing was saved"
    stores = sorted(Path(store).glob("*.duckdb")) if Path(store).is_dir() else [Path(store)]
    n = 0
    for path in stores:
        try:
            with Store(path, read_only=True) as s:
                n += s.count("trials") if "trials" in s.tables() else 0
        except RecauditError as exc:  # e.g. still held by a worker that has not exited yet
            return f"{path} could not be read ({exc.one_line()})"
    where = f"the stores under {store}" if Path(store).is_dir() else str(store)
    return (f"{n} finished trial{'s' if n != 1 else ''} saved in {where}; run the same "
            "command again to resume")


def _interrupted() -> int:
    from recaudit.cli._common import RUNNING

    print(f"error: interrupted — {_saved(RUNNING.pop('store', None))}", file=sys.stderr)
    return 130


def _main(argv: list[str] | None) -> int:
    _STATE["debug"] = False
    try:
        # typer >= 0.29 turns Ctrl-C inside a command into a returned exit code 130
        rv = app(args=argv, standalone_mode=False, prog_name="recaudit")
        if isinstance(rv, int) and not isinstance(rv, bool) and rv == 130:
            return _interrupted()
    except RecauditError as exc:
        if _STATE["debug"]:
            raise
        print(f"error: {exc.one_line()}", file=sys.stderr)
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
