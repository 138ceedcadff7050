"""The ``recaudit`` command line (typer). Thin: parses, calls the library, renders.

Sub-commands live in their own modules (``_datasets.py``, ``_models.py``, ``_audit.py`` …)
and are attached to :data:`app` here. Errors derived from :class:`recaudit.RecauditError` are
printed as one clean message with exit code 2 (a traceback only with ``--debug``).
"""

from __future__ import annotations

import sys

import typer

from recaudit.errors import RecauditError

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Audit recommender systems: stability, manipulation, properties.")

_STATE = {"debug": False}


@app.callback()
def _root(debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors.")) -> None:
    _STATE["debug"] = debug


def _attach() -> None:
    import importlib

    for mod in ("_datasets", "_models", "_audit", "_report", "_simulate", "_properties", "_fuzz",
                "_reproduce"):
        try:
            module = importlib.import_module(f"recaudit.cli.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name == f"recaudit.cli.{mod}":
                continue  # sub-command not built yet
            raise
        module.register(app)


_attach()


def main(argv: list[str] | None = None) -> int:
    """Console entry point."""
    try:
        app(args=argv, standalone_mode=False)
    except RecauditError as exc:
        if _STATE["debug"]:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (typer.Exit, SystemExit) as exc:  # --help, explicit exits
        code = getattr(exc, "exit_code", getattr(exc, "code", 0))
        return int(code or 0)
    except Exception as exc:  # click usage errors
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            return exc.exit_code
        if isinstance(exc, click.exceptions.Abort):
            return 130
        raise
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


def _entry() -> None:  # pragma: no cover - console script wrapper
    sys.exit(main())
